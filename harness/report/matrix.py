"""``reports/all-models/<run>/index.html``: the matrix page of ``eval --all-models``, families × parsers.

One self-contained page (no script, no network): a row per format family, a column per parser library (the
project's own parsers are one column, ``toolcall-harness``), each cell four pass rates, passing (pass or soft
pass) / total results:

- ``one-shot``: mode ``oneshot`` on the rendered and observed slices (``curated``, ``generated``, ``observed``);
- ``streamed``: the streaming modes (``whole``, ``char``, ``random``, ``tokens``) on those slices;
- ``drift``: every mode on the ``drift`` slice;
- ``peer``: modes ``oneshot`` and ``whole`` on the peer slices (``peer-*``).

Each family name links to the ``report.html`` of every model run for it (``<model>/report.html``, relative, so
the folder can be moved). The header names the run, the judging policy and each parser's library version (as the
runs' ``run.json`` recorded them). Shapes: ``families`` is ``{format: [record dicts]}`` (``results.jsonl``
rows), ``runs`` is ``{format: [(model, report.html path relative to the page)]}``, ``versions`` is ``{library:
version}``. Raises ``OSError`` when the page cannot be written.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from jinja2 import Environment

from harness.core.results import PASSING
from harness.core.textio import write_text

RENDERED = ("curated", "generated", "observed")
STREAMING = ("whole", "char", "random", "tokens")
GROUPS = ("one-shot", "streamed", "drift", "peer")


def group_of(record: dict) -> str | None:
    """The matrix group (:data:`GROUPS`) a result counts in, or ``None`` (round trip, prefix, captures)."""
    slice_name, mode = record.get("slice", ""), record.get("mode", "")
    if slice_name in RENDERED:
        return "one-shot" if mode == "oneshot" else "streamed" if mode in STREAMING else None
    if slice_name == "drift":
        return "drift"
    if slice_name.startswith("peer-") and mode in ("oneshot", "whole"):
        return "peer"
    return None


def library_of(parser: str) -> str:
    """``sglang`` for ``sglang==0.5.23:gemma4``, ``toolcall-harness`` for ``toolcall-harness:gemma4``."""
    return parser.partition(":")[0].partition("==")[0]


def matrix(families: dict[str, list[dict]]) -> tuple[list[str], dict[str, dict[str, dict[str, tuple[int, int]]]]]:
    """``(libraries, {format: {library: {group: (passing, total)}}})``; libraries in first-seen order, the
    project's own first."""
    cells: dict[str, dict[str, dict[str, tuple[int, int]]]] = {}
    libraries: dict[str, None] = {"toolcall-harness": None}
    for fmt, records in families.items():
        table: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
        for record in records:
            group = group_of(record)
            if group is None:
                continue
            library = library_of(record["parser"])
            libraries.setdefault(library)
            cell = table[library][group]
            cell[0] += record.get("verdict") in PASSING
            cell[1] += 1
        cells[fmt] = {lib: {g: (n[0], n[1]) for g, n in groups.items()} for lib, groups in table.items()}
    used = [lib for lib in libraries if any(lib in row for row in cells.values())]
    return used, cells


def write_matrix_html(
    path: Path,
    run_id: str,
    families: dict[str, list[dict]],
    runs: dict[str, list[tuple[str, str]]],
    policy: str,
    versions: dict[str, str],
    not_run: dict[str, str] | None = None,
) -> None:
    """Write the matrix page (module docstring) to ``path``; ``not_run``: ``{format: why}`` of families whose
    models did not run, listed as rows with the reason."""
    libraries, cells = matrix(families)
    rows = []
    for fmt in families:
        row = []
        for library in libraries:
            groups = cells[fmt].get(library, {})
            row.append([(g, *groups[g], _shade(*groups[g])) for g in GROUPS if g in groups])
        rows.append((fmt, runs.get(fmt, []), row))
    page = _TEMPLATE.render(
        run_id=run_id,
        policy=policy,
        libraries=libraries,
        versions=versions,
        rows=rows,
        groups=GROUPS,
        not_run=sorted((not_run or {}).items()),
    )
    write_text(path, page)


def _shade(passing: int, total: int) -> str:
    """A background colour from red (0%) through yellow to green (100%)."""
    if not total:
        return "#eeeeee"
    hue = round(120 * passing / total)
    return f"hsl({hue}, 65%, 82%)"


_TEMPLATE = Environment(autoescape=True).from_string("""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>toolcall-harness matrix {{ run_id }}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 1.5em; }
table { border-collapse: collapse; }
th, td { border: 1px solid #bbb; padding: 4px 8px; vertical-align: top; }
td.cell div { white-space: nowrap; font-variant-numeric: tabular-nums; padding: 1px 4px; }
td.none { color: #999; }
.meta { color: #444; }
</style></head><body>
<h1>Tool-call parsers: families × parsers</h1>
<p class="meta">run <code>{{ run_id }}</code> · judging policy <code>{{ policy }}</code> · cells: passing (pass or
soft pass) / results, per group: {{ groups | join(", ") }}</p>
<p class="meta">versions: {% for lib in libraries %}<code>{{ lib }} {{ versions.get(lib, "?") }}</code>
{%- if not loop.last %}, {% endif %}{% endfor %}</p>
<table id="matrix">
<thead><tr><th>family</th>{% for lib in libraries %}<th>{{ lib }}</th>{% endfor %}</tr></thead>
<tbody>
{% for fmt, links, row in rows %}<tr><th scope="row">{{ fmt }}
{%- for model, href in links %}<br><a href="{{ href }}">{{ model }}</a>{% endfor %}</th>
{% for groups in row %}{% if groups %}<td class="cell">
{%- for name, ok, total, colour in groups %}<div style="background: {{ colour }}">{{ name }} {{ ok }}/{{ total }}</div>
{%- endfor %}</td>{% else %}<td class="none">no parser</td>{% endif %}
{% endfor %}</tr>
{% endfor %}{% for fmt, why in not_run %}<tr><th scope="row">{{ fmt }}</th>
<td class="none" colspan="{{ libraries | length }}">not run: {{ why }}</td></tr>
{% endfor %}</tbody></table>
</body></html>
""")

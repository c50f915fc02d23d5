"""``report.html``: one self-contained page per run, with plots and a searchable table of failing cases.

The page opens offline (from a file, with no network): plotly.js (:mod:`plotly`) and DataTables (:mod:`itables`
in its offline mode) are inlined once: about 6 MB, plus about 2 KB per failing-cases row. It shows:

- pass rate per parser × slice (a heatmap, one column per slice · mode, cells ``passed/total``, ``+Ns`` = N surfaced);
- failure types per parser (stacked bars of failing case × mode results);
- outcome classes on the ``drift`` slice (the records' ``outcome`` field);
- pass rate per capture backend on captured output (records of ``capture:SUITE`` slices, backend in ``kind``);
- version comparisons (``old 8/20 → new 20/20`` per mode) when two versions of a library ran;
- for a ``compare`` run, first, what ``compare.md`` shows (:mod:`harness.report.compare`): A and B, the per-slice
  and per-mode tables ``A → B``, the gate's verdict and every flipped case in a ``<details>`` (input with its
  markers highlighted, expected, each side's outcome and output per mode, the minimal input);
- the failing cases, one row per case × parser × error type with the modes that failed so (capped at
  :data:`MAX_FAILING_ROWS`, one-shot failures first): raw text with the format's protocol markers
  (:class:`harness.formats.FormatSpec` ``markers`` and ``stop_markers``) in ``<mark>``, expected and got;
- the provenance block of ``report.md`` (:func:`harness.report.markdown.provenance_lines`).
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from jinja2 import Environment
from markupsafe import Markup

from harness.core.cases import Case
from harness.core.results import PASSING, clip
from harness.core.textio import write_text
from harness.formats import get_format
from harness.report.compare import KINDS, comparison_flips, tables, title, verdict
from harness.report.flips import flip_tables
from harness.report.gate import by_case, outcome
from harness.report.markdown import provenance_lines
from harness.report.runlog import CAPTURE_PREFIX, RunLog
from harness.report.summary import LEGEND, flat

if TYPE_CHECKING:  # pandas and plotly load when a page is written, not when the CLI starts
    import plotly.graph_objects as go

MAX_FAILING_ROWS = 2000  # rows of the failing-cases table; the page says how many were left out
MAX_TEXT_CHARS = 1500  # raw text shown per row (the full text is in corpus.jsonl)
MAX_JSON_CHARS = 600  # expected / got shown per row
PLOT_CONFIG = {"displaylogo": False, "responsive": True}
DRIFT_SLICE = "drift"
# drift outcome classes, best first, and their bar colours (other classes get plotly's)
OUTCOME_COLOURS = {
    "recovered": "#2ca02c",
    "surfaced": "#bcbd22",
    "scrubbed": "#17becf",
    "dropped": "#d62728",
    "leaked": "#9467bd",
    "wrong": "#ff7f0e",
    "error": "#7f7f7f",
}


def write_report_html(log: RunLog, path: Path, max_rows: int = MAX_FAILING_ROWS) -> None:
    """Write the run's ``report.html`` to ``path``; ``max_rows``: cap of the failing-cases table.

    Every record is shown (corpus slices and capture slices alike); raw texts come from the corpus and the
    captured texts of the log. Raises ``OSError`` when ``path`` cannot be written.
    """
    from itables import options as itables_options
    from itables.javascript import generate_init_offline_itables_html
    from plotly.offline import get_plotlyjs

    records, info = log.records, log.provenance
    parsers = list(dict.fromkeys([*log.parsers, *(r["parser"] for r in records)]))
    rendered, captured = log.corpus_records, log.capture_records
    drift = drift_records(rendered)
    failing, total_failing = failing_rows(records, log.cases, log.capture_texts, _markers(info.format), max_rows)
    page = _TEMPLATE.render(
        info=info,
        plotly_js=Markup(get_plotlyjs()),
        datatables_js=Markup(generate_init_offline_itables_html(itables_options.dt_bundle)),
        pass_rate=_plot(pass_rate_figure(rendered, parsers), "plot-pass-rate") if rendered else None,
        failure_types=_plot(failure_types_figure(records, parsers), "plot-failure-types")
        if any(r["verdict"] in ("fail", "error") for r in records)
        else None,
        drift=_plot(drift_figure(drift, parsers), "plot-drift") if drift else None,
        backends=_plot(backend_figure(captured), "plot-backends") if captured else None,
        comparisons=_comparisons(records, parsers),
        compare=_compare_view(log, _markers(info.format)) if log.comparison else None,
        table=Markup(failing_table_html(failing)) if failing else None,
        shown=len(failing),
        total_failing=total_failing,
        n_records=len(records),
        provenance=[(Markup(_inline_md(line)), line.startswith("  ")) for line in provenance_lines(info)],
        capture=log.capture,
        limitations=[Markup(_inline_md(item)) for item in log.limitations],
        legend=LEGEND,
        max_text=MAX_TEXT_CHARS,
    )
    write_text(path, page)


# --- figures ----------------------------------------------------------------------------------------------


def pass_rate_figure(records: list[dict], parsers: list[str]) -> go.Figure:
    """Heatmap: rows = parsers, columns = ``slice · mode`` (slices in corpus order), colour = pass rate in %,
    cell text ``passed/total`` plus `` +Ns`` for N surfaced results (observed field outputs declined safely, counted
    as not passed)."""
    import pandas as pd
    import plotly.graph_objects as go

    frame = pd.DataFrame(records, columns=["parser", "slice", "mode", "verdict"])
    frame["passed"] = frame.verdict.isin(PASSING)
    frame["surfaced"] = frame.verdict == "surfaced"
    grouped = frame.groupby(["parser", "slice", "mode"], sort=False).agg(
        sum=("passed", "sum"), count=("passed", "count"), surfaced=("surfaced", "sum")
    )
    columns = list(dict.fromkeys((s, m) for s, m in zip(frame.slice, frame["mode"], strict=False)))
    columns.sort(key=lambda sm: _slice_order(sm[0]))
    present = set(frame.parser)
    parsers = [p for p in parsers if p in present]
    z, text = [], []
    for parser in parsers:
        row_z, row_text = [], []
        for slice_name, mode in columns:
            if (parser, slice_name, mode) in grouped.index:
                passed, total, surfaced = grouped.loc[(parser, slice_name, mode)]
                row_z.append(round(100 * passed / total, 1))
                row_text.append(f"{passed}/{total}" + (f" +{surfaced}s" if surfaced else ""))
            else:
                row_z.append(None)
                row_text.append("-")
        z.append(row_z)
        text.append(row_text)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[f"{s} · {m}" for s, m in columns],
            y=parsers,
            text=text,
            texttemplate="%{text}",
            colorscale="RdYlGn",
            zmin=0,
            zmax=100,
            colorbar={"title": {"text": "% passed"}},
            hovertemplate="%{y}<br>%{x}<br>%{text} passed (%{z}%)<extra></extra>",
        )
    )
    fig.update_layout(
        height=200 + 45 * len(parsers),
        margin={"l": 60, "r": 10, "t": 40, "b": 10},
        yaxis={"autorange": "reversed", "automargin": True},
        xaxis={"tickangle": -45, "automargin": True, "side": "bottom"},
    )
    return fig


def failure_types_figure(records: list[dict], parsers: list[str]) -> go.Figure:
    """Stacked bars: per parser, failing (``fail``/``error``) case × mode results by error type."""
    import plotly.graph_objects as go

    counts = Counter(
        (r["parser"], r["error_type"] or r["verdict"]) for r in records if r["verdict"] in ("fail", "error")
    )
    kinds = [k for k, _ in Counter(k for (_, k) in counts.elements()).most_common()]
    fig = go.Figure([go.Bar(name=kind, x=parsers, y=[counts.get((p, kind), 0) for p in parsers]) for kind in kinds])
    fig.update_layout(
        barmode="stack",
        yaxis_title="failing case × mode results",
        height=400,
        margin={"l": 10, "r": 10, "t": 20, "b": 10},
        legend_title_text="error type",
    )
    return fig


def drift_records(records: list[dict]) -> list[dict]:
    """Records of the ``drift`` slice (damaged calls: :mod:`harness.score.outcomes` classes them)."""
    return [r for r in records if r["slice"] == DRIFT_SLICE]


def outcome_class(record: dict) -> str:
    """A drift record's outcome class: its ``outcome`` field (:data:`harness.score.outcomes.OUTCOMES`), else
    ``pass``, ``soft_pass``, ``surfaced`` or the error type."""
    if record.get("outcome"):
        return str(record["outcome"])
    verdict = record["verdict"]
    return verdict if verdict in (*PASSING, "surfaced") else record["error_type"] or verdict


def drift_figure(records: list[dict], parsers: list[str]) -> go.Figure:
    """Stacked bars: per parser, drift case × mode results by outcome class (:func:`outcome_class`)."""
    import plotly.graph_objects as go

    counts = Counter((r["parser"], outcome_class(r)) for r in records)
    kinds = sorted(
        {k for _, k in counts},
        key=lambda k: (list(OUTCOME_COLOURS).index(k) if k in OUTCOME_COLOURS else len(OUTCOME_COLOURS), k),
    )
    shown = [p for p in parsers if any(r["parser"] == p for r in records)]
    fig = go.Figure(
        [
            go.Bar(
                name=kind, x=shown, y=[counts.get((p, kind), 0) for p in shown], marker_color=OUTCOME_COLOURS.get(kind)
            )
            for kind in kinds
        ]
    )
    fig.update_layout(
        barmode="stack",
        yaxis_title="case × mode results",
        height=400,
        margin={"l": 10, "r": 10, "t": 20, "b": 10},
        legend_title_text="outcome",
    )
    return fig


def backend_figure(records: list[dict]) -> go.Figure:
    """Grouped bars: pass rate in % per parser on captured output, one bar per ``backend · mode`` (the backend is
    the records' ``kind``; capture errors, mode ``capture``, count as failures of their backend)."""
    import pandas as pd
    import plotly.graph_objects as go

    frame = pd.DataFrame(records, columns=["parser", "kind", "mode", "verdict"])
    errors = frame[frame["mode"] == "capture"].groupby(["kind", "parser"]).size()
    scored = frame[frame["mode"] != "capture"]
    bars = []
    for (backend, mode), rows in scored.groupby(["kind", "mode"], sort=False):
        parsers = list(dict.fromkeys(rows.parser))
        passed = [int((rows[rows.parser == p].verdict.isin(PASSING)).sum()) for p in parsers]
        totals = [int((rows.parser == p).sum()) + int(errors.get((backend, p), 0)) for p in parsers]
        bars.append(
            go.Bar(
                name=f"{backend} · {mode}",
                x=parsers,
                y=[100 * a / b for a, b in zip(passed, totals, strict=False)],
                text=[f"{a}/{b}" for a, b in zip(passed, totals, strict=False)],
                textposition="auto",
            )
        )
    fig = go.Figure(bars)
    fig.update_layout(
        barmode="group",
        yaxis_title="% passed",
        yaxis_range=[0, 100],
        height=400,
        margin={"l": 10, "r": 10, "t": 20, "b": 10},
        legend_title_text="backend · mode",
    )
    return fig


def _plot(fig: go.Figure, div_id: str) -> Markup:
    """The figure as an HTML fragment (plotly.js is inlined once in the page head)."""
    return Markup(fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id, config=PLOT_CONFIG))


def _slice_order(name: str) -> tuple[int, str]:
    order = ("curated", "generated", "observed", DRIFT_SLICE)
    return (order.index(name), name) if name in order else (len(order), name)


# --- failing-cases table ----------------------------------------------------------------------------------


def highlight_markers(text: str, markers: tuple[str, ...]) -> str:
    """``text`` as HTML: every protocol marker wrapped in ``<mark class="marker">``, everything escaped
    (``<``, ``>``, ``&`` and quotes)."""
    if not markers:
        return html.escape(text, quote=True)
    pattern = re.compile("|".join(re.escape(m) for m in sorted(markers, key=len, reverse=True)))
    out, last = [], 0
    for hit in pattern.finditer(text):
        out.append(html.escape(text[last : hit.start()], quote=True))
        out.append(f'<mark class="marker">{html.escape(hit.group(), quote=True)}</mark>')
        last = hit.end()
    out.append(html.escape(text[last:], quote=True))
    return "".join(out)


def failing_rows(
    records: list[dict],
    cases: list[Case],
    capture_texts: dict[str, str],
    markers: tuple[str, ...],
    max_rows: int = MAX_FAILING_ROWS,
) -> tuple[list[dict], int]:
    """The rows of the failing-cases table, values as escaped HTML: ``([{case, parser, slice, error type, modes,
    detail, raw text, expected, got}], number of rows before the cut)``.

    One row per (case, parser, error type) among ``fail``/``error`` records; ``modes`` lists every mode that
    failed so, ``detail`` and ``got`` are the one-shot result's (else the first mode's). Rows with a one-shot
    failure come first; the list is cut to ``max_rows``."""
    by_id = {case.id: case for case in cases}
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        if r["verdict"] in ("fail", "error"):
            key = (r["case_id"], r["parser"], r["slice"], r["error_type"] or r["verdict"])
            groups.setdefault(key, []).append(r)
    ordered = sorted(
        groups.values(),
        key=lambda rs: (
            all(r["mode"] != "oneshot" for r in rs),
            _slice_order(rs[0]["slice"]),
            rs[0]["parser"],
            rs[0]["case_id"],
        ),
    )
    rows = []
    for group in ordered[:max_rows]:
        r = min(group, key=lambda r: r["mode"] != "oneshot")
        capture = r["slice"].startswith(CAPTURE_PREFIX)
        case = None if capture else by_id.get(r["case_id"])
        text = (capture_texts.get(r["case_id"]) if capture else (case.text if case else "")) or ""
        expected = "judged by the suite's checks" if capture else (_json(case.expected.to_json()) if case else "")
        rows.append(
            {
                "case": html.escape(r["case_id"]),
                "parser": html.escape(r["parser"]),
                "slice": html.escape(r["slice"]),
                "error type": html.escape(r["error_type"] or r["verdict"]),
                "modes": html.escape(", ".join(g["mode"] for g in group)),
                "detail": f'<div class="detail">{html.escape(flat(r["detail"]))}</div>',
                "raw text": f'<pre class="raw">{highlight_markers(clip(text, MAX_TEXT_CHARS), markers)}</pre>',
                "expected": f'<pre class="json">{html.escape(clip(expected, MAX_JSON_CHARS))}</pre>',
                "got": f'<pre class="json">{html.escape(clip(_json(r["got"]), MAX_JSON_CHARS))}</pre>'
                if r["got"] is not None
                else "raised",
            }
        )
    return rows, len(ordered)


def failing_table_html(rows: list[dict]) -> str:
    """A searchable, sortable, paged DataTables table (itables, offline mode) of ``rows`` (escaped HTML)."""
    import pandas as pd
    from itables import to_html_datatable

    return to_html_datatable(
        pd.DataFrame(rows),
        table_id="failing-cases",
        connected=False,
        allow_html=True,
        maxBytes=0,
        showIndex=False,
        classes="display compact",
        pageLength=25,
        lengthMenu=[10, 25, 100, 500],
        style="width:100%;margin:0;table-layout:auto",
        layout={"topStart": "pageLength", "topEnd": "search", "bottomStart": "info", "bottomEnd": "paging"},
    )


def _markers(format_name: str) -> tuple[str, ...]:
    """Protocol markers of a format (markers and stop markers), none for a format without a module."""
    try:
        spec = get_format(format_name)
    except KeyError:
        return ()
    return tuple(dict.fromkeys((*spec.markers, *spec.stop_markers)))


def _json(value) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


# --- other blocks -----------------------------------------------------------------------------------------


def _comparisons(records: list[dict], parsers: list[str]) -> list[dict]:
    """Version pairs as rows ``{old, new, modes: [(mode, "8/20", "20/20", fixed, broken)]}``."""
    out = []
    for old, new, result in flip_tables(records, parsers):
        modes = [
            (mode, f"{s['old']}/{s['total']}", f"{s['new']}/{s['total']}", s["fixed"], s["broken"])
            for mode, s in result["modes"].items()
        ]
        out.append({"old": old, "new": new, "modes": modes})
    return out


def _compare_view(log: RunLog, markers: tuple[str, ...]) -> dict:
    """The compare section's values: ``{title, verdict, failed, parsers: [(side, name, version, spec)], slices,
    modes (rows of :func:`harness.report.compare.tables`), kinds: [(heading, [case])]}``; a case is ``{id, summary,
    text (escaped HTML, markers highlighted), expected, rows: [(mode, side, outcome, got)], minimal}``."""
    c = log.comparison
    by_id = {case.id: case for case in log.cases}
    kinds = []
    for kind, heading in KINDS:
        grouped = by_case(comparison_flips(c, kind))
        if kind == "changes" and not grouped:
            continue
        entries = []
        for case_id, group in grouped.items():
            case = by_id.get(case_id)
            small = c["minimal"].get(kind, {}).get(case_id)
            first = group[0]
            entries.append(
                {
                    "id": case_id,
                    "summary": f"{case_id} ({first.slice}; {', '.join(f.mode for f in group)}): "
                    f"A {clip(outcome(first.baseline), 100)} → B {clip(outcome(first.now), 100)}",
                    "text": Markup(highlight_markers(case.text if case else "", markers)),
                    "expected": _json(case.expected.to_json()) if case else "",
                    "rows": [
                        row
                        for f in group
                        for row in (
                            (f.mode, "A", outcome(f.baseline), _json(f.baseline.get("got"))),
                            (f.mode, "B", outcome(f.now), _json(f.now.get("got"))),
                        )
                    ],
                    "minimal": small
                    and {
                        "label": f"{'fails with A; ' if kind == 'fixes' else ''}{small['mode']}; "
                        f"{len(small['text'])} of {small['original_len']} chars; {small['method']}",
                        "text": Markup(highlight_markers(small["text"], markers)),
                        "expected": _json(small["expected"]),
                        "got": _json(small["got"]),
                    },
                }
            )
        kinds.append((heading, entries))
    found = tables(log)
    return {
        "title": title(log).replace("`", ""),
        "verdict": verdict(log),
        "failed": bool(c["regressions"]),
        "parsers": [(side, c[key]["name"], c[key].get("version", "?"), c[key]["spec"]) for side, key in SIDES],
        "slices": found["slices"],
        "modes": found["modes"],
        "kinds": kinds,
    }


SIDES = (("A (before)", "a"), ("B (after)", "b"))


def _inline_md(line: str) -> str:
    """One Markdown bullet (:func:`harness.report.markdown.provenance_lines`, a parser's known limitation) as
    escaped HTML, with ``code`` (one or two backticks) and **bold** kept."""
    text = html.escape(line.strip().removeprefix("- "), quote=False)
    text = re.sub(r"``(.+?)``|`([^`]+)`", lambda m: f"<code>{m.group(1) or m.group(2)}</code>", text)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", text)


_TEMPLATE = Environment(autoescape=True).from_string("""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{ info.model }} ({{ info.format }}) — tool-call parser evaluation</title>
<style>
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
.note { color: #555; font-size: 0.9em; }
mark.marker { background: #ffe08a; color: #7a2e00; border-radius: 2px; font-weight: bold; }
#failing-cases { font-size: 0.8em; } #failing-cases td { vertical-align: top; }
div.detail { max-width: 18em; max-height: 14em; overflow: auto; overflow-wrap: anywhere; }
pre.raw, pre.json { white-space: pre-wrap; word-break: break-all; max-width: 40em; max-height: 14em;
  overflow: auto; margin: 0; } pre.raw { min-width: 20em; } pre.json { min-width: 12em; }
table.simple { border-collapse: collapse; } table.simple td, table.simple th { border: 1px solid #ccc;
  padding: 2px 8px; text-align: right; } table.simple td:first-child { text-align: left; }
p.verdict.failed { color: #a40000; } p.verdict.passed { color: #1a6b1a; }
details.flip { margin: 0.4em 0; } details.flip summary { cursor: pointer; font-family: monospace; }
table.flip-sides td { text-align: left; vertical-align: top; }
.provenance li { margin: 0.2em 0; } .provenance li.sub { margin-left: 2em; list-style: circle; }
</style>
<script type="text/javascript">{{ plotly_js }}</script>
{{ datatables_js }}
</head>
<body>
<h1>Tool-call parser evaluation: {{ info.model }} ({{ info.format }})</h1>
<p>Run <code>{{ info.run_id }}</code>, started {{ info.started }}, {{ "%.1f"|format(info.duration_s) }} s;
{{ n_records }} results (case × parser × mode); corpus:
{% for name, n in info.corpus.items() %}{{ name }} {{ n }}{% if not loop.last %}, {% endif %}{% endfor %}.</p>
<p class="note">{{ legend }}</p>

{% if compare %}<h2 id="compare">{{ compare.title }}</h2>
<p class="verdict {{ 'failed' if compare.failed else 'passed' }}"><strong>{{ compare.verdict }}</strong></p>
<table class="simple" id="compare-parsers"><tr><th></th><th>parser</th><th>version</th><th>spec</th></tr>
{% for side, name, version, spec in compare.parsers %}<tr><td>{{ side }}</td><td><code>{{ name }}</code></td>
<td>{{ version }}</td><td><code>{{ spec }}</code></td></tr>{% endfor %}</table>
<h3>Per slice: cases passing in every mode, A → B</h3>
<table class="simple" id="compare-slices"><tr><th>slice</th><th>A</th><th>B</th><th>fixed</th><th>regressed</th></tr>
{% for name, a, b, fixed, broken in compare.slices %}<tr><td>{{ name }}</td><td>{{ a }}</td><td>{{ b }}</td>
<td>{{ fixed }}</td><td>{{ broken }}</td></tr>{% endfor %}</table>
<h3>Per mode: case × mode results passing, A → B</h3>
<table class="simple" id="compare-modes"><tr><th>mode</th><th>A</th><th>B</th><th>fixed</th><th>regressed</th></tr>
{% for name, a, b, fixed, broken in compare.modes %}<tr><td>{{ name }}</td><td>{{ a }}</td><td>{{ b }}</td>
<td>{{ fixed }}</td><td>{{ broken }}</td></tr>{% endfor %}</table>
{% for heading, cases in compare.kinds %}
<h3>{{ heading }} ({{ cases|length }} case{{ "" if cases|length == 1 else "s" }})</h3>
{% if not cases %}<p>None.</p>{% endif %}
{% for case in cases %}<details class="flip" data-case="{{ case.id }}"><summary>{{ case.summary }}</summary>
<p>input:</p><pre class="raw">{{ case.text }}</pre>
<p>expected:</p><pre class="json">{{ case.expected }}</pre>
<table class="simple flip-sides"><tr><th>mode</th><th>parser</th><th>outcome</th><th>got</th></tr>
{% for mode, side, result, got in case.rows %}<tr><td>{{ mode }}</td><td>{{ side }}</td><td>{{ result }}</td>
<td><pre class="json">{{ got }}</pre></td></tr>{% endfor %}</table>
{% if case.minimal %}<p>minimal failing input ({{ case.minimal.label }}):</p>
<pre class="raw minimal">{{ case.minimal.text }}</pre>
<p>expected <code>{{ case.minimal.expected }}</code>, got <code>{{ case.minimal.got }}</code></p>{% endif %}
</details>
{% endfor %}{% endfor %}{% endif %}

<h2 id="pass-rate">Pass rate per parser × slice</h2>
{% if pass_rate %}{{ pass_rate }}{% else %}<p>No rendered or observed cases ran.</p>{% endif %}

<h2 id="failure-types">Failure types per parser</h2>
{% if failure_types %}{{ failure_types }}{% else %}<p>No failures.</p>{% endif %}

<h2 id="drift">Outcome classes on drift cases</h2>
{% if drift %}{{ drift }}{% else %}<p>No drift slice in this run.</p>{% endif %}

<h2 id="backends">Captured output per backend</h2>
{% if backends %}{{ backends }}{% elif capture.skipped %}<p>Capture with {{ capture.backend }} skipped:
{{ capture.skipped }}</p>{% else %}<p>No captured output in this run.</p>{% endif %}

{% if comparisons %}<h2 id="versions">Version comparison</h2>
{% for c in comparisons %}<p><code>{{ c.old }}</code> → <code>{{ c.new }}</code> (passed, all slices)</p>
<table class="simple"><tr><th>mode</th><th>old</th><th>new</th><th>fixed</th><th>broken</th></tr>
{% for mode, old, new, fixed, broken in c.modes %}<tr><td>{{ mode }}</td><td>{{ old }}</td><td>{{ new }}</td>
<td>{{ fixed }}</td><td>{{ broken }}</td></tr>{% endfor %}</table>{% endfor %}{% endif %}

<h2 id="failing">Failing cases</h2>
{% if table %}<p class="note">One row per case × parser × error type, with the modes that failed so.
{% if shown < total_failing %}Showing {{ shown }} of {{ total_failing }} rows (one-shot failures first); every
result is in results.jsonl.{% else %}All {{ total_failing }} rows.{% endif %} Raw text cut at {{ max_text }}
characters; protocol markers <mark class="marker">highlighted</mark>. Type in the search box to filter (case id,
parser, error type, text).</p>
{{ table }}{% else %}<p>No failing results.</p>{% endif %}

{% if limitations %}<h2 id="limitations">Known limitations of the project's {{ info.format }} parser</h2>
<ul>{% for item in limitations %}<li>{{ item }}</li>{% endfor %}</ul>{% endif %}

<h2 id="provenance">Provenance</h2>
<ul class="provenance">{% for line, sub in provenance %}<li{% if sub %} class="sub"{% endif %}>{{ line }}</li>
{% endfor %}{% if capture.backend and not capture.skipped %}<li>capture: backend {{ capture.backend }}
{%- if capture.model %}, model {{ capture.model.file }} sha256 <code>{{ capture.model.sha256 }}</code>{% endif %}
{%- if capture.files %}, files {{ capture.files|join(", ") }}{% endif %}</li>{% endif %}</ul>
</body>
</html>
""")

"""``compare.md`` and the terminal view of ``toolcall-harness compare``: parser A (before: main, a release) against
parser B (after: a branch, a fix) on one run's corpus, rendered from the run log's ``comparison``
(:func:`harness.jobs.compare.run_compare` stores it).

The page, GitHub-flavoured Markdown to paste into a pull request: who A and B are, the corpus, the per-slice
table of cases passing in every mode (``A → B``, the seeds' "8/20 → 20/20"), the per-mode table of case × mode
results, the gate's verdict (the gate's rule: a (case, mode) that passed with A and does not with B is a
regression) with the regressed and fixed results per error type, then every case that flipped, each in a
collapsible ``<details>``: its input (the model output text), the expected message, A's and B's outcome and
output per mode and a minimal input that still fails (for the first :data:`harness.report.gate.SHOWN_CASES`).
Cases are shown in full (regressions first) while the page stays under :data:`PR_BUDGET` characters, so that it
fits a pull request's description; the others one line each, in a collapsed list (``report.html`` shows every one
in full).
"""

from __future__ import annotations

import html
from pathlib import Path

from rich.console import Console
from rich.table import Table

from harness.core.results import clip
from harness.core.textio import write_text
from harness.engines.sources import describe_identity
from harness.report.flips import flips
from harness.report.gate import Flip, GateResult, by_case, flip_case_lines, outcome, some_ids, summary_table
from harness.report.runlog import RunLog
from harness.report.summary import plural

COMPARE_FILE = "compare.md"
#: characters of compare.md with flipped cases in full: under GitHub's 65,536 for a pull request's description
PR_BUDGET = 60_000
SIDES = ("A", "B")
#: the flip kinds of a comparison, with their headings
KINDS = (("regressions", "Regressions"), ("fixes", "Fixes"), ("changes", "Changes (failed with both)"))


def comparison_flips(comparison: dict, kind: str) -> list[Flip]:
    """The ``kind`` (``regressions``, ``fixes``, ``changes``) flips of a log's ``comparison`` as :class:`Flip`
    (``baseline`` = A's result, ``now`` = B's)."""
    return [Flip(f["case_id"], f["mode"], f["slice"], f["a"], f["b"]) for f in comparison.get(kind, [])]


def gate_result(log: RunLog) -> GateResult:
    """The comparison as the gate's :class:`GateResult` (A as the baseline, B as the rerun): its ``failed`` is the
    verdict (a regression), its minimal inputs those of the regressions."""
    c = log.comparison
    return GateResult(
        path=log.run_dir,
        baseline={"parser": c["a"]},
        parser=c["b"]["name"],
        run_dir=log.run_dir,
        regressions=comparison_flips(c, "regressions"),
        fixes=comparison_flips(c, "fixes"),
        compared=c["compared"],
        missing=c["missing"],
        extra=c["extra"],
        minimal=c["minimal"]["regressions"],
        changes=comparison_flips(c, "changes"),
    )


def tables(log: RunLog) -> dict:
    """``{"slices": [(slice, "8/20", "20/20", fixed, regressed)], "modes": [(mode, ...)]}``: cases passing in every
    mode both parsers ran, per slice (and ``all``), and case × mode results passing, per mode, counted by
    :func:`harness.report.flips.flips`."""
    c = log.comparison
    found = flips(log.corpus_records, c["a"]["name"], c["b"]["name"])

    def row(label: str, s: dict) -> tuple:
        return (label, f"{s['old']}/{s['total']}", f"{s['new']}/{s['total']}", s["fixed"], s["broken"])

    order = {name: i for i, name in enumerate(log.slices)}
    slices = [
        row(name, found["slices"][name]) for name in sorted(found["slices"], key=lambda n: order.get(n, len(order)))
    ]
    if len(slices) > 1:
        total = {k: sum(s[k] for s in found["slices"].values()) for k in ("old", "new", "fixed", "broken", "total")}
        slices.append(row("all", total))
    modes = [row(mode, found["modes"][mode]) for mode in log.modes if mode in found["modes"]]
    return {"slices": slices, "modes": modes}


def verdict(log: RunLog) -> str:
    """One line: ``FAILED: B regressed N cases (M case × mode results) ...`` or ``passed: ...``."""
    result = gate_result(log)
    regressed, fixed = by_case(result.regressions), by_case(result.fixes)
    head = "FAILED" if result.failed else "passed"
    text = (
        f"{head}: B regressed {plural(len(regressed), 'case')} ({len(result.regressions)} case × mode results) "
        f"and fixed {plural(len(fixed), 'case')} ({len(result.fixes)} results) of {result.compared} case × mode "
        "results compared"
    )
    if result.changes:
        text += f"; {len(result.changes)} results failing with both fail differently"
    if result.missing or result.extra:
        text += f"; not compared: {result.missing} results of A only, {result.extra} of B only (modes of one parser)"
    return text


def title(log: RunLog) -> str:
    c = log.comparison
    return f"Compare `{c['a']['name']}` → `{c['b']['name']}` on {log.provenance.model}"


def compare_markdown(log: RunLog, budget: int = PR_BUDGET) -> list[str]:
    """``compare.md`` lines (see the module docstring): the flipped cases in full, regressions first, while the page
    with a line for each other case stays under ``budget`` characters; the others one line each."""
    c, p = log.comparison, log.provenance
    result = gate_result(log)
    sources = [  # an engine built from a source tree or wheel: what the code was (harness.engines.sources)
        f"- {side} is built from source `{describe_identity(source)}`: {source.get('how')}."
        for side, key in (("A", "a"), ("B", "b"))
        if isinstance(source := p.workers.get(c[key]["name"], {}).get("source"), dict)
    ]
    lines = [
        f"## {title(log)}",
        "",
        "| | parser | version | spec |",
        "|---|---|---|---|",
        *(
            f"| {side} ({when}) | `{c[key]['name']}` | {c[key].get('version', '?')} | `{c[key]['spec']}` |"
            for side, when, key in (("A", "before", "a"), ("B", "after", "b"))
        ),
        "",
        *sources,
        *([""] if sources else []),
        (
            f"Corpus: {', '.join(f'{name} {n}' for name, n in p.corpus.items())} cases "
            f"(seed {p.seeds.get('run_seed')}, modes {', '.join(log.modes)}, policy {p.judging_policy.describe()}); "
            "template "
            f"{p.template['source']} `{p.template['file']}` sha256 `{str(p.template['sha256'])[:12]}…`; harness "
            f"{p.commit}; run `{p.run_id}`."
        ),
        "",
    ]
    found = tables(log)
    lines += [
        "### Per slice: cases passing in every mode, A → B",
        "",
        "| slice | A → B | fixed | regressed |",
        "|---|---|---:|---:|",
        *(f"| {name} | {a} → {b} | {fixed} | {broken} |" for name, a, b, fixed, broken in found["slices"]),
        "",
        "### Per mode: case × mode results passing, A → B",
        "",
        "| mode | A → B | fixed | regressed |",
        "|---|---|---:|---:|",
        *(f"| {name} | {a} → {b} | {fixed} | {broken} |" for name, a, b, fixed, broken in found["modes"]),
        "",
        "### Gate verdict",
        "",
        f"**{verdict(log)}**",
        "",
        *summary_table(result),
    ]
    texts = {case.id: (case.text, case.expected.to_json()) for case in log.cases}
    kinds = [(kind, heading, by_case(comparison_flips(c, kind))) for kind, heading in KINDS]
    briefs = {
        (kind, case_id): f"- {_summary(case_id, group, 40)}" for kind, _, g in kinds for case_id, group in g.items()
    }
    size = sum(len(line) + 1 for line in lines)
    reserve = sum(len(line) + 1 for line in briefs.values())  # every case not shown in full gets its line
    for kind, heading, grouped in kinds:
        if kind == "changes" and not grouped:
            continue
        lines += [f"### {heading} ({plural(len(grouped), 'case')})", ""]
        if not grouped:
            lines += ["None.", ""]
        minimal = c["minimal"].get(kind, {})
        brief: list[str] = []
        for case_id, group in grouped.items():
            small = minimal.get(case_id)
            if small and kind == "fixes":
                small = {**small, "side": "fails with A"}
            block = [
                "<details>",
                f"<summary>{_summary(case_id, group)}</summary>",
                "",
                *flip_case_lines(group, texts, small, SIDES),
                "",
                "</details>",
                "",
            ]
            line = briefs[(kind, case_id)]
            grown = size + sum(len(text) + 1 for text in block)
            if brief or grown + reserve - len(line) - 1 > budget:  # in full while the page fits, in order
                brief.append(line)
                continue
            lines += block
            size, reserve = grown, reserve - len(line) - 1
        if brief:
            lines += [
                "<details>",
                f"<summary>{len(brief)} more, one line each (each in full in report.html)</summary>",
                "",
                *brief,
                "",
                "</details>",
                "",
            ]
    return lines


def _summary(case_id: str, group: list[Flip], width: int = 100) -> str:
    """A flipped case's one line (escaped HTML): id, slice, modes, A's and B's outcome in the first mode (each cut to
    ``width`` characters)."""
    first = group[0]
    return html.escape(
        f"{case_id} ({first.slice}; {', '.join(f.mode for f in group)}): A {clip(outcome(first.baseline), width)} "
        f"→ B {clip(outcome(first.now), width)}",
        quote=False,
    )


def write_compare_md(log: RunLog, path: Path) -> None:
    """Write ``compare.md`` for a log that holds a ``comparison``. Raises ``OSError`` when ``path`` cannot be
    written."""
    write_text(path, "\n".join(compare_markdown(log)).rstrip("\n") + "\n")


def show_compare(console: Console, log: RunLog, limit: int = 20) -> None:
    """Print the per-slice table, the verdict, then each flipped case's id, modes and outcomes (the first
    ``limit`` of each kind) and where ``compare.md`` is."""
    c = log.comparison

    def say(line: str = "") -> None:
        console.print(line, markup=False, highlight=False, soft_wrap=True)

    say()
    say(f"A: {c['a']['name']} ({c['a']['spec']})")
    say(f"B: {c['b']['name']} ({c['b']['spec']})")
    table = Table(title="cases passing in every mode, A → B", title_justify="left")
    for column in ("slice", "A → B", "fixed", "regressed"):
        table.add_column(column, justify="left" if column == "slice" else "right")
    for name, a, b, fixed, broken in tables(log)["slices"]:
        table.add_row(name, f"{a} → {b}", str(fixed), str(broken))
    console.print(table)
    say(f"compare {verdict(log)}")
    for kind, label in (("regressions", "REGRESSION"), ("fixes", "FIXED")):
        grouped = by_case(comparison_flips(c, kind))
        for case_id, group in list(grouped.items())[:limit]:
            first = group[0]
            say(
                f"{label} {case_id} ({first.slice}) [{', '.join(f.mode for f in group)}]: A "
                f"{clip(outcome(first.baseline), 160)} → B {clip(outcome(first.now), 160)}"
            )
        if len(grouped) > limit:
            say(f"  … {len(grouped) - limit} more: {some_ids(list(grouped)[limit:], 30)}")
    say(f"compare report: {log.run_dir / COMPARE_FILE}")

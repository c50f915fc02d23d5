"""``report.md``, rendered from a :class:`~harness.report.runlog.RunLog`: the pass-rate tables, version
comparisons, top failure types with shortest examples and hypothesis-shrunk generated examples, every failing
curated and observed case, the own parser's known limitations, the provenance block, the drift outcome classes,
the fault classes and the captured output."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from harness.core.textio import write_text
from harness.engines.sources import describe_identity
from harness.parse.calls import UNAVAILABLE
from harness.report.captures import capture_markdown
from harness.report.drift import outcome_markdown
from harness.report.faults import clusters_markdown
from harness.report.flips import flip_tables, flips_markdown
from harness.report.runlog import Provenance, RunLog
from harness.report.summary import (
    LEGEND,
    failing_cases,
    flat,
    got_text,
    one_line,
    plural,
    slice_grids,
    summarize,
    top_failures,
)

if TYPE_CHECKING:  # pandas loads when a table is built, not when the CLI starts
    import pandas as pd


def write_report_md(log: RunLog, path: Path) -> None:
    """Write :func:`report_markdown` to ``path``. Raises ``OSError`` when it cannot be written."""
    write_text(path, report_markdown(log))


def report_markdown(log: RunLog) -> str:
    """The whole ``report.md`` of a run."""
    text = "\n".join(_body(log)) + "\n"
    drift = outcome_markdown(log.corpus_records, log.parsers, policy=log.provenance.judging_policy)
    if drift:
        text += "\n" + "\n".join(drift)
    text += "\n" + "\n".join(clusters_markdown(log.fault_classes)) + "\n"
    capture = log.capture
    if capture.get("skipped"):
        text += f"\n## captured output\n\nCapture with {capture['backend']} skipped: {capture['skipped']}\n"
    if log.capture_records or capture.get("stats"):
        text += capture_markdown(capture, log.capture_records, log.capture_texts)
    return text


def markdown_tables(summary: pd.DataFrame, parsers: list[str], slices: list[str], modes: list[str]) -> str:
    """The pass-rate tables as GitHub Markdown, one per slice (narrow enough to paste)."""
    blocks = []
    for slice_name, present, rows in slice_grids(summary, parsers, slices, modes):
        lines = [f"**{slice_name}**", "", "| parser | " + " | ".join(present) + " |", "|---|" + "---:|" * len(present)]
        lines += [f"| `{parser}` | " + " | ".join(cells) + " |" for parser, cells in rows]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _body(log: RunLog) -> list[str]:
    """Lines of ``report.md`` up to and including the provenance block."""
    p, records, parsers, modes = log.provenance, log.corpus_records, log.parsers, list(log.modes)
    lines = [
        f"# Tool-call parser evaluation: {p.model} ({p.format})",
        "",
        f"Run `{p.run_id}`, started {p.started}, {p.duration_s:.1f} s"
        + (f" (the last session: resumed {', '.join(p.resumed)})." if p.resumed else "."),
        "",
        LEGEND,
        "",
        markdown_tables(summarize(records), parsers, list(log.slices), modes),
        "",
    ]
    comparisons = flip_tables(records, parsers)
    if comparisons:
        lines += [
            "## Version comparison",
            "",
            "Cases whose verdict changed between two versions of one library: fixed (old failed, new passes) "
            "and broken (old passed, new fails).",
            "",
        ] + flips_markdown(comparisons, modes)
    lines += ["## Top failure types", ""]
    for parser, rows in top_failures(records, log.texts).items():
        lines += [f"### `{parser}`", ""]
        if not rows:
            lines += ["No failures.", ""]
        for row in rows:
            ex = row["example"]
            lines += [
                f"- **{row['error_type']}**: {plural(row['cases'], 'case')} ({row['records']} case×mode results; "
                f"modes {', '.join(row['modes'])}) — shortest: `{ex['case_id']}` ({ex['mode']}): {flat(ex['detail'])}",
                "",
                "  ```text",
                "  " + row["text"].replace("\n", "\n  "),
                "  ```",
                f"  got: {got_text(ex)}",
                "",
            ]
        for example in log.shrunk:
            if example.parser == parser:
                lines += [
                    f"- minimal generated example for **{example.error_type}** (hypothesis-shrunk, seed "
                    f"{example.seed}):",
                    "",
                    "  ```text",
                    "  " + example.text.replace("\n", "\n  "),
                    "  ```",
                    f"  expected: `{one_line(example.expected)}`",
                    f"  got: {'`' + one_line(example.got) + '`' if example.got else 'raised'}",
                    "",
                ]
    lines += [
        "## Curated and observed cases that did not pass",
        "",
        "One line per case: the one-shot result where it failed, else the first failing mode.",
        "",
    ]
    failing = failing_cases(records)
    for parser in parsers:
        rows = [row for row in failing.get(parser, []) if row["error_type"] != UNAVAILABLE]
        lines += [f"### `{parser}` ({plural(len(rows), 'case')})", ""]
        if parser in p.broken:
            lines.append(f"- the cases after `{p.broken[parser]['case']}` were not asked: see Provenance")
        for row in rows:
            what = row["error_type"] or row["verdict"]
            lines.append(
                f"- `{row['case_id']}` ({', '.join(row['tags'][:3]) or 'observed'}) — **{what}** in "
                f"{', '.join(row['modes'])}: {flat(row['detail'])}"
            )
        lines.append("")
    if log.limitations:
        lines += [
            f"## Known limitations of the project's {p.format} parser",
            "",
            f"As the parser states them (`limitations` in `parsers/own/{p.format}.py`); cases that hit them fail "
            "above, they are not filtered out.",
            "",
            *(f"- {item}" for item in log.limitations),
            "",
        ]
    return lines + ["## Provenance", ""] + provenance_lines(p)


def provenance_lines(p: Provenance) -> list[str]:
    """Markdown bullet lines: template, tokenizer, harness commit, libraries, parsers (with those that could not
    run and how the out-of-process ones were started), seeds, corpus (with the scenarios skipped)."""
    t = p.template
    lines = [
        f"- template: source **{t['source']}**, file `{t['file']}`, location `{t['location']}`, sha256 `{t['sha256']}`"
    ]
    if t.get("fallback"):
        lines.append(f"- **fallback template used**: {t.get('fallback_note', '')}")
    tok = p.tokenizer
    if tok:
        lines.append(
            f"- tokenizer: `{tok.get('file')}` ({tok.get('source')}), sha256 `{tok.get('sha256')}`, "
            f"{tok.get('vocab_size')} tokens, {tok.get('library')}"
        )
    lines.append(f"- harness: {p.commit}")
    lines.append("- libraries: " + ", ".join(f"{k} {v}" for k, v in p.versions.items()))
    lines.append("- parsers: " + ", ".join(f"`{name}`" for name in p.parsers))
    for name, reason in p.unavailable.items():
        lines.append(f"  - `{name}` could not run: {flat(reason)}")
    for name, broken in p.broken.items():
        lines.append(
            f"  - `{name}` stopped at `{broken['case']}`: {flat(broken['reason'])}; "
            f"{plural(broken['unavailable'], 'result')} error/unavailable (`--break-after`)"
        )
    for name, worker in p.workers.items():
        lines.append(
            f"  - `{name}` ran out of process: `{worker['command']}`"
            + (
                f"; engine environment `{worker['engine_env']}` (recipe {worker['recipe_key']}; "
                f"installed packages in its `pip-freeze.txt` where it is a virtualenv)"
                if worker.get("engine_env")
                else ""
            )
            + f"; restarted {worker['restarts']} time(s); hello `{json.dumps(worker.get('hello', {}))}`"
        )
        if isinstance(worker.get("source"), dict):
            source = worker["source"]
            lines.append(f"    - built from source `{describe_identity(source)}`: {source.get('how')}")
    lines.append("- seeds: " + ", ".join(f"{k} {v}" for k, v in p.seeds.items()))
    lines.append("- corpus: " + ", ".join(f"{k} {v}" for k, v in p.corpus.items()) + " cases")
    for case_id, reason in p.skipped:
        lines.append(f"  - skipped `{case_id}`: {reason}")
    for suite, pin in p.peers.items():
        lines.append(f"  - peer suite {suite} {pin.get('version')}, sha256 `{pin.get('sha256')}`")
    if p.unsupported:
        reasons = Counter(reason for _, reason in p.unsupported)
        lines.append(f"  - {len(p.unsupported)} peer case(s) the harness cannot judge (listed in run.json):")
        lines += [f"    - {n} × {reason}" for reason, n in reasons.most_common()]
    lines += grammar_lines(p.grammar)
    policy = p.judging_policy
    lines.append(f"- judging policy: `--policy {policy.describe()}` (harness/score/policy.py)")
    return lines


def grammar_lines(grammar: dict | None, listed: int = 10) -> list[str]:
    """The grammar oracle's lines (:mod:`harness.analysis.grammar`): acceptance of the rendered cases, the first
    ``listed`` template-vs-grammar disagreements, and the drift cases the grammar lets through."""
    if grammar is None:
        return []
    if "unavailable" in grammar:
        return [f"- grammar oracle: unavailable: {grammar['unavailable']}"]
    lines = [
        f"- grammar oracle ({grammar['engine']}, structural tag `{grammar['tag']}`): {grammar['accepted']}/"
        f"{grammar['total']} rendered cases accepted; {len(grammar['drift_accepted'])}/{grammar['drift_total']} "
        "drift cases accepted (guided decoding would let them through)"
    ]
    rejected = grammar["rejected"]
    if rejected:
        lines.append(
            f"  - {len(rejected)} template-vs-grammar disagreement(s) (the template writes, the grammar forbids):"
        )
        lines += [f"    - `{case_id}`: {detail}" for case_id, detail in rejected[:listed]]
        if len(rejected) > listed:
            lines.append(f"    - ... {len(rejected) - listed} more in run.json")
    return lines

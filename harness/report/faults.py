"""Fault classes (:class:`~harness.report.runlog.FaultClass`) with their minimal repros, as a terminal table and
Markdown."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console, JustifyMethod
from rich.table import Table
from rich.text import Text

from harness.core.results import clip
from harness.report.runlog import FaultClass
from harness.report.summary import flat, one_line


def _repro_note(repro: dict) -> str:
    """``method, N → M chars[, K checks]`` of a cluster's repro."""
    method = repro["method"]
    if method == "none":
        return f"not minimized, {repro['original_len']} chars"
    if method.startswith("none ("):  # "none (STRATEGY found no shorter input)"
        return f"{method[6:-1]}, {repro['original_len']} chars"
    checks = f", {repro['calls']} checks" if repro.get("calls") is not None else ""
    return f"{method}, {repro['original_len']} → {len(repro['text'])} chars{checks}"


def _repro_lines(repro: dict) -> tuple[str, str, str]:
    """``(input, expected, got)`` one-line texts of a cluster's repro."""
    expected = one_line(repro["expected"]) if repro.get("expected") is not None else "-"
    got = one_line(repro["got"]) if repro.get("got") is not None else "raised"
    return repr(repro["text"]), expected, got


def print_clusters(console: Console, clusters: Sequence[FaultClass], limit: int = 20) -> None:
    """Print the fault-class table (one row per cluster) and, under it, each cluster's shortest failing input
    (minimized where a repro is attached) with the parser's output beside the expected."""
    if not clusters:
        console.print("fault classes: none (every parser passed every case)", markup=False, highlight=False)
        return
    table = Table(
        title=Text(f"fault classes: {len(clusters)} (parser, error type, mutator or slice)"), title_justify="left"
    )
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("#", "right"),
        ("parser", "left"),
        ("error type", "left"),
        ("group", "left"),
        ("cases", "right"),
        ("modes", "left"),
        ("common tags", "left"),
    )
    for name, justify in columns:
        table.add_column(name, justify=justify)
    for i, c in enumerate(clusters[:limit], 1):
        table.add_row(
            str(i),
            Text(c.parser),
            c.error_type,
            Text(c.group),
            str(c.cases),
            ",".join(c.modes),
            Text(", ".join(f"{t} {n}" for t, n in c.tags)),
        )
    console.print(table)
    for i, c in enumerate(clusters[:limit], 1):
        repro = c.repro
        if not repro:
            continue
        text, expected, got = _repro_lines(repro)
        console.print(f"  #{i} shortest input ({_repro_note(repro)}): {clip(text, 240)}", markup=False, highlight=False)
        console.print(f"      expected {clip(expected, 200)}", markup=False, highlight=False)
        console.print(f"      got      {clip(got, 200)}", markup=False, highlight=False)
    if len(clusters) > limit:
        console.print(f"  … {len(clusters) - limit} more fault classes in report.md", markup=False, highlight=False)


def clusters_markdown(clusters: Sequence[FaultClass]) -> list[str]:
    """Markdown lines: the fault-class table, then each class' shortest failing input with expected and got."""
    lines = [
        "## Fault classes",
        "",
        "Failing results grouped by (parser, error type, mutator tag or slice), with the shortest failing input "
        "found: minimized by delta debugging (`structure`: re-rendered through the template; `text`: ddmin over "
        "the raw text; `differential`: against a parser that passed the case) or hypothesis' shrinking "
        "(generated cases).",
        "",
    ]
    if not clusters:
        return lines + ["No failures.", ""]
    lines += [
        "| # | parser | error type | group | cases | results | modes | common tags |",
        "|---:|---|---|---|---:|---:|---|---|",
    ]
    for i, c in enumerate(clusters, 1):
        lines.append(
            f"| {i} | `{c.parser}` | {c.error_type} | `{c.group}` | {c.cases} | {c.records} | "
            f"{', '.join(c.modes)} | {', '.join(f'{t} {n}' for t, n in c.tags)} |"
        )
    lines.append("")
    for i, c in enumerate(clusters, 1):
        ex = c.example
        lines += [
            f"### {i}. `{c.parser}` — {c.error_type} — `{c.group}`",
            "",
            f"Shortest failing case `{ex['case_id']}` ({ex['mode']}): {flat(ex['detail'])}",
            "",
        ]
        repro = c.repro
        if repro:
            text, expected, got = _repro_lines(repro)
            lines += [
                f"Shortest input ({_repro_note(repro)}){': ' + flat(repro['detail']) if repro.get('detail') else ''}",
                "",
                "```text",
                repro["text"],
                "```",
                "",
                "| expected | got |",
                "|---|---|",
                f"| `{_md_cell(expected)}` | `{_md_cell(got)}` |",
                "",
            ]
    return lines


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|")

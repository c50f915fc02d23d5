"""What ``eval`` prints after a run, rendered from its :class:`~harness.report.runlog.RunLog`: one pass-rate
table per slice, the drift outcome classes, version comparisons, the top failure types, the fault classes and the
captured output."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.report.captures import print_capture
from harness.report.drift import OUTCOME_LEGEND, outcome_tables
from harness.report.faults import print_clusters
from harness.report.flips import flip_tables, print_flips
from harness.report.runlog import RunLog, Shrunk
from harness.report.summary import LEGEND, flat, plural, slice_grids, summarize, top_failures

if TYPE_CHECKING:  # pandas loads when a table is built, not when the CLI starts
    import pandas as pd


def show_run(console: Console, log: RunLog) -> None:
    """Print the run's tables and findings, in the order ``eval`` always printed them."""
    records, parsers, modes = log.corpus_records, log.parsers, list(log.modes)
    title = f"{log.provenance.model}: passed/total"
    for table in pass_tables(summarize(records), parsers, list(log.slices), modes, title=title):
        console.print(table)
    console.print(LEGEND, markup=False, highlight=False)
    policy = log.provenance.judging_policy
    console.print(f"judging policy: --policy {policy.describe()}", markup=False, highlight=False)
    if log.provenance.unsupported:
        console.print(
            f"peer suites: {len(log.provenance.unsupported)} case(s) the harness cannot judge (reasons in report.md)",
            markup=False,
            highlight=False,
        )
    drift_tables = outcome_tables(records, parsers, policy)
    for table in drift_tables:
        console.print(table)
    if drift_tables:
        console.print(OUTCOME_LEGEND, markup=False, highlight=False)
    if log.limitations:
        fmt = log.provenance.format
        console.print(
            f"known limitations of the project's {fmt} parser: {len(log.limitations)} "
            f"(listed in report.md; the parser's limitations in parsers/own/{fmt}.py)",
            markup=False,
            highlight=False,
        )
    print_flips(console, flip_tables(records, parsers), modes)
    print_failures(console, top_failures(records, log.texts), log.shrunk)
    console.print(
        f"wrote {log.run_dir}/: report.md, summary.csv, results.jsonl, corpus.jsonl", markup=False, highlight=False
    )
    print_clusters(console, log.fault_classes)
    if log.capture_records or log.capture.get("stats"):
        print_capture(console, log.capture, log.capture_records, log.capture_texts)
    console.print(
        f"wrote {log.run_dir / 'report.html'}: plots and searchable failing cases (opens offline in a browser)",
        markup=False,
        highlight=False,
    )


def pass_tables(
    summary: pd.DataFrame, parsers: list[str], slices: list[str], modes: list[str], title: str = ""
) -> list[Table]:
    """Rich tables, one per corpus slice (so they fit a terminal): rows = parsers, columns = modes, cells
    ``passed/total`` ("-" where a mode does not apply to a parser)."""
    tables = []
    for slice_name, present, rows in slice_grids(summary, parsers, slices, modes):
        table = Table(title=f"{title} — {slice_name}" if title else slice_name, title_justify="left")
        table.add_column("parser", no_wrap=True)
        for mode in present:
            table.add_column(mode, justify="right", no_wrap=True)
        for parser, cells in rows:
            table.add_row(Text(parser), *cells)
        tables.append(table)
    return tables


def print_failures(console: Console, failures: dict[str, list[dict]], shrunk: tuple[Shrunk, ...]) -> None:
    """Print the top failure types per parser (:func:`harness.report.summary.top_failures`) with one shortest
    example each, and the parser's hypothesis-shrunk generated examples."""
    for parser, rows in failures.items():
        if not rows:
            console.print(f"{parser}: no failures", markup=False, highlight=False)
            continue
        console.print(f"{parser}: top failure types", markup=False, highlight=False)
        for row in rows:
            ex = row["example"]
            console.print(
                f"  {row['error_type']}: {plural(row['cases'], 'case')} ({row['records']} case×mode results, modes "
                f"{','.join(row['modes'])}); shortest {ex['case_id']} [{ex['mode']}]: {flat(ex['detail'])}"[:600],
                markup=False,
                highlight=False,
            )
            console.print(f"      text: {row['text']!r}"[:400], markup=False, highlight=False)
        for example in shrunk:
            if example.parser == parser:
                console.print(
                    f"  minimal generated example for {example.error_type} (hypothesis-shrunk): {example.text!r}"[:400],
                    markup=False,
                    highlight=False,
                )

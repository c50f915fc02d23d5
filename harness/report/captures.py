"""Captured output (records of ``capture:SUITE`` slices, scored on what a model wrote): the capture statistics,
the per-parser pass table, each parser's failure types and the answers the parsers read differently, as terminal
tables and Markdown."""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.core.results import PASSING
from harness.report.summary import flat

if TYPE_CHECKING:  # pandas loads when a table is built, not when the CLI starts
    import pandas as pd


def capture_grid(records: list[dict]) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The captured-output table: ``(columns, [(parser, cells)])``. Columns: one per suite (one-shot
    ``passed/total``), then ``all one-shot``, ``all pieces`` (streamed as generated) and ``server`` (a server's
    own parse in chat mode) where present. Capture errors count in every total."""
    import pandas as pd

    frame = pd.DataFrame(records, columns=["parser", "slice", "mode", "verdict"])
    suites = sorted(frame.slice.unique())
    parsers = list(dict.fromkeys(frame.parser))
    columns = [s.removeprefix("capture:") for s in suites] + ["all one-shot", "all pieces", "server"]
    errors = frame[frame["mode"] == "capture"]

    def count(rows: pd.DataFrame, extra: pd.DataFrame) -> str:
        if rows.empty:
            return "-"
        total = len(rows) + len(extra)
        return f"{int((rows.verdict == 'pass').sum())}/{total}"

    grid = []
    for parser in parsers:
        mine = frame[frame.parser == parser]
        server = parser.startswith("server:")
        cells = []
        for suite in suites:
            mode = "server" if server else "oneshot"
            cells.append(
                count(
                    mine[(mine.slice == suite) & (mine["mode"] == mode)],
                    errors[(errors.slice == suite) & (errors.parser == parser)],
                )
            )
        for mode in ("oneshot", "pieces", "server"):
            cells.append(count(mine[mine["mode"] == mode], errors[errors.parser == parser]))
        grid.append((parser, cells))
    keep = [i for i, _ in enumerate(columns) if any(cells[i] != "-" for _, cells in grid)]
    return [columns[i] for i in keep], [(p, [cells[i] for i in keep]) for p, cells in grid]


def stats_rows(info: dict) -> list[list[str]]:
    """Cells of the capture statistics table (:data:`STATS_HEADER`), one row per suite of ``info["stats"]``."""
    rows = []
    for row in info.get("stats", []):
        finish = ", ".join(f"{k} {v}" for k, v in sorted(row["finish"].items()))
        known = row["tokens"] > 0  # servers that send no usage leave the count unknown
        rows.append(
            [
                row["suite"],
                str(row["prompts"]),
                str(row["errors"]),
                f"{row['wrote_call']}/{row['prompts'] - row['errors']}",
                finish,
                str(row["tokens"]) if known else "-",
                f"{row['tokens_per_s']}" if known else "-",
            ]
        )
    return rows


STATS_HEADER = [
    "suite",
    "prompts",
    "capture errors",
    "wrote a call marker",
    "finish",
    "tokens",
    "tokens/s (prompt included)",
]


def capture_title(info: dict) -> str:
    model = info.get("model", {})
    where = model.get("file", "") if model else ", ".join(info.get("files", []))
    return f"captured output — {info['backend']} {where}" + (
        " (forced reference answers)" if info.get("forced") else ""
    )


def capture_failures(records: list[dict]) -> dict[str, list[tuple[str, int, dict]]]:
    """Per parser, its one-shot failure types on captured answers, most frequent first:
    ``{parser: [(error type, count, first record)]}``."""
    out: dict[str, list] = {}
    for parser in dict.fromkeys(r["parser"] for r in records):
        failed = [
            r
            for r in records
            if r["parser"] == parser and r["mode"] in ("oneshot", "server") and r["verdict"] not in PASSING
        ]
        counts = Counter(r["error_type"] or r["verdict"] for r in failed)
        out[parser] = [
            (kind, n, next(r for r in failed if (r["error_type"] or r["verdict"]) == kind))
            for kind, n in counts.most_common()
        ]
    return out


def _reading(record: dict) -> str:
    got = record.get("got")
    if got is None:
        return f"{record['verdict']}: {record['error_type']}"
    calls = [(c.get("name"), c.get("arguments")) for c in got.get("tool_calls") or []]
    return json.dumps(
        {"calls": calls, "content": (got.get("content") or "").strip()}, ensure_ascii=False, sort_keys=True
    )


def capture_disagreements(records: list[dict]) -> list[tuple[str, dict[str, list[str]]]]:
    """Captured answers the parsers read differently one-shot (the differential view, independent of what
    the prompt expected): ``[(prompt id, {reading: [parsers]})]`` where a reading is the calls and content a
    parser returned, or its error."""
    by_prompt: dict[str, dict[str, list[str]]] = {}
    for r in records:
        if r["mode"] == "oneshot":
            by_prompt.setdefault(r["case_id"], {}).setdefault(_reading(r), []).append(r["parser"])
    return [(pid, readings) for pid, readings in by_prompt.items() if len(readings) > 1]


def print_capture(console: Console, info: dict, records: list[dict], texts: dict | None = None) -> None:
    """Print the capture statistics (how often the model wrote a call at all), the per-parser pass table on
    the captured answers, each parser's failure types, and the answers the parsers read differently."""
    stats = Table(title=capture_title(info), title_justify="left")
    for name in STATS_HEADER:
        stats.add_column(name, justify="left" if name in ("suite", "finish") else "right")
    for row in stats_rows(info):
        stats.add_row(*row)
    console.print(stats)
    columns, grid = capture_grid(records)
    if not columns:
        console.print("no capture succeeded: there is nothing to score")
        return
    table = Table(
        title="parsers on captured output: passed/total (capture errors count as failures)", title_justify="left"
    )
    table.add_column("parser", no_wrap=True)
    for column in columns:
        table.add_column(column, justify="right", no_wrap=True)
    for parser, cells in grid:
        table.add_row(Text(parser), *cells)
    console.print(table)
    for parser, kinds in capture_failures(records).items():
        if kinds:
            console.print(
                f"{parser} on captured output: "
                + ", ".join(f"{k} {n}" for k, n, _ in kinds)
                + f" — e.g. {kinds[0][2]['case_id']}: {flat(kinds[0][2]['detail'])}",
                markup=False,
                highlight=False,
            )
    differ = capture_disagreements(records)
    console.print(
        f"parsers read {len(differ)} of {len({r['case_id'] for r in records})} captured answers differently (one-shot)",
        markup=False,
        highlight=False,
    )
    for pid, readings in differ[:3]:
        console.print(f"  {pid}: {flat((texts or {}).get(pid) or '')[:160]!r}", markup=False, highlight=False)
        for reading, parsers in readings.items():
            console.print(f"    {', '.join(parsers)}: {reading[:150]}", markup=False, highlight=False)


def capture_markdown(info: dict, records: list[dict], texts: dict | None = None) -> str:
    """The captured-output section of ``report.md`` (statistics, pass table, failure types, answers the parsers
    read differently, provenance of the capture), starting with a newline."""
    columns, grid = capture_grid(records)
    lines = [
        "",
        f"## {capture_title(info)}",
        "",
        "| " + " | ".join(STATS_HEADER) + " |",
        "|" + "---|" * len(STATS_HEADER),
    ]
    lines += ["| " + " | ".join(row) + " |" for row in stats_rows(info)]
    if columns:
        lines += ["", "| parser | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
        lines += [f"| `{parser}` | " + " | ".join(cells) + " |" for parser, cells in grid]
    else:
        lines += ["", "No capture succeeded: there is nothing to score."]
    lines += ["", "### Failure types on captured output (one-shot)", ""]
    for parser, kinds in capture_failures(records).items():
        lines.append(
            f"- `{parser}`: "
            + (", ".join(f"{k} {n} (e.g. `{r['case_id']}`: {flat(r['detail'])})" for k, n, r in kinds) or "no failures")
        )
    differ = capture_disagreements(records)
    lines += ["", f"### Answers the parsers read differently ({len(differ)})", ""]
    for pid, readings in differ:
        lines += [f"- `{pid}`: `{flat((texts or {}).get(pid) or '')[:300]}`"]
        lines += [
            f"  - {', '.join(f'`{p}`' for p in parsers)}: `{reading[:300]}`" for reading, parsers in readings.items()
        ]
    model = info.get("model") or {}
    lines += [
        "",
        f"- backend: {info['backend']} {json.dumps(info.get('versions', {}))}; options "
        f"{json.dumps(info.get('options', {}))}",
        f"- model: {model.get('file', '-')} ({model.get('source', '-')}), sha256 {model.get('sha256', '-')}",
        f"- sampling: {json.dumps(info.get('sampling', {}))}; suites: {', '.join(info.get('suites', []))}",
        f"- capture file: {info.get('file') or ', '.join(info.get('files', []))} "
        f"({info.get('generated', 0)} generated now, {info.get('reused', 0)} reused)",
        "",
    ]
    return "\n".join(lines)

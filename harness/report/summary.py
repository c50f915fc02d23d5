"""Counts and texts every report shares: verdict counts per (parser, slice, mode) and ``summary.csv``, the cells
``passed/total``, the failing curated and observed cases, the top failure types, and one-line texts. Counts are
of the records' verdicts; nothing here judges a parser's output."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from harness.core.results import PASSING
from harness.core.textio import open_text
from harness.report.runlog import VERDICTS, RunLog

if TYPE_CHECKING:  # pandas loads when a table is built, not when the CLI starts
    import pandas as pd

COUNT_COLUMNS = ("passed", "soft", "failed", "surfaced", "errors", "total")


def summarize(records: list[dict]) -> pd.DataFrame:
    """Counts per (parser, slice, mode): columns ``parser, slice, mode, passed, soft, failed, surfaced, errors,
    total``; ``passed`` counts every passing verdict (``pass`` and ``soft_pass``), ``soft`` the soft passes."""
    import pandas as pd

    frame = pd.DataFrame(records, columns=["parser", "slice", "mode", "verdict"])
    if frame.empty:
        return pd.DataFrame(columns=["parser", "slice", "mode", *COUNT_COLUMNS])
    counts = pd.crosstab([frame.parser, frame.slice, frame["mode"]], frame.verdict)
    for verdict in VERDICTS:
        if verdict not in counts:
            counts[verdict] = 0
    out = counts.rename(columns={"soft_pass": "soft", "fail": "failed", "error": "errors"})
    out["passed"] = out["pass"] + out["soft"]
    out["total"] = out[["passed", "failed", "surfaced", "errors"]].sum(axis=1)
    return out[list(COUNT_COLUMNS)].reset_index()


def cell(row) -> str:
    """``passed/total``, soft passes noted as ``(N soft)`` and surfaced drift cases as ``+N surfaced``."""
    text = f"{int(row.passed)}/{int(row.total)}"
    if row.soft:
        text += f" ({int(row.soft)} soft)"
    if row.surfaced:
        text += f" +{int(row.surfaced)} surfaced"
    return text


def slice_grids(summary: pd.DataFrame, parsers: list[str], slices: list[str], modes: list[str]):
    """Per slice that has results: ``(slice, modes present, [(parser, [cell per mode])])``."""
    for slice_name in slices:
        present = [m for m in modes if ((summary.slice == slice_name) & (summary["mode"] == m)).any()]
        if present:
            rows = [(parser, [_cell_for(summary, parser, slice_name, m) for m in present]) for parser in parsers]
            yield slice_name, present, rows


def _cell_for(summary: pd.DataFrame, parser: str, slice_name: str, mode: str) -> str:
    hit = summary[(summary.parser == parser) & (summary.slice == slice_name) & (summary["mode"] == mode)]
    return cell(hit.iloc[0]) if len(hit) else "-"


def failing_cases(records: list[dict], slices: tuple[str, ...] = ("curated", "observed")) -> dict[str, list[dict]]:
    """Per parser, every case of ``slices`` that did not pass in some mode: ``{parser: [{"case_id", "tags",
    "verdict", "error_type", "detail", "modes"}]}`` (one-shot result preferred as the representative)."""
    out: dict[str, dict[str, dict]] = {}
    for r in records:
        if r["slice"] not in slices or r["verdict"] in PASSING:
            continue
        rows = out.setdefault(r["parser"], {})
        row = rows.get(r["case_id"])
        if row is None or (r["mode"] == "oneshot" and row["mode"] != "oneshot"):
            rows[r["case_id"]] = row = {
                **{k: r[k] for k in ("case_id", "tags", "verdict", "error_type", "detail", "mode")},
                "modes": (row or {}).get("modes", []),
            }
        row["modes"].append(r["mode"])
    return {parser: list(rows.values()) for parser, rows in out.items()}


def top_failures(records: list[dict], texts: dict[str, str], limit: int = 5) -> dict[str, list[dict]]:
    """Per parser: the ``limit`` error types failing the most cases, each with the shortest example.

    ``cases`` counts distinct failing cases, ``records`` the (case, mode) rows (error types failing as many
    cases in the order the records first show them); the example is the shortest failing text, one-shot
    preferred. Returns ``{parser: [{"error_type", "cases", "records", "modes",
    "example": record, "text": case text}]}``.
    """
    out: dict[str, list[dict]] = {}
    failing = [r for r in records if r["verdict"] in ("fail", "error")]
    for parser in dict.fromkeys(r["parser"] for r in records):
        mine = [r for r in failing if r["parser"] == parser]
        # distinct (error type, case) pairs in record order: error types failing as many cases keep that order
        cases = Counter(error_type for error_type, _ in dict.fromkeys((r["error_type"], r["case_id"]) for r in mine))
        rows = []
        for error_type, count in cases.most_common(limit):
            hits = [r for r in mine if r["error_type"] == error_type]
            example = min(hits, key=lambda r: (r["text_len"], r["mode"] != "oneshot", r["case_id"], r["mode"]))
            rows.append(
                {
                    "error_type": error_type,
                    "cases": count,
                    "records": len(hits),
                    "modes": sorted({r["mode"] for r in hits}),
                    "example": example,
                    "text": texts.get(example["case_id"], ""),
                }
            )
        out[parser] = rows
    return out


LEGEND = (
    "cells: passed/total cases; (N soft): passes that differ from the expected message only in whitespace "
    "around content or reasoning (whitespace=soft-v1); +N surfaced: observed field outputs where the parser made "
    "no call and kept the raw text in content (counted apart from passes and failures; in the drift slice an "
    "allowed surfaced outcome is a pass); "
    "-: mode not applicable (prefix: own parser only). oneshot = parse(); whole/char/random/tokens/prefix "
    "= streaming chunkings."
)


def flat(text: str) -> str:
    """One display line: newlines inside a detail (multi-line exception messages) become `` ⏎ ``."""
    return " ⏎ ".join(part.strip() for part in str(text).splitlines() if part.strip())


def write_summary_csv(log: RunLog, path: Path) -> None:
    """``summary.csv``: :func:`summarize` of every record of the run (captured output included)."""
    with open_text(path) as out:
        summarize(log.records).to_csv(out, index=False)


def got_text(record: dict) -> str:
    if record["got"] is None:
        return f"raised ({record['error_type']})"
    return f"`{one_line(record['got'])}`"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def one_line(value) -> str:
    return json.dumps(value, ensure_ascii=False).replace("`", "'")

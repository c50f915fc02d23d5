"""Tables and report files from run records: the terminal pass-rate table, ``summary.csv`` and
``report.md`` (with the provenance block: template source and sha256, library versions, seeds)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.table import Table

COUNT_COLUMNS = ("passed", "failed", "surfaced", "errors", "total")


def summarize(records: list[dict]) -> pd.DataFrame:
    """Counts per (parser, slice, mode): columns ``parser, slice, mode, passed, failed, surfaced, errors, total``."""
    frame = pd.DataFrame(records, columns=["parser", "slice", "mode", "verdict"])
    if frame.empty:
        return pd.DataFrame(columns=["parser", "slice", "mode", *COUNT_COLUMNS])
    counts = pd.crosstab([frame.parser, frame.slice, frame["mode"]], frame.verdict)
    for verdict in ("pass", "fail", "surfaced", "error"):
        if verdict not in counts:
            counts[verdict] = 0
    out = counts.rename(columns={"pass": "passed", "fail": "failed", "error": "errors"})
    out["total"] = out[["passed", "failed", "surfaced", "errors"]].sum(axis=1)
    return out[list(COUNT_COLUMNS)].reset_index()


def cell(row) -> str:
    """``passed/total``, with surfaced drift cases noted as ``+N surfaced``."""
    text = f"{int(row.passed)}/{int(row.total)}"
    if row.surfaced:
        text += f" +{int(row.surfaced)}s"
    return text


def pass_tables(summary: pd.DataFrame, parsers: list[str], slices: list[str], modes: list[str],
                title: str = "") -> list[Table]:
    """Rich tables, one per corpus slice (so they fit a terminal): rows = parsers, columns = modes, cells
    ``passed/total`` ("-" where a mode does not apply to a parser)."""
    tables = []
    for slice_name in slices:
        present = [m for m in modes if ((summary.slice == slice_name) & (summary["mode"] == m)).any()]
        if not present:
            continue
        table = Table(title=f"{title} — {slice_name}" if title else slice_name, title_justify="left")
        table.add_column("parser", no_wrap=True)
        for mode in present:
            table.add_column(mode, justify="right", no_wrap=True)
        for parser in parsers:
            table.add_row(parser, *(_cell_for(summary, parser, slice_name, m) for m in present))
        tables.append(table)
    return tables


def _cell_for(summary: pd.DataFrame, parser: str, slice_name: str, mode: str) -> str:
    hit = summary[(summary.parser == parser) & (summary.slice == slice_name) & (summary["mode"] == mode)]
    return cell(hit.iloc[0]) if len(hit) else "-"


def markdown_table(summary: pd.DataFrame, parsers: list[str], slices: list[str], modes: list[str]) -> str:
    """One GitHub Markdown table: rows = parsers, columns = slice × mode, cells ``passed/total``."""
    columns = [(s, m) for s in slices for m in modes
               if ((summary.slice == s) & (summary["mode"] == m)).any()]
    lines = ["| parser | " + " | ".join(f"{s} {m}" for s, m in columns) + " |",
             "|---|" + "---:|" * len(columns)]
    for parser in parsers:
        cells = [_cell_for(summary, parser, s, m) for s, m in columns]
        lines.append(f"| `{parser}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def top_failures(records: list[dict], texts: dict[str, str], limit: int = 5) -> dict[str, list[dict]]:
    """Per parser: the ``limit`` error types failing the most cases, each with the shortest example.

    ``cases`` counts distinct failing cases, ``records`` the (case, mode) rows; the example is the shortest
    failing text, one-shot preferred. Returns ``{parser: [{"error_type", "cases", "records", "modes",
    "example": record, "text": case text}]}``.
    """
    out: dict[str, list[dict]] = {}
    failing = [r for r in records if r["verdict"] in ("fail", "error")]
    for parser in dict.fromkeys(r["parser"] for r in records):
        mine = [r for r in failing if r["parser"] == parser]
        cases = Counter()
        for error_type, case_id in {(r["error_type"], r["case_id"]) for r in mine}:
            cases[error_type] += 1
        rows = []
        for error_type, count in cases.most_common(limit):
            hits = [r for r in mine if r["error_type"] == error_type]
            example = min(hits, key=lambda r: (r["text_len"], r["mode"] != "oneshot", r["case_id"], r["mode"]))
            rows.append({"error_type": error_type, "cases": count, "records": len(hits),
                         "modes": sorted({r["mode"] for r in hits}), "example": example,
                         "text": texts.get(example["case_id"], "")})
        out[parser] = rows
    return out


LEGEND = ("cells: passed/total cases; +Ns: drift cases surfaced (no call, raw text kept in content); "
          "-: mode not applicable (prefix: own parser only). oneshot = parse(); whole/char/random/tokens/prefix "
          "= streaming chunkings.")


def flat(text: str) -> str:
    """One display line: newlines inside a detail (multi-line exception messages) become `` ⏎ ``."""
    return " ⏎ ".join(part.strip() for part in str(text).splitlines() if part.strip())


def print_failures(console: Console, failures: dict[str, list[dict]], shrunk: dict) -> None:
    """Print the top failure types per parser with one shortest example each."""
    for parser, rows in failures.items():
        if not rows:
            console.print(f"{parser}: no failures", markup=False, highlight=False)
            continue
        console.print(f"{parser}: top failure types", markup=False, highlight=False)
        for row in rows:
            ex = row["example"]
            console.print(f"  {row['error_type']}: {row['cases']} cases ({row['records']} case×mode results, modes "
                          f"{','.join(row['modes'])}); shortest {ex['case_id']} [{ex['mode']}]: {flat(ex['detail'])}"[:600],
                          markup=False, highlight=False)
            console.print(f"      text: {row['text']!r}"[:400], markup=False, highlight=False)
        for (p, error_type), example in shrunk.items():
            if p == parser:
                console.print(f"  minimal generated example for {error_type} (hypothesis-shrunk): {example['text']!r}"[:400],
                              markup=False, highlight=False)


def write_summary_csv(summary: pd.DataFrame, path: Path) -> None:
    summary.to_csv(path, index=False)


def write_report_md(path: Path, info: dict, summary: pd.DataFrame, failures: dict, shrunk: dict,
                    parsers: list[str], slices: list[str], modes: list[str]) -> None:
    """Write ``report.md``: table, top failures with shortest examples, minimal generated examples,
    provenance (template source/file/sha256 and fallback note, tokenizer, library versions, seeds)."""
    t = info["template"]
    lines = [f"# Tool-call parser evaluation: {info['model']} ({info['format']})", "",
             f"Run `{info['run_id']}`, {info['started']}, {info['duration_s']:.1f} s.", "",
             LEGEND, "",
             markdown_table(summary, parsers, slices, modes), "", "## Top failure types", ""]
    for parser, rows in failures.items():
        lines.append(f"### `{parser}`")
        lines.append("")
        if not rows:
            lines += ["No failures.", ""]
        for row in rows:
            ex = row["example"]
            lines += [f"- **{row['error_type']}**: {row['cases']} cases ({row['records']} case×mode results; modes "
                      f"{', '.join(row['modes'])}) — shortest: `{ex['case_id']}` ({ex['mode']}): {flat(ex['detail'])}",
                      "", "  ```text", "  " + row["text"].replace("\n", "\n  "), "  ```",
                      f"  got: `{_one_line(ex['got'])}`", ""]
        for (p, error_type), example in shrunk.items():
            if p == parser:
                lines += [f"- minimal generated example for **{error_type}** (hypothesis-shrunk, seed {example['seed']}):",
                          "", "  ```text", "  " + example["text"].replace("\n", "\n  "), "  ```",
                          f"  expected: `{_one_line(example['expected'])}`", f"  got: `{_one_line(example['got'])}`", ""]
    lines += ["## Provenance", "",
              f"- template: source **{t['source']}**, file `{t['file']}`, location `{t['location']}`, sha256 `{t['sha256']}`"]
    if t.get("fallback"):
        lines.append(f"- **fallback template used**: {t.get('fallback_note', '')}")
    for attempt in t.get("attempts", []):
        lines.append(f"  - tried {attempt['source']}: {attempt['error']}")
    if info.get("tokenizer"):
        lines.append(f"- tokenizer: {_one_line(info['tokenizer'])}")
    lines.append("- libraries: " + ", ".join(f"{k} {v}" for k, v in info["versions"].items()))
    lines.append(f"- parsers: " + ", ".join(f"`{p}`" for p in parsers))
    lines.append(f"- seeds: {_one_line(info['seeds'])}")
    lines.append(f"- corpus: {_one_line(info['corpus'])}")
    for case_id, reason in info.get("skipped", []):
        lines.append(f"  - skipped `{case_id}`: {reason}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _one_line(value) -> str:
    import json

    return json.dumps(value, ensure_ascii=False).replace("`", "'")

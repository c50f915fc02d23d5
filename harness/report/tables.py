"""Tables and report files from run records: the terminal pass-rate table, ``summary.csv`` and
``report.md`` (with the provenance block: template source and sha256, library versions, seeds)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.core.results import clip

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
        text += f" +{int(row.surfaced)} surfaced"
    return text


def _slice_grids(summary: pd.DataFrame, parsers: list[str], slices: list[str], modes: list[str]):
    """Per slice that has results: ``(slice, modes present, [(parser, [cell per mode])])``."""
    for slice_name in slices:
        present = [m for m in modes if ((summary.slice == slice_name) & (summary["mode"] == m)).any()]
        if present:
            rows = [(parser, [_cell_for(summary, parser, slice_name, m) for m in present]) for parser in parsers]
            yield slice_name, present, rows


def _cell_for(summary: pd.DataFrame, parser: str, slice_name: str, mode: str) -> str:
    hit = summary[(summary.parser == parser) & (summary.slice == slice_name) & (summary["mode"] == mode)]
    return cell(hit.iloc[0]) if len(hit) else "-"


def pass_tables(
    summary: pd.DataFrame, parsers: list[str], slices: list[str], modes: list[str], title: str = ""
) -> list[Table]:
    """Rich tables, one per corpus slice (so they fit a terminal): rows = parsers, columns = modes, cells
    ``passed/total`` ("-" where a mode does not apply to a parser)."""
    tables = []
    for slice_name, present, rows in _slice_grids(summary, parsers, slices, modes):
        table = Table(title=f"{title} — {slice_name}" if title else slice_name, title_justify="left")
        table.add_column("parser", no_wrap=True)
        for mode in present:
            table.add_column(mode, justify="right", no_wrap=True)
        for parser, cells in rows:
            table.add_row(Text(parser), *cells)
        tables.append(table)
    return tables


def markdown_tables(summary: pd.DataFrame, parsers: list[str], slices: list[str], modes: list[str]) -> str:
    """The tables of :func:`pass_tables` as GitHub Markdown, one per slice (narrow enough to paste)."""
    blocks = []
    for slice_name, present, rows in _slice_grids(summary, parsers, slices, modes):
        lines = [f"**{slice_name}**", "", "| parser | " + " | ".join(present) + " |", "|---|" + "---:|" * len(present)]
        lines += [f"| `{parser}` | " + " | ".join(cells) + " |" for parser, cells in rows]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def failing_cases(records: list[dict], slices: tuple[str, ...] = ("curated", "observed")) -> dict[str, list[dict]]:
    """Per parser, every case of ``slices`` that did not pass in some mode: ``{parser: [{"case_id", "tags",
    "verdict", "error_type", "detail", "modes"}]}`` (one-shot result preferred as the representative)."""
    out: dict[str, dict[str, dict]] = {}
    for r in records:
        if r["slice"] not in slices or r["verdict"] == "pass":
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
    "cells: passed/total cases; +N surfaced: observed field outputs where the parser made no call and kept the "
    "raw text in content (counted apart from passes and failures; in the drift slice an allowed surfaced "
    "outcome is a pass); "
    "-: mode not applicable (prefix: own parser only). oneshot = parse(); whole/char/random/tokens/prefix "
    "= streaming chunkings."
)


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
            console.print(
                f"  {row['error_type']}: {_plural(row['cases'], 'case')} ({row['records']} case×mode results, modes "
                f"{','.join(row['modes'])}); shortest {ex['case_id']} [{ex['mode']}]: {flat(ex['detail'])}"[:600],
                markup=False,
                highlight=False,
            )
            console.print(f"      text: {row['text']!r}"[:400], markup=False, highlight=False)
        for (p, error_type), example in shrunk.items():
            if p == parser:
                console.print(
                    f"  minimal generated example for {error_type} (hypothesis-shrunk): {example['text']!r}"[:400],
                    markup=False,
                    highlight=False,
                )


def write_summary_csv(summary: pd.DataFrame, path: Path) -> None:
    summary.to_csv(path, index=False)


def write_report_md(
    path: Path,
    info: dict,
    summary: pd.DataFrame,
    failures: dict,
    shrunk: dict,
    parsers: list[str],
    slices: list[str],
    modes: list[str],
    cases: dict[str, list[dict]],
    comparisons: list | None = None,
) -> None:
    """Write ``report.md``: the tables, top failure types with shortest examples and hypothesis-shrunk minimal
    generated examples, every failing curated/observed case (``cases``, from :func:`failing_cases`), and the
    provenance (template source/file/sha256 and fallback note, tokenizer, harness commit, library versions,
    seeds, corpus)."""
    lines = [
        f"# Tool-call parser evaluation: {info['model']} ({info['format']})",
        "",
        f"Run `{info['run_id']}`, started {info['started']}, {info['duration_s']:.1f} s.",
        "",
        LEGEND,
        "",
        markdown_tables(summary, parsers, slices, modes),
        "",
    ]
    if comparisons:
        lines += [
            "## Version comparison",
            "",
            "Cases whose verdict changed between two versions of one library: fixed (old failed, new passes) "
            "and broken (old passed, new fails).",
            "",
        ] + flips_markdown(comparisons, modes)
    lines += ["## Top failure types", ""]
    for parser, rows in failures.items():
        lines += [f"### `{parser}`", ""]
        if not rows:
            lines += ["No failures.", ""]
        for row in rows:
            ex = row["example"]
            lines += [
                f"- **{row['error_type']}**: {_plural(row['cases'], 'case')} ({row['records']} case×mode results; "
                f"modes {', '.join(row['modes'])}) — shortest: `{ex['case_id']}` ({ex['mode']}): {flat(ex['detail'])}",
                "",
                "  ```text",
                "  " + row["text"].replace("\n", "\n  "),
                "  ```",
                f"  got: {_got(ex)}",
                "",
            ]
        for (p, error_type), example in shrunk.items():
            if p == parser:
                lines += [
                    f"- minimal generated example for **{error_type}** (hypothesis-shrunk, seed {example['seed']}):",
                    "",
                    "  ```text",
                    "  " + example["text"].replace("\n", "\n  "),
                    "  ```",
                    f"  expected: `{_one_line(example['expected'])}`",
                    f"  got: {'`' + _one_line(example['got']) + '`' if example['got'] else 'raised'}",
                    "",
                ]
    lines += [
        "## Curated and observed cases that did not pass",
        "",
        "One line per case: the one-shot result where it failed, else the first failing mode.",
        "",
    ]
    for parser in parsers:
        rows = cases.get(parser, [])
        lines += [f"### `{parser}` ({_plural(len(rows), 'case')})", ""]
        for row in rows:
            what = row["error_type"] or row["verdict"]
            lines.append(
                f"- `{row['case_id']}` ({', '.join(row['tags'][:3]) or 'observed'}) — **{what}** in "
                f"{', '.join(row['modes'])}: {flat(row['detail'])}"
            )
        lines.append("")
    if info.get("limitations"):
        lines += (
            [
                f"## Known limitations of the project's {info['format']} parser",
                "",
                f"As stated in `parsers/{info['format']}.py`; cases that hit them fail above, they are not "
                f"filtered out.",
                "",
            ]
            + [f"- {item}" for item in info["limitations"]]
            + [""]
        )
    lines += ["## Provenance", ""] + provenance_lines(info, parsers)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def provenance_lines(info: dict, parsers: list[str]) -> list[str]:
    """Markdown bullet lines: template, tokenizer, harness commit, libraries, parsers, seeds, corpus."""
    t = info["template"]
    lines = [
        f"- template: source **{t['source']}**, file `{t['file']}`, location `{t['location']}`, sha256 `{t['sha256']}`"
    ]
    if t.get("fallback"):
        lines.append(f"- **fallback template used**: {t.get('fallback_note', '')}")
    tok = info.get("tokenizer")
    if tok:
        lines.append(
            f"- tokenizer: `{tok.get('file')}` ({tok.get('source')}), sha256 `{tok.get('sha256')}`, "
            f"{tok.get('vocab_size')} tokens, {tok.get('library')}"
        )
    lines.append(f"- harness: {info.get('commit', 'unknown commit')}")
    lines.append("- libraries: " + ", ".join(f"{k} {v}" for k, v in info["versions"].items()))
    lines.append("- parsers: " + ", ".join(f"`{p}`" for p in parsers))
    for name, reason in info.get("unavailable", {}).items():
        lines.append(f"  - `{name}` could not run: {flat(reason)}")
    for name, worker in info.get("workers", {}).items():
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
    lines.append("- seeds: " + ", ".join(f"{k} {v}" for k, v in info["seeds"].items()))
    lines.append("- corpus: " + ", ".join(f"{k} {v}" for k, v in info["corpus"].items()) + " cases")
    for case_id, reason in info.get("skipped", []):
        lines.append(f"  - skipped `{case_id}`: {reason}")
    return lines


def _got(record: dict) -> str:
    if record["got"] is None:
        return f"raised ({record['error_type']})"
    return f"`{_one_line(record['got'])}`"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _one_line(value) -> str:
    return json.dumps(value, ensure_ascii=False).replace("`", "'")


def version_pairs(parsers: list[str]) -> list[tuple[str, str]]:
    """``(older, newer)`` pairs of parsers that are one library and format at two versions, consecutive by
    version (``mlx-lm==0.32.0:gemma4`` → ``mlx-lm==0.32.2:gemma4``), from names ``library==version:format``."""
    from packaging.version import InvalidVersion, Version

    groups: dict[tuple[str, str], list[tuple[object, str]]] = {}
    for name in parsers:
        library, sep, rest = name.partition("==")
        version, _, fmt = rest.partition(":")
        if not sep or not version:
            continue
        try:
            key = Version(version)
        except InvalidVersion:
            key = version
        groups.setdefault((library, fmt), []).append((key, name))
    pairs = []
    for members in groups.values():
        try:
            members.sort()
        except TypeError:  # mixed valid and invalid version strings: keep the order given
            pass
        pairs += [(a[1], b[1]) for a, b in zip(members, members[1:], strict=False)]
    return pairs


def flips(records: list[dict], old: str, new: str) -> dict:
    """Per (case, mode), where ``old`` and ``new`` disagree on passing.

    Returns ``{"fixed": [...], "broken": [...], "modes": {mode: {"fixed": n, "broken": n, "old": passed,
    "new": passed, "total": n}}}``; each listed flip is ``{case_id, slice, mode, old, new}`` with the verdict
    or error type and detail of each side."""
    by_key: dict[tuple[str, str], dict[str, dict]] = {}
    for r in records:
        if r["parser"] in (old, new):
            by_key.setdefault((r["case_id"], r["mode"]), {})[r["parser"]] = r
    out = {"fixed": [], "broken": [], "modes": {}}
    for (case_id, mode), pair in by_key.items():
        if old not in pair or new not in pair:
            continue
        a, b = pair[old], pair[new]
        stats = out["modes"].setdefault(mode, {"fixed": 0, "broken": 0, "old": 0, "new": 0, "total": 0})
        stats["total"] += 1
        stats["old"] += a["verdict"] == "pass"
        stats["new"] += b["verdict"] == "pass"
        if (a["verdict"] == "pass") == (b["verdict"] == "pass"):
            continue
        kind = "fixed" if b["verdict"] == "pass" else "broken"
        stats[kind] += 1
        out[kind].append(
            {"case_id": case_id, "slice": a["slice"], "mode": mode, "old": _outcome(a), "new": _outcome(b)}
        )
    return out


def group_flips(rows: list[dict]) -> list[dict]:
    """Flipped records grouped by case: ``[{case_id, slice, modes, old, new}]`` (outcomes of the first mode)."""
    grouped: dict[str, dict] = {}
    for row in rows:
        entry = grouped.setdefault(row["case_id"], {**row, "modes": []})
        entry["modes"].append(row["mode"])
    return list(grouped.values())


def _outcome(record: dict) -> str:
    if record["verdict"] == "pass":
        return "pass"
    return f"{record['error_type'] or record['verdict']}: {flat(record['detail'])}"


def flip_tables(records: list[dict], parsers: list[str]) -> list[tuple[str, str, dict]]:
    """``(old, new, flips)`` for every version pair among ``parsers`` (see :func:`version_pairs`)."""
    return [(old, new, flips(records, old, new)) for old, new in version_pairs(parsers)]


def print_flips(console: Console, comparisons: list[tuple[str, str, dict]], modes: list[str], limit: int = 10) -> None:
    """Side-by-side pass counts per mode for each version pair, then the flipped cases (first ``limit``)."""
    for old, new, result in comparisons:
        table = Table(title=Text(f"{old} → {new}\npassed (all slices), fixed / broken"), title_justify="left")
        table.add_column("mode")
        for label in ("old", "new", "fixed", "broken"):
            table.add_column(label, justify="right")
        for mode in modes:
            s = result["modes"].get(mode)
            if s:
                table.add_row(
                    mode, f"{s['old']}/{s['total']}", f"{s['new']}/{s['total']}", str(s["fixed"]), str(s["broken"])
                )
        console.print(table)
        for kind in ("fixed", "broken"):
            cases = group_flips(result[kind])
            if cases:
                console.print(
                    f"{kind}: {_plural(len(cases), 'case')} ({len(result[kind])} case×mode results)", highlight=False
                )
            for row in cases[:limit]:
                other = row["old"] if kind == "fixed" else row["new"]
                console.print(
                    f"  {row['case_id']} [{','.join(row['modes'])}]: {clip(other, 160)}", markup=False, highlight=False
                )
            if len(cases) > limit:
                console.print(f"  … {len(cases) - limit} more cases in report.md", highlight=False)


def flips_markdown(comparisons: list[tuple[str, str, dict]], modes: list[str]) -> list[str]:
    """Markdown lines for the version comparisons: the per-mode table and every flipped case."""
    lines: list[str] = []
    for old, new, result in comparisons:
        lines += [
            f"### `{old}` → `{new}`",
            "",
            "| mode | old passed | new passed | fixed | broken |",
            "|---|---:|---:|---:|---:|",
        ]
        for mode in modes:
            s = result["modes"].get(mode)
            if s:
                lines.append(
                    f"| {mode} | {s['old']}/{s['total']} | {s['new']}/{s['total']} | {s['fixed']} | {s['broken']} |"
                )
        lines.append("")
        for kind in ("fixed", "broken"):
            cases = group_flips(result[kind])
            lines += [f"**{kind}**: {_plural(len(cases), 'case')} ({len(result[kind])} case×mode results)", ""]
            for row in cases:
                lines.append(
                    f"- `{row['case_id']}` ({row['slice']}; {', '.join(row['modes'])}): old "
                    f"{clip(row['old'], 300)} → new {clip(row['new'], 300)}"
                )
            lines.append("")
    return lines


# --- drift slice: outcome classes --------------------------------------------------------------------------

OUTCOME_LETTERS = {"recovered": "R", "surfaced": "S", "dropped": "D", "leaked": "L", "wrong": "W", "error": "E"}
OUTCOME_LEGEND = (
    "drift slice (curated cases mutated as models and servers deviate, harness/corpus/drift.py), one-shot: "
    "R recovered (the intended calls), S surfaced (no call, the damaged text kept in content), "
    "D dropped (text lost), L leaked (markers left in content), W wrong (another call), E error; "
    "ok = cases whose class the mutator allows (mutators allow R and/or S)."
)


def drift_outcomes(records: list[dict]) -> pd.DataFrame:
    """One row per drift record that has an outcome: columns ``parser, case_id, mode, mutator, outcome,
    verdict, detail`` (mutator from the ``mutator:NAME`` tag)."""
    rows = [
        {
            "parser": r["parser"],
            "case_id": r["case_id"],
            "mode": r["mode"],
            "outcome": r["outcome"],
            "verdict": r["verdict"],
            "detail": r["detail"],
            "mutator": next((t.removeprefix("mutator:") for t in r.get("tags") or [] if t.startswith("mutator:")), "?"),
        }
        for r in records
        if r.get("slice") == "drift" and r.get("outcome")
    ]
    return pd.DataFrame(rows, columns=["parser", "case_id", "mode", "mutator", "outcome", "verdict", "detail"])


def _allowed(mutator: str) -> str:
    from harness.corpus.drift import get_mutator

    try:
        return "/".join(OUTCOME_LETTERS[o] for o in get_mutator(mutator).outcomes)
    except KeyError:
        return "?"


def _outcome_cell(rows: pd.DataFrame) -> str:
    if rows.empty:
        return "-"
    counts = rows.outcome.value_counts()
    letters = " ".join(f"{OUTCOME_LETTERS.get(o, o)}{counts[o]}" for o in OUTCOME_LETTERS if o in counts)
    return f"{int((rows.verdict == 'pass').sum())}/{len(rows)} {letters}"


def outcome_grids(records: list[dict], parsers: list[str]):
    """``(per_parser, per_mutator)`` for the drift slice, or ``None`` without drift records.

    ``per_parser``: ``(columns, [(parser, cells)])`` with one-shot counts per outcome class, ``ok`` and
    ``stream≠oneshot`` (drift cases where some streaming mode's class differs from the one-shot class);
    ``per_mutator``: ``(columns, [(mutator, allowed, cells per parser)])`` with cells ``ok/total R2 S1``.
    """
    frame = drift_outcomes(records)
    if frame.empty:
        return None
    oneshot = frame[frame["mode"] == "oneshot"]
    first = dict(zip(zip(oneshot.parser, oneshot.case_id, strict=False), oneshot.outcome, strict=False))
    columns = [*OUTCOME_LETTERS, "ok", "stream≠oneshot"]
    per_parser = []
    for parser in parsers:
        mine = oneshot[oneshot.parser == parser]
        counts = mine.outcome.value_counts()
        streamed = frame[(frame.parser == parser) & (frame["mode"] != "oneshot")]
        differ = {
            c
            for p, c, o in zip(streamed.parser, streamed.case_id, streamed.outcome, strict=False)
            if first.get((p, c)) != o
        }
        per_parser.append(
            (
                parser,
                [str(int(counts.get(o, 0))) for o in OUTCOME_LETTERS]
                + [f"{int((mine.verdict == 'pass').sum())}/{len(mine)}", str(len(differ))],
            )
        )
    per_mutator = [
        (m, _allowed(m), [_outcome_cell(oneshot[(oneshot.mutator == m) & (oneshot.parser == p)]) for p in parsers])
        for m in dict.fromkeys(oneshot.mutator)
    ]
    return (columns, per_parser), (parsers, per_mutator)


def outcome_tables(records: list[dict], parsers: list[str]) -> list[Table]:
    """Rich tables of the drift slice: outcome classes per parser, then per mutator × parser (none without
    drift records)."""
    grids = outcome_grids(records, parsers)
    if grids is None:
        return []
    (columns, per_parser), (_, per_mutator) = grids
    summary = Table(title="drift: outcome classes per parser (one-shot)", title_justify="left")
    summary.add_column("parser", no_wrap=True)
    for column in columns:
        summary.add_column(column, justify="right", no_wrap=True)
    for parser, cells in per_parser:
        summary.add_row(Text(parser), *cells)
    detail = Table(title="drift: per mutator, ok/total and classes (one-shot)", title_justify="left")
    detail.add_column("mutator", no_wrap=True)
    detail.add_column("allowed", no_wrap=True)
    for parser in parsers:
        detail.add_column(Text(parser), justify="right", no_wrap=True)
    for mutator, allowed, cells in per_mutator:
        detail.add_row(mutator, allowed, *cells)
    return [summary, detail]


def outcome_markdown(records: list[dict], parsers: list[str], limit: int = 30) -> list[str]:
    """Markdown lines of the drift section: both tables of :func:`outcome_tables` and, per parser, the first
    ``limit`` drift cases whose one-shot class the mutator does not allow. ``[]`` without drift records."""
    grids = outcome_grids(records, parsers)
    if grids is None:
        return []
    (columns, per_parser), (_, per_mutator) = grids
    lines = [
        "## Drift slice: outcome classes",
        "",
        OUTCOME_LEGEND,
        "",
        "| parser | " + " | ".join(columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    lines += [f"| `{parser}` | " + " | ".join(cells) + " |" for parser, cells in per_parser]
    lines += [
        "",
        "| mutator | allowed | " + " | ".join(f"`{p}`" for p in parsers) + " |",
        "|---|---|" + "---:|" * len(parsers),
    ]
    lines += [f"| {m} | {allowed} | " + " | ".join(cells) + " |" for m, allowed, cells in per_mutator]
    frame = drift_outcomes(records)
    failing = frame[(frame["mode"] == "oneshot") & (frame.verdict != "pass")]
    for parser in parsers:
        mine = failing[failing.parser == parser]
        lines += ["", f"### `{parser}`: {_plural(len(mine), 'drift case')} with a class the mutator does not allow", ""]
        lines += [
            f"- `{row.case_id}`: " + ("**error** — " if row.outcome == "error" else "") + clip(flat(row.detail), 300)
            for row in mine.head(limit).itertuples()
        ]
        if len(mine) > limit:
            lines.append(f"- … {len(mine) - limit} more in results.jsonl")
    return lines + [""]


def append_outcomes_md(path: Path, records: list[dict], parsers: list[str]) -> None:
    """Append the drift section (:func:`outcome_markdown`) to ``report.md``; nothing without drift records."""
    lines = outcome_markdown(records, parsers)
    if lines:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write("\n" + "\n".join(lines))


# --- captured output ---------------------------------------------------------------------------------------


def capture_grid(records: list[dict]) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The captured-output table: ``(columns, [(parser, cells)])``. Columns: one per suite (one-shot
    ``passed/total``), then ``all one-shot``, ``all pieces`` (streamed as generated) and ``server`` (a server's
    own parse in chat mode) where present. Capture errors count in every total."""
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


def _stats_rows(info: dict) -> list[list[str]]:
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


def _capture_title(info: dict) -> str:
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
            if r["parser"] == parser and r["mode"] in ("oneshot", "server") and r["verdict"] != "pass"
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
    stats = Table(title=_capture_title(info), title_justify="left")
    for name in STATS_HEADER:
        stats.add_column(name, justify="left" if name in ("suite", "finish") else "right")
    for row in _stats_rows(info):
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


def append_capture_md(path: Path, info: dict, records: list[dict], texts: dict | None = None) -> None:
    """Append the captured-output section (statistics, pass table, failure types, answers the parsers read
    differently, provenance of the capture) to ``report.md``."""
    columns, grid = capture_grid(records)
    lines = [
        "",
        f"## {_capture_title(info)}",
        "",
        "| " + " | ".join(STATS_HEADER) + " |",
        "|" + "---|" * len(STATS_HEADER),
    ]
    lines += ["| " + " | ".join(row) + " |" for row in _stats_rows(info)]
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
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines))


# --- fault classes (clusters) with minimal repros ----------------------------------------------------------

CLUSTER_MODE_ORDER = ("oneshot", "whole", "random", "tokens", "char", "prefix", "roundtrip")


def cluster_group(record: dict) -> str:
    """The third cluster key of a failing record: its case's ``mutator:NAME`` tag when it has one (drift cases
    made by a mutator), else its slice (``curated``, ``generated``, ``observed``, ...)."""
    return next((t for t in record.get("tags") or [] if t.startswith("mutator:")), record["slice"])


def cluster_failures(records: list[dict]) -> list[dict]:
    """Failing records (``fail``/``error``) grouped by (parser, error type, :func:`cluster_group`): a handful of
    fault classes instead of one row per case.

    Returns one dict per cluster, most cases first (then parsers in record order): ``{"parser", "error_type",
    "group", "cases" (distinct), "records" (case × mode rows), "modes", "tags" ([(tag, cases)], the 3 commonest
    other tags), "example" (the record with the shortest text, cheapest mode first: :data:`CLUSTER_MODE_ORDER`)}``.
    """
    clusters: dict[tuple, list[dict]] = {}
    for r in records:
        if r["verdict"] in ("fail", "error"):
            clusters.setdefault((r["parser"], r["error_type"] or r["verdict"], cluster_group(r)), []).append(r)
    order = {p: i for i, p in enumerate(dict.fromkeys(r["parser"] for r in records))}
    out = []
    for (parser, error_type, group), hits in clusters.items():
        cases = {r["case_id"]: r for r in hits}
        tags = Counter(t for r in cases.values() for t in r.get("tags") or [] if t != group)
        example = min(hits, key=lambda r: (r["text_len"], _mode_rank(r["mode"]), r["case_id"]))
        out.append(
            {
                "parser": parser,
                "error_type": error_type,
                "group": group,
                "cases": len(cases),
                "records": len(hits),
                "modes": sorted({r["mode"] for r in hits}, key=_mode_rank),
                "tags": tags.most_common(3),
                "example": example,
            }
        )
    return sorted(out, key=lambda c: (-c["cases"], order[c["parser"]], c["error_type"], c["group"]))


def _mode_rank(mode: str) -> int:
    return CLUSTER_MODE_ORDER.index(mode) if mode in CLUSTER_MODE_ORDER else len(CLUSTER_MODE_ORDER)


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
    expected = _one_line(repro["expected"]) if repro.get("expected") is not None else "-"
    got = _one_line(repro["got"]) if repro.get("got") is not None else "raised"
    return repr(repro["text"]), expected, got


def print_clusters(console: Console, clusters: list[dict], limit: int = 20) -> None:
    """Print the fault-class table (one row per cluster) and, under it, each cluster's shortest failing input
    (minimized where a repro is attached: ``cluster["repro"]``) with the parser's output beside the expected."""
    if not clusters:
        console.print("fault classes: none (every parser passed every case)", markup=False, highlight=False)
        return
    table = Table(
        title=Text(f"fault classes: {len(clusters)} (parser, error type, mutator or slice)"), title_justify="left"
    )
    for name, justify in (
        ("#", "right"),
        ("parser", "left"),
        ("error type", "left"),
        ("group", "left"),
        ("cases", "right"),
        ("modes", "left"),
        ("common tags", "left"),
    ):
        table.add_column(name, justify=justify)
    for i, c in enumerate(clusters[:limit], 1):
        table.add_row(
            str(i),
            Text(c["parser"]),
            c["error_type"],
            Text(c["group"]),
            str(c["cases"]),
            ",".join(c["modes"]),
            Text(", ".join(f"{t} {n}" for t, n in c["tags"])),
        )
    console.print(table)
    for i, c in enumerate(clusters[:limit], 1):
        repro = c.get("repro")
        if not repro:
            continue
        text, expected, got = _repro_lines(repro)
        console.print(f"  #{i} shortest input ({_repro_note(repro)}): {clip(text, 240)}", markup=False, highlight=False)
        console.print(f"      expected {clip(expected, 200)}", markup=False, highlight=False)
        console.print(f"      got      {clip(got, 200)}", markup=False, highlight=False)
    if len(clusters) > limit:
        console.print(f"  … {len(clusters) - limit} more fault classes in report.md", markup=False, highlight=False)


def clusters_markdown(clusters: list[dict]) -> list[str]:
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
            f"| {i} | `{c['parser']}` | {c['error_type']} | `{c['group']}` | {c['cases']} | {c['records']} | "
            f"{', '.join(c['modes'])} | {', '.join(f'{t} {n}' for t, n in c['tags'])} |"
        )
    lines.append("")
    for i, c in enumerate(clusters, 1):
        ex = c["example"]
        lines += [
            f"### {i}. `{c['parser']}` — {c['error_type']} — `{c['group']}`",
            "",
            f"Shortest failing case `{ex['case_id']}` ({ex['mode']}): {flat(ex['detail'])}",
            "",
        ]
        repro = c.get("repro")
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


def append_clusters_md(path: Path, clusters: list[dict]) -> None:
    """Append :func:`clusters_markdown` to ``report.md``."""
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("\n" + "\n".join(clusters_markdown(clusters)) + "\n")

"""The drift slice by outcome class (the records' ``outcome``: recovered, surfaced, scrubbed, dropped, leaked,
wrong, error), per parser and per mutator × parser, as terminal tables and Markdown."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from harness.core.results import clip
from harness.corpus.drift import get_mutator
from harness.report.summary import flat, plural
from harness.score.outcomes import OUTCOMES, allowed_outcomes
from harness.score.policy import DEFAULT_POLICY, Policy

if TYPE_CHECKING:  # pandas loads when a table is built, not when the CLI starts
    import pandas as pd

OUTCOME_LETTERS = dict(zip(OUTCOMES, ("R", "S", "C", "D", "L", "W", "E"), strict=True))
OUTCOME_LEGEND = (
    "drift slice (curated cases mutated as models and servers deviate, harness/corpus/drift.py), one-shot: "
    "R recovered (the intended calls), S surfaced (no call, the damaged text kept in content), "
    "C scrubbed (no call, the damaged markup removed, the prose kept), "
    "D dropped (text lost), L leaked (markers left in content), W wrong (another call), E error; "
    "ok = cases whose class the mutator and the judging policy allow (allowed: R and/or what the policy lets a "
    "parser do with damage it declines)."
)


def drift_outcomes(records: list[dict]) -> pd.DataFrame:
    """One row per drift record that has an outcome: columns ``parser, case_id, mode, mutator, outcome,
    verdict, detail`` (mutator from the ``mutator:NAME`` tag)."""
    import pandas as pd

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


def _allowed(mutator: str, policy: Policy) -> str:
    """The outcome letters a mutator allows under ``policy`` (:mod:`harness.corpus.drift`), ``?`` if unknown."""
    try:
        outcomes = list(get_mutator(mutator).outcomes)
    except KeyError:
        return "?"
    return "/".join(OUTCOME_LETTERS[o] for o in allowed_outcomes({"outcomes": outcomes}, policy))


def _outcome_cell(rows: pd.DataFrame) -> str:
    if rows.empty:
        return "-"
    counts = rows.outcome.value_counts()
    letters = " ".join(f"{OUTCOME_LETTERS.get(o, o)}{counts[o]}" for o in OUTCOME_LETTERS if o in counts)
    return f"{int((rows.verdict == 'pass').sum())}/{len(rows)} {letters}"


def outcome_grids(records: list[dict], parsers: list[str], policy: Policy = DEFAULT_POLICY):
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
        (
            m,
            _allowed(m, policy),
            [_outcome_cell(oneshot[(oneshot.mutator == m) & (oneshot.parser == p)]) for p in parsers],
        )
        for m in dict.fromkeys(oneshot.mutator)
    ]
    return (columns, per_parser), (parsers, per_mutator)


def outcome_tables(records: list[dict], parsers: list[str], policy: Policy = DEFAULT_POLICY) -> list[Table]:
    """Rich tables of the drift slice: outcome classes per parser, then per mutator × parser (none without
    drift records)."""
    grids = outcome_grids(records, parsers, policy)
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


def outcome_markdown(
    records: list[dict], parsers: list[str], limit: int = 30, policy: Policy = DEFAULT_POLICY
) -> list[str]:
    """Markdown lines of the drift section: both tables of :func:`outcome_tables` and, per parser, the first
    ``limit`` drift cases whose one-shot class the mutator does not allow. ``[]`` without drift records."""
    grids = outcome_grids(records, parsers, policy)
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
        lines += ["", f"### `{parser}`: {plural(len(mine), 'drift case')} with a class the mutator does not allow", ""]
        lines += [
            f"- `{row.case_id}`: " + ("**error** — " if row.outcome == "error" else "") + clip(flat(row.detail), 300)
            for row in mine.head(limit).itertuples()
        ]
        if len(mine) > limit:
            lines.append(f"- … {len(mine) - limit} more in results.jsonl")
    return lines + [""]

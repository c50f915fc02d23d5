"""The sweep's run log (:class:`SweepConfig`, :class:`SweepResult`) and how it is shown: terminal lines and
``report.md``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from harness.core.results import clip
from harness.corpus.random_calls import DEFAULT_CUTS, DEFAULT_FULL_EVERY
from harness.parse.calls import DEFAULT_BREAK_AFTER
from harness.parse.modes import DEFAULT_TIMEOUT_S
from harness.report.summary import flat
from harness.score.checks import CHECKS, Failure

DEFAULT_BATCH = 250
DEFAULT_KEEP = 1000


@dataclass
class SweepConfig:
    """Settings of ``toolcall-harness sweep``. ``parsers``: names as for ``eval`` (in-process parsers meet the
    speed target) or parser instances; ``n``: cases; ``jobs``: processes (default ``os.cpu_count()``);
    ``cuts`` / ``full_every``: truncation sampling; ``keep``: failure lines written per (parser, check, error
    type) — counts stay exact; ``repros``: groups whose first failure is minimized; ``budget``: checks per
    minimization; ``values``: the value profile of the cases (:data:`harness.corpus.random_calls.VALUE_PROFILES`);
    ``break_after``: the circuit breaker (:class:`harness.parse.calls.Breaker`); ``resume``: continue the unfinished
    sweep in ``out_dir``; ``force``: write into a non-empty ``out_dir``, replacing its sweep's files."""

    model: str = "gemma-4-e2b"
    parsers: list = field(default_factory=lambda: ["toolcall-harness"])
    n: int = 2000
    seed: int = 0
    jobs: int | None = None
    out_dir: Path | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    cuts: int = DEFAULT_CUTS
    full_every: int = DEFAULT_FULL_EVERY
    batch: int = DEFAULT_BATCH
    keep: int = DEFAULT_KEEP
    repros: int = 10
    budget: int = 300
    values: str = "mixed"
    break_after: int = DEFAULT_BREAK_AFTER
    resume: bool = False
    force: bool = False
    console: Console = field(default_factory=Console)


@dataclass
class SweepResult:
    """What :func:`run_sweep` returns: the run directory, the merged counts, the minimized repros and the parsers
    the circuit breaker stopped (``{parser: reason}``)."""

    run_dir: Path
    totals: BatchResult
    parsers: list[str]
    elapsed_s: float
    repros: list[dict]
    broken: dict[str, str] = field(default_factory=dict)

    def rate(self, parser: str, check: str | None = None) -> tuple[int, int]:
        """``(wrong, total)`` cases for ``parser`` in ``check`` (None: in any check); the total leaves out the
        cases a broken parser was not asked about."""
        wrong = self.totals.any_wrong[parser] if check is None else self.totals.wrong[(parser, check)]
        return wrong, self.totals.cases - self.totals.unavailable[parser]


def _rate_lines(result: SweepResult) -> Iterator[tuple[str, str, str]]:
    """``(parser, check, "wrong/total wrong (types)")`` rows, ``any`` last."""
    t = result.totals
    for name in result.parsers:
        for check in (*CHECKS, None):
            wrong, total = result.rate(name, check)
            kinds = Counter({e: n for (p, c, e), n in t.types.items() if p == name and (check is None or c == check)})
            text = f"{wrong}/{total} wrong"
            if kinds and check is not None:
                text += " (" + ", ".join(f"{e} {n}" for e, n in kinds.most_common()) + ")"
            yield name, check or "any", text
        if name in result.broken:
            yield name, "unavailable", f"{t.unavailable[name]} cases not checked: {result.broken[name]}"


def print_sweep(console: Console, result: SweepResult, config: SweepConfig) -> None:
    """Print speed, per parser and check the ``wrong/total`` rate, and the minimal repros."""
    t = result.totals
    speed = t.cases / result.elapsed_s if result.elapsed_s > 0 else 0.0
    console.print(
        f"{t.cases} cases in {result.elapsed_s:.1f} s ({speed:.0f} cases/s); {t.skipped} skipped "
        f"(the template cannot write them); {t.chars} characters streamed one at a time; {t.cuts} "
        f"truncations ({config.cuts} seeded random cuts per case, every position on {t.full_cases} cases)",
        markup=False,
        highlight=False,
    )
    for name, check, text in _rate_lines(result):
        console.print(f"  {name:32s} {check:10s} {text}", markup=False, highlight=False)
    for repro in result.repros:
        console.print(
            f"minimal repro: {repro['parser']} {repro['check']} {repro['error_type']} (case "
            f"{repro['index']}, {repro['method']}, {repro['original_len']} → {len(repro['text'])} chars, "
            f"{repro['calls']} checks): {clip(flat(repro['detail']), 200)}",
            markup=False,
            highlight=False,
        )
        expected, got = _shown(repro)
        console.print(f"    text:     {repro['text']!r}"[:500], markup=False, highlight=False)
        console.print(f"    expected: {expected}"[:500], markup=False, highlight=False)
        console.print(f"    got:      {got}"[:500], markup=False, highlight=False)
    console.print(
        f"wrote {result.run_dir}/: failures.jsonl, batches.jsonl, summary.json, report.md",
        markup=False,
        highlight=False,
    )


def _shown(repro: dict) -> tuple[str, str]:
    """``(expected, got)`` of a repro as one-line text (a truncation has no expected message; None got: raised)."""
    expected = (
        json.dumps(repro["expected"], ensure_ascii=False)
        if repro["expected"] is not None
        else "no exception, hang or marker leak (truncated text)"
    )
    got = json.dumps(repro["got"], ensure_ascii=False) if repro["got"] is not None else "raised or timed out"
    return expected, got


def sweep_markdown(result: SweepResult, info: dict) -> str:
    """``report.md`` of a sweep: settings, the rate table and the minimal repros."""
    t = result.totals
    lines = [
        f"# Random sweep: {info['model']} ({info['format']})",
        "",
        f"{t.cases} cases (seed {info['seed']}, values {info.get('values', 'mixed')}, {t.skipped} skipped), "
        f"{result.elapsed_s:.1f} s with "
        f"{info['jobs']} jobs; template `{info['template'].get('file')}` sha256 "
        f"`{info['template'].get('sha256')}`.",
        "",
        f"Checks: `oneshot` (parse vs expected), `stream` (one character per chunk, every delta leak-checked, "
        f"final message vs expected and one-shot), `truncation` ({info['cuts_per_case']} seeded random cuts "
        f"per case, every position on every {info['every_position_every']}th case: {t.cuts} cuts; no "
        f"exception, hang or marker leak).",
        "",
        "| parser | check | wrong/total |",
        "|---|---|---|",
    ]
    lines += [f"| `{name}` | {check} | {text} |" for name, check, text in _rate_lines(result)]
    lines += ["", "## Minimal repros", ""]
    for repro in result.repros:
        lines += [
            f"- **{repro['parser']}** {repro['check']} **{repro['error_type']}** (case {repro['index']}, "
            f"{repro['method']}, {repro['original_len']} → {len(repro['text'])} chars): {flat(repro['detail'])}",
            "",
            "  ```text",
            "  " + repro["text"].replace("\n", "\n  "),
            "  ```",
            f"  - expected: `{_shown(repro)[0]}`",
            f"  - got: `{_shown(repro)[1]}`",
            "",
        ]
    if not result.repros:
        lines.append("No failures.")
    return "\n".join(lines) + "\n"


@dataclass
class BatchResult:
    """Outcome of a batch of consecutive cases: ``wrong[(parser, check)]`` counts cases, ``types[(parser,
    check, error type)]`` too, ``any_wrong[parser]`` cases wrong in some check, ``unavailable[parser]`` cases a
    broken parser was not asked about; ``failures`` in case order; ``breaker``: the circuit breaker's state after
    the batch (:meth:`harness.parse.calls.Breaker.to_json`)."""

    cases: int = 0
    skipped: int = 0
    cuts: int = 0
    full_cases: int = 0
    chars: int = 0
    wrong: Counter = field(default_factory=Counter)
    types: Counter = field(default_factory=Counter)
    any_wrong: Counter = field(default_factory=Counter)
    unavailable: Counter = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)
    breaker: dict | None = None

    def add(self, other: BatchResult) -> None:
        for name in ("cases", "skipped", "cuts", "full_cases", "chars"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for name in _COUNTERS:
            getattr(self, name).update(getattr(other, name))

    def counts(self) -> dict:
        """The counts as JSON (a line of the sweep's ``batches.jsonl``; :meth:`from_counts` reads it back)."""
        return {
            **{name: getattr(self, name) for name in ("cases", "skipped", "cuts", "full_cases", "chars")},
            **{name: [[*_key(k), n] for k, n in getattr(self, name).items()] for name in _COUNTERS},
        }

    @classmethod
    def from_counts(cls, data: dict) -> BatchResult:
        """The counts :meth:`counts` wrote; raises ``KeyError``, ``TypeError`` or ``ValueError`` for other data."""
        out = cls()
        for name in ("cases", "skipped", "cuts", "full_cases", "chars"):
            setattr(out, name, int(data[name]))
        for name in _COUNTERS:
            for *key, n in data[name]:
                getattr(out, name)[tuple(key) if len(key) > 1 else key[0]] = int(n)
        return out


_COUNTERS = ("wrong", "types", "any_wrong", "unavailable")


def _key(key) -> list:
    return list(key) if isinstance(key, tuple) else [key]

"""``toolcall-harness check``: score an external case file with one parser."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from harness.core.cases import load_cases
from harness.core.errors import HarnessError
from harness.core.results import ResultsWriter
from harness.core.textio import write_text
from harness.formats import DEFAULT_FORMAT, case_formats, get_format
from harness.parse.calls import DEFAULT_BREAK_AFTER, Breaker
from harness.parse.modes import DEFAULT_TIMEOUT_S, modes_for
from harness.parse.registry import get_any_parser
from harness.score.policy import DEFAULT_POLICY, Policy
from harness.score.runner import evaluate_case
from harness.score.verdicts import VERDICTS

SHOWN_FAILURES = 20


@dataclass
class CheckSummary:
    """What ``check`` found: ``counts`` of verdicts over (case, mode) results, the failing results
    (``(case_id, mode, error_type, detail)``), and how many cases of other formats were left out."""

    parser: str
    cases: int
    modes: tuple[str, ...]
    counts: Counter = field(default_factory=Counter)
    failures: list[tuple[str, str, str | None, str]] = field(default_factory=list)
    other_format: int = 0

    def describe(self) -> str:
        """A few lines for the terminal: totals, then up to :data:`SHOWN_FAILURES` failing results."""
        verdicts = ", ".join(f"{v} {self.counts[v]}" for v in VERDICTS if self.counts[v])
        lines = [
            f"{self.parser}: {self.cases} cases × {len(self.modes)} mode(s) ({', '.join(self.modes)}) = "
            f"{sum(self.counts.values())} results: {verdicts or 'none'}"
        ]
        if self.other_format:
            lines.append(f"left out {self.other_format} case(s) of formats this parser does not parse")
        for case_id, mode, error_type, detail in self.failures[:SHOWN_FAILURES]:
            lines.append(f"  {case_id} [{mode}] {error_type}: {' '.join(detail.split())}"[:300])
        if len(self.failures) > SHOWN_FAILURES:
            lines.append(f"  ... {len(self.failures) - SHOWN_FAILURES} more (see --out)")
        return "\n".join(lines)


def check_file(
    path: Path,
    parser_name: str,
    modes: tuple[str, ...] = ("oneshot",),
    fmt: str | None = None,
    seed: int = 0,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    out: Path | None = None,
    install_missing: bool = True,
    policy: Policy = DEFAULT_POLICY,
    break_after: int = DEFAULT_BREAK_AFTER,
) -> CheckSummary:
    """Score every case of ``path`` that ``parser_name`` can parse, in ``modes``, under the judging ``policy``.

    Writes one record per (case, mode) to ``out`` when given (fields include case_id, parser, mode, verdict,
    error_type, detail, got). Raises ``HarnessError`` for an unknown parser, a malformed file (naming file and
    line), a file with no case the parser can parse, or a mode that does not apply to the parser. An engine
    that is not built yet is built first unless ``install_missing`` is false. After ``break_after`` cases in a row
    with a timeout or crash the parser is not called again (:class:`harness.parse.calls.Breaker`).
    """
    cases = load_cases(path, fmt=fmt, formats=case_formats())
    parser = get_any_parser(
        parser_name, fmt or (cases[0].format if cases else DEFAULT_FORMAT), install_missing=install_missing
    )
    mine = [c for c in cases if c.format in parser.formats]
    if not mine:
        raise HarnessError(
            f"{path}: no case of format {', '.join(parser.formats)} (the formats {parser.name} "
            f"parses) among {len(cases)} case(s)"
        )
    spec = get_format(parser.formats[0])
    skipped = [m for m in modes if m not in modes_for(parser, modes, spec)]
    if skipped:
        raise HarnessError(
            f"mode(s) {', '.join(skipped)} do not apply to {parser.name} (prefix: only the "
            "project's own incremental parsers; tokens: formats with a real vocabulary)"
        )
    summary = CheckSummary(parser.name, len(mine), tuple(modes), other_format=len(cases) - len(mine))
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        write_text(out, "")
    writer = ResultsWriter(out) if out is not None else None
    breaker = Breaker(break_after)
    try:
        for case in mine:
            for record in evaluate_case(
                case, parser, get_format(case.format), list(modes), seed, timeout_s, policy=policy, breaker=breaker
            ):
                summary.counts[record.verdict] += 1
                if record.verdict in ("fail", "error"):
                    summary.failures.append((case.id, record.mode, record.error_type, record.detail))
                if writer:
                    writer.write(record)
    finally:
        if writer:
            writer.close()
    return summary

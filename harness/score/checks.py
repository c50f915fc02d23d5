"""The sweep's checks of one case: one-shot against the expected message, streamed one character per chunk
(every delta leak-checked; equal to the one-shot result) and truncated (no exception, hang or marker leak).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from harness.core.cases import Case
from harness.core.messages import Message
from harness.core.protocol import Delta, Parser, run_stream
from harness.core.results import Score, clip
from harness.formats import FormatSpec
from harness.parse.calls import Breaker, alarm_limit, guarded, judged
from harness.score.verdicts import delta_leak, score

CHECKS = ("oneshot", "stream", "truncation")


@dataclass
class Failure:
    """One wrong (case, parser, check): a line of ``failures.jsonl``."""

    index: int
    parser: str
    check: str
    error_type: str
    detail: str
    text: str
    prefix: str
    expected: dict
    got: dict | None
    cut: int | None = None
    tags: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def truncation_leak(text: str, got: Message, fmt: FormatSpec) -> str | None:
    """The first whole marker in ``got``'s content or reasoning that is not inside surfaced raw call text
    (a span of the field starting at ``fmt.call_open`` that appears verbatim in ``text``); None if none."""
    for name in ("content", "reasoning"):
        value = getattr(got, name) or ""
        for marker in fmt.markers:
            start = value.find(marker)
            while start >= 0:
                opener = value.rfind(fmt.call_open, 0, start + len(fmt.call_open)) if fmt.call_open else -1
                if opener < 0 or value[opener : start + len(marker)] not in text:
                    return f"{name} contains {marker!r}"
                start = value.find(marker, start + 1)
    return None


def check_stream(
    case: Case,
    parser: Parser,
    fmt: FormatSpec,
    oneshot: Message | None,
    timeout_s: float | None,
    chunks: list[str] | None = None,
) -> tuple[Message | None, Score]:
    """Stream ``chunks`` (default: one character each), leak-check every delta, score against the case and
    the one-shot result. Returns ``(streamed message or None, score)``."""
    leaks: list[str] = []

    def watch(delta: Delta) -> None:
        for text in (delta.content, delta.reasoning):
            if text and not leaks and delta_leak(text, fmt):
                leaks.append(text)

    pieces = list(case.text) if chunks is None else chunks
    got, error = guarded(lambda: run_stream(parser, pieces, case.tools, case.prefix, on_delta=watch), timeout_s)
    leaked = leaks[0] if leaks else None
    return got, judged(got, error, lambda m: score(case, m, fmt, oneshot=oneshot, leaked_delta=leaked))


def check_truncation(
    case: Case, parser: Parser, fmt: FormatSpec, k: int, timeout_s: float | None
) -> tuple[Message | None, Score]:
    """Parse ``case.text[:k]`` one-shot: error on exception/timeout, ``marker_leak`` per :func:`truncation_leak`."""
    cut = case.text[:k]
    got, error = guarded(lambda: parser.parse(cut, case.tools, case.prefix), timeout_s)

    def judge(message: Message) -> Score:
        leak = truncation_leak(cut, message, fmt)
        return Score("fail", "marker_leak", leak) if leak else Score("pass")

    return got, judged(got, error, judge)


def check_case(
    case: Case,
    index: int,
    parser: Parser,
    fmt: FormatSpec,
    cuts: list[int],
    timeout_s: float | None,
    breaker: Breaker | None = None,
) -> Iterator[Failure]:
    """Run every check of :data:`CHECKS` on one case; yield a :class:`Failure` for each wrong one (truncation:
    the first failing cut). ``breaker`` (case key ``index``) sees the score of every call; once it has broken the
    parser, the checks left are not run and fail ``unavailable``."""
    limit = alarm_limit(parser, timeout_s)
    expected = case.expected.to_json()

    def watched(call: Callable[[], tuple[Message | None, Score]]) -> tuple[Message | None, Score]:
        unavailable = breaker.unavailable(parser.name) if breaker is not None else None
        if unavailable is not None:
            return None, unavailable
        got, result = call()
        if breaker is not None:
            breaker.watch(parser, index, result)
        return got, result

    def failure(check: str, result: Score, got: Message | None, cut: int | None = None, text: str = case.text):
        return Failure(
            index,
            parser.name,
            check,
            result.error_type or result.verdict,
            clip(result.detail),
            text,
            case.prefix,
            expected,
            got.to_json() if got is not None else None,
            cut,
            case.tags,
        )

    def oneshot_check() -> tuple[Message | None, Score]:
        got, error = guarded(lambda: parser.parse(case.text, case.tools, case.prefix), limit)
        return got, judged(got, error, lambda m: score(case, m, fmt))

    oneshot, result = watched(oneshot_check)
    if not result.passed:
        yield failure("oneshot", result, oneshot)
    streamed, result = watched(lambda: check_stream(case, parser, fmt, oneshot, limit))
    if not result.passed:
        yield failure("stream", result, streamed)
    for k in cuts:
        got, result = watched(functools.partial(check_truncation, case, parser, fmt, k, limit))
        if not result.passed:
            yield failure("truncation", result, got, k, case.text[:k])
            break

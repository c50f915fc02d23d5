"""Outcome classes of a parser's answer to a drift case (a case with ``extra["drift"]``, see
:mod:`harness.corpus.drift`), and the verdict they give.

Classes, decided in this order:

- ``error``: the parser raised or timed out (decided by the runner, never here);
- ``surfaced``: no call, and the damaged text (``drift.raw``) is kept in content; also when the calls returned
  are some of the expected calls, in order, and the damaged text is kept (the other calls recovered);
- ``dropped``: no call and the damaged text not kept; or the intended calls but expected prose or reasoning
  lost;
- ``leaked``: the intended calls, but content or reasoning holds marker text the expected message does not
  (``drift.tolerated`` text, e.g. a stray closer, may stay), or a streamed delta did;
- ``recovered``: the intended calls (names, arguments as JSON values), expected content and reasoning kept
  (tolerated text may sit between pieces of the content);
- ``wrong``: any other call list (a wrong name, wrong arguments, a call made of damaged text).

Text is compared whitespace-insensitively (all whitespace removed), as :mod:`harness.score.verdicts` compares
surfaced text. A drift case passes when its class is in ``drift.outcomes``. Convention from
``corpora/observed/FORMAT.md``: dropping the text, a wrong call, or a call with markers left in content are
failures whatever the mutator allows.
"""

from __future__ import annotations

from harness.core.cases import Case
from harness.core.messages import Message, ToolCall
from harness.core.results import Score
from harness.formats import FormatSpec
from harness.score.compare import json_difference, marker_leak, short, squash, without

OUTCOMES = ("recovered", "surfaced", "dropped", "leaked", "wrong", "error")
#: error type of a disallowed class (``wrong`` is typed by the first call difference instead).
ERROR_TYPE_OF = {"surfaced": "not_recovered", "dropped": "content_lost", "leaked": "marker_leak"}


def drift_info(case: Case) -> dict | None:
    """The case's ``extra["drift"]`` when it is a drift description with allowed ``outcomes``, else ``None``."""
    info = case.extra.get("drift")
    if isinstance(info, dict) and isinstance(info.get("outcomes"), list):
        return info
    return None


def classify(case: Case, got: Message, fmt: FormatSpec, leaked_delta: str | None = None) -> tuple[str, str]:
    """``(class, one-line detail)`` for ``got`` on drift ``case`` (see the module docstring)."""
    info = drift_info(case) or {}
    raw = info.get("raw") or ""
    tolerated = tuple(info.get("tolerated") or ())
    want, have = case.expected.tool_calls, got.tool_calls
    kept = _contains(got.content, raw)
    if not have:
        return (
            ("surfaced", "no call; damaged text kept in content")
            if kept
            else ("dropped", "no call and the damaged text is not in content")
        )
    if _same_calls(want, have):
        leak = marker_leak(got, case.expected, fmt, tolerated) or _delta_leak(
            leaked_delta, case.expected, fmt, tolerated
        )
        if leak:
            return "leaked", leak
        if not _contains(without(got.content, tolerated), case.expected.content or ""):
            return "dropped", f"expected content {short(case.expected.content)} not kept"
        if not _contains(got.reasoning, case.expected.reasoning or ""):
            return "dropped", f"expected reasoning {short(case.expected.reasoning)} not kept"
        return "recovered", "the intended call(s)"
    if kept and _is_subsequence(have, want):
        return "surfaced", f"{len(have)} of {len(want)} call(s) recovered; damaged text kept in content"
    return "wrong", _call_difference(want, have)


def drift_score(case: Case, got: Message, fmt: FormatSpec, leaked_delta: str | None = None) -> Score:
    """The :class:`Score` of ``got`` on drift ``case``: ``pass`` when its class is allowed, else ``fail`` typed
    by the class (:data:`ERROR_TYPE_OF`, or the first call difference for ``wrong``); ``outcome`` set."""
    info = drift_info(case)
    if info is None:
        raise ValueError(f"drift_score: case {case.id!r} has no drift description")
    outcome, detail = classify(case, got, fmt, leaked_delta)
    allowed = info["outcomes"]
    if outcome in allowed:
        return Score("pass", None, detail, outcome=outcome)
    error_type = ERROR_TYPE_OF.get(outcome) or _call_difference_type(case.expected.tool_calls, got.tool_calls)
    return Score("fail", error_type, f"{outcome} (allowed: {', '.join(allowed)}): {detail}", outcome=outcome)


def _contains(text: str | None, part: str) -> bool:
    return squash(part) in squash(text)


def _same_call(want: ToolCall, have: ToolCall) -> bool:
    return (
        want.name == have.name
        and isinstance(have.arguments, dict)
        and json_difference(want.arguments, have.arguments) is None
    )


def _same_calls(want: list[ToolCall], have: list[ToolCall]) -> bool:
    return len(want) == len(have) and all(_same_call(w, h) for w, h in zip(want, have, strict=False))


def _is_subsequence(have: list[ToolCall], want: list[ToolCall]) -> bool:
    rest = iter(want)
    return len(have) < len(want) and all(any(_same_call(w, h) for w in rest) for h in have)


def _delta_leak(delta: str | None, expected: Message, fmt: FormatSpec, tolerated: tuple[str, ...]) -> str | None:
    """A streamed delta's marker that the expected content and the tolerated text do not explain."""
    if not delta:
        return None
    allowed = (expected.content or "") + "".join(tolerated)
    unexplained = [m for m in fmt.markers if m in delta and m not in allowed]
    return f"streamed delta {short(delta)} contains {unexplained[0]!r}" if unexplained else None


def _call_difference(want: list[ToolCall], have: list[ToolCall]) -> str:
    if len(want) != len(have):
        return f"expected {len(want)} call(s), got {len(have)}: " + ", ".join(short(c.name) for c in have)
    for i, (w, h) in enumerate(zip(want, have, strict=False)):
        if w.name != h.name:
            return f"call {i}: expected name {w.name!r}, got {h.name!r}"
        if not isinstance(h.arguments, dict):
            return f"call {i}: arguments are {type(h.arguments).__name__} {short(h.arguments)}"
        diff = json_difference(w.arguments, h.arguments)
        if diff:
            return f"call {i}: {diff[1] or 'arguments'}: {diff[2]}"
    return "calls differ"


def _call_difference_type(want: list[ToolCall], have: list[ToolCall]) -> str:
    if len(want) != len(have):
        return "wrong_call_count"
    for w, h in zip(want, have, strict=False):
        if w.name != h.name:
            return "wrong_name"
        if not isinstance(h.arguments, dict):
            return "wrong_argument_type" if isinstance(h.arguments, str) else "invalid_arguments"
        diff = json_difference(w.arguments, h.arguments)
        if diff:
            return diff[0]
    return "wrong_argument_value"

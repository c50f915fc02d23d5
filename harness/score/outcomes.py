"""Outcome classes of a parser's answer to a drift case (a case with ``extra["drift"]``, see
:mod:`harness.corpus.drift`, or a peer case with ``extra["expected_error"]``), and the verdict they give under a
judging policy (:mod:`harness.score.policy`).

A drift description says what was damaged: ``raw`` (the damaged text), ``tolerated`` (marker text a recovering
parser may keep, e.g. a stray closer), ``recoverable`` (false when the damaged part holds no call to recover: a
truncation, a partial opener) and ``outcomes`` (what the damage allows: ``recovered`` and/or ``declined``, which
the policy turns into ``surfaced`` and/or ``scrubbed``; the older ``surfaced`` means ``declined``). The expected
message is a recovering parser's answer; for an unrecoverable case, the intact calls and the prose.

Classes, decided in this order:

- ``error``: the parser raised or timed out (decided by the runner, never here);
- ``recovered``: every intended call (names, arguments as JSON values), expected content and reasoning kept
  (tolerated text may sit between pieces of the content), no marker left;
- ``leaked``: the intended calls, but content or reasoning holds marker text the expected message does not, or a
  streamed delta did; also a damaged part half scrubbed (markers left, the damaged text not kept whole);
- ``surfaced``: no call for the damaged part (the other calls recovered, in order) and its text kept in content;
- ``scrubbed``: no call for the damaged part, its text not kept, the prose and reasoning kept, no marker left;
- ``dropped``: no call for the damaged part and expected prose or reasoning lost;
- ``wrong``: any other call list (a wrong name, wrong arguments, a call made of damaged text).

Text is compared whitespace-insensitively (all whitespace removed). A case passes when its class is allowed: the
case's ``outcomes``, ``declined`` read by the policy (``lossless``: surfaced; ``no-markup``: scrubbed, or surfaced
without markers; ``either``: both), and never a surfaced text ending in a partial marker under ``no-markup`` (and
``either``, after complete calls). Dropping prose, a wrong call, or a call with markers left in content fail under
every policy (a peer case's own ``accept`` list aside, which ``either`` follows as the peer wrote it). A peer
case that accepts the text in content only as ``content_passthrough`` wants exactly the text: a surfaced answer
with more or reflowed text fails, one differing in surrounding whitespace is judged by the whitespace policy.
"""

from __future__ import annotations

from harness.core.cases import Case
from harness.core.messages import Message, ToolCall
from harness.core.results import Score
from harness.corpus.drift import DECLINED, RECOVERED
from harness.formats import FormatSpec
from harness.score.compare import (
    delta_markup,
    json_difference,
    marker_leak,
    markup_in,
    short,
    squash,
    text_match,
    without,
)
from harness.score.policy import DEFAULT_POLICY, Policy

OUTCOMES = ("recovered", "surfaced", "scrubbed", "dropped", "leaked", "wrong", "error")
#: what a policy's ``malformed`` choice lets a parser do with damage it declines to recover.
DECLINED_AS = {"lossless": ("surfaced",), "no-markup": ("scrubbed", "surfaced"), "either": ("surfaced", "scrubbed")}
#: canitoolcall's ``expected_error.accept`` values as outcome classes (``exception`` is the runner's ``error``).
ACCEPTED_AS = {
    "content_passthrough": ("surfaced",),
    "no_tool_calls": ("surfaced", "scrubbed", "dropped", "leaked"),
    "exception": ("error",),
}
#: error type of a disallowed class (``wrong`` is typed by the first call difference instead).
ERROR_TYPE_OF = {
    "surfaced": "not_recovered",
    "scrubbed": "content_lost",
    "dropped": "content_lost",
    "leaked": "marker_leak",
}


def drift_info(case: Case) -> dict | None:
    """The case's drift description (module docstring), or ``None`` when it has none.

    A peer case's ``extra["expected_error"]`` (``{"accept": [...], "reason"}``) reads as an unrecoverable
    description of the whole text whose ``outcomes`` are the accepted classes (:data:`ACCEPTED_AS`);
    ``passthrough`` is true when ``content_passthrough`` is the only accepted outcome that lets the text into
    content (no ``no_tool_calls``): then a surfaced answer must be the text itself (:func:`drift_score`)."""
    info = case.extra.get("drift")
    if isinstance(info, dict) and isinstance(info.get("outcomes"), list):
        return info
    error = case.extra.get("expected_error")
    if isinstance(error, dict) and isinstance(error.get("accept"), list):
        accepted = list(dict.fromkeys(c for value in error["accept"] for c in ACCEPTED_AS.get(value, ())))
        passthrough = "content_passthrough" in error["accept"] and "no_tool_calls" not in error["accept"]
        return {
            "outcomes": accepted,
            "raw": case.text,
            "recoverable": False,
            "accept": True,
            "passthrough": passthrough,
        }
    return None


def allowed_outcomes(info: dict, policy: Policy = DEFAULT_POLICY) -> tuple[str, ...]:
    """The classes a drift description allows under ``policy`` (a peer's accepted classes narrowed by the policy
    where that leaves any)."""
    outcomes = info.get("outcomes") or []
    declined = DECLINED_AS[policy.malformed]
    if info.get("accept"):  # the peer's own judgement under ``either``; the other policies keep their classes
        if policy.malformed == "either":
            return tuple(outcomes)
        return tuple([c for c in outcomes if c == "error" or c in declined] or outcomes)
    allowed: list[str] = []
    if RECOVERED in outcomes and info.get("recoverable", True):
        allowed.append(RECOVERED)
    if DECLINED in outcomes or "surfaced" in outcomes or not info.get("recoverable", True):
        allowed.extend(declined)
    return tuple(allowed)


def classify(case: Case, got: Message, fmt: FormatSpec, leaked_delta: str | None = None) -> tuple[str, str]:
    """``(class, one-line detail)`` for ``got`` on drift ``case`` (see the module docstring)."""
    info = drift_info(case) or {}
    raw = info.get("raw") or ""
    tolerated = tuple(info.get("tolerated") or ())
    recoverable = info.get("recoverable", True)
    want, have = case.expected.tool_calls, got.tool_calls
    if recoverable and _same_calls(want, have):
        leak = marker_leak(got, case.expected, fmt, tolerated) or delta_markup(
            leaked_delta, case.expected, fmt, tolerated
        )
        if leak:
            return "leaked", leak
        lost = _prose_lost(case.expected, got, tolerated)
        return ("dropped", lost) if lost else ("recovered", "the intended call(s)")
    intact = _same_calls(want, have) if not recoverable else _is_subsequence(have, want)
    if not intact:
        return "wrong", _call_difference(want, have)
    if not have:
        calls = "no call; "
    else:
        calls = f"{len(have)} of {len(want)} call(s) recovered; " if recoverable else "the complete call(s) kept; "
    if raw and _contains(got.content, raw):
        return "surfaced", calls + "damaged text kept in content"
    lost = _prose_lost(case.expected, got, tolerated)
    if lost:
        return "dropped", calls + lost
    leak = marker_leak(got, case.expected, fmt, tolerated)
    if leak:
        return "leaked", calls + f"damaged text half removed: {leak}"
    return "scrubbed", calls + "damaged text removed, prose kept"


def drift_score(
    case: Case, got: Message, fmt: FormatSpec, leaked_delta: str | None = None, policy: Policy = DEFAULT_POLICY
) -> Score:
    """The :class:`Score` of ``got`` on drift ``case`` under ``policy``: ``pass`` when its class is allowed
    (:func:`allowed_outcomes`; a surfaced text must also satisfy the policy's marker rule), else ``fail`` typed by
    the class (:data:`ERROR_TYPE_OF`, or the first call difference for ``wrong``); ``outcome`` set."""
    info = drift_info(case)
    if info is None:
        raise ValueError(f"drift_score: case {case.id!r} has no drift description")
    outcome, detail = classify(case, got, fmt, leaked_delta)
    allowed = allowed_outcomes(info, policy)
    if outcome in allowed:
        markup = _surfaced_markup(got, case.expected, fmt, policy) if outcome == "surfaced" else None
        if markup:
            return Score("fail", "marker_leak", f"surfaced under malformed={policy.malformed}: {markup}", outcome)
        if outcome == "surfaced" and info.get("passthrough"):
            return _passthrough(case, got, policy, detail)
        return Score("pass", None, detail, outcome=outcome)
    error_type = ERROR_TYPE_OF.get(outcome) or _call_difference_type(case.expected.tool_calls, got.tool_calls)
    return Score("fail", error_type, f"{outcome} (allowed: {', '.join(allowed)}): {detail}", outcome=outcome)


def accepted_error(case: Case, result: Score) -> Score:
    """``result`` of a parser that raised, or a pass when the case accepts an exception (a peer's
    ``expected_error.accept`` holding ``exception``): then the outcome is ``error``."""
    info = drift_info(case)
    if result.error_type == "exception" and info is not None and "error" in (info.get("outcomes") or []):
        return Score("pass", None, f"the parser raised, which the case accepts: {result.detail}", outcome="error")
    return result


def _passthrough(case: Case, got: Message, policy: Policy, detail: str) -> Score:
    """A surfaced answer to a peer case that accepts it only as canitoolcall's ``content_passthrough``: content
    equal to the text; equal only after stripping surrounding whitespace is the whitespace policy's call
    (``soft_pass`` under ``soft-v1``, as canitoolcall's ``checks.check_expected_error``); otherwise a fail."""
    match = text_match(case.text, got.content, policy.whitespace)
    if match == "pass":
        return Score("pass", None, detail, outcome="surfaced")
    if match == "soft":
        return Score("soft_pass", None, f"{detail}; it differs in surrounding whitespace", outcome="surfaced")
    return Score(
        "fail",
        "wrong_content",
        f"surfaced, but content {short(got.content)} is not the text passed through (accept: content_passthrough)",
        outcome="surfaced",
    )


def _surfaced_markup(got: Message, expected: Message, fmt: FormatSpec, policy: Policy) -> str | None:
    """What the policy forbids in surfaced content: any marker the expected content lacks, whole or but for its
    last character (``no-markup``), or a trailing partial marker (``no-markup``; ``either`` when the parser
    returned complete calls before it)."""
    if policy.malformed == "lossless" or (policy.malformed == "either" and not got.tool_calls):
        return None
    allowed = expected.content or ""
    no_markup = policy.malformed == "no-markup"
    found = markup_in("content", got.content, allowed, fmt, whole=no_markup)
    if found or not no_markup:
        return found
    for marker in fmt.markers:  # a marker split across stream chunks, its last character lost (seed 004's gap)
        cut = marker[:-1]
        if len(cut) >= 4 and cut in (got.content or "") and cut not in allowed:
            return f"content contains {cut!r}, {marker!r} without its last character"
    return None


def _prose_lost(expected: Message, got: Message, tolerated: tuple[str, ...]) -> str | None:
    if not _contains(without(got.content, tolerated), expected.content or ""):
        return f"expected content {short(expected.content)} not kept"
    if not _contains(got.reasoning, expected.reasoning or ""):
        return f"expected reasoning {short(expected.reasoning)} not kept"
    return None


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

"""Scoring one parser output against a case: a verdict and, on failure, an error type.

Verdicts: ``pass``; ``soft_pass`` (content or reasoning equal only after stripping surrounding whitespace, under the
``whitespace=soft-v1`` policy: shown apart from passes); ``fail`` (wrong output, typed by :data:`ERROR_TYPES`);
``surfaced`` (observed drift cases without a drift description: no call, the raw text kept in content, counted
apart from passes and failures); ``error`` (the parser raised or timed out).

Conventions (from ``corpora/observed/FORMAT.md``): content ``None`` equals ``""``; surrounding whitespace per the
policy (:mod:`harness.score.policy`); arguments compare as JSON values with free key order.

Numeric equality policy: numbers compare by exact mathematical value (Python semantics), so ``1 == 1.0``,
while a large integer that lost precision through a float (``10**30`` vs ``1e30``) does not match; a number
never equals its string form (``42`` vs ``"42"`` is a wrong argument type) and booleans never equal numbers.
"""

from __future__ import annotations

from typing import Any

from harness.core.cases import Case
from harness.core.messages import Message
from harness.core.results import Score
from harness.formats import FormatSpec
from harness.score.compare import (
    delta_markup,
    json_difference,
    marker_leak,
    messages_equal,
    norm,
    short,
    squash,
    text_match,
)
from harness.score.outcomes import drift_info, drift_score
from harness.score.policy import DEFAULT_POLICY, Policy
from harness.score.reasoning import judged_view

VERDICTS = ("pass", "soft_pass", "fail", "surfaced", "error")

ERROR_TYPES = {
    "wrong_call_count": "number of tool calls differs from the expected calls",
    "wrong_name": "a call has the wrong function name",
    "wrong_argument_value": "an argument has the wrong value, or a key is missing or extra",
    "wrong_argument_type": "an argument has the wrong JSON type (e.g. an object returned as a string)",
    "invalid_arguments": "a call's arguments are not a JSON object (undecodable text, list, ...)",
    "marker_leak": "a protocol marker appears in content or reasoning (final message or any streamed delta)",
    "content_lost": "expected content (prose) is missing from the output",
    "wrong_content": "content differs from the expected content (extra or altered text)",
    "wrong_reasoning": "reasoning differs from the expected reasoning",
    "stream_diverges": "a streaming result differs from the same parser's one-shot result",
    "exception": "the parser raised an exception",
    "timeout": "the parser did not return within the time limit",
    "crash": "the parser's worker process exited or closed its output (it is restarted)",
    "protocol": "the parser's worker answered something that is not a valid protocol response (it is restarted)",
    "capture_error": "the backend produced no output to parse (connection or HTTP error, truncated stream)",
    "not_recovered": "a drift case whose mutator allows only recovery came back surfaced (no call, raw text kept)",
}


def score(
    case: Case,
    got: Message,
    fmt: FormatSpec,
    oneshot: Message | None = None,
    leaked_delta: str | None = None,
    policy: Policy = DEFAULT_POLICY,
) -> Score:
    """Score ``got`` for ``case`` under the judging ``policy``.

    ``oneshot`` is the same parser's one-shot result when ``got`` comes from streaming: a failing stream
    whose result differs from it is typed ``stream_diverges``. ``leaked_delta`` is the first streamed delta
    text that contained a marker, if any. A drift case with mutator facts (``extra["drift"]``) or a peer's
    ``expected_error`` is scored by its outcome class (:func:`harness.score.outcomes.drift_score`). Both sides are
    first read into the policy's reasoning form (:func:`harness.score.reasoning.judged_view`).
    """
    oneshot = judged_view(case, oneshot, fmt, policy)[1] if oneshot is not None else None
    case, got, problem = judged_view(case, got, fmt, policy)
    if problem is not None:
        result = Score("fail", "wrong_reasoning", problem)
    elif drift_info(case) is not None:
        result = drift_score(case, got, fmt, leaked_delta, policy)
    else:
        result = _score_message(case, got, fmt, leaked_delta, policy.whitespace)
    if result.verdict == "fail" and oneshot is not None and not messages_equal(got, oneshot):
        return Score("fail", "stream_diverges", f"{result.error_type}: {result.detail}", outcome=result.outcome)
    return result


def _score_message(case: Case, got: Message, fmt: FormatSpec, leaked_delta: str | None, whitespace: str) -> Score:
    expected = case.expected
    if case.kind == "drift" and not got.tool_calls and _surfaces(case, got, fmt):
        return Score("surfaced", None, "no call; raw text kept in content")
    if len(got.tool_calls) != len(expected.tool_calls):
        return Score(
            "fail", "wrong_call_count", f"expected {len(expected.tool_calls)} call(s), got {len(got.tool_calls)}"
        )
    for i, (want, have) in enumerate(zip(expected.tool_calls, got.tool_calls, strict=False)):
        if want.name != have.name:
            return Score("fail", "wrong_name", f"call {i}: expected name {want.name!r}, got {have.name!r}")
        problem = _argument_problem(want.arguments, have.arguments, f"call {i}")
        if problem:
            return problem
    leak = marker_leak(got, expected, fmt) or delta_markup(leaked_delta, expected, fmt)
    if leak:
        return Score("fail", "marker_leak", leak)
    content = text_match(expected.content, got.content, whitespace)
    if content is None:
        want_content, have_content = norm(expected.content), norm(got.content)
        if want_content and not have_content:
            return Score("fail", "content_lost", f"expected content {short(want_content)}, got none")
        if want_content == have_content:  # a whitespace-only difference, under whitespace=strict
            want_content, have_content = expected.content or "", got.content or ""
        return Score("fail", "wrong_content", f"expected content {short(want_content)}, got {short(have_content)}")
    reasoning = text_match(expected.reasoning, got.reasoning, whitespace)
    if reasoning is None:
        return Score(
            "fail", "wrong_reasoning", f"expected reasoning {short(expected.reasoning)}, got {short(got.reasoning)}"
        )
    if "soft" in (content, reasoning):
        which = " and ".join(name for name, m in (("content", content), ("reasoning", reasoning)) if m == "soft")
        return Score("soft_pass", None, f"{which} differ only in surrounding whitespace")
    return Score("pass")


def _argument_problem(want: Any, have: Any, where: str) -> Score | None:
    if not isinstance(have, dict):
        kind = "wrong_argument_type" if isinstance(have, str) else "invalid_arguments"
        return Score("fail", kind, f"{where}: arguments are {type(have).__name__} {short(have)}, not an object")
    diff = json_difference(want, have)
    if diff is None:
        return None
    kind, path, detail = diff
    return Score("fail", kind, f"{where}: {path or 'arguments'}: {detail}")


def delta_leak(text: str, fmt: FormatSpec, policy: Policy = DEFAULT_POLICY) -> bool:
    """True when one streamed content/reasoning delta contains a whole protocol marker (under ``reasoning=none`` or
    ``any``, the markers of the format's inline reasoning block are content)."""
    block = fmt.thought_markers if policy.reasoning != "deepseek" else ()
    return any(marker in text and not any(marker in part for part in block) for marker in fmt.markers)


def _surfaces(case: Case, got: Message, fmt: FormatSpec) -> bool:
    """Drift outcome "surfaced": the call text (from its opener on, whitespace-normalised) is in content."""
    start = case.text.find(fmt.call_open)
    call_text = case.text[start:] if start >= 0 else case.text
    for stop in fmt.stop_markers:
        call_text = call_text.strip().removesuffix(stop)
    return bool(got.content) and squash(call_text) in squash(got.content)

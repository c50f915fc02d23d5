"""Time limits the harness cannot honour are the run's error, never a parser's verdict (issue 15, item 2).

Before: ``setitimer`` raised ``OverflowError`` for ``inf`` or ``1e10`` inside the guarded call, so every result
became the parser's ``exception`` (own parser 0/126, exit 0; sweep "20/20 wrong")."""

from __future__ import annotations

import math
import signal
import time

import pytest

from harness.core import guards
from harness.core.cases import Case
from harness.core.guards import MAX_TIME_LIMIT_S, TimeLimitError, checked_time_limit, time_limit
from harness.core.messages import Message, ToolCall
from harness.formats import get_format
from harness.parse.calls import alarm_limit, guarded
from harness.score.runner import evaluate_case
from parsers.own.gemma4 import Gemma4Parser

FMT = get_format("gemma4")
CASE = Case("c1", "gemma4", "<|tool_call>call:f{a:1}<tool_call|>", Message(tool_calls=[ToolCall("f", {"a": 1})]))
OUT_OF_RANGE = [0.0, -1.0, math.inf, math.nan, 1e10, MAX_TIME_LIMIT_S * 1.5]


@pytest.mark.parametrize("seconds", [1e-6, 0.5, 10.0, MAX_TIME_LIMIT_S])
def test_limits_in_range_are_taken(seconds):
    assert checked_time_limit(seconds) == seconds


@pytest.mark.parametrize("seconds", OUT_OF_RANGE)
def test_limits_out_of_range_are_refused_with_the_range(seconds):
    with pytest.raises(TimeLimitError, match=r"more than 0 and at most 86400 seconds"):
        checked_time_limit(seconds)


@pytest.mark.parametrize("widen", [False, True])
def test_a_limit_that_cannot_be_set_raises_before_the_block_and_leaves_the_alarm(monkeypatch, widen):
    """Refused by the range check, or (range widened) by ``setitimer`` itself: either way nothing runs, and the
    SIGALRM handler and timer (pytest-timeout may hold one) are as they were."""
    if widen:
        monkeypatch.setattr(guards, "MAX_TIME_LIMIT_S", math.inf)
    handler, (timer, _) = signal.getsignal(signal.SIGALRM), signal.getitimer(signal.ITIMER_REAL)
    ran = []
    with pytest.raises(TimeLimitError, match="cannot set a time limit" if widen else "at most"):
        with time_limit(1e10, lambda frame: TimeoutError()):
            ran.append(True)
    assert ran == [] and signal.getsignal(signal.SIGALRM) is handler
    assert abs(signal.getitimer(signal.ITIMER_REAL)[0] - timer) < 1


def test_a_limit_in_range_still_interrupts_a_loop():
    started = time.perf_counter()
    with pytest.raises(TimeoutError), time_limit(0.2, lambda frame: TimeoutError()):
        while True:
            pass
    assert time.perf_counter() - started < 5


@pytest.mark.parametrize("seconds", [math.inf, 1e10])
def test_guarded_lets_the_harness_failure_through_and_blames_no_parser(seconds):
    calls = []
    with pytest.raises(TimeLimitError):
        guarded(lambda: calls.append(1) or Message(), seconds)
    assert calls == []


@pytest.mark.parametrize("seconds", OUT_OF_RANGE)
def test_evaluate_case_raises_instead_of_recording_the_parsers_exception(seconds):
    with pytest.raises(TimeLimitError):
        list(evaluate_case(CASE, Gemma4Parser(), FMT, ["oneshot", "char"], seed=0, timeout_s=seconds))
    assert [r.verdict for r in evaluate_case(CASE, Gemma4Parser(), FMT, ["oneshot"], seed=0, timeout_s=10)] == ["pass"]


class _OutOfProcess:
    """Only what :func:`alarm_limit` reads of a worker parser: its per-response limit."""

    out_of_process, timeout_s = True, 10.0


def test_an_out_of_process_parser_gets_no_limit_out_of_range():
    parser = _OutOfProcess()
    with pytest.raises(TimeLimitError):
        alarm_limit(parser, math.inf)  # before: queue.get(timeout=inf) raised OverflowError inside the call
    assert parser.timeout_s == 10.0
    assert alarm_limit(parser, 3.0) is None and parser.timeout_s == 3.0


class _BreaksContract:
    """An in-process parser whose one-shot ``parse`` returns what ``make()`` gives instead of a Message."""

    name, out_of_process = "breaks-contract", False

    def __init__(self, make):
        self.make = make

    def parse(self, text, tools=None, prefix=""):
        return self.make()

    def stream(self, tools=None, prefix=""):
        return Gemma4Parser().stream(tools, prefix)


@pytest.mark.parametrize(
    "make, says",
    [
        (lambda: None, "returned NoneType, not a Message"),
        (lambda: {"tool_calls": []}, "returned dict, not a Message"),
        (lambda: Message(tool_calls=None), "Message.tool_calls is NoneType"),  # type: ignore[arg-type]
        (lambda: Message(tool_calls=[{"name": "f"}]), "Message.tool_calls[0] is dict"),  # type: ignore[list-item]
        (lambda: Message(content=5), "Message.content is int"),  # type: ignore[arg-type]
    ],
)
def test_a_parser_returning_no_message_is_its_exception_and_the_run_goes_on(make, says):
    """Before: a ``py:`` parser whose ``parse`` returned None crashed the scorer with a traceback, 0 records."""
    records = list(evaluate_case(CASE, _BreaksContract(make), FMT, ["oneshot", "char"], seed=0, timeout_s=10))
    oneshot = next(r for r in records if r.mode == "oneshot")
    assert (oneshot.verdict, oneshot.error_type) == ("error", "exception")
    assert says in oneshot.detail and "broke its contract" in oneshot.detail
    assert [r.verdict for r in records if r.mode != "oneshot"] == ["pass"]

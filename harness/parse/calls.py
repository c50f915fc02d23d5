"""Calling a parser safely: a time limit per call (``SIGALRM`` in the main thread; out-of-process parsers get it
as their per-response limit), every exception, timeout or worker failure turned into an ``error`` score, and the
circuit breaker (:class:`Breaker`) that stops calling a parser that keeps timing out or crashing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

from harness.core import guards
from harness.core.messages import Message, ToolCall
from harness.core.protocol import Parser
from harness.core.results import Score, clip
from harness.engines.client import WorkerError, WorkerParserError, WorkerParserTimeout, runs_out_of_process


class ParserTimeout(Exception):
    """Raised inside a parser call that ran past the time limit."""


def time_limit(seconds: float | None):
    """Raise :class:`ParserTimeout` in the block after ``seconds`` (no-op off the main thread)."""
    return guards.time_limit(seconds, lambda frame: ParserTimeout(f"no result after {seconds:g} s"))


def guarded(call: Callable[[], Message], timeout_s: float | None) -> tuple[Message | None, Score | None]:
    """Run a parser call; return ``(message, None)`` or ``(None, error score)`` on exception or timeout.

    A worker failure (:class:`harness.engines.client.WorkerError`) is typed by its kind: ``crash``,
    ``timeout`` or ``protocol``. ``timeout_s=None`` leaves timing to the callee (out-of-process parsers).
    A time limit that cannot be set raises :class:`harness.core.guards.TimeLimitError`: no parser is blamed."""
    try:
        with time_limit(timeout_s):
            got = call()
        broken = contract_violation(got)
        if broken:
            return None, Score("error", "exception", clip(f"the parser broke its contract: {broken}"))
        return got, None
    except guards.TimeLimitError:  # the harness' own machinery failed: the run's error, not the parser's
        raise
    except ParserTimeout as exc:
        return None, Score("error", "timeout", str(exc))
    except WorkerError as exc:
        return None, Score("error", exc.kind, clip(f"worker {exc.kind}: {exc}"))
    except WorkerParserTimeout as exc:  # the worker interrupted a looping parser call itself
        return None, Score("error", "timeout", clip(str(exc)))
    except WorkerParserError as exc:  # the parser inside the worker raised; the message names the exception
        return None, Score("error", "exception", clip(str(exc)))
    except Exception as exc:  # a parser's crash is a result, not a harness failure
        return None, Score("error", "exception", clip(f"{type(exc).__name__}: {exc}"))


def contract_violation(got: object) -> str | None:
    """Why ``got`` is not what a parser call must return (a :class:`Message` whose ``content`` and ``reasoning``
    are strings or None and whose ``tool_calls`` is a list of :class:`ToolCall` with string names), or None.
    An in-process parser that returns ``None`` or a dict is that parser's ``exception``, not a crash of the run."""
    if not isinstance(got, Message):
        return f"returned {type(got).__name__}, not a Message"
    for field_name in ("content", "reasoning"):
        value = getattr(got, field_name)
        if value is not None and not isinstance(value, str):
            return f"Message.{field_name} is {type(value).__name__}, not a string or None"
    if not isinstance(got.tool_calls, list):
        return f"Message.tool_calls is {type(got.tool_calls).__name__}, not a list"
    for k, tool_call in enumerate(got.tool_calls):
        if not isinstance(tool_call, ToolCall):
            return f"Message.tool_calls[{k}] is {type(tool_call).__name__}, not a ToolCall"
        if not isinstance(tool_call.name, str):
            return f"Message.tool_calls[{k}].name is {type(tool_call.name).__name__}, not a string"
    return None


def judged(got: Message | None, error: Score | None, judge: Callable[[Message], Score]) -> Score:
    """The score of a :func:`guarded` call: ``error`` when it failed, else ``judge(got)`` (``got`` is a
    :class:`Message` that passed :func:`contract_violation`)."""
    if error is not None:
        return error
    return judge(cast(Message, got))


def alarm_limit(parser: Parser, timeout_s: float | None) -> float | None:
    """The ``SIGALRM`` limit for calls to ``parser``. An out-of-process parser (``out_of_process`` true) gets
    ``timeout_s`` as its per-response limit instead and no alarm: one must not interrupt a read from its pipe.
    Raises :class:`harness.core.guards.TimeLimitError` for a limit out of range (``guards.checked_time_limit``)."""
    if timeout_s is not None:
        guards.checked_time_limit(timeout_s)
    if runs_out_of_process(parser):
        parser.timeout_s = timeout_s or parser.timeout_s
        return None
    return timeout_s


#: consecutive cases with a timeout or crash after which a parser is marked broken for the run (``--break-after``)
DEFAULT_BREAK_AFTER = 3
#: the error types that count towards breaking: the parser costs the time limit or a worker restart each time
BREAKING = ("timeout", "crash")
#: the error type of the results a broken parser is not asked for
UNAVAILABLE = "unavailable"


@dataclass
class Breaker:
    """The circuit breaker of one run: after ``after`` consecutive cases (``after <= 0``: never) on each of which a
    result of a parser was an ``error`` of a :data:`BREAKING` type (it cost the time limit or a worker restart), the
    parser is broken and is not called again; its remaining results are ``error``/``unavailable``
    (:meth:`unavailable`), with the reason. A case on which the parser only answered starts the count again; an
    answer in another mode of a case that timed out does not (a worker whose one-shot call hangs on every case while
    its stream answers would otherwise cost the time limit and a restart on every case).

    A case is a key (``(slice, case id)`` in eval; a case index in sweep); results are observed in run order
    (:meth:`observe`), one per record or check, so replaying a run's records gives the same state."""

    after: int = DEFAULT_BREAK_AFTER
    reasons: dict[str, str] = field(default_factory=dict)  # parser name -> why it is broken
    # parser name -> [cases in a row, key of the last case seen, whether that case counted]
    streaks: dict[str, list] = field(default_factory=dict)
    broke_on: dict[str, object] = field(default_factory=dict)  # parser name -> the case it broke on

    def observe(self, parser: str, case: object, result: Score) -> bool:
        """Count ``result`` of ``parser`` on ``case``; True when this result breaks the parser."""
        if parser in self.reasons or self.after <= 0:
            return False
        state = self.streaks.get(parser) or [0, None]
        count, last = state[0], state[1]
        counted = bool(state[2]) if len(state) > 2 else bool(count)  # a state written before the third field
        if result.verdict != "error" or result.error_type not in BREAKING:
            if last != case or not counted:  # an answer on a case that cost nothing: the streak starts again
                self.streaks[parser] = [0, case, False]
            return False
        if last != case or not counted:
            count += 1
        self.streaks[parser] = [count, case, True]
        if count < self.after:
            return False
        self.reasons[parser] = clip(
            f"marked broken after {self.after} cases in a row with a timeout or crash (last: {result.detail})"
        )
        self.broke_on[parser] = case
        return True

    def watch(self, parser: Parser, case: object, result: Score) -> None:
        """:meth:`observe` a result of ``parser``; a worker process of a parser it breaks is stopped."""
        if self.observe(parser.name, case, result) and runs_out_of_process(parser):
            parser.close()

    def unavailable(self, parser: str) -> Score | None:
        """The ``error``/``unavailable`` score of a broken ``parser``; None while it runs."""
        reason = self.reasons.get(parser)
        return None if reason is None else Score("error", UNAVAILABLE, reason)

    def to_json(self) -> dict:
        """The state, for a run that resumes (:meth:`from_json`); case keys must be JSON values."""
        return {"after": self.after, "reasons": self.reasons, "streaks": self.streaks, "broke_on": self.broke_on}

    @classmethod
    def from_json(cls, data: dict) -> Breaker:
        """The breaker :meth:`to_json` wrote; raises ``KeyError``, ``TypeError`` or ``ValueError`` for other data."""
        streaks = {str(k): list(v) for k, v in data["streaks"].items()}
        return cls(int(data["after"]), dict(data["reasons"]), streaks, dict(data["broke_on"]))

"""Calling a parser safely: a time limit per call (``SIGALRM`` in the main thread; out-of-process parsers get it
as their per-response limit) and every exception, timeout or worker failure turned into an ``error`` score.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from harness.core import guards
from harness.core.messages import Message
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
            return call(), None
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


def judged(got: Message | None, error: Score | None, judge: Callable[[Message], Score]) -> Score:
    """The score of a :func:`guarded` call: ``error`` when it failed, else ``judge(got)``.

    ``got`` goes to ``judge`` as the call returned it: a parser that broke its contract and returned ``None``
    fails inside ``judge`` as before (the caller turns that exception into its error record)."""
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

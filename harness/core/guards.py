"""Guards around library calls, shared by the runner and the engine adapters (standard library only, so the
adapters can use them inside their engines' own virtualenvs).

- :func:`time_limit`: interrupt a call that runs too long (``SIGALRM``; main thread of a Unix process only);
  :func:`checked_time_limit` validates a limit against :data:`MAX_TIME_LIMIT_S`.
- :func:`captured_logs`: collect what a library logs during a call (for ``Message.diagnostics``).
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from harness.core.errors import HarnessError

#: the longest time limit per parser call, in seconds (one day). ``setitimer`` overflows past about 1e9 s
#: (``inf``, ``1e10``: "timestamp out of range for platform time_t"); a day is far beyond any parser call.
MAX_TIME_LIMIT_S = 86400.0


class TimeLimitError(HarnessError):
    """A time limit the harness cannot set: out of range (:func:`checked_time_limit`) or refused by the system.
    A failure of the run, never a parser's verdict (:func:`harness.parse.calls.guarded` lets it through)."""


def checked_time_limit(seconds: float) -> float:
    """``seconds`` when it is more than 0 and at most :data:`MAX_TIME_LIMIT_S`; else :class:`TimeLimitError`
    (``inf`` and ``nan`` included)."""
    if not 0 < seconds <= MAX_TIME_LIMIT_S:
        raise TimeLimitError(
            f"a time limit must be more than 0 and at most {MAX_TIME_LIMIT_S:g} seconds, got {seconds}"
        )
    return seconds


@contextmanager
def time_limit(seconds: float | None, error: Callable[[FrameType | None], BaseException]) -> Iterator[None]:
    """Raise ``error(frame)`` inside the block after ``seconds`` (``frame``: where the call was stopped).

    A no-op when ``seconds`` is falsy, off the main thread, or where ``SIGALRM`` does not exist. It interrupts
    Python code, not a C extension stuck in native code (out-of-process workers are the remedy for those).
    Raises :class:`TimeLimitError` before the block runs when the alarm cannot be set (``seconds`` out of range).
    """
    if not seconds or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def _expire(signum, frame):
        raise error(frame)

    checked_time_limit(seconds)
    previous = signal.signal(signal.SIGALRM, _expire)
    try:
        signal.setitimer(signal.ITIMER_REAL, seconds)
    except (OverflowError, ValueError, OSError) as exc:
        signal.signal(signal.SIGALRM, previous)
        raise TimeLimitError(f"cannot set a time limit of {seconds:g} s: {exc}") from None
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def captured_logs(
    logger_name: str, sink: list[str], level: int = logging.WARNING, keep_off_console: bool = False
) -> Iterator[None]:
    """Append ``"<logger root> <level> (<logger>): <message>"`` to ``sink`` for every record at ``level`` or above
    that the ``logger_name`` loggers emit from this thread during the block.

    ``keep_off_console``: also stop the records from reaching the library's other handlers (the logger's
    ``propagate`` is turned off and its level lowered to ``level`` if higher) for the duration.
    """
    thread = threading.get_ident()
    logger = logging.getLogger(logger_name)

    class _Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.thread != thread:
                return
            message = record.getMessage()
            if record.exc_info and record.exc_info[1] is not None:
                message += f" [{type(record.exc_info[1]).__name__}: {record.exc_info[1]}]"
            sink.append(f"{logger_name} {record.levelname.lower()} ({record.name}): {message}")

    handler = _Collect(level=level)
    old_level, old_propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    if keep_off_console:
        logger.propagate = False
        if logger.getEffectiveLevel() > level:
            logger.setLevel(level)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        logger.propagate = old_propagate


INTERRUPTED = threading.Event()


def request_interrupt(signum=None, frame=None) -> None:
    """SIGINT handler: remember the request, then raise ``KeyboardInterrupt`` as Python would.

    Remembering matters because Python drops an exception raised inside a garbage-collector callback (as
    hypothesis installs), so a Ctrl-C landing there would be lost; :func:`check_interrupted`, called between
    cases, raises it again.
    """
    INTERRUPTED.set()
    raise KeyboardInterrupt


def check_interrupted() -> None:
    """Raise ``KeyboardInterrupt`` if an interrupt was requested (see :func:`request_interrupt`)."""
    if INTERRUPTED.is_set():
        raise KeyboardInterrupt

"""Running parsers over cases: one record per (case, parser, mode), written as it is produced.

Modes: ``oneshot`` (``parser.parse``), ``roundtrip`` (the one-shot result rendered back through the template
must give the case's text: :mod:`harness.roundtrip`; rendered cases only, when a template is given), the
streaming chunkings of :mod:`harness.chunking` (``whole``, ``char``, ``random``, ``tokens``), and ``prefix`` —
for the project's own incremental parsers, the text split in two at every position (``text[:k]``,
``text[k:]``) must give the one-shot result each time.

A parser that raises is recorded as ``error``/``exception``; one that runs past the time limit as
``error``/``timeout`` (enforced with ``SIGALRM`` in the main thread, so it interrupts Python code but not a
C extension stuck in native code — out-of-process workers are the remedy for those); a worker process that
dies or breaks the protocol as ``error``/``crash`` or ``error``/``protocol`` (:mod:`harness.worker_client`).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator

from harness import chunking, guards
from harness.formats import FormatSpec
from harness.model import Case, Message
from harness.outcomes import drift_info
from harness.protocol import Delta, Parser, run_stream
from harness.scoring import Score, delta_leak, score
from harness.worker_client import WorkerError, WorkerParserError, WorkerParserTimeout

ONESHOT = "oneshot"
PREFIX = "prefix"
ROUNDTRIP = "roundtrip"
DEFAULT_MODES = (ONESHOT, ROUNDTRIP, "whole", "char", "random", "tokens", PREFIX)
DEFAULT_TIMEOUT_S = 10.0


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


class ParserTimeout(Exception):
    """Raised inside a parser call that ran past the time limit."""


@dataclass
class Record:
    """The result of one (case, parser, mode): one line of ``results.jsonl``. ``outcome`` is the outcome class
    on a drift case (:mod:`harness.outcomes`); it is left out of the JSON for other cases."""

    case_id: str
    slice: str
    kind: str
    parser: str
    mode: str
    verdict: str
    error_type: str | None
    detail: str
    got: dict | None
    elapsed_ms: float
    text_len: int
    tags: list[str] = field(default_factory=list)
    outcome: str | None = None

    def to_json(self) -> dict:
        data = dict(vars(self))
        if data["outcome"] is None:
            del data["outcome"]
        return data


def time_limit(seconds: float | None):
    """Raise :class:`ParserTimeout` in the block after ``seconds`` (no-op off the main thread)."""
    return guards.time_limit(seconds, lambda frame: ParserTimeout(f"no result after {seconds:g} s"))


def guarded(call: Callable[[], Message], timeout_s: float | None) -> tuple[Message | None, Score | None]:
    """Run a parser call; return ``(message, None)`` or ``(None, error score)`` on exception or timeout.

    A worker failure (:class:`harness.worker_client.WorkerError`) is typed by its kind: ``crash``,
    ``timeout`` or ``protocol``. ``timeout_s=None`` leaves timing to the callee (out-of-process parsers)."""
    try:
        with time_limit(timeout_s):
            return call(), None
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


def alarm_limit(parser: Parser, timeout_s: float | None) -> float | None:
    """The ``SIGALRM`` limit for calls to ``parser``. An out-of-process parser (``out_of_process`` true) gets
    ``timeout_s`` as its per-response limit instead and no alarm: one must not interrupt a read from its pipe."""
    if getattr(parser, "out_of_process", False):
        parser.timeout_s = timeout_s or parser.timeout_s
        return None
    return timeout_s


def clip(text: str, limit: int = 300) -> str:
    """``text`` cut to ``limit`` characters, ending with "…" when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def modes_for(parser: Parser, modes: tuple[str, ...], fmt: FormatSpec) -> list[str]:
    """The modes that apply to ``parser``: ``prefix`` only for the project's own incremental parsers,
    ``tokens`` only for formats with a real vocabulary."""
    chosen = []
    for mode in modes:
        if mode == PREFIX and not (parser.incremental and parser.library == "toolcall-harness"):
            continue
        if mode == "tokens" and not chunking.has_tokenizer(fmt.name):
            continue
        chosen.append(mode)
    return chosen


def evaluate_case(case: Case, parser: Parser, fmt: FormatSpec, modes: list[str], seed: int,
                  timeout_s: float | None = DEFAULT_TIMEOUT_S, roundtrip=None) -> Iterator[Record]:
    """Yield one :class:`Record` per mode for ``case`` under ``parser`` (one-shot first). ``roundtrip`` is a
    :func:`harness.roundtrip.roundtrip_check`; without it, or for a case it does not apply to, the
    ``roundtrip`` mode yields nothing."""
    timeout_s = alarm_limit(parser, timeout_s)
    started = time.perf_counter()
    oneshot, error = guarded(lambda: parser.parse(case.text, case.tools, case.prefix), timeout_s)
    if ONESHOT in modes:
        yield _record(case, parser, ONESHOT, error or score(case, oneshot, fmt), oneshot, started)
    for mode in modes:
        if mode == ONESHOT:
            continue
        started = time.perf_counter()
        if mode == ROUNDTRIP:
            from harness.roundtrip import applies

            if roundtrip is not None and applies(case):
                yield _record(case, parser, mode, error or roundtrip(case, oneshot), oneshot, started)
            continue
        if mode == PREFIX:
            got, result = _every_prefix(case, parser, fmt, oneshot, timeout_s)
        else:
            chunks = chunking.chunks_for(mode, case.text, seed=seed, case_key=case.id, fmt=case.format)
            got, result = _stream(case, parser, fmt, chunks, oneshot, timeout_s)
        yield _record(case, parser, mode, result, got, started)


def _stream(case: Case, parser: Parser, fmt: FormatSpec, chunks: list, oneshot: Message | None,
            timeout_s: float | None) -> tuple[Message | None, Score]:
    leaks: list[str] = []

    def watch(delta: Delta) -> None:
        for text in (delta.content, delta.reasoning):
            if text and not leaks and delta_leak(text, fmt):
                leaks.append(text)

    got, error = guarded(lambda: run_stream(parser, [c for c, _ in chunks], case.tools, case.prefix,
                                            token_ids=[ids for _, ids in chunks], on_delta=watch), timeout_s)
    if error:
        return None, error
    return got, score(case, got, fmt, oneshot=oneshot, leaked_delta=leaks[0] if leaks else None)


def _every_prefix(case: Case, parser: Parser, fmt: FormatSpec, oneshot: Message | None,
                  timeout_s: float | None) -> tuple[Message | None, Score]:
    """Split at every position; the first split whose result fails decides the verdict."""
    got, result = None, Score("pass")
    for k, split in enumerate(chunking.every_prefix_splits(case.text)):
        got, result = _stream(case, parser, fmt, [(part, None) for part in split], oneshot, timeout_s)
        if not result.passed:
            result.detail = f"split at {k}/{len(case.text)}: {result.detail}"
            return got, result
    return got, result  # the last split's score: a pass (with the drift outcome, if any)


def _record(case: Case, parser: Parser, mode: str, result: Score, got: Message | None, started: float) -> Record:
    return Record(
        case_id=case.id, slice=case.slice, kind=case.kind, parser=parser.name, mode=mode,
        verdict=result.verdict, error_type=result.error_type, detail=result.detail,
        got=got.to_json() if got is not None else None,
        elapsed_ms=round((time.perf_counter() - started) * 1000, 3), text_len=len(case.text), tags=case.tags,
        outcome=result.outcome or ("error" if result.verdict == "error" and drift_info(case) else None),
    )


class ResultsWriter:
    """Appends records to a JSON Lines file, flushing each line so an interrupted run loses nothing."""

    def __init__(self, path):
        self.path = path
        self._fh = open(path, "a", encoding="utf-8")

    def write(self, record: Record, **extra) -> None:
        self._fh.write(json.dumps({**extra, **record.to_json()}, ensure_ascii=False) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

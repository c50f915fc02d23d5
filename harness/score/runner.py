"""Running parsers over cases: one record per (case, parser, mode), written as it is produced.

Modes: ``oneshot`` (``parser.parse``), ``roundtrip`` (the one-shot result rendered back through the template
must give the case's text: :mod:`harness.score.roundtrip`; rendered cases only, when a template is given), the
streaming chunkings of :mod:`harness.parse.modes` (``whole``, ``char``, ``random``, ``tokens``), and ``prefix`` —
for the project's own incremental parsers, the text split in two at every position (``text[:k]``,
``text[k:]``) must give the one-shot result each time.

A parser that raises is recorded as ``error``/``exception``; one that runs past the time limit as
``error``/``timeout`` (enforced with ``SIGALRM`` in the main thread, so it interrupts Python code but not a
C extension stuck in native code — out-of-process workers are the remedy for those); a worker process that
dies or breaks the protocol as ``error``/``crash`` or ``error``/``protocol`` (:mod:`harness.engines.client`); one
that keeps timing out or crashing is marked broken by the run's circuit breaker and its remaining results are
``error``/``unavailable`` (:class:`harness.parse.calls.Breaker`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from harness.core.cases import Case
from harness.core.messages import Message
from harness.core.protocol import Delta, Parser, run_stream
from harness.core.results import Record, Score
from harness.formats import FormatSpec
from harness.parse import modes as chunking
from harness.parse.calls import Breaker, alarm_limit, guarded, judged
from harness.parse.modes import DEFAULT_TIMEOUT_S, ONESHOT, PREFIX, ROUNDTRIP
from harness.score.outcomes import accepted_error, drift_info
from harness.score.policy import DEFAULT_POLICY, Policy
from harness.score.roundtrip import applies
from harness.score.verdicts import delta_leak, score


def record_modes(case: Case, modes: list[str], roundtrip=None) -> list[str]:
    """The modes of ``modes`` that give ``case`` a record (in :func:`evaluate_case`'s order: one-shot first):
    ``roundtrip`` only with a check that applies to the case."""
    ordered = [ONESHOT] if ONESHOT in modes else []
    applied = roundtrip is not None and applies(case)
    return ordered + [m for m in modes if m != ONESHOT and (m != ROUNDTRIP or applied)]


def evaluate_case(
    case: Case,
    parser: Parser,
    fmt: FormatSpec,
    modes: list[str],
    seed: int,
    timeout_s: float | None = DEFAULT_TIMEOUT_S,
    roundtrip=None,
    policy: Policy = DEFAULT_POLICY,
    breaker: Breaker | None = None,
) -> Iterator[Record]:
    """Yield one :class:`Record` per mode of :func:`record_modes` for ``case`` under ``parser``, judged under
    ``policy``. ``roundtrip`` is a :func:`harness.score.roundtrip.roundtrip_check`. A parser that raises on a case
    that accepts an exception (a peer's ``expected_error``) passes (:func:`harness.score.outcomes.accepted_error`).
    ``breaker`` (:class:`harness.parse.calls.Breaker`) sees every record; once it has broken the parser, the
    parser is not called again and the remaining modes are ``error``/``unavailable``."""
    timeout_s = alarm_limit(parser, timeout_s)
    key = (case.slice, case.id)

    def down() -> Score | None:
        return breaker.unavailable(parser.name) if breaker is not None else None

    def record(mode: str, result: Score, got: Message | None, started: float) -> Record:
        if breaker is not None:
            breaker.watch(parser, key, result)
        return _record(case, parser, mode, result, got, started)

    started = time.perf_counter()
    oneshot, error = None, down()
    if error is None:
        oneshot, error = guarded(lambda: parser.parse(case.text, case.tools, case.prefix), timeout_s)
        if error is not None:
            error = accepted_error(case, error)
    for mode in record_modes(case, modes, roundtrip):
        if mode != ONESHOT:
            started = time.perf_counter()
        unavailable = down()
        got: Message | None = None
        if mode == ONESHOT:
            got, result = oneshot, judged(oneshot, error, lambda m: score(case, m, fmt, policy=policy))
        elif unavailable is not None:  # broken by an earlier result: not asked
            result = unavailable
        elif mode == ROUNDTRIP:
            got, result = oneshot, judged(oneshot, error, lambda m: roundtrip(case, m))
        elif mode == PREFIX:
            got, result = _every_prefix(case, parser, fmt, oneshot, timeout_s, policy)
        else:
            ids = case.extra.get("token_ids")
            chunks = chunking.chunks_for(
                mode, case.text, seed=seed, case_key=case.id, fmt=case.format, token_ids=ids if ids else None
            )
            got, result = _stream(case, parser, fmt, chunks, oneshot, timeout_s, policy)
        yield record(mode, result, got, started)


def _stream(
    case: Case,
    parser: Parser,
    fmt: FormatSpec,
    chunks: list,
    oneshot: Message | None,
    timeout_s: float | None,
    policy: Policy,
) -> tuple[Message | None, Score]:
    leaks: list[str] = []

    def watch(delta: Delta) -> None:
        for text in (delta.content, delta.reasoning):
            if text and not leaks and delta_leak(text, fmt, policy):
                leaks.append(text)

    got, error = guarded(
        lambda: run_stream(
            parser,
            [c for c, _ in chunks],
            case.tools,
            case.prefix,
            token_ids=[ids for _, ids in chunks],
            on_delta=watch,
        ),
        timeout_s,
    )
    leaked = leaks[0] if leaks else None
    if error is not None:
        error = accepted_error(case, error)
    return got, judged(got, error, lambda m: score(case, m, fmt, oneshot=oneshot, leaked_delta=leaked, policy=policy))


def _every_prefix(
    case: Case, parser: Parser, fmt: FormatSpec, oneshot: Message | None, timeout_s: float | None, policy: Policy
) -> tuple[Message | None, Score]:
    """Split at every position; the first split whose result fails decides the verdict."""
    got, result = None, Score("pass")
    for k, split in enumerate(chunking.every_prefix_splits(case.text)):
        got, result = _stream(case, parser, fmt, [(part, None) for part in split], oneshot, timeout_s, policy)
        if not result.passed:
            result.detail = f"split at {k}/{len(case.text)}: {result.detail}"
            return got, result
    return got, result  # the last split's score: a pass (with the drift outcome, if any)


def _record(case: Case, parser: Parser, mode: str, result: Score, got: Message | None, started: float) -> Record:
    return Record(
        case_id=case.id,
        slice=case.slice,
        kind=case.kind,
        parser=parser.name,
        mode=mode,
        verdict=result.verdict,
        error_type=result.error_type,
        detail=result.detail,
        got=got.to_json() if got is not None else None,
        elapsed_ms=round((time.perf_counter() - started) * 1000, 3),
        text_len=len(case.text),
        tags=case.tags,
        outcome=result.outcome or ("error" if result.verdict == "error" and drift_info(case) else None),
    )

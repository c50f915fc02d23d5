"""Scoring parsers on captured model output: each capture's raw text parsed one-shot and streamed (its recorded
pieces), judged against its prompt's expectations (which tool, how many calls, pinned values, substrings).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

from jsonschema import Draft202012Validator

from harness.capture.records import Capture
from harness.capture.server_parse import message_from_server
from harness.capture.suites import ExpectedCall, Prompt
from harness.core.errors import HarnessError
from harness.core.guards import check_interrupted
from harness.core.messages import Message
from harness.core.protocol import Parser, run_stream
from harness.core.results import Record, ResultsWriter, Score, clip
from harness.formats import FormatSpec
from harness.parse.calls import Breaker, alarm_limit, guarded, judged
from harness.score.compare import json_difference
from harness.score.verdicts import delta_leak


def score_capture(
    capture: Capture,
    prompt: Prompt,
    parser: Parser,
    fmt: FormatSpec,
    timeout_s: float | None = 10.0,
    breaker: Breaker | None = None,
) -> Iterator[tuple[str, Score, Message | None]]:
    """``(mode, score, message)`` for ``parser`` on ``capture``: ``oneshot`` on the text, and ``pieces`` (the
    recorded generation pieces streamed with their token ids) when pieces were recorded. A failed capture
    yields one ``capture`` mode with verdict ``error``/``capture_error``. ``breaker`` sees each score; a parser
    it has broken is not called (``error``/``unavailable``)."""
    if capture.error is not None:
        yield "capture", Score("error", "capture_error", capture.error), None
        return
    timeout_s = alarm_limit(parser, timeout_s)
    # A capture without an error has its text; a file that breaks that reaches the parser as is, as before,
    # and guarded() records the parser's failure.
    text = cast(str, capture.text)
    chunks = [text for text, _ in capture.pieces or []]
    ids = [list(token_ids) for _, token_ids in capture.pieces or []]
    calls = [("oneshot", lambda: parser.parse(text, prompt.tools, capture.prefix))]
    if capture.pieces:
        calls.append(("pieces", lambda: run_stream(parser, chunks, prompt.tools, capture.prefix, token_ids=ids)))
    for mode, call in calls:
        unavailable = breaker.unavailable(parser.name) if breaker is not None else None
        got, error = (None, unavailable) if unavailable is not None else guarded(call, timeout_s)
        result = judged(got, error, lambda m: judge(prompt, m, fmt, capture.text))
        if breaker is not None:
            breaker.watch(parser, (f"capture:{capture.suite}", capture.prompt_id), result)
        yield mode, result, got


def judge(prompt: Prompt, got: Message, fmt: FormatSpec, raw: str | None = None) -> Score:
    """Score a parser's message for a captured answer to ``prompt`` (see the module docstring).

    Verdict ``pass`` or ``fail`` with the harness' error types: ``content_lost`` (``raw``, the captured text,
    has words but the parser returned no call, no content and no reasoning: it dropped the answer),
    ``wrong_call_count``, ``wrong_name``, ``invalid_arguments`` (not an object, or rejected by the tool's
    schema), ``wrong_argument_value`` (a pinned value or required substring missing), ``marker_leak``."""
    if raw and raw.strip() and not (got.tool_calls or (got.content or "").strip() or (got.reasoning or "").strip()):
        return Score("fail", "content_lost", f"the parser returned nothing for a {len(raw)}-character answer")
    if len(got.tool_calls) != len(prompt.calls):
        return Score("fail", "wrong_call_count", f"expected {len(prompt.calls)} call(s), got {len(got.tool_calls)}")
    for i, (want, have) in enumerate(zip(prompt.calls, got.tool_calls, strict=False)):
        if have.name != want.name:
            return Score("fail", "wrong_name", f"call {i}: expected {want.name!r}, got {have.name!r}")
        problem = _argument_problem(prompt, want, have.arguments, f"call {i}")
        if problem:
            return problem
    for field_name, text in (("content", got.content), ("reasoning", got.reasoning)):
        if text and delta_leak(text, fmt):
            return Score("fail", "marker_leak", f"protocol marker in {field_name}: {text[:80]!r}")
    return Score("pass")


def _argument_problem(prompt: Prompt, want: ExpectedCall, arguments: Any, where: str) -> Score | None:
    if not isinstance(arguments, dict):
        return Score("fail", "invalid_arguments", f"{where}: arguments are {type(arguments).__name__}, not an object")
    schema = (prompt.tool(want.name) or {}).get("parameters", {})  # load_suite checked the tool is declared
    try:
        error = next(iter(Draft202012Validator(schema).iter_errors(arguments)), None)
    except RecursionError:  # load_suite rejects $ref cycles: only arguments nested thousands deep get here
        return Score("fail", "invalid_arguments", f"{where}: arguments nest too deeply to check against the schema")
    if error is not None:
        path = "/".join(str(p) for p in error.absolute_path) or "(root)"
        return Score("fail", "invalid_arguments", f"{where}: schema rejects {path}: {error.message}")
    missing = _not_contained(want.pinned, arguments, "")
    if missing:
        return Score("fail", "wrong_argument_value", f"{where}: {missing}")
    for key, needles in want.contains.items():
        value = arguments.get(key)
        for needle in needles:
            if not isinstance(value, str) or needle not in value:
                return Score("fail", "wrong_argument_value", f"{where}: {key} lacks {needle!r}")
    return None


def _not_contained(pinned: Any, value: Any, path: str) -> str | None:
    """Why ``value`` does not contain ``pinned`` (None when it does): objects by subset, lists element-wise
    with equal length, scalars by JSON equality (the harness' numeric policy)."""
    if isinstance(pinned, dict):
        if not isinstance(value, dict):
            return f"{path or 'arguments'} should be an object"
        for key, sub in pinned.items():
            if key not in value:
                return f"{path + '.' if path else ''}{key} is missing"
            reason = _not_contained(sub, value[key], f"{path + '.' if path else ''}{key}")
            if reason:
                return reason
        return None
    if isinstance(pinned, list):
        if not isinstance(value, list) or len(value) != len(pinned):
            return f"{path} should be a list of {len(pinned)}"
        for i, (sub, item) in enumerate(zip(pinned, value, strict=False)):
            reason = _not_contained(sub, item, f"{path}[{i}]")
            if reason:
                return reason
        return None
    difference = json_difference(pinned, value, path)
    return f"{path}: expected {pinned!r}, got {value!r}" if difference else None


def score_captures(
    captures: list[Capture],
    prompts: dict[str, Prompt],
    parsers: list,
    fmt: FormatSpec,
    writer: ResultsWriter | None = None,
    timeout_s: float | None = 10.0,
    server_name: str | None = None,
    breaker: Breaker | None = None,
) -> list[dict]:
    """Score every parser on every capture; returns the records (``results.jsonl`` lines, ``slice`` =
    ``capture:SUITE``, ``kind`` = the backend) and writes each to ``writer`` as produced; ``breaker`` as in
    :func:`score_capture`.

    Modes: ``oneshot``, ``pieces`` (streamed as generated), and ``server`` for the server's own parse
    (parser ``server:NAME``). A capture whose prompt is not in ``prompts`` raises :class:`HarnessError`."""
    records = []
    for capture in captures:
        check_interrupted()
        prompt = prompts.get(capture.prompt_id)
        if prompt is None:
            raise HarnessError(
                f"capture of prompt {capture.prompt_id!r} ({capture.suite}): no such prompt in the suites given"
            )
        for parser in parsers:
            for mode, result, got in score_capture(capture, prompt, parser, fmt, timeout_s, breaker):
                records.append(_write(writer, capture, parser.name, mode, result, got))
        if capture.server_message is not None:
            got = message_from_server(capture.server_message)
            records.append(
                _write(
                    writer,
                    capture,
                    f"server:{server_name or capture.backend}",
                    "server",
                    judge(prompt, got, fmt, capture.text),
                    got,
                )
            )
    return records


def _write(writer, capture: Capture, parser: str, mode: str, result, got: Message | None) -> dict:
    record = Record(
        case_id=capture.prompt_id,
        slice=f"capture:{capture.suite}",
        kind=capture.backend,
        parser=parser,
        mode=mode,
        verdict=result.verdict,
        error_type=result.error_type,
        detail=clip(result.detail),
        got=got.to_json() if got else None,
        elapsed_ms=0.0,
        text_len=len(capture.text or ""),
        tags=[capture.suite],
    )
    if writer is not None:
        writer.write(record)
    return record.to_json()

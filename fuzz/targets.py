"""The fuzz targets and their invariants, without atheris: ``fuzz/run.py`` drives them under atheris (coverage-guided),
``tests/unit/test_fuzz_regressions.py`` replays the inputs that once broke them. ``docs/fuzzing.md`` tells the story.

A target is a name and a check ``check(data: bytes) -> None`` that raises :class:`Violation` (or lets an undeclared
exception escape) when an invariant fails:

- ``parser-<format>``, one per own parser of the registry (``toolcall-harness:<format>``): ``data`` is decoded by
  :func:`decode_parser_input` into a text, cut offsets, a template prefix and a tools declaration. The one-shot parse
  never raises (own parsers declare no error: faults are surfaced as content), and it equals the stream fed the text
  cut at those offsets (:func:`harness.parse.modes.split_at`): the same content, reasoning and calls, arguments
  compared type-exactly.
- ``cases``, ``suite``, ``capture``: ``data`` is a file's bytes, read by :func:`harness.core.cases.load_cases`,
  :func:`harness.capture.suites.load_suite` (each prompt then judged, :func:`harness.score.captures.judge`, on a
  message making its expected calls) and :func:`harness.capture.records.read_captures` (torn last line reported and
  not). Only the reader's declared error may escape, and its message is one non-empty line.
- ``worker-reply``: ``data`` is what a worker writes on stdout, read through a real pipe by
  :func:`harness.engines.server.fd_line_blocks`; each line is decoded as the answer to request 1
  (:func:`harness.engines.client.decode_response`, strict and lenient), then read as a hello, a parse result, a
  stream result and its diagnostics. Only :class:`~harness.engines.client.WorkerError` (one line) and
  :class:`~harness.engines.client.WorkerParserError` may escape.

Time per input is bounded by the driver (libFuzzer's ``-timeout``, :data:`TIMEOUT_S`) and by the regression tests.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from harness.capture.records import CaptureFileError, read_captures
from harness.capture.suites import SuiteError, load_suite
from harness.core.cases import CaseFileError, load_cases
from harness.core.messages import Message, ToolCall
from harness.core.protocol import run_stream
from harness.engines.client import (
    WorkerError,
    WorkerParserError,
    _check_hello,
    decode_response,
    deltas_from_result,
    diagnostics_from_result,
    message_from_result,
)
from harness.engines.server import fd_line_blocks
from harness.formats import FormatSpec, get_format
from harness.parse import registry
from harness.parse.modes import split_at
from harness.score.captures import judge

#: seconds one input may take before libFuzzer reports it as a timeout (a hang found); the regression tests use it too
TIMEOUT_S = 5
#: the most cut offsets one parser input carries (the low 4 bits of its first byte)
MAX_SPLITS = 15
#: the tools declaration a parser input may ask for (bit 7 of its first byte): one tool per JSON type, so parsers
#: that type arguments by the schema (Qwen3-Coder, MiniMax, GLM ...) take their typed paths
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} tool.",
            "parameters": {
                "type": "object",
                "properties": {
                    "s": {"type": "string"},
                    "i": {"type": "integer"},
                    "n": {"type": "number"},
                    "b": {"type": "boolean"},
                    "o": {"type": "object"},
                    "a": {"type": "array", "items": {"type": "string"}},
                    "u": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                },
            },
        },
    }
    for name in ("get_weather", "f", "search")
]


class Violation(AssertionError):
    """An invariant of a target failed; the message says which, on the decoded input."""


# ---- own parsers ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParserInput:
    """One parser input: ``text`` fed as ``split_at(text, splits)`` (non-empty pieces), ``prefix`` and ``tools``."""

    text: str
    splits: tuple[int, ...]
    prefix: str
    tools: list | None


def prefixes(spec: FormatSpec) -> tuple[str, ...]:
    """The template prefixes a parser input chooses from (bits 4-6 of its first byte, modulo the count): none, the
    format's reasoning opener (with and without its newline: the generation prompt of thinking templates) and its
    call pre-fill."""
    found = [""]
    if spec.reasoning:
        found += [spec.reasoning.open, spec.reasoning.open + "\n"]
    if spec.call_prefill:
        found.append(spec.call_prefill)
    return tuple(dict.fromkeys(found))


def decode_parser_input(data: bytes, choices: Sequence[str]) -> ParserInput:
    """``data`` as ``[head][2 bytes per offset][text as UTF-8]``: ``head`` bits 0-3 the offset count, 4-6 the prefix
    (index into ``choices``), 7 the tools; offsets little-endian, each modulo ``len(text) + 1``, then deduplicated
    and sorted; text bytes that are not UTF-8 decode to lone surrogates (``surrogateescape``)."""
    head = data[0] if data else 0
    count = head & 0x0F
    raw, body = data[1 : 1 + 2 * count], data[1 + 2 * count :]
    text = body.decode("utf-8", "surrogateescape")
    offsets = {int.from_bytes(raw[i : i + 2], "little") % (len(text) + 1) for i in range(0, len(raw) - 1, 2)}
    splits = tuple(sorted(o for o in offsets if 0 < o < len(text)))
    return ParserInput(text, splits, choices[(head >> 4 & 0x07) % len(choices)], TOOLS if head & 0x80 else None)


def encode_parser_input(text: str, splits: Sequence[int] = (), prefix_index: int = 0, tools: bool = False) -> bytes:
    """The bytes :func:`decode_parser_input` reads back as ``text``, cut at ``splits`` (up to :data:`MAX_SPLITS`,
    each below 65536), with prefix ``prefix_index`` and :data:`TOOLS` when ``tools``."""
    splits = list(splits)[:MAX_SPLITS]
    head = len(splits) | (prefix_index & 0x07) << 4 | (0x80 if tools else 0)
    return bytes([head]) + b"".join(s.to_bytes(2, "little") for s in splits) + text.encode("utf-8", "surrogateescape")


def own_parser_names() -> dict[str, str]:
    """``{format: parser name}`` of the own parsers the registry finds (``toolcall-harness:<format>``)."""
    return {
        info["formats"][0]: info["name"]
        for info in registry.parser_info()
        if info["library"] == registry.OWN_LIBRARY and len(info["formats"]) == 1
    }


def shape(message: Message) -> str:
    """``message`` as comparable text: content, reasoning and calls, arguments as sorted JSON (``True != 1``); the
    diagnostics left out."""
    data = message.to_json()
    data.pop("diagnostics", None)
    return json.dumps(data, sort_keys=True, ensure_ascii=False)


def parser_check(fmt: str) -> Callable[[bytes], None]:
    """The check of target ``parser-<fmt>`` (module docstring)."""
    parser = registry.get_parser(own_parser_names()[fmt])
    choices = prefixes(get_format(fmt))

    def check(data: bytes) -> None:
        case = decode_parser_input(data, choices)
        one_shot = parser.parse(case.text, case.tools, case.prefix)
        streamed = run_stream(parser, split_at(case.text, case.splits), case.tools, case.prefix)
        if shape(one_shot) != shape(streamed):
            raise Violation(
                f"{parser.name}: one-shot {shape(one_shot)} != streamed {shape(streamed)} for {case.text!r} cut at "
                f"{list(case.splits)}, prefix {case.prefix!r}, tools {case.tools is not None}"
            )

    return check


# ---- readers ----------------------------------------------------------------------------------------------------


@cache
def _scratch() -> Path:
    """A private folder for the files the reader targets write (on ``/dev/shm`` when there is one)."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    return Path(tempfile.mkdtemp(prefix="toolcall-harness-fuzz-", dir=base))


def _one_line(exc: BaseException) -> None:
    message = str(exc)
    if not message or "\n" in message or "\r" in message:
        raise Violation(f"{type(exc).__name__} message is not one line: {message!r}")


def _file(data: bytes, name: str) -> Path:
    path = _scratch() / name
    path.write_bytes(data)
    return path


def check_cases(data: bytes) -> None:
    """The ``cases`` target: a case file (module docstring)."""
    try:
        load_cases(_file(data, "cases.jsonl"))
    except CaseFileError as exc:
        _one_line(exc)


def check_suite(data: bytes) -> None:
    """The ``suite`` target: a suite file, each prompt judged on its expected calls (module docstring)."""
    try:
        prompts = load_suite(_file(data, "suite.jsonl"))
    except SuiteError as exc:
        _one_line(exc)
        return
    fmt = get_format("hermes")
    for prompt in prompts:
        judge(prompt, Message(None, None, [ToolCall(c.name, dict(c.pinned)) for c in prompt.calls]), fmt, raw="x")


def check_capture(data: bytes) -> None:
    """The ``capture`` target: a capture file, read with and without torn-line skipping (module docstring)."""
    path = _file(data, "captures.jsonl")
    skipped: list[str] = []
    for torn in (None, skipped):
        try:
            read_captures(path, torn)
        except CaptureFileError as exc:
            _one_line(exc)


PIPE_BYTES = 1 << 15  # a worker-reply input is cut to this: below a pipe's 64 KiB, so one write never blocks


def _pipe_lines(data: bytes) -> Iterator[bytes]:
    """The lines of ``data`` (at most :data:`PIPE_BYTES`) as the harness reads a worker's stdout: through a pipe,
    by :func:`fd_line_blocks`."""
    read_fd, write_fd = os.pipe()
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(write_fd, view) :]
        os.close(write_fd)
        write_fd = -1
        for lines in fd_line_blocks(read_fd):
            yield from lines
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)


def check_worker_reply(data: bytes) -> None:
    """The ``worker-reply`` target: a worker's stdout (module docstring)."""
    for line in _pipe_lines(data[:PIPE_BYTES]):
        for lenient in (False, True):
            try:
                result = decode_response(line, 1, lenient)
            except WorkerParserError:
                continue
            except WorkerError as exc:
                _one_line(exc)
                continue
            if result is None:
                continue
            for read in (_check_hello, message_from_result, deltas_from_result, diagnostics_from_result):
                try:
                    read(result)
                except WorkerError as exc:
                    _one_line(exc)


READERS: dict[str, Callable[[bytes], None]] = {
    "cases": check_cases,
    "suite": check_suite,
    "capture": check_capture,
    "worker-reply": check_worker_reply,
}


def target_names() -> list[str]:
    """Every target: ``parser-<format>`` for each own parser, then the readers."""
    return [f"parser-{fmt}" for fmt in sorted(own_parser_names())] + list(READERS)


def make_check(name: str) -> Callable[[bytes], None]:
    """The check of target ``name``; ``KeyError`` for an unknown one."""
    if name.startswith("parser-"):
        return parser_check(name.removeprefix("parser-"))
    return READERS[name]

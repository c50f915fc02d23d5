"""The parser protocol every candidate and reference parser implements.

One-shot: ``parser.parse(text, tools, prefix) -> Message``.
Streaming: ``session = parser.stream(tools, prefix)``; ``session.feed(chunk, token_ids=None) -> list[Delta]``
for each chunk, then ``session.finish() -> list[Delta]``. Deltas follow the OpenAI chat-completions streaming
shape: content and reasoning text pieces, and tool-call pieces keyed by call ``index`` whose ``arguments``
fragments concatenate to the call's JSON arguments text.

A library that offers only one side gets the other derived here: :class:`BufferedStream` streams a
one-shot parser (buffer everything, parse at ``finish``), :func:`parse_via_stream` runs a streaming parser on
the whole text. A parser never drops a call silently: failure is an exception, or the raw text left in
``content`` — the harness records which.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from harness.core.messages import Message, ToolCall, parse_arguments


@dataclass
class ToolCallDelta:
    """A piece of one streamed tool call: ``name`` arrives once, ``arguments`` as JSON text fragments."""

    index: int
    name: str | None = None
    arguments: str | None = None
    id: str | None = None


@dataclass
class Delta:
    """One streamed event: a content piece, a reasoning piece, and/or tool-call pieces."""

    content: str | None = None
    reasoning: str | None = None
    tool_calls: list[ToolCallDelta] = field(default_factory=list)

    def to_json(self) -> dict:
        out: dict[str, Any] = {}
        if self.content:
            out["content"] = self.content
        if self.reasoning:
            out["reasoning"] = self.reasoning
        if self.tool_calls:
            out["tool_calls"] = [{k: v for k, v in vars(t).items() if v is not None} for t in self.tool_calls]
        return out


@runtime_checkable
class StreamSession(Protocol):
    """One streamed completion. Optional attribute ``diagnostics: list[str]`` (what the library swallowed)."""

    def feed(self, chunk: str, token_ids: list[int] | None = None) -> list[Delta]:
        """Take the next decoded text ``chunk`` (with its token ids when known); return the deltas now certain."""
        ...

    def finish(self) -> list[Delta]:
        """End of generation (the stop token was consumed); return the remaining deltas."""
        ...


@runtime_checkable
class Parser(Protocol):
    """A tool-call parser under test.

    Attributes: ``name`` (unique, e.g. ``transformers==5.24.0:gemma4``), ``library`` and ``version``
    (what produced it), ``formats`` (format families it parses), ``incremental`` (True when its streaming
    mode emits deltas before the end, so every-prefix replay is meaningful).
    """

    name: str
    library: str
    version: str
    formats: tuple[str, ...]
    incremental: bool

    def parse(self, text: str, tools: list | None = None, prefix: str = "") -> Message:
        """Parse a whole completion. ``tools``: OpenAI-style declarations of the request; ``prefix``: text the
        chat template pre-filled after the generation prompt. May raise: the harness records it."""
        ...

    def stream(self, tools: list | None = None, prefix: str = "") -> StreamSession:
        """Open a streaming session for one completion (same arguments as :meth:`parse`)."""
        ...


class BufferedStream:
    """Streaming session derived from a one-shot parser: buffer every chunk, parse once at ``finish``.

    The final message is emitted as one delta per field, with each call's arguments as one JSON fragment.
    """

    def __init__(self, parser: Parser, tools: list | None, prefix: str):
        self._parser, self._tools, self._prefix = parser, tools, prefix
        self._chunks: list[str] = []

    def feed(self, chunk: str, token_ids: list[int] | None = None) -> list[Delta]:
        self._chunks.append(chunk)
        return []

    def finish(self) -> list[Delta]:
        return message_to_deltas(self._parser.parse("".join(self._chunks), self._tools, self._prefix))


def message_to_deltas(message: Message) -> list[Delta]:
    """Express a whole message as deltas (content, reasoning, then one delta per tool call)."""
    deltas = []
    if message.reasoning:
        deltas.append(Delta(reasoning=message.reasoning))
    if message.content:
        deltas.append(Delta(content=message.content))
    for i, call in enumerate(message.tool_calls):
        args = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments, ensure_ascii=False)
        deltas.append(Delta(tool_calls=[ToolCallDelta(index=i, name=call.name, arguments=args)]))
    return deltas


class StreamAccumulator:
    """Folds deltas into the final :class:`Message`, as an OpenAI-compatible client would.

    Tool calls are keyed by ``index``; names concatenate (a name sent once stays whole) and argument
    fragments concatenate, then decode as JSON at the end. Fragments that do not decode stay a string,
    which scoring reports as a wrong argument type.
    """

    def __init__(self) -> None:
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, dict[str, list[str]]] = {}

    def add(self, deltas: Iterable[Delta]) -> None:
        for delta in deltas:
            if delta.content:
                self.content.append(delta.content)
            if delta.reasoning:
                self.reasoning.append(delta.reasoning)
            for piece in delta.tool_calls:
                call = self.calls.setdefault(piece.index, {"name": [], "arguments": []})
                if piece.name:
                    call["name"].append(piece.name)
                if piece.arguments:
                    call["arguments"].append(piece.arguments)

    def message(self) -> Message:
        calls = []
        for index in sorted(self.calls):
            raw = "".join(self.calls[index]["arguments"])
            calls.append(ToolCall("".join(self.calls[index]["name"]), parse_arguments(raw) if raw else {}))
        return Message(
            content="".join(self.content) or None, reasoning="".join(self.reasoning) or None, tool_calls=calls
        )


def run_stream(
    parser: Parser,
    chunks: Iterable[str],
    tools: list | None = None,
    prefix: str = "",
    token_ids: Iterable[list[int] | None] | None = None,
    on_delta=None,
) -> Message:
    """Feed ``chunks`` (with optional per-chunk token ids) to a fresh session and return the final message.

    A session may expose ``diagnostics`` (what its library swallowed); they are copied onto the message.

    ``on_delta(delta)`` is called for every delta as it arrives (leak checks run on each one).

    A parser with a ``run_stream(chunks, tools, prefix, token_ids) -> (per-call deltas, diagnostics)`` method
    (:class:`harness.engines.client.WorkerParser`) runs the whole stream at once, pipelined.
    """
    chunks = list(chunks)
    ids = list(token_ids) if token_ids is not None else [None] * len(chunks)
    acc = StreamAccumulator()
    if hasattr(parser, "run_stream"):  # out-of-process parsers pipeline the whole stream
        groups, diagnostics = parser.run_stream(chunks, tools, prefix, ids)
        for deltas in groups:
            _observe(deltas, on_delta)
            acc.add(deltas)
        message = acc.message()
        message.diagnostics = list(diagnostics)
        return message
    session = parser.stream(tools, prefix)
    for chunk, chunk_ids in zip(chunks, ids, strict=False):
        deltas = session.feed(chunk, chunk_ids)
        _observe(deltas, on_delta)
        acc.add(deltas)
    deltas = session.finish()
    _observe(deltas, on_delta)
    acc.add(deltas)
    message = acc.message()
    message.diagnostics = list(getattr(session, "diagnostics", []) or [])
    return message


def _observe(deltas: list[Delta], on_delta) -> None:
    if on_delta is not None:
        for delta in deltas:
            on_delta(delta)


def parse_via_stream(parser: Parser, text: str, tools: list | None = None, prefix: str = "") -> Message:
    """One-shot parse derived from a streaming parser: the whole text as one chunk."""
    return run_stream(parser, [text], tools, prefix)

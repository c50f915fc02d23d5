"""Reference adapter: openai-harmony, OpenAI's own parser of the Harmony format gpt-oss writes, on token ids.

Parser ``openai-harmony==<installed version>:harmony`` (:data:`FORMATS`; :data:`UNSUPPORTED` for every other format).
One-shot: the completion encoded with the gpt-oss encoding (``load_harmony_encoding(HARMONY_GPT_OSS)``, special tokens
as their ids) plus the stop token generation ended on (:meth:`~OpenAIHarmonyParser.stop_ids`), then
``parse_messages_from_completion_tokens(ids, Role.ASSISTANT)``; streaming: a ``StreamableParser(encoding,
Role.ASSISTANT)`` fed those ids one by one as the text arrives. The messages are read as a chat completion
(:func:`route`). What the library raises on a case is its verdict.

It runs as the ``openai-harmony`` engine (its own virtualenv: ``pip install openai-harmony==VERSION``) behind
``python -m harness.engines.server parsers.reference.openai_harmony``; the vocabulary it loads at run time,
``o200k_base.tiktoken``, is rebuilt and checked in the main environment (:mod:`harness.assets.o200k`) and handed
over as ``TIKTOKEN_ENCODINGS_BASE``; when it cannot be had, ``toolcall-harness parsers`` says why. How it is driven,
each setting's source and the measured results: ``docs/engines/openai_harmony.md``.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
from dataclasses import dataclass
from typing import Any

from harness.assets.o200k import VocabularyUnavailable, o200k_base_file
from harness.core.messages import Message, ToolCall, parse_arguments
from harness.core.protocol import Delta, ToolCallDelta
from harness.engines.spec import PipEngine
from harness.formats import harmony as _harmony_format
from harness.formats import known_formats
from parsers.reference._token_ids import MarkerTail, stable_ids

#: The variable openai-harmony reads the vocabulary's folder from (``src/tiktoken_ext/public_encodings.rs``).
ENCODINGS_ENV = "TIKTOKEN_ENCODINGS_BASE"
FUNCTIONS = _harmony_format.FUNCTIONS  # the recipient namespace of function calls: "functions.NAME"
MESSAGE_ENDS = (_harmony_format.END, *_harmony_format.SPEC.stop_markers)  # <|end|>, <|call|>, <|return|>, <|endoftext|>


@dataclass(frozen=True)
class Launch:
    """How gpt-oss's own code drives the library for a format's completions."""

    encoding: str  # a HarmonyEncodingName member
    role: str  # the Role the completion's first message has (the generation prompt ends ``<|start|>assistant``)


FORMATS: dict[str, Launch] = {"harmony": Launch(encoding="HARMONY_GPT_OSS", role="assistant")}
UNSUPPORTED: dict[str, str] = {
    fmt: "openai-harmony parses only the Harmony format of gpt-oss" for fmt in known_formats() if fmt not in FORMATS
}


def route(channel: str | None, recipient: str | None) -> str:
    """Where a Harmony message goes in a chat completion: ``"call"`` (recipient ``functions.NAME``, on any channel:
    models also write calls on ``analysis``), ``"reasoning"`` (``analysis``), ``"content"`` (``final``, or a
    ``commentary`` preamble, as vLLM's chat server keeps it), else ``"left out"``: a message to another recipient (a
    built-in tool such as ``python`` or ``browser.search``: no function call) or on another channel. gpt-oss's own
    server (``gpt_oss/responses_api/api_server.py``) reads messages the same way, but for preambles, which it drops,
    and recipients outside ``functions.`` and its built-ins, which it calls too."""
    if recipient:
        return "call" if recipient.startswith(FUNCTIONS) else "left out"
    return {"analysis": "reasoning", "final": "content", "commentary": "content"}.get(channel or "", "left out")


def _left_out(channel: str | None, recipient: str | None) -> str:
    if recipient:
        return f"a message to {recipient!r} (not a function: no tool call) is left out"
    return f"a message on channel {channel!r} (neither reasoning nor content) is left out"


def message_from_harmony(messages: list[Any]) -> Message:
    """openai-harmony ``Message`` objects as one :class:`Message`: content and reasoning concatenated in order, one
    call per function message, its arguments the message body the library returns (a JSON string, OpenAI style)
    decoded once (``parse_arguments``, as every adapter does; the streamed fragments are decoded by the harness), and
    a diagnostic per message left out (:func:`route`)."""
    content: list[str] = []
    reasoning: list[str] = []
    calls: list[ToolCall] = []
    notes: list[str] = []
    for m in messages:
        text = "".join(getattr(part, "text", "") for part in m.content)
        where = route(m.channel, m.recipient)
        if where == "call":
            calls.append(ToolCall(m.recipient[len(FUNCTIONS) :], parse_arguments(text)))
        elif where == "left out":
            notes.append(_left_out(m.channel, m.recipient))
        else:
            (reasoning if where == "reasoning" else content).append(text)
    return Message("".join(content) or None, "".join(reasoning) or None, calls, notes)


class OpenAIHarmonyParser:
    """openai-harmony's parser for ``format`` (:data:`FORMATS`). ``parse(text, tools, prefix) -> Message``;
    ``stream(tools, prefix)`` -> :class:`HarmonyStream`. ``tools`` are not read (the library parses without them);
    ``prefix`` (what the prompt pre-filled after ``<|start|>assistant``) is parsed before the text.

    Raises ``RuntimeError`` at construction when ``TIKTOKEN_ENCODINGS_BASE`` is not set (the engine's worker_env sets
    it; without it the library would try to download the vocabulary), ``ImportError`` without openai-harmony."""

    library = "openai-harmony"
    incremental = True

    def __init__(self, format: str) -> None:
        if not os.environ.get(ENCODINGS_ENV):
            raise RuntimeError(
                f"{ENCODINGS_ENV} is not set: the openai-harmony worker loads o200k_base.tiktoken from that folder "
                "(ENGINE.worker_env sets it from harness.assets.o200k.o200k_base_file())"
            )
        import openai_harmony

        launch = FORMATS[format]
        self.format, self.formats = format, (format,)
        self.version = importlib.metadata.version("openai-harmony")
        self.name = f"openai-harmony=={self.version}:{format}"
        name = getattr(openai_harmony.HarmonyEncodingName, launch.encoding)
        self.encoding = openai_harmony.load_harmony_encoding(name)
        self.role = openai_harmony.Role(launch.role)
        self.held_tail = MarkerTail(self.encoding.special_tokens_set)
        self._stop = {True: self.token(_harmony_format.CALL), False: self.token(_harmony_format.RETURN)}

    def token(self, marker: str) -> int:
        (token_id,) = self.encode(marker)
        return token_id

    def encode(self, text: str) -> list[int]:
        """The ids gpt-oss writes for ``text``: marker text as the special token (what vLLM's Harmony path encodes)."""
        return list(self.encoding.encode(text, allowed_special="all")) if text else []

    def stop_ids(self, completion: str) -> list[int]:
        """The stop token generation ended on, which the render cut and a server's parser sees: ``<|call|>`` after a
        message to a recipient, else ``<|return|>`` (:func:`harness.formats.harmony.ends_with_call`); none when the
        text already ends a message (with a stop token, or with ``<|end|>``: not a stop token, so generation was cut
        there, as by ``max_tokens``)."""
        if completion.endswith(MESSAGE_ENDS):
            return []
        return [self._stop[_harmony_format.ends_with_call(completion)]]

    def parse(self, text: str, tools: list | None = None, prefix: str = "") -> Message:
        completion = prefix + text
        ids = self.encode(completion) + self.stop_ids(completion)
        return message_from_harmony(self.encoding.parse_messages_from_completion_tokens(ids, self.role))

    def stream(self, tools: list | None = None, prefix: str = "") -> HarmonyStream:
        return HarmonyStream(self, prefix)


class HarmonyStream:
    """One streamed completion through ``StreamableParser``: text is turned back into ids as it arrives (ids are
    fed once no later text can change them, :func:`parsers.reference._token_ids.stable_ids`; ids given with a chunk
    are fed as they are), and each fed id's ``last_content_delta`` becomes a delta of its message's :func:`route`; a
    call's name goes out when its header is complete. ``finish`` feeds the rest, the stop token and the end of
    stream (``process_eos``, as ``parse_messages_from_completion_tokens`` does)."""

    def __init__(self, parser: OpenAIHarmonyParser, prefix: str) -> None:
        from openai_harmony import StreamableParser, StreamState

        self._owner = parser
        self._parser = StreamableParser(parser.encoding, parser.role)
        self._content = StreamState.CONTENT
        self._text = self._pending = prefix
        self._route = "content"
        self._index = -1
        self.diagnostics: list[str] = []

    def feed(self, chunk: str, token_ids: list[int] | None = None) -> list[Delta]:
        self._text += chunk
        if token_ids is not None and not self._pending:
            return self._process(list(token_ids))
        self._pending += chunk
        return self._process(self._stable(final=False))

    def finish(self) -> list[Delta]:
        deltas = self._process(self._stable(final=True) + self._owner.stop_ids(self._text))
        self._parser.process_eos()
        return deltas

    def _stable(self, final: bool) -> list[int]:
        owner = self._owner
        held = 0 if final else owner.held_tail(self._pending)
        ids, used = stable_ids(self._pending, owner.encode, owner.encoding.decode, held, final)
        self._pending = self._pending[used:]
        return ids

    def _process(self, ids: list[int]) -> list[Delta]:
        deltas: list[Delta] = []
        parser = self._parser
        for token_id in ids:
            in_content = parser.state == self._content
            parser.process(token_id)
            if parser.state != self._content:
                continue
            if not in_content:  # a header was completed: a new message starts
                self._route = route(parser.current_channel, parser.current_recipient)
                if self._route == "call":
                    self._index += 1
                    name = parser.current_recipient[len(FUNCTIONS) :]
                    deltas.append(Delta(tool_calls=[ToolCallDelta(self._index, name=name)]))
                elif self._route == "left out":
                    self.diagnostics.append(_left_out(parser.current_channel, parser.current_recipient))
                continue
            piece = parser.last_content_delta
            if not piece or self._route == "left out":
                continue
            if self._route == "call":
                deltas.append(Delta(tool_calls=[ToolCallDelta(self._index, arguments=piece)]))
            elif self._route == "reasoning":
                deltas.append(Delta(reasoning=piece))
            else:
                deltas.append(Delta(content=piece))
        return deltas


PARSERS = [functools.partial(OpenAIHarmonyParser, fmt) for fmt in FORMATS]


# --------------------------------------------------------------------------------------------------------------
# the engine: openai-harmony in its own virtualenv (its wheel is a compiled Rust extension plus pydantic)


def _vocabulary_unavailable() -> str | None:
    """Runs in the main environment: None when o200k_base is cached or can be rebuilt now, else why not."""
    try:
        o200k_base_file()
    except VocabularyUnavailable as exc:
        return str(exc)
    return None


def _worker_env() -> dict[str, str]:
    """Runs in the main environment at worker start: the folder of the verified ``o200k_base.tiktoken``."""
    return {ENCODINGS_ENV: str(o200k_base_file().parent)}


ENGINE = PipEngine(
    name="openai-harmony",
    default_version="0.0.8",
    formats=tuple(FORMATS),
    cold_install="about 5 s, 41 MB",
    steps=lambda version: [["install", f"openai-harmony=={version}"]],
    worker_module="parsers.reference.openai_harmony",
    worker_env=_worker_env,
    unavailable=_vocabulary_unavailable,
).engine()

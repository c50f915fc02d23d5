"""The server's own tool-call parse of a chat-mode capture, shaped as a parser so it is scored like one
(parser ``server:<server name>``).
"""

from __future__ import annotations

from harness.core.messages import Message, ToolCall, parse_arguments
from harness.core.protocol import Delta, message_to_deltas
from harness.formats import case_formats


def message_from_server(server_message: dict) -> Message:
    """A recorded ``server_message`` (``{"content", "reasoning", "tool_calls": [{"name", "arguments"}]}``) as a
    :class:`~harness.core.messages.Message`; string arguments that hold JSON are decoded, others kept as the string."""
    return Message(
        content=server_message.get("content"),
        reasoning=server_message.get("reasoning"),
        tool_calls=[
            ToolCall(call.get("name") or "", parse_arguments(call.get("arguments", {})))
            for call in server_message.get("tool_calls") or []
        ],
    )


class ServerParser:
    """The server's own tool-call parse of one chat-mode capture, shaped as a :class:`harness.core.protocol.Parser`.

    It parses nothing: ``parse(text, tools, prefix)`` returns the recorded ``server_message`` (``text`` is
    ignored) and ``stream(...)`` returns a session that ignores its chunks and emits that message at
    ``finish()``, so ``score_capture`` judges the server's answer like any parser's. ``name`` is
    ``server:<server_name>`` (``server:llama-cpp-python==0.3.36``), ``library`` the server name, ``version``
    ``""``. Raises ``ValueError`` from ``parse``/``finish`` when the capture has no ``server_message``
    (completions mode, or a failed capture), which the harness records as an exception."""

    formats = case_formats()
    incremental = False

    def __init__(self, server_name: str, server_message: dict | None):
        self.name = f"server:{server_name}"
        self.library = server_name
        self.version = ""
        self._message = server_message

    def parse(self, text: str = "", tools: list | None = None, prefix: str = "") -> Message:
        if self._message is None:
            raise ValueError(f"{self.name}: the capture has no server_message (not a chat-mode capture)")
        return message_from_server(self._message)

    def stream(self, tools: list | None = None, prefix: str = "") -> _ServerSession:
        return _ServerSession(self)


class _ServerSession:
    def __init__(self, parser: ServerParser):
        self._parser = parser

    def feed(self, chunk: str, token_ids: list[int] | None = None) -> list[Delta]:
        return []

    def finish(self) -> list[Delta]:
        return message_to_deltas(self._parser.parse())


def server_parser(server_name: str, server_message: dict | None) -> ServerParser:
    """The parser-like view of a server's own parse, for scoring a chat-mode capture.

    Build one per capture and score it like any parser::

        parser = server_parser("llama-cpp-python==0.3.36", capture.server_message)
        for mode, score, got in score_capture(capture, prompt, parser, fmt): ...

    (``backend.server_parser(capture.server_message)`` uses the backend's ``server_name``.) ``parser.name`` is
    ``server:<server_name>``; see :class:`ServerParser`."""
    return ServerParser(server_name, server_message)

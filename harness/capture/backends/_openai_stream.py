"""What one attempt of the ``openai`` backend has received: OpenAI streaming chunks folded into pieces, reasoning
and tool-call deltas (the chunk shapes: ``docs/capture/openai.md``, "Protocol facts used")."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from harness.capture.backends import Generation, OnPiece
from harness.core.messages import parse_arguments


@dataclass
class StreamState:
    """What one attempt has received so far; ``mode`` is ``completions`` or ``chat``."""

    mode: str
    pieces: list = field(default_factory=list)
    reasoning: list = field(default_factory=list)
    calls: dict = field(default_factory=dict)  # index -> {"id", "name", "arguments": [fragments]}
    finish_reason: str | None = None
    done: bool = False
    events: int = 0
    tokens: int = 0  # usage.completion_tokens when the server sent usage

    @property
    def started(self) -> bool:
        """Output arrived: a retry would repeat pieces already handed to ``on_piece``."""
        return bool(self.pieces or self.reasoning or self.calls)

    def generation(self, error: str | None = None) -> Generation:
        """The :class:`Generation` so far (chat mode: with the assembled ``server_message``), ``error`` set."""
        message = None
        if self.mode == "chat":
            message = {
                "content": "".join(text for text, _ in self.pieces) or None,
                "reasoning": "".join(self.reasoning) or None,
                "tool_calls": [_assembled_call(self.calls[i]) for i in sorted(self.calls)],
            }
        return Generation(
            pieces=list(self.pieces),
            finish_reason=self.finish_reason,
            server_message=message,
            error=error,
            tokens=self.tokens,
        )

    def consume(self, chunk: dict, on_piece: OnPiece | None) -> None:
        """Fold one chunk (a ``data:`` JSON object) in; ``on_piece(text, ids)`` for each non-empty text."""
        usage = chunk.get("usage")
        if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
            self.tokens = usage["completion_tokens"]
        choices = chunk.get("choices") or []  # a usage chunk has none
        if not choices:
            return
        choice = choices[0]
        if self.mode == "completions":
            text = choice.get("text") or ""
            ids = _token_ids(choice.get("tokens", chunk.get("tokens")))
            if text:
                self.pieces.append((text, ids))
                if on_piece is not None:
                    on_piece(text, ids)
        else:
            delta = choice.get("delta") or {}
            text = delta.get("content") or ""
            if text:
                self.pieces.append((text, []))
                if on_piece is not None:
                    on_piece(text, [])
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                self.reasoning.append(reasoning)
            tool_calls = delta.get("tool_calls")
            if not tool_calls and delta.get("function_call"):  # legacy single-function streaming
                tool_calls = [{"index": 0, "function": delta["function_call"]}]
            for piece in tool_calls or []:
                _add_call_piece(self.calls, piece)
        if choice.get("finish_reason"):
            self.finish_reason = choice["finish_reason"]


def _assembled_call(call: dict) -> dict:
    raw = "".join(call["arguments"])
    return {"name": call["name"], "arguments": parse_arguments(raw) if raw.strip() else {}}


def _add_call_piece(calls: dict, piece: dict) -> None:
    """Fold one ``delta.tool_calls[i]`` into ``calls`` (index -> {id, name, arguments fragments})."""
    if not isinstance(piece, dict):
        return
    index = piece.get("index")
    if not isinstance(index, int):  # servers that omit index: by id, else a new call when named
        index = next((i for i, c in calls.items() if piece.get("id") and c["id"] == piece.get("id")), None)
        if index is None:
            named = bool((piece.get("function") or {}).get("name"))
            index = len(calls) if named or not calls else max(calls)
    call = calls.setdefault(index, {"id": None, "name": "", "arguments": []})
    call["id"] = call["id"] or piece.get("id")
    function = piece.get("function") or {}
    name = function.get("name")
    if isinstance(name, str) and name and name != call["name"]:  # llama-cpp-python repeats the whole name
        call["name"] += name
    arguments = function.get("arguments")
    if isinstance(arguments, (dict, list)):  # a server sending decoded arguments
        arguments = json.dumps(arguments, ensure_ascii=False)
    if isinstance(arguments, str) and arguments:
        call["arguments"].append(arguments)


def _token_ids(value: Any) -> list:
    return list(value) if isinstance(value, list) and all(isinstance(v, int) for v in value) else []

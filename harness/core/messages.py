"""Core data shapes shared by every stage: tool calls, parsed messages and corpus cases.

A *case* is one raw completion text plus the message a correct parser must return for it.
The JSON shape of a case is the external case format of ``shared/cases/README.md``
(fields ``id, format, kind, text, expected, tools, stream_specific, source, text_provenance, note``)
extended with the harness' own optional fields (``prefix, slice, tags, seed, template``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ToolCall:
    """One parsed or expected tool call.

    ``arguments`` is normally a JSON object (dict). A parser that returns something else (a JSON string
    it failed to decode, a list) keeps it here unchanged so scoring can name the fault.
    """

    name: str
    arguments: Any = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"name": self.name, "arguments": self.arguments}

    @classmethod
    def from_json(cls, data: dict) -> ToolCall:
        return cls(name=data["name"], arguments=data.get("arguments", {}))


@dataclass
class Message:
    """What a parser returns for one completion: content, reasoning and tool calls.

    ``content``/``reasoning`` are ``None`` when absent; scoring treats ``None`` and ``""`` as equal.
    ``diagnostics`` holds what a library reported but swallowed (e.g. mlx-lm logs a failed call and drops
    it); it is shown in reports and never scored.
    """

    content: str | None = None
    reasoning: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    diagnostics: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "content": self.content,
            "reasoning": self.reasoning,
            "tool_calls": [c.to_json() for c in self.tool_calls],
            **({"diagnostics": self.diagnostics} if self.diagnostics else {}),
        }

    @classmethod
    def from_json(cls, data: dict) -> Message:
        return cls(
            content=data.get("content"),
            reasoning=data.get("reasoning"),
            tool_calls=[ToolCall.from_json(c) for c in data.get("tool_calls") or []],
        )


def parse_arguments(value: Any) -> Any:
    """Decode a JSON-string argument payload to a value; anything else is returned unchanged.

    Libraries disagree on whether ``arguments`` is a dict or a JSON string (OpenAI style); the harness
    compares JSON values, so strings that hold JSON objects are decoded here. A string that is not valid
    JSON, or nests deeper than Python's JSON reader goes, is kept as the string, so scoring reports it as a wrong
    argument type.
    """
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value

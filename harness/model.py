"""Core data shapes shared by every stage: tool calls, parsed messages and corpus cases.

A *case* is one raw completion text plus the message a correct parser must return for it.
The JSON shape of a case is the external case format of ``shared/cases/README.md``
(fields ``id, format, kind, text, expected, tools, stream_specific, source, text_provenance, note``)
extended with the harness' own optional fields (``prefix, slice, tags, seed, template``).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

FORMATS = (
    "gemma4", "functiongemma", "glm45", "glm47", "qwen3_coder", "hermes", "llama3_json", "mistral",
    "kimi_k2", "deepseek_v31", "deepseek_v32", "harmony", "minimax_m2", "other",
)
KINDS = ("strict", "drift")
SLICES = ("curated", "generated", "observed", "drift")


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
    def from_json(cls, data: dict) -> "ToolCall":
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
    def from_json(cls, data: dict) -> "Message":
        return cls(
            content=data.get("content"),
            reasoning=data.get("reasoning"),
            tool_calls=[ToolCall.from_json(c) for c in data.get("tool_calls") or []],
        )


@dataclass
class Case:
    """One parsing case: raw completion ``text`` and the ``expected`` message.

    Fields beyond the external format:
    - ``prefix``: text the chat template pre-fills after the generation prompt (e.g. Gemma 4 with thinking
      off ends the prompt with ``<|channel>thought\\n<channel|>``); parsers that need the prompt get it.
    - ``slice``: ``curated``, ``generated``, ``observed`` or ``drift`` (curated cases mutated by
      :mod:`harness.mutators`; their mutator facts are in ``extra["drift"]``).
    - ``tags``: edge shapes the case exercises (e.g. ``nested-object``, ``quote-in-string``).
    - ``seed``: the seed that generated the case (generated slice), for reproduction.
    - ``template``: provenance of the template that rendered it (source, file, sha256).
    """

    id: str
    format: str
    text: str
    expected: Message
    kind: str = "strict"
    tools: list | None = None
    prefix: str = ""
    slice: str = "curated"
    tags: list[str] = field(default_factory=list)
    stream_specific: bool = False
    source: str = ""
    text_provenance: str = "full"
    note: str = ""
    seed: int | None = None
    template: dict | None = None
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["expected"] = self.expected.to_json()
        extra = data.pop("extra")
        data.update(extra)
        return data

    def to_line(self) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False)


def parse_arguments(value: Any) -> Any:
    """Decode a JSON-string argument payload to a value; anything else is returned unchanged.

    Libraries disagree on whether ``arguments`` is a dict or a JSON string (OpenAI style); the harness
    compares JSON values, so strings that hold JSON objects are decoded here. A string that is not valid
    JSON is kept as the string, so scoring reports it as a wrong argument type.
    """
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


@dataclass
class Scenario:
    """A ground-truth assistant turn to render through a chat template into a :class:`Case`.

    - ``tools``: OpenAI-style tool declarations offered in the prompt (also kept on the case).
    - ``calls``: the tool calls the assistant makes, in order.
    - ``content_after``: prose after the calls (the template writes it as the message content).
    - ``content_before``: prose before the calls; templates render content after calls, so this text is
      composed (prepended to the rendered completion) and the case records ``text_provenance: composed``.
    - ``reasoning``: thinking text; rendered with thinking enabled so the template writes it.
    - ``tags``: edge shapes, ``seed``: generator seed when generated.
    """

    id: str
    tools: list
    calls: list[ToolCall]
    content_before: str = ""
    content_after: str = ""
    reasoning: str | None = None
    tags: list[str] = field(default_factory=list)
    seed: int | None = None
    note: str = ""

"""The project's own Ling 3.0 (Bailing V3) tool-call parser (format ``ling3``, ``inclusionai-ling-3.0-flash.jinja``).

It is the GLM reader of :mod:`parsers.own.glm45` (reading rules, typing, drift, streaming and known limitations
are documented there; both GLM layouts read), with Ling's facts (:mod:`harness.formats.ling3`):

- generation ends at ``<|role_end|>`` (a trailing one is dropped);
- the generation prompt pre-fills ``<think>`` (thinking on) or ``<think></think>`` (off), so the prefix decides
  whether the text starts inside reasoning; with no think marker in the prefix, text before a ``</think>`` that
  precedes any ``<tool_call>`` is reasoning (as :mod:`parsers.own.glm47`);
- inside reasoning a ``<tool_call>`` also ends it and starts a call (llama.cpp's ``thinking_end_tags``,
  ``common/parsers/ling3.cpp``; its test-chat.cpp expects a call written before ``</think>`` to be extracted).
"""

from __future__ import annotations

from harness.formats.ling3 import STOP_MARKERS
from parsers.own.glm45 import GlmParser, _Reader


class _LingReader(_Reader):
    """The GLM reader whose reasoning also ends at ``<tool_call>`` (the call is read; reasoning is closed)."""

    def _think(self) -> bool:
        marker = self._scan(self._emit_reasoning, (self.think_close, self.call_open))
        if marker is None:
            return False
        self.think_allowed = False
        if marker == self.call_open:
            self._begin_call()
        else:
            self.step = self._text
        return True


class Ling3Parser(GlmParser):
    """Ling 3.0 (GLM tagged arguments; the prompt pre-fills ``<think>``; ``<|role_end|>`` ends the turn)."""

    name = "toolcall-harness:ling3"
    formats = ("ling3",)
    stops = STOP_MARKERS
    implicit_think = True
    limitations = (
        "those of :mod:`parsers.own.glm45`; and reasoning that spells ``<tool_call>`` ends there (the text after "
        "it is read as a call), as llama.cpp reads it.",
        "With no think marker in the prefix, a ``</think>`` in prose before the first call turns that prose "
        "into reasoning (held back while streaming until decided).",
    )

    def reader(self, tools: list | None, prefix: str, whole: bool) -> _Reader:
        return _LingReader(tools, prefix, self.implicit_think)


PARSERS = [Ling3Parser]  # registry entry (see harness/parse/registry.py)

"""The project's own DeepSeek V3.1 tool-call parser: one incremental reader for one-shot and streaming use.

Format facts (:mod:`harness.formats.deepseek_v31`, from ``deepseek-ai-DeepSeek-V3.1.jinja`` in the
llama-cpp-python 0.3.36 sdist): content, then ``<｜tool▁calls▁begin｜>``, per call
``<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>`` with ``ARGS`` the arguments' JSON, then
``<｜tool▁calls▁end｜>``; ``<｜end▁of▁sentence｜>`` ends generation.

Reading rules (the shared section reader, :mod:`parsers.own._token_sections`, does text, reasoning, sections,
faults and streaming; this module reads one call):

- The name runs from ``<｜tool▁call▁begin｜>`` to ``<｜tool▁sep｜>`` (surrounding whitespace ignored; empty is a
  fault; any other marker before the separator is a fault). ``ARGS`` is one JSON object found by its syntax,
  so marker text inside strings is data; drift: a JSON string holding the object. The format is
  self-describing JSON: ``tools`` are not needed.
- Drift (DeepSeek V3's shape):
  ``<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\\n```json\\nARGS\\n```<｜tool▁call▁end｜>``
  is read as a call of ``NAME`` (the ``json`` tag and the closing fence are optional).
- Thinking: the prompt pre-fills ``<think>`` (thinking on) or ``<think></think>`` (off). A prefix that leaves
  ``<think>`` open starts the text in reasoning, up to ``</think>`` -- or up to ``<｜tool▁calls▁begin｜>``:
  the model may go from thinking straight to its calls, which are then read (the observed case
  ``deepseek_v31_tool_call_inside_thinking_sglang``). Any other prefix starts in content, where a
  ``<think>...</think>`` block at the very start is reasoning. Rendered cases carry the pre-filled
  ``<think></think>`` (off) or ``<think>`` (on) as their prefix; a prefix of ``""`` (unknown) means content.
"""

from __future__ import annotations

from harness.formats.deepseek_v31 import CALL_BEGIN, CALL_END, CALLS_BEGIN, CALLS_END, SPEC
from harness.formats.deepseek_v31 import SEP as TOOL_SEP
from parsers.own._token_sections import JsonCallReader, Malformed, SectionParser

_V3_TYPE = "function"
_FENCE = "```"


class DeepSeekV31Reader(JsonCallReader):
    SECTION_OPEN = CALLS_BEGIN
    SECTION_CLOSE = CALLS_END
    CALL_OPEN = CALL_BEGIN
    SEP = TOOL_SEP
    CALL_CLOSE = CALL_END
    MARKERS = SPEC.markers
    STOPS = SPEC.stop_markers

    def _args_other(self, i: int) -> bool:
        """DeepSeek V3 drift: ``function<｜tool▁sep｜>NAME\\n```json\\nARGS\\n````."""
        if self.fenced or self.head.strip() != _V3_TYPE:
            raise Malformed(i, "expected JSON arguments")
        buf = self.buf
        fence = buf.find(_FENCE, i)
        marker = buf.find("<｜", i)
        if fence == -1 or 0 <= marker < fence:
            if marker >= 0:
                raise Malformed(marker, "expected a code fence after the V3-style tool name")
            return False
        name = buf[i:fence].strip()
        if not name or "\n" in name:
            raise Malformed(fence, "no tool name before the code fence")
        j = fence + len(_FENCE)
        if buf.startswith("json", j):
            j += 4
        elif self.held_prefix(j, "json"):
            return False
        self.head, self.fenced, self.pos = name, True, j
        self.step = self._args_start
        return True


class DeepSeekV31Parser(SectionParser):
    """Parser protocol implementation for the DeepSeek V3.1 format (see the module docstring for the rules)."""

    name = "toolcall-harness:deepseek_v31"
    formats = ("deepseek_v31",)
    limitations = (
        "The text alone cannot tell reasoning from content: with a prefix that does not say thinking is on "
        "(the observed case above carries none), prose before the calls is content. Give the prompt's tail "
        "(``<think>``) as the prefix to have it read as reasoning.",
    )
    READER = DeepSeekV31Reader


PARSERS = [DeepSeekV31Parser]  # registry entry (see harness/parse/registry.py)

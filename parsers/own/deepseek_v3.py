"""The project's own DeepSeek V3 / R1 tool-call parser: one incremental reader for one-shot and streaming use.

Format facts (:mod:`harness.formats.deepseek_v3`, from ``deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja`` and
``llama-cpp-deepseek-r1.jinja`` in the llama-cpp-python 0.3.36 sdist): content, then ``<｜tool▁calls▁begin｜>``,
per call ``<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\\n```json\\nARGS\\n```<｜tool▁call▁end｜>`` (joined by
``\\n`` or nothing) with ``ARGS`` the arguments' JSON, then ``<｜tool▁calls▁end｜>``; ``<｜end▁of▁sentence｜>``
ends generation.

Reading rules: the DeepSeek call reader (:class:`parsers.own.deepseek_v31.DeepSeekV31Reader`, on the shared section
reader of :mod:`parsers.own._token_sections`, which does text, reasoning, sections, faults and streaming) reads
both DeepSeek call shapes, so this format's grammar is that reader's with the V3 shape as the norm:

- After the ``function`` head and the separator, the name runs to the code fence (surrounding whitespace
  ignored; empty, or holding a newline, is a fault); the fence's ``json`` tag and the closing fence are
  optional. ``ARGS`` is one JSON object found by its syntax, so marker and fence text inside strings is data;
  drift: a JSON string holding the object. ``tools`` are not needed.
- Drift: V3.1's unfenced ``<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>``; a ``function`` head
  with no fence after the name is a fault.
- Thinking: R1's prompts pre-fill ``<think>\\n`` (thinking on) or ``<think>\\n</think>`` (Qwen-32B's, off);
  V3's pre-fill nothing. A prefix that leaves ``<think>`` open starts the text in reasoning, up to ``</think>``
  or to the calls; any other prefix starts in content, where a ``<think>...</think>`` block (or a lone
  ``</think>``) at the very start is reasoning.
"""

from __future__ import annotations

from harness.formats.deepseek_v3 import SPEC
from parsers.own._token_sections import SectionParser
from parsers.own.deepseek_v31 import DeepSeekV31Reader


class DeepSeekV3Reader(DeepSeekV31Reader):
    MARKERS = SPEC.markers
    STOPS = SPEC.stop_markers


class DeepSeekV3Parser(SectionParser):
    """Parser protocol implementation for the DeepSeek V3 / R1 format (see the module docstring for the rules)."""

    name = "toolcall-harness:deepseek_v3"
    formats = ("deepseek_v3",)
    limitations = (
        "The text alone cannot tell reasoning from content: with a prefix that does not leave ``<think>`` open, "
        "prose before ``</think>`` is content unless the text opens with ``<think>``. Give the prompt's tail "
        "(R1's ``<think>\\n``) as the prefix to have it read as reasoning.",
    )
    READER = DeepSeekV3Reader


PARSERS = [DeepSeekV3Parser]  # registry entry (see harness/parse/registry.py)

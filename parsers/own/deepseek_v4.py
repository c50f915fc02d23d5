"""The project's own DeepSeek V4 (DSML) tool-call parser: one incremental reader for one-shot and streaming use.

Format facts (:mod:`harness.formats.deepseek_v4`, from ``deepseek-ai-DeepSeek-V4.jinja`` in the llama-cpp-python
0.3.36 sdist): DeepSeek V3.2's DSML calls in a ``<｜DSML｜tool_calls>`` ... ``</｜DSML｜tool_calls>`` block;
``<｜end▁of▁sentence｜>`` ends generation.

Reading rules: DeepSeek V3.2's reader (:class:`parsers.own.deepseek_v32.DeepSeekV32Reader`: invokes, parameters
typed by their ``string`` attribute then the schema, its drift and faults) with the V4 block markers. Thinking:
the prompt pre-fills ``<think>`` (on) or ``</think>`` (off); a prefix that leaves ``<think>`` open, or has no
think marker, starts the text in reasoning, up to ``</think>`` or the block.
"""

from __future__ import annotations

from harness.formats.deepseek_v4 import BLOCK_CLOSE, BLOCK_OPEN, SPEC
from parsers.own._token_sections import SectionParser
from parsers.own.deepseek_v32 import DeepSeekV32Parser, DeepSeekV32Reader


class DeepSeekV4Reader(DeepSeekV32Reader):
    SECTION_OPEN = BLOCK_OPEN
    SECTION_CLOSE = BLOCK_CLOSE
    MARKERS = SPEC.markers
    STOPS = SPEC.stop_markers


class DeepSeekV4Parser(SectionParser):
    """Parser protocol implementation for the DeepSeek V4 format (see the module docstring for the rules)."""

    name = "toolcall-harness:deepseek_v4"
    formats = ("deepseek_v4",)
    limitations = tuple(
        s.replace("function_calls", "tool_calls").replace("<think></think>", "</think>")
        for s in DeepSeekV32Parser.limitations
    )
    READER = DeepSeekV4Reader


PARSERS = [DeepSeekV4Parser]  # registry entry (see harness/parse/registry.py)

"""The project's own DeepSeek V4.1 (spaced DSML) tool-call parser: one incremental reader for one-shot and streaming
use.

Format facts (:mod:`harness.formats.deepseek_v41`, from canitoolcall's DeepSeek-V4.1-Flash fixtures; no template
offline): DeepSeek V4's DSML calls with a space after every ``｜DSML｜`` (``<｜DSML｜ invoke name="NAME">``,
``<｜DSML｜ parameter name="KEY" string="true">``) in a ``<｜DSML｜ calls>`` ... ``</｜DSML｜ calls>`` block;
``<｜end▁of▁sentence｜>`` ends generation.

Reading rules: DeepSeek V3.2's reader (:class:`parsers.own.deepseek_v32.DeepSeekV32Reader`: invokes, parameters
typed by their ``string`` attribute then the schema, its drift and faults) with the V4.1 tags. Thinking: as V4
(the prompt pre-fills ``<think>`` or ``</think>``; a prefix that leaves ``<think>`` open, or has no think marker,
starts the text in reasoning, up to ``</think>`` or the block).
"""

from __future__ import annotations

from harness.formats.deepseek_v41 import (
    BLOCK_CLOSE,
    BLOCK_OPEN,
    INVOKE_CLOSE,
    INVOKE_OPEN,
    PARAM_CLOSE,
    PARAM_OPEN,
    SPEC,
)
from parsers.own._token_sections import SectionParser
from parsers.own.deepseek_v4 import DeepSeekV4Reader
from parsers.own.deepseek_v32 import _call_boundary


class DeepSeekV41Reader(DeepSeekV4Reader):
    SECTION_OPEN = BLOCK_OPEN
    SECTION_CLOSE = BLOCK_CLOSE
    CALL_OPEN = INVOKE_OPEN
    CALL_CLOSE = INVOKE_CLOSE
    PARAM_OPEN = PARAM_OPEN
    PARAM_CLOSE = PARAM_CLOSE
    CALL_BOUNDARY = _call_boundary(INVOKE_OPEN, INVOKE_CLOSE)
    MARKERS = SPEC.markers
    STOPS = SPEC.stop_markers


class DeepSeekV41Parser(SectionParser):
    """Parser protocol implementation for the DeepSeek V4.1 format (see the module docstring for the rules)."""

    name = "toolcall-harness:deepseek_v41"
    formats = ("deepseek_v41",)
    limitations = (
        'A ``string="true"`` value holding ``</｜DSML｜ parameter>`` cannot be read back (the format has no '
        "escape; the value is cut at the first closer): ``FormatSpec.unrepresentable``.",
        "Called with no prefix (or one without a think marker), text is reasoning until ``</think>`` or "
        "the call block: a thinking-off completion must come with the prompt's tail (``</think>``) as its prefix.",
        "A parameter key holding ``<｜DSML｜`` or ``</｜DSML｜`` is a fault (such a tag bounds the parameter tag).",
        'A raw value holding ``</｜DSML｜ invoke>``, whitespace and a whole ``<｜DSML｜ invoke name="...">`` tag '
        "is cut there (read as the missing-closer drift above).",
    )
    READER = DeepSeekV41Reader


PARSERS = [DeepSeekV41Parser]  # registry entry (see harness/parse/registry.py)

"""The project's own GLM-4.7 tool-call parser (format ``glm47``, the inline layout of ``GLM-4.7-Flash.jinja``).

It is the GLM reader of :mod:`parsers.own.glm45` (reading rules, streaming and known limitations are documented
there), with one difference: GLM-4.7's generation prompt pre-fills ``<think>`` (thinking on) or ``</think>``
(thinking off), so when the prefix holds no think marker, text before a ``</think>`` that precedes any
``<tool_call>`` is reasoning (``REASONING</think>...``, as the template writes it), and the text is held back
while streaming until ``</think>``, ``<tool_call>`` or the end decides.
"""

from __future__ import annotations

from harness.formats import glm47 as _fmt
from parsers.own.glm45 import GlmParser


class Glm47Parser(GlmParser):
    """GLM-4.7 (inline layout; the prompt pre-fills ``<think>``, so text may start inside reasoning)."""

    name = "toolcall-harness:glm47"
    formats = ("glm47",)
    limitations = (
        "those of :mod:`parsers.own.glm45`; and, with no think marker in the prefix, a ``</think>`` in "
        "prose before the first call turns that prose into reasoning.",
    )
    implicit_think = True
    stops = _fmt.SPEC.stop_markers  # GLM's and Spark-X2.5's <｜end▁of▁sentence｜>


PARSERS = [Glm47Parser]  # registry entry (see harness/parse/registry.py)

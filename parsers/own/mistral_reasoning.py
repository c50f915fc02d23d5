"""The project's own parser for Mistral reasoning models (Ministral 3 Reasoning, Magistral Small 2509): a
``[THINK]...[/THINK]`` block, then ``[TOOL_CALLS]NAME[ARGS]{json}`` calls; one incremental reader for one-shot and
streaming use.

Format facts (:mod:`harness.formats.mistral_reasoning`, from ``mistralai-Ministral-3-14B-Reasoning-2512.jinja``
in the llama-cpp-python 0.3.36 sdist): ``[THINK]REASONING[/THINK]`` (line 95), then the content, then per call
``[TOOL_CALLS]NAME[ARGS]ARGS`` with ``ARGS`` the arguments' JSON (lines 102-113); ``</s>`` ends generation.

Reading rules: the calls and the text around them are :class:`parsers.own.mistral.MistralReader`'s (names, the
optional ``[CALL_ID]``, the older JSON-array form, faults surfaced as content, cut-off calls dropped); the
``[THINK]`` block is :class:`parsers.own.mistral.MistralThinkReader`'s (the mistral format's ``<think>`` reader):

- Only a ``[THINK]`` at the start of the text (whitespace before it at most) opens reasoning; after other
  content or a call it is content text.
- Inside reasoning only ``[/THINK]`` ends it: a ``[TOOL_CALLS]`` there is reasoning text (llama.cpp's
  ``test-chat.cpp`` line 2660). A block the end of the text cuts off is reasoning up to the end.
- A prefix (the prompt's tail) whose last ``[THINK]`` is not closed starts the text in reasoning (a continued
  turn); the templates pre-fill nothing.

Streaming: text is released as soon as it cannot be the start of a marker (``[``, ``[THI``, ``[/THINK`` are held
back); each call is emitted whole once its JSON closes, so streaming equals one-shot for any chunking.
"""

from __future__ import annotations

from harness.formats.mistral_reasoning import SPEC, THINK_CLOSE, THINK_OPEN
from parsers.own._base import OwnParser, proper_prefixes
from parsers.own.mistral import MistralThinkReader

_STOPS = SPEC.stop_markers
_MARKERS = tuple(dict.fromkeys(SPEC.markers + _STOPS))
_PREFIXES, _MAXLEN = proper_prefixes(_MARKERS), max(map(len, _MARKERS))


class MistralReasoningParser(OwnParser):
    """Parser protocol implementation for ``[THINK]`` + ``[TOOL_CALLS]`` completions (see the module docstring).

    ``tools`` is accepted for the protocol: the JSON carries its types."""

    name = "toolcall-harness:mistral_reasoning"
    formats = ("mistral_reasoning",)
    limitations = (
        "A call written inside ``[THINK]`` stays reasoning text, as llama.cpp reads it.",
        "The text alone cannot tell a continued reasoning block: give the prompt's tail (ending ``[THINK]...``) "
        "as the prefix to have text before ``[/THINK]`` read as reasoning.",
        "Magistral Small 2506's plain-text ``<think>...</think>`` is not read as reasoning: it stays content "
        "(the ``mistral`` format reads it).",
    )
    stops = _STOPS

    def reader(self, tools: list | None, prefix: str, whole: bool) -> _Reader:
        return _Reader(prefix)


class _Reader(MistralThinkReader):
    """:class:`~parsers.own.mistral.MistralThinkReader` with a ``[THINK]`` block."""

    prefixes, maxlen = _PREFIXES, _MAXLEN
    think_open, think_close = THINK_OPEN, THINK_CLOSE


PARSERS = [MistralReasoningParser]  # registry entry (see harness/parse/registry.py)

"""The project's own Apertus tool-call parser: the reader of :mod:`parsers.own.hermes` with Apertus's markers and its
name-as-key call objects.

Format facts come from the real chat template (``Apertus-8B-Instruct.jinja``, llama-cpp-python 0.3.36 sdist; see
:mod:`harness.formats.apertus` for the template lines)::

    CONTENT<|tools_prefix|>[{"NAME": ARGS}, {"NAME2": ARGS2}]<|tools_suffix|>

Reading rules (Hermes', see :mod:`parsers.own.hermes`): after ``<|tools_prefix|>`` a JSON array of call objects (or
one object), found by its syntax, so ``<|tools_suffix|>`` inside a string is data, then ``<|tools_suffix|>``. A call
object has exactly one key, the function's name, whose value is its arguments: an object, or (drift) a JSON string
holding one, or ``null`` (no arguments); anything else surfaces the block as content. A missing closer at the end of
the text or before the next block is recovered; a block cut off by the end of the text is dropped. Reasoning: an
``<|inner_prefix|>`` block at the start of the text, up to ``<|inner_suffix|>``; a block written inside it is a call
(the template keeps the thoughts open around a ``tool_calls`` block, lines 243-259) and the reasoning goes on after
it. Content is the text outside calls and reasoning, stripped; a trailing ``<|assistant_end|>`` is dropped.

Streaming: as in :mod:`parsers.own.hermes`: reasoning and content released as soon as they cannot start a marker,
each block emitted whole once decided.
"""

from __future__ import annotations

from harness.formats.apertus import SPEC
from parsers.own._common import object_arguments
from parsers.own.hermes import HermesParser, HermesReader


class ApertusReader(HermesReader.for_spec(SPEC)):  # type: ignore[misc]
    """Hermes' reader with name-as-key call objects and calls inside the ``<|inner_prefix|>`` reasoning."""

    in_thoughts = False  # the current block was opened inside the reasoning, which goes on after it

    def call_object(self, obj) -> tuple[str, dict] | None:
        if not isinstance(obj, dict) or len(obj) != 1:
            return None
        ((name, args),) = obj.items()
        args = {} if args is None else object_arguments(args)
        return (name, args) if name and args is not None else None

    def _think(self) -> bool:
        marker = self._scan(self._emit_reasoning, (self.think_close, self.call_open))
        if marker is None:
            return False
        self.step = self._text
        self.in_thoughts = marker == self.call_open
        if self.in_thoughts:
            self._begin_call()
        return True

    def _accept(self) -> None:
        super()._accept()
        if self.in_thoughts:
            self.in_thoughts, self.step = False, self._think

    def _surface(self, at: int, reason: str) -> None:
        self.in_thoughts = False  # a malformed block ends the reasoning: the text after it is read as content
        super()._surface(at, reason)


class ApertusParser(HermesParser):
    """The Apertus format (``<|tools_prefix|>[{"NAME": ARGS}, ...]<|tools_suffix|>``)."""

    name = "toolcall-harness:apertus"
    formats: tuple[str, ...] = ("apertus",)
    stops = SPEC.stop_markers
    READER = ApertusReader
    limitations = (
        'A call object with more than one key (a Hermes-style ``{"name": ..., "arguments": ...}`` object too), '
        "or arguments that are not a JSON object, leaves the block surfaced as content.",
        "Only an ``<|inner_prefix|>`` block at the start of the text is reasoning (the template can write one after "
        "a response block; a model's single turn starts with it).",
    )


PARSERS = [ApertusParser]  # registry entry (see harness/parse/registry.py)

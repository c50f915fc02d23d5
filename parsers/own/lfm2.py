"""The project's own LFM2 / LFM2.5 tool-call parser: one incremental reader for one-shot and streaming use.

Format facts: :mod:`harness.formats.lfm2` (``LFM2.5-8B-A1B.jinja`` and its two siblings in the llama-cpp-python
0.3.36 sdist). A turn is an optional ``<think>REASONING</think>``, content, then
``<|tool_call_start|>[NAME(key=value, ...), ...]<|tool_call_end|>``, then ``<|im_end|>``.

Reading rules:

- A block opens at ``<|tool_call_start|>``; after optional whitespace comes a call list, read to its ``]`` by
  :class:`parsers.own._pythonic.CallListExtent` (strings, escapes, nesting: marker text inside strings is data)
  and then by :func:`parsers.own._pythonic.parse_call_list` (values are Python literals, JSON's
  ``true``/``false``/``null`` too); then optional whitespace and ``<|tool_call_end|>``. Drift recovered: the closer
  missing before the next ``<|tool_call_start|>`` or at the end of the text (or cut off there).
- A block cut off by the end of the text (its list unterminated, no closer and no later opener in it) is dropped
  with a diagnostic, its markup kept out of content (:mod:`parsers.own._base`); the prose before it is kept.
- Anything else in a block (no ``[NAME(``, a list that does not read, text after the list) is *surfaced*: the
  block's raw text up to the fault becomes content, then content runs to the next ``<|tool_call_end|>`` (kept) or
  ``<|tool_call_start|>``; a diagnostic names the fault.
- Reasoning: a ``<think>...</think>`` block at the start of the text (whitespace before it at most) is reasoning;
  inside it only ``</think>`` ends it (a call written there stays reasoning, as llama.cpp's LFM2 parser reads it);
  ``<think>`` anywhere else is content.
- Content is the text outside calls and reasoning, stripped of surrounding whitespace (``None`` when empty);
  trailing ``<|im_end|>`` is dropped, elsewhere it is text.

Streaming: content and reasoning are released as soon as they cannot be the start of a marker; a block is held
until it is decided, then its calls are emitted whole, so streaming equals one-shot for any chunking.
"""

from __future__ import annotations

import json
import re

from harness.formats.lfm2 import CALL_CLOSE, CALL_OPEN, SPEC
from parsers.own._base import OwnParser, ThinkBlockReader, proper_prefixes
from parsers.own._common import Malformed, skip
from parsers.own._pythonic import CallListExtent, parse_call_list

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"  # LFM2.5-8B-A1B.jinja line 79

_STOPS = SPEC.stop_markers
_MARKERS = tuple(dict.fromkeys(SPEC.markers + _STOPS + (THINK_OPEN, THINK_CLOSE)))
_PREFIXES, _MAXLEN = proper_prefixes(_MARKERS), max(map(len, _MARKERS))
_WS = re.compile(r"[ \t\n\r]*")


class Lfm2Parser(OwnParser):
    """Parser protocol implementation for LFM2 pythonic call blocks (see the module docstring for the rules).

    ``tools`` is accepted for the protocol: values carry their literal's type."""

    name = "toolcall-harness:lfm2"
    formats = ("lfm2",)
    stops = _STOPS
    limitations = (
        'A block holding JSON calls (``[{"name": ...}]``, what LFM2 writes when the system prompt asks for JSON) '
        "is surfaced as content: only the pythonic list is read.",
        "A string written with a raw ``'`` or ``\\`` inside (the template pastes strings unescaped) reads by "
        "Python's rules: the quote ends the string, the backslash starts an escape.",
    )

    def reader(self, tools: list | None, prefix: str, whole: bool) -> _Reader:
        return _Reader(prefix)


class _Reader(ThinkBlockReader):
    """Incremental reader (events: :func:`parsers.own._base.deltas_from_events`); the text, ``<think>`` block,
    surfacing and resync are :class:`~parsers.own._base.ThinkBlockReader`'s. Call-state handlers raise
    :class:`Malformed`, which surfaces the block as content."""

    prefixes, maxlen = _PREFIXES, _MAXLEN
    call_open, call_close = CALL_OPEN, CALL_CLOSE
    think_open, think_close = THINK_OPEN, THINK_CLOSE

    def __init__(self, prefix: str):
        super().__init__()
        self.step = self._text
        self.think_allowed = True
        self._reset_call()
        i = prefix.rfind(THINK_OPEN)
        if i >= 0 and THINK_CLOSE not in prefix[i:]:  # a prompt that left <think> open
            self.step, self.think_allowed = self._think, False

    def _at_end(self) -> None:
        if self.step == self._after_list:
            self._accept()  # drift: <|tool_call_end|> missing at the end of the text
        else:
            self._drop_at_end("unterminated call list")

    def _compact(self) -> None:
        cut = self.call_at if self.in_call else self.pos
        if cut:
            self.buf, self.pos = self.buf[cut:], self.pos - cut
            if self.in_call:
                self.call_at = 0
                if self.extent is not None:
                    self.extent.shift(cut)

    def _reset_call(self) -> None:
        self.in_call = False
        self.call_at = 0
        self.extent: CallListExtent | None = None
        self.pending: list[tuple[str, dict]] = []

    def _accept(self) -> None:
        for name, arguments in self.pending:
            self.events.append(("call", self.n_calls, name, json.dumps(arguments, ensure_ascii=False)))
            self.n_calls += 1
        self._reset_call()
        self.step = self._text

    def _call_start(self) -> bool:
        """After ``<|tool_call_start|>``: whitespace, then ``[``."""
        pos = self.pos = skip(_WS, self.buf, self.pos)
        if pos == len(self.buf):
            return False
        if self.buf[pos] != "[":
            raise Malformed(pos, "expected a call list [NAME(...)] after <|tool_call_start|>")
        self.extent = CallListExtent(pos)
        self.step = self._list
        return True

    def _list(self) -> bool:
        extent = self.extent
        assert extent is not None  # _call_start set it with this step
        end = extent.advance(self.buf)  # raises Malformed at a fault; a head cut off by the end is cut off
        if end is None:
            return False
        try:
            self.pending = parse_call_list(self.buf[extent.start : end])
        except ValueError as exc:
            raise Malformed(end, f"not a call list: {exc}") from None
        self.pos = end
        self.step = self._after_list
        return True

    def _after_list(self) -> bool:
        """After the list: ``<|tool_call_end|>``, or (drift) the next ``<|tool_call_start|>``."""
        return self._block_closed(CALL_CLOSE, CALL_OPEN, "the call list", self._accept)


PARSERS = [Lfm2Parser]  # registry entry (see harness/parse/registry.py)

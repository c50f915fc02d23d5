"""The project's own Cohere (Command R7B, Cohere2 MoE) tool-call parser: one incremental reader for one-shot and
streaming use.

Format facts: :mod:`harness.formats.cohere` (``CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja`` and
``Cohere2MoE.jinja`` in the llama-cpp-python 0.3.36 sdist). A turn is an optional
``<|START_THINKING|>REASONING<|END_THINKING|>``, then either content in ``<|START_RESPONSE|>``/``<|END_RESPONSE|>``
(R7B) or ``<|START_TEXT|>``/``<|END_TEXT|>`` (2MoE), or ``<|START_ACTION|>[CALL, ...]<|END_ACTION|>`` with each
CALL ``{"tool_call_id": "N", "tool_name": "NAME", "parameters": {...}}``; then ``<|END_OF_TURN_TOKEN|>``.

Reading rules:

- A block opens at ``<|START_ACTION|>``; after optional whitespace comes a JSON array, read to its ``]`` by its
  syntax (:class:`parsers.own._common.JsonExtent`: marker text inside strings is data); every element must be an
  object with a string ``tool_name`` and ``parameters`` an object (drift: a JSON string holding one);
  ``tool_call_id`` (a string or number) becomes the call's id, other keys are ignored. Then optional whitespace
  and ``<|END_ACTION|>``. Drift recovered: the closer missing before the next ``<|START_ACTION|>`` or at the end
  of the text (or cut off there).
- A block cut off by the end of the text (its array unterminated, no closer and no later opener in it) is
  dropped with a diagnostic, its markup kept out of content (:mod:`parsers.own._base`); the prose before it is
  kept. Anything else in a block (no ``[``, an element that is not a call, text after the array) is *surfaced*:
  the block's raw text up to the fault becomes content, then content runs to the next ``<|END_ACTION|>`` (kept)
  or ``<|START_ACTION|>``; a diagnostic names the fault.
- Reasoning: a prefix that leaves ``<|START_THINKING|>`` open (2MoE's prompt) starts the text in reasoning; else
  a thinking block at the start of the text (whitespace before it at most) is reasoning, and a leading
  ``<|END_THINKING|>`` closes an empty one. Reasoning ends at ``<|END_THINKING|>``, or (as llama.cpp's Cohere2
  MoE parser reads it) at ``<|START_ACTION|>`` (its calls are read) or a content wrapper's opener.
- Content is the text outside calls and reasoning with the content wrappers' markers dropped, stripped of
  surrounding whitespace (``None`` when empty); trailing ``<|END_OF_TURN_TOKEN|>`` is dropped, elsewhere it is
  text.

Streaming: content and reasoning are released as soon as they cannot be the start of a marker; a block is held
until it is decided, then its calls are emitted whole, so streaming equals one-shot for any chunking.
"""

from __future__ import annotations

import json
import re

from harness.formats.cohere import ACTION_CLOSE, ACTION_OPEN, SPEC, THINK_CLOSE, THINK_OPEN, WRAPPERS
from parsers.own._base import OwnParser, ThinkBlockReader, proper_prefixes
from parsers.own._common import JsonExtent, Malformed, object_arguments, skip

_STOPS = SPEC.stop_markers
_MARKERS = tuple(dict.fromkeys(SPEC.markers + _STOPS))
_PREFIXES, _MAXLEN = proper_prefixes(_MARKERS), max(map(len, _MARKERS))
_WRAPPER_MARKERS = tuple(m for pair in WRAPPERS for m in pair)
_WRAPPER_OPENS = tuple(open_ for open_, _ in WRAPPERS)
_WS = re.compile(r"[ \t\n\r]*")


class CohereParser(OwnParser):
    """Parser protocol implementation for Cohere action blocks (see the module docstring for the rules).

    ``tools`` is accepted for the protocol: values carry their JSON types."""

    name = "toolcall-harness:cohere"
    formats = ("cohere",)
    stops = _STOPS
    limitations = (
        "The content of a turn with calls is read where the text puts it, but neither template writes one (a "
        "model's content next to its calls has no reference layout).",
        "Content-wrapper markers (<|START_RESPONSE|>, <|START_TEXT|> and their closers) are dropped wherever they "
        "stand, also unpaired.",
    )

    def reader(self, tools: list | None, prefix: str, whole: bool) -> _Reader:
        return _Reader(prefix)


class _Reader(ThinkBlockReader):
    """Incremental reader (events: :func:`parsers.own._base.deltas_from_events`); surfacing and resync are
    :class:`~parsers.own._base.ThinkBlockReader`'s. Call-state handlers raise :class:`Malformed`, which surfaces
    the block as content."""

    prefixes, maxlen = _PREFIXES, _MAXLEN
    call_open, call_close = ACTION_OPEN, ACTION_CLOSE
    list_close = ACTION_CLOSE  # what closes a block after its list (Command R+'s reader: the code fence)
    think_open, think_close = THINK_OPEN, THINK_CLOSE

    def __init__(self, prefix: str):
        super().__init__()
        self.step = self._text
        self.think_allowed = True
        self._reset_call()
        i = prefix.rfind(THINK_OPEN)
        if i >= 0 and THINK_CLOSE not in prefix[i:]:  # a prompt that left the thinking block open (2MoE)
            self.step, self.think_allowed = self._think, False

    # ---- text and reasoning ----------------------------------------------------------------------------

    def _text(self) -> bool:
        markers: tuple[str, ...] = (self.call_open, *_WRAPPER_MARKERS)
        if self.think_allowed:
            markers += (THINK_OPEN, THINK_CLOSE)
        marker = self._scan(self._emit_content, markers)
        if marker in (THINK_OPEN, THINK_CLOSE):
            self.think_allowed = False
            if self.content.started:  # only a block at the start of the text is reasoning
                self._emit_content(marker)
            elif marker == THINK_OPEN:
                self.step = self._think
            # else: a leading <|END_THINKING|> closes an empty block
        elif marker == self.call_open:
            self.think_allowed = False
            self._begin_call()
        elif marker is not None:  # a content wrapper's marker: markup, dropped
            self.think_allowed = False
        return marker is not None

    def _think(self) -> bool:
        marker = self._scan(self._emit_reasoning, (THINK_CLOSE, self.call_open, *_WRAPPER_OPENS))
        if marker is None:
            return False
        self.step = self._text
        if marker == self.call_open:  # the model went from thinking straight to its calls
            self._begin_call()
        return True

    # ---- action blocks ---------------------------------------------------------------------------------

    def _at_end(self) -> None:
        if self.step == self._after_list:
            self._accept()  # drift: <|END_ACTION|> missing at the end of the text
        else:
            self._drop_at_end("unterminated action list")

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
        self.extent: JsonExtent | None = None
        self.pending: list[tuple[str, dict, str | None]] = []

    def _accept(self) -> None:
        if not self.pending:
            self.diagnostics.append("empty action list dropped")
        for name, arguments, call_id in self.pending:
            args = json.dumps(arguments, ensure_ascii=False)
            self.events.append(("call", self.n_calls, name, args) + ((call_id,) if call_id is not None else ()))
            self.n_calls += 1
        self._reset_call()
        self.step = self._text

    def _call_start(self) -> bool:
        """After ``<|START_ACTION|>``: whitespace, then ``[``."""
        pos = self.pos = skip(_WS, self.buf, self.pos)
        if pos == len(self.buf):
            return False
        if self.buf[pos] != "[":
            raise Malformed(pos, "expected a JSON list of calls after <|START_ACTION|>")
        self.extent = JsonExtent(pos, "the action list")
        self.step = self._list
        return True

    def _list(self) -> bool:
        extent = self.extent
        assert extent is not None  # _call_start set it with this step
        done = extent.decoded(self.buf, "action list")
        if done is None:
            return False
        end, value = done
        if not isinstance(value, list):  # pragma: no cover - the extent starts at "[": only a list ends it
            raise Malformed(end, "the action list is not a JSON list")
        self.pending = [_call(item, end) for item in value]
        self.pos = end
        self.step = self._after_list
        return True

    def _after_list(self) -> bool:
        """After the list: ``list_close`` (``<|END_ACTION|>``), or (drift) the next ``call_open``."""
        return self._block_closed(self.list_close, self.call_open, "the action list", self._accept)


def _call(item: object, at: int) -> tuple[str, dict, str | None]:
    """One element of the action list as ``(name, arguments, call id)``; :class:`Malformed` at ``at`` otherwise."""
    if not isinstance(item, dict):
        raise Malformed(at, "an element of the action list is not an object")
    name, args, call_id = item.get("tool_name"), object_arguments(item.get("parameters")), item.get("tool_call_id")
    if not isinstance(name, str) or not name:
        raise Malformed(at, "a call without a tool_name string")
    if args is None:
        raise Malformed(at, f"the parameters of {name} are not a JSON object")
    return name, args, call_id if isinstance(call_id, str) else None if call_id is None else json.dumps(call_id)


PARSERS = [CohereParser]  # registry entry (see harness/parse/registry.py)

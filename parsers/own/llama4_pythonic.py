"""The project's own Llama 4 pythonic tool-call parser: one incremental reader for one-shot and streaming use.

Format facts: :mod:`harness.formats.llama4_pythonic` (no template offline; Meta's prompt-format document,
canitoolcall's llama family, vLLM's ``llama4_pythonic`` parser). A turn with calls is the bare list
``[NAME(key=value, ...), ...]``, optionally between ``<|python_start|>`` and ``<|python_end|>``, then ``<|eot|>``.

Reading rules:

- A call list is a ``[`` followed by ``NAME(`` (whitespace allowed around the name), read to its matching ``]``
  by :class:`parsers.own._pythonic.CallListExtent` (strings, escapes, nesting: brackets and markers inside
  strings are data) and then by :func:`parsers.own._pythonic.parse_call_list` (the values' grammar). Such a list
  is a call list wherever it starts: at the start of the turn (what the model writes), after prose, after
  ``<|python_start|>`` (consumed). Several lists in one text each give their calls.
- Any other ``[`` is content: one whose head is not ``[NAME(`` (``[link](url)``, ``[1, 2]``, ``[]``) at once,
  one whose list does not read (a positional argument, a bare name as a value) once it closes; the scan goes on
  right after that ``[``, so a call list later in the text (or nested in the brackets) is still read.
- ``<|python_end|>`` right after a call list (whitespace between at most) is dropped; anywhere else it is text.
  ``<|python_start|>`` followed by anything but a call list is *surfaced*: the tag stays in content with a
  diagnostic.
- A call list cut off by the end of the text (its head ``[NAME(`` arrived, its ``]`` did not), or a
  ``<|python_start|>`` with nothing after it, is dropped whole with a diagnostic, its markup kept out of
  content (:mod:`parsers.own._base`); the prose before it is kept. A ``[`` cut off before its head is content.
- Content is the text outside calls, stripped of surrounding whitespace (``None`` when empty); trailing stop
  markers (``<|eot|>``, ``<|eom|>``, ``<|end_of_text|>``) are dropped, elsewhere they are text. No reasoning.

Streaming: content is released as soon as it cannot be the start of a marker or of a call list (a trailing
proper prefix of a marker is held, and so is a ``[`` until its head is decided and, for a call list, until its
``]``). The calls of a list are emitted whole when it closes. Decisions never depend on how the text was
chunked, so streaming equals one-shot for any chunking, and nothing emitted is ever retracted.
"""

from __future__ import annotations

import json
import re

from harness.formats.llama4_pythonic import PYTHON_END, PYTHON_START, SPEC
from parsers.own._base import OwnParser, StepReader, proper_prefixes
from parsers.own._common import Malformed, skip
from parsers.own._pythonic import CallListExtent, parse_call_list

_STOPS = SPEC.stop_markers
_MARKERS = tuple(dict.fromkeys(SPEC.markers + _STOPS))
_PREFIXES, _MAXLEN = proper_prefixes(_MARKERS), max(map(len, _MARKERS))
_WS = re.compile(r"[ \t\n\r]*")
_TEXT_STOP = re.compile(r"[\[<]")
_COMPACT_AT = 4096


class Llama4PythonicParser(OwnParser):
    """Parser protocol implementation for Llama 4 pythonic call lists (see the module docstring for the rules).

    ``tools`` and ``prefix`` are accepted for the protocol: values carry their literal's type, and the generation
    prompt pre-fills nothing."""

    name = "toolcall-harness:llama4_pythonic"
    formats = ("llama4_pythonic",)
    stops = _STOPS
    limitations = (
        "The format has no marker, so a call-shaped list written in prose (``[f(a=1)]`` quoted as an example) is "
        "read as a call; brackets of another shape stay content.",
        "The JSON form Meta's Hugging Face template writes for past calls (``<|python_start|>...<|python_end|>"
        '{"name": ..., "parameters": ...}``) is not read: the model answers in the pythonic list.',
        "A call list is emitted when its ``]`` arrives, so streaming holds a list's calls until it closes.",
    )

    def reader(self, tools: list | None, prefix: str, whole: bool) -> _Reader:
        return _Reader()


class _Reader(StepReader):
    """Incremental reader (events: :func:`parsers.own._base.deltas_from_events`). Offsets kept across pushes
    (``tag_at``, the candidate's) point into ``buf``, compacted only in the plain-text state. No step holds a call
    at the end: a candidate decides itself once the text is final."""

    prefixes, maxlen = _PREFIXES, _MAXLEN
    text_stop = _TEXT_STOP

    def __init__(self) -> None:
        super().__init__()
        self.step = self._text
        self.after_call = False  # only whitespace since the last call list: a <|python_end|> here is dropped
        self.tag_at: int | None = None  # start of the <|python_start|> before the candidate
        self.extent: CallListExtent | None = None

    def _compact(self) -> None:
        if self.step == self._text and self.pos >= _COMPACT_AT:
            self.buf, self.pos = self.buf[self.pos :], 0

    def _held_call(self) -> bool:
        return False

    def _emit_content(self, text: str) -> None:
        if text and not text.isspace():
            self.after_call = False
        super()._emit_content(text)

    # ---- text outside calls ----------------------------------------------------------------------------

    def _text(self) -> bool:
        marker = self._scan(self._emit_content, ("[", PYTHON_START, PYTHON_END))
        if marker == "[":
            self._candidate_at(self.pos - 1)
        elif marker == PYTHON_START:
            self.tag_at = self.pos - len(PYTHON_START)
            self.step = self._after_tag
        elif marker == PYTHON_END:
            if not self.after_call:
                self._emit_content(marker)
            self.after_call = False
        return marker is not None

    def _after_tag(self) -> bool:
        """After ``<|python_start|>``: whitespace, then a call list."""
        j = skip(_WS, self.buf, self.pos)
        if j == len(self.buf):
            if not self.final:
                return False
            self._drop_cut_off("nothing after <|python_start|>")
        elif self.buf[j] == "[":
            self._candidate_at(j)
        else:
            self.pos = j
            self._not_a_call("<|python_start|> not followed by a call list")
        return True

    # ---- call-list candidates ---------------------------------------------------------------------------

    def _candidate_at(self, at: int) -> None:
        self.extent = CallListExtent(at)
        self.pos = at
        self.step = self._candidate

    def _candidate(self) -> bool:
        extent = self.extent
        assert extent is not None  # _candidate_at set it with this step
        try:
            end = extent.advance(self.buf, self.final)
        except Malformed as exc:
            self._not_a_call(exc.reason)
            return True
        if end is None:
            if not self.final:
                return False
            self._drop_cut_off("unterminated call list")  # final and headed: advance raises otherwise
            return True
        try:
            calls = parse_call_list(self.buf[extent.start : end])
        except ValueError as exc:
            self._not_a_call(f"not a call list: {exc}")
            return True
        for name, arguments in calls:
            self.events.append(("call", self.n_calls, name, json.dumps(arguments, ensure_ascii=False), None))
            self.n_calls += 1
        self.pos, self.tag_at, self.extent = end, None, None
        self.after_call = True
        self.step = self._text
        return True

    def _drop_cut_off(self, reason: str) -> None:
        """A call list (or a ``<|python_start|>``) cut off by the end of the text: dropped whole."""
        starts = [i for i in (self.tag_at, self.extent.start if self.extent else None) if i is not None]
        self._cut_off(self.buf[min(starts) :], reason)
        self.tag_at = self.extent = None
        self.pos, self.step = len(self.buf), self._text

    def _not_a_call(self, reason: str) -> None:
        """Not a call list: a held ``<|python_start|>`` goes to content with a diagnostic, then the ``[`` (the
        scan goes on right after it)."""
        start = self.extent.start if self.extent is not None else self.pos
        if self.tag_at is not None:
            self.diagnostics.append(
                f"<|python_start|> not followed by a call list, surfaced as content ({reason}): "
                f"{self.buf[self.tag_at : self.tag_at + 80]!r}"
            )
            self._emit_content(self.buf[self.tag_at : start])
        if self.extent is not None:
            self._emit_content("[")
            start += 1
        self.pos, self.tag_at, self.extent = start, None, None
        self.step = self._text


PARSERS = [Llama4PythonicParser]  # registry entry (see harness/parse/registry.py)

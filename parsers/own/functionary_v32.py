"""The project's own Functionary v3.2 tool-call parser: one incremental reader for one-shot and streaming use.

Format facts (:mod:`harness.formats.functionary_v32`, from ``meetkai-functionary-medium-v3.2.jinja`` in the
llama-cpp-python 0.3.36 sdist): segments ``>>>RECIPIENT\\n...`` with nothing between them: ``>>>all\\nCONTENT``,
then ``>>>NAME\\nARGS`` per call (``ARGS`` a JSON object); the generation prompt pre-fills the first ``>>>``, so a
completion starts with its recipient. ``<|eot_id|>`` ends generation.

Reading rules:

- The text starts at a recipient when the prefix ends with ``>>>``, holds no ``>>>`` (a leading ``>>>`` in the
  text is then read as the opener), or is empty; a prefix whose last ``>>>`` is followed by text (a turn being
  continued) starts in content.
- A recipient runs to the first ``\\n``. ``all`` opens content, which runs to the next ``>>>``. Any other
  recipient is a tool name (empty, or holding whitespace, ``<`` or ``>``: a fault; drift: ``>>>`` written twice)
  and its ``ARGS`` follow (JSON whitespace allowed): one JSON object found by its syntax
  (:class:`~parsers.own._common.JsonExtent`), so ``>>>`` and every other marker inside a string value is data;
  drift: a JSON string holding the object. Strict JSON: ``NaN``/``Infinity`` and numbers beyond the double
  range are faults.
- After a call, ``>>>`` opens the next segment; other text (the template writes none) is content up to the next
  ``>>>``. Content is concatenated and stripped (``None`` when empty); trailing stop markers are dropped. The
  format has no reasoning.
- A call cut off by the end of the text (in its name or JSON) is dropped with a diagnostic
  (:mod:`parsers.own._base`).
- Faults are *surfaced*: the segment's raw text (its ``>>>`` included) up to the fault goes to content with a
  diagnostic, and content runs on to the next ``>>>``. Prose is never dropped.

Streaming: content is released as soon as it cannot be the start of a marker; a call is held from its segment's
start until its JSON closes and is emitted whole, so streaming equals one-shot for any chunking.
"""

from __future__ import annotations

import json
import re

from harness.formats.functionary_v32 import ALL, RECIPIENT, SPEC
from parsers.own._base import OwnParser, StepReader, proper_prefixes
from parsers.own._common import JsonExtent, Malformed, decode_json, object_arguments, skip

_MARKERS = tuple(dict.fromkeys(SPEC.markers + SPEC.stop_markers))
_JSON_WS = re.compile(r"[ \t\n\r]*")
_NAME_FAULT = re.compile(r"[^\S\n]|[<>]")  # what may not stand in a recipient before its \n
_TEXT_STOP = re.compile(r"[<>]")


class FunctionaryV32Parser(OwnParser):
    """Parser protocol implementation for the Functionary v3.2 format (see the module docstring for the rules).

    ``tools`` is accepted for the protocol: the arguments are self-describing JSON."""

    name = "toolcall-harness:functionary_v32"
    formats = ("functionary_v32",)
    stops = SPEC.stop_markers
    limitations = (
        "Content holding ``>>>`` is read as a new segment there (the format has no escape for it).",
        "Raw code after ``>>>python\\n`` (the template's code-interpreter tool) is not read as a call: the "
        "template pastes the arguments' JSON there, which is read.",
        "Text after a call is content, although the template never writes any.",
    )

    def reader(self, tools: list | None, prefix: str, whole: bool) -> _Reader:
        at = prefix.rfind(RECIPIENT)
        return _Reader(in_content=at >= 0 and bool(prefix[at + len(RECIPIENT) :]))


class _Reader(StepReader):
    """Incremental reader: ``push(text)`` / ``finish()`` return events ``("content", text)`` and
    ``("call", index, name, arguments_json)``.

    While a call segment is read (``segment_at >= 0``) the buffer is kept from the segment's start (its ``>>>``
    where the text holds it), so a fault can give its raw text to content."""

    prefixes = proper_prefixes(_MARKERS)
    maxlen = max(map(len, _MARKERS))
    text_stop = _TEXT_STOP

    def __init__(self, in_content: bool) -> None:
        super().__init__()
        self.segment_at = -1
        self.name_at = 0
        self.tool = ""
        self.extent: JsonExtent | None = None
        self.step = self._content if in_content else self._first

    def _compact(self) -> None:
        if self.segment_at < 0 and self.pos:
            self.buf, self.pos = self.buf[self.pos :], 0

    def _held_call(self) -> bool:
        return self.segment_at >= 0

    def _at_end(self) -> None:
        self._cut_off(self.buf[self.segment_at :], "unterminated call")
        self.segment_at, self.extent, self.pos = -1, None, len(self.buf)
        self.step = self._content

    # ---- segments ------------------------------------------------------------------------------------

    def _first(self) -> bool:
        """The text's start: a recipient, after an optional ``>>>`` (a prefix that did not pre-fill it)."""
        rest = self.buf[self.pos : self.pos + len(RECIPIENT)]
        if not self.final and len(rest) < len(RECIPIENT) and RECIPIENT.startswith(rest):
            return False
        self._begin(self.pos)
        if rest == RECIPIENT:
            self.name_at = self.pos + len(RECIPIENT)
        return True

    def _begin(self, at: int) -> None:
        self.segment_at = self.name_at = at
        self.step = self._recipient

    def _content(self) -> bool:
        if self._scan(self._emit_content, (RECIPIENT,)) is None:
            return False
        self._begin(self.pos - len(RECIPIENT))
        self.name_at = self.pos
        return True

    def _recipient(self) -> bool:
        buf, start = self.buf, self.name_at
        rest = buf[start : start + len(RECIPIENT)]
        if rest == RECIPIENT:  # drift: the opener written twice
            self.name_at += len(RECIPIENT)
            return True
        if rest and not self.final and len(rest) < len(RECIPIENT) and RECIPIENT.startswith(rest):
            return False
        end = buf.find("\n", start)
        bad = _NAME_FAULT.search(buf, start, len(buf) if end < 0 else end)
        if bad is not None:
            raise Malformed(bad.start(), f"{bad.group()!r} in the recipient")
        if end < 0:
            return False  # at the end of the text: a call cut off in its name (_at_end)
        name = buf[start:end]
        if not name:
            raise Malformed(end, "empty recipient")
        self.pos = end + 1
        if name == ALL:
            self.segment_at = -1
            self.step = self._content
            return True
        self.tool = name
        self.step = self._arguments_start
        return True

    def _arguments_start(self) -> bool:
        at = skip(_JSON_WS, self.buf, self.pos)
        if at == len(self.buf):
            return False
        if self.buf[at] not in '{"':
            raise Malformed(at, "expected a JSON object of arguments")
        self.extent, self.step = JsonExtent(at), self._arguments
        return True

    def _arguments(self) -> bool:
        extent = self.extent
        assert extent is not None  # _arguments_start set it with this step
        end = extent.advance(self.buf)
        if end is None:
            return False
        try:
            value = object_arguments(decode_json(self.buf[extent.start : end]))
        except ValueError as exc:
            raise Malformed(end, f"invalid JSON arguments: {exc}") from None
        if value is None:
            raise Malformed(end, "the arguments are not a JSON object")
        self.events.append(("call", self.n_calls, self.tool, json.dumps(value, ensure_ascii=False)))
        self.n_calls += 1
        self.segment_at, self.extent, self.pos = -1, None, end
        self.step = self._content
        return True

    def _surface(self, at: int, reason: str) -> None:
        """The segment's raw text, from its start to ``at`` (or to a later ``>>>``, if sooner), becomes content."""
        later = self.buf.find(RECIPIENT, self.name_at, at)
        at = later if later >= 0 else at
        raw = self.buf[self.segment_at : at]
        self.diagnostics.append(f"malformed call surfaced as content ({reason}): {raw[:80]!r}")
        self.segment_at, self.extent, self.pos = -1, None, at
        self._emit_content(raw)
        self.step = self._content


PARSERS = [FunctionaryV32Parser]  # registry entry (see harness/parse/registry.py)

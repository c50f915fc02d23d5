"""The project's own Functionary v3.1 tool-call parser: one incremental reader for one-shot and streaming use.

Format facts (:mod:`harness.formats.functionary_v31`, from ``meetkai-functionary-medium-v3.1.jinja`` in the
llama-cpp-python 0.3.36 sdist): the content, then per call ``<function=NAME>ARGS</function>``, or for the tool
``python`` ``<|python_tag|>ARGS`` with no closer, nothing between the calls; ``ARGS`` is ``tojson`` of the
arguments. ``<|eom_id|>`` (after calls) or ``<|eot_id|>`` ends generation.

Reading rules:

- ``<function=`` opens a call. The name runs to the first ``>``; an empty name, or whitespace or ``<`` before the
  ``>``, is a fault. ``ARGS`` (any JSON whitespace before it) is one JSON object found by its syntax
  (:class:`~parsers.own._common.JsonExtent`: strings, escapes, nesting), so ``</function>`` and every other
  marker inside a string value is data; drift: a JSON string holding the object. Strict JSON: ``NaN``,
  ``Infinity`` and numbers beyond the double range are faults. Then ``</function>`` (whitespace before it
  allowed); drift: the closer missing right before the next ``<function=`` or ``<|python_tag|>``, or at the end
  of the text (also when the text ends inside the closer: the cut-off closer is dropped).
- ``<|python_tag|>`` opens a call of ``python`` whose arguments are the JSON object right after the tag; the call
  ends with the object.
- Text outside calls is content (the template writes it before the calls; text after them is content too),
  concatenated and stripped of surrounding whitespace (``None`` when empty). Trailing stop markers are dropped;
  elsewhere they are text. The format has no reasoning; ``prefix`` is accepted for the protocol.
- A call cut off by the end of the text (an unterminated name or JSON, or an opener alone; no closer or later
  opener in it) is dropped with a diagnostic, its markup kept out of content (:mod:`parsers.own._base`).
- Faults are *surfaced*: the call's raw text from its opener up to the fault (cut at a later opener, so one broken
  call does not swallow the next) goes to content with a diagnostic, then content runs to the next
  ``</function>`` (kept) or opener. Prose is never dropped.

Streaming: content is released as soon as it cannot be the start of a marker (a trailing proper prefix of any
marker of the format is held back); a call is held from its opener until it is decided -- at its closer, at its
object's end for the python tag, or at what proves the closer missing -- and emitted whole (name and arguments
JSON), so streaming equals one-shot for any chunking and nothing emitted is ever retracted.
"""

from __future__ import annotations

import json
import re

from harness.formats.functionary_v31 import CALL_CLOSE, CALL_OPEN, NAME_END, PYTHON_TAG, PYTHON_TOOL, SPEC
from parsers.own._base import OwnParser, StepReader, proper_prefixes
from parsers.own._common import JsonExtent, Malformed, decode_json, object_arguments, skip

_OPENERS = (CALL_OPEN, PYTHON_TAG)
_MARKERS = tuple(dict.fromkeys(SPEC.markers + SPEC.stop_markers))
_JSON_WS = re.compile(r"[ \t\n\r]*")
_NAME_FAULT = re.compile(r"[\s<]")  # what may not stand between <function= and the > that ends the name


class FunctionaryV31Parser(OwnParser):
    """Parser protocol implementation for the Functionary v3.1 format (see the module docstring for the rules).

    ``tools`` is accepted for the protocol: the arguments are self-describing JSON."""

    name = "toolcall-harness:functionary_v31"
    formats = ("functionary_v31",)
    stops = SPEC.stop_markers
    limitations = (
        "Raw code after ``<|python_tag|>`` is not mapped to a ``python`` call (the template writes the arguments' "
        "JSON object there); it is surfaced as content with the tag.",
        "Text after the calls is content, although the template never writes any; a ``python`` call has no closer, "
        "so text right after its object is content too.",
        "A name is read up to the first ``>``; a name holding whitespace or ``<`` is a fault (surfaced).",
    )

    def reader(self, tools: list | None, prefix: str, whole: bool) -> _Reader:
        return _Reader()


class _Reader(StepReader):
    """Incremental reader: ``push(text)`` / ``finish()`` return events ``("content", text)`` and
    ``("call", index, name, arguments_json)``.

    While a call is read (``opener_at >= 0``) the buffer is kept from its opener, so a fault can give its raw text
    to content; the buffer is compacted only between calls.
    """

    prefixes = proper_prefixes(_MARKERS)
    maxlen = max(map(len, _MARKERS))

    def __init__(self) -> None:
        super().__init__()
        self.step = self._outside
        self.opener_at = -1  # buffer offset of the current call's opener; -1 between calls
        self.tool = ""
        self.extent: JsonExtent | None = None
        self.arguments: dict = {}

    # ---- driving ---------------------------------------------------------------------------------------

    def _compact(self) -> None:
        if self.opener_at < 0 and self.pos:
            self.buf, self.pos = self.buf[self.pos :], 0

    def _held_call(self) -> bool:
        return self.opener_at >= 0

    def _at_end(self) -> None:
        """A call still open at the end: cut off (dropped) unless a closer or later opener in it shows a fault."""
        rest = self.buf[self.opener_at + 1 :]
        if CALL_CLOSE in rest or any(o in rest for o in _OPENERS):
            self._surface(len(self.buf), "unterminated call")
            return
        self._cut_off(self.buf[self.opener_at :], "unterminated call")
        self.opener_at, self.extent, self.pos = -1, None, len(self.buf)
        self.step = self._outside

    # ---- text outside calls ------------------------------------------------------------------------------

    def _outside(self) -> bool:
        opener = self._scan(self._emit_content, _OPENERS)
        if opener is None:
            return False
        self.opener_at = self.pos - len(opener)
        if opener == PYTHON_TAG:
            self.tool, self.step = PYTHON_TOOL, self._arguments_start
        else:
            self.step = self._name
        return True

    def _after_fault(self) -> bool:
        """Content up to the next ``</function>`` (kept as content) or call opener."""
        found = self._scan(self._emit_content, (CALL_CLOSE, *_OPENERS))
        if found == CALL_CLOSE:
            self._emit_content(found)
        elif found is not None:
            self.pos -= len(found)
        if found is not None:
            self.step = self._outside
        return found is not None

    # ---- one call ------------------------------------------------------------------------------------

    def _name(self) -> bool:
        start = self.opener_at + len(CALL_OPEN)
        end = self.buf.find(NAME_END, start)
        bad = _NAME_FAULT.search(self.buf, start, len(self.buf) if end < 0 else end)
        if bad is not None:
            raise Malformed(bad.start(), f"{bad.group()!r} in the tool name")
        if end < 0:
            return False
        if end == start:
            raise Malformed(end + len(NAME_END), "empty tool name")
        self.tool, self.pos = self.buf[start:end], end + len(NAME_END)
        self.step = self._arguments_start
        return True

    def _arguments_start(self) -> bool:
        at = skip(_JSON_WS, self.buf, self.pos)
        if at == len(self.buf):
            return False  # at the end of the text: an unterminated call (_at_end)
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
        self.arguments, self.pos = value, end
        if self.buf.startswith(PYTHON_TAG, self.opener_at):
            self._emit_call()  # the tagged call has no closer
        else:
            self.step = self._closer
        return True

    def _closer(self) -> bool:
        """``</function>``; drift: no closer before the next opener, or at the end of the text (a cut-off closer is
        left to content)."""
        buf = self.buf
        at = skip(_JSON_WS, buf, self.pos)
        rest = buf[at : at + self.maxlen]
        if rest.startswith(CALL_CLOSE):
            at += len(CALL_CLOSE)
        elif not rest.startswith(_OPENERS):
            partial = [m for m in (CALL_CLOSE, *_OPENERS) if len(rest) < len(m) and m.startswith(rest)]
            if partial and not self.final:
                return False  # more text decides
            if CALL_CLOSE not in partial:
                raise Malformed(at, f"expected {CALL_CLOSE} after the arguments")
        self.pos = at
        self._emit_call()
        return True

    def _emit_call(self) -> None:
        self.events.append(("call", self.n_calls, self.tool, json.dumps(self.arguments, ensure_ascii=False)))
        self.n_calls += 1
        self.opener_at, self.extent = -1, None
        self.step = self._outside

    def _surface(self, at: int, reason: str) -> None:
        """The call's raw text, from its opener to ``at`` (or to a later opener, if sooner), becomes content."""
        later = [i for i in (self.buf.find(o, self.opener_at + 1, at) for o in _OPENERS) if i >= 0]
        at = min([at, *later])
        raw = self.buf[self.opener_at : at]
        self.diagnostics.append(f"malformed call surfaced as content ({reason}): {raw[:80]!r}")
        self.opener_at, self.extent, self.pos = -1, None, at
        self._emit_content(raw)
        self.step = self._after_fault


PARSERS = [FunctionaryV31Parser]  # registry entry (see harness/parse/registry.py)

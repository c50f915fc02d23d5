"""The project's own FireFunction v2 tool-call parser: one incremental reader for one-shot and streaming use.

Format facts (:mod:`harness.formats.firefunction_v2`, from ``fireworks-ai-llama-3-firefunction-v2.jinja`` in the
llama-cpp-python 0.3.36 sdist): the trimmed content, then `` functools[`` + ``{"name": "NAME", "arguments": ARGS}``
per call joined by ``, `` + ``]``; ``ARGS`` is ``tojson`` of the arguments; ``<|eot_id|>`` ends generation.

Reading rules:

- ``functools[`` opens the call list; ``functools`` without ``[`` right after it is prose. The list holds call
  objects separated by ``,`` (JSON whitespace around them allowed) and ends at ``]``; each object's end is found
  by its JSON syntax (:class:`~parsers.own._common.JsonExtent`), so markers inside string values are data.
  A call object is ``{"name": str, "arguments": ARGS}`` (``"parameters"`` accepted too; ``ARGS`` an object or
  drift: a JSON string holding one); an empty list is no call.
- Text outside the list is content (before and after it), concatenated and stripped (``None`` when empty).
  Trailing stop markers are dropped; elsewhere they are text. No reasoning; ``prefix`` is accepted for the
  protocol.
- A list cut off by the end of the text keeps the call objects read whole before the cut (the cut-off one is
  dropped, with a diagnostic, :mod:`parsers.own._base`).
- Faults (an element that is not a call object, anything but ``,`` or ``]`` after one, invalid JSON) are
  *surfaced*: the list's raw text up to the fault (or a later ``functools[``) becomes content with a
  diagnostic, and reading goes on from there. Prose is never dropped.

Streaming: content is released once it cannot start a marker; the calls are held until the list's ``]`` (or
the end of the text) and then emitted whole, so streaming equals one-shot for any chunking.
"""

from __future__ import annotations

import json
import re

from harness.formats.firefunction_v2 import CALL_OPEN, SPEC
from parsers.own._base import BlockReader, OwnParser, proper_prefixes
from parsers.own._common import JsonExtent, Malformed, skip
from parsers.own.llama3_json import NESTED_TOO_DEEP
from parsers.own.mistral import _json_call

_STOPS = SPEC.stop_markers
_MARKERS = tuple(dict.fromkeys(SPEC.markers + _STOPS))
_WS = re.compile(r"[ \t\n\r]*")
_TEXT_STOP = re.compile(r"[f<]")
_COMPACT_AT = 4096


class FireFunctionV2Parser(OwnParser):
    """Parser protocol implementation for FireFunction v2 ``functools[...]`` calls (see the module docstring).

    ``tools`` and ``prefix`` are accepted for the protocol: the JSON carries its types and the template pre-fills
    nothing."""

    name = "toolcall-harness:firefunction_v2"
    formats = ("firefunction_v2",)
    limitations = (
        "Prose that writes ``functools[`` (a Python subscript, say) opens a call list; when what follows is "
        "no list of call objects it is surfaced back as content with a diagnostic.",
        "Text after the call list is content, although the template never writes any.",
    )
    stops = _STOPS

    def reader(self, tools: list | None, prefix: str, whole: bool) -> _Reader:
        return _Reader()


class _Reader(BlockReader):
    """Incremental reader: ``push(text)`` / ``finish()`` return events (:func:`parsers.own._base.deltas_from_events`).

    Inside the list (``in_call``) the buffer keeps its raw text from ``functools[`` on; ``calls`` holds the call
    objects read so far, emitted at ``]``."""

    prefixes, maxlen = proper_prefixes(_MARKERS), max(map(len, _MARKERS))
    text_stop = _TEXT_STOP
    call_open = CALL_OPEN

    def __init__(self) -> None:
        super().__init__()
        self.step = self._text
        self._reset_call()

    def _reset_call(self) -> None:
        self.in_call = False
        self.call_at = 0
        self.calls: list[tuple[str, dict]] = []
        self.json: JsonExtent | None = None

    def _compact(self) -> None:
        if not self.in_call and self.pos >= _COMPACT_AT:
            self.buf, self.pos = self.buf[self.pos :], 0

    def _at_end(self) -> None:
        self._drop_at_end("unterminated call list")

    def _keep_read_calls(self) -> None:
        self._emit_calls()

    def _text(self) -> bool:
        if self._scan(self._emit_content, (CALL_OPEN,)) is None:
            return False
        self._begin_call()
        return True

    def _call_start(self) -> bool:
        """After ``functools[`` or a ``,``: a call object, or ``]`` (an empty list, or drift: a trailing comma
        is not JSON and is a fault)."""
        j = self.pos = skip(_WS, self.buf, self.pos)
        if j == len(self.buf):
            return False
        if self.buf[j] == "]" and not self.calls:
            return self._close(j + 1)
        if self.buf[j] != "{":
            raise Malformed(j, "expected a call object in the functools list")
        self.json = JsonExtent(j)
        self.step = self._element
        return True

    def _element(self) -> bool:
        extent = self.json
        assert extent is not None  # set with this step
        scanned = extent.decoded(self.buf, too_deep=NESTED_TOO_DEEP)
        if scanned is None:
            return False
        end, value = scanned
        found = _json_call(value)
        if found is None:
            raise Malformed(end, "JSON that is not a tool call object")
        self.calls.append(found[:2])
        self.pos = end
        self.step = self._after_element
        return True

    def _after_element(self) -> bool:
        j = self.pos = skip(_WS, self.buf, self.pos)
        if j == len(self.buf):
            return False
        if self.buf[j] == ",":
            self.pos = j + 1
            self.step = self._call_start
            return True
        if self.buf[j] == "]":
            return self._close(j + 1)
        raise Malformed(j, "expected ',' or ']' after a call object")

    def _close(self, end: int) -> bool:
        self._emit_calls()
        self._reset_call()
        self.pos = end
        self.step = self._text
        return True

    def _emit_calls(self) -> None:
        for name, arguments in self.calls:
            self.events.append(("call", self.n_calls, name, json.dumps(arguments, ensure_ascii=False), None))
            self.n_calls += 1
        self.calls = []


PARSERS = [FireFunctionV2Parser]  # registry entry (see harness/parse/registry.py)

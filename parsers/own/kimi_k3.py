"""The project's own Kimi K3 XTML tool-call parser: one incremental reader for one-shot and streaming use.

Format facts (:mod:`harness.formats.kimi_k3`, from ``Kimi-K3.jinja`` in the llama-cpp-python 0.3.36 sdist): after
the prompt's ``<|open|>think<|sep|>``, ``REASONING<|close|>think<|sep|><|open|>response<|sep|>CONTENT``
``<|close|>response<|sep|>``, then ``<|open|>tools<|sep|>`` with per call ``<|open|>call tool="NAME"
index="N"<|sep|>`` and per argument ``<|open|>argument key="KEY" type="T"<|sep|>VALUE<|close|>argument<|sep|>``,
``<|close|>call<|sep|>``, then ``<|close|>tools<|sep|><|close|>message<|sep|>``; ``<|end_of_msg|>`` ends
generation.

Reading rules:

- The prefix decides where the text starts: after ``<|open|>think<|sep|>`` in reasoning, after
  ``<|open|>response<|sep|>`` (thinking off) or ``<|close|>think<|sep|>`` in content; otherwise a
  ``<|open|>think<|sep|>`` block at the very start is reasoning. Reasoning ends at ``<|close|>think<|sep|>``,
  ``<|open|>response<|sep|>`` or ``<|open|>tools<|sep|>`` (the model skipped the think closer).
- Content is the text outside reasoning and calls; the frame tags ``<|open|>response<|sep|>``,
  ``<|close|>response<|sep|>`` and ``<|close|>message<|sep|>`` are structure and dropped; content and reasoning
  are stripped of surrounding whitespace.
- A tools block is read whole and decided by structure, never by the first closer: an argument value ends at
  a ``<|close|>argument<|sep|>`` after which the rest of the block parses; among the parses, the first
  (earliest value ends) after which only ``<|close|>message<|sep|>`` and whitespace run to the end of the text
  wins ("clean"), else the first parse. So any tag text may occur inside a raw string value.
- Attributes are ``NAME="VALUE"`` with ``&quot;`` / ``&amp;`` unescaped; ``tool`` names the call, ``key`` the
  argument (an argument tag needs ``key`` and ``type``, and a key set earlier in the call cannot be set again:
  such a tag inside a value is data); ``index`` is not checked (calls are numbered by their order).
  ``type="string"`` keeps the value raw; ``number``, ``boolean``, ``null``, ``object``, ``array`` decode it as
  JSON (a value that does not decode cannot end there); another type is typed by the tool's schema
  (:func:`parsers.own._common.tojson_typed`). A ``<|open|>json type="object"<|sep|>`` block holds the
  arguments as one JSON object.
- Drift recovered: whitespace between tags; ``<|close|>tools<|sep|>`` missing before
  ``<|close|>message<|sep|>`` or the end; ``<|close|>call<|sep|>`` missing before the next call or the block
  end; a bare ``<|open|>call`` with no tools opener (a call when it parses whole, else content).
- A block cut off by the end of the text is dropped (the calls read whole before the cut kept); another
  malformed block is surfaced: its ``<|open|>tools<|sep|>`` stays in content and the text after it is read
  again as content.

Streaming: content and reasoning are released as soon as they cannot start a marker; a tools block is held
until the end of the text decides it, then its calls are emitted whole, so streaming equals one-shot for every
chunking.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from harness.formats import kimi_k3 as _fmt
from parsers.own._base import OwnParser, StepReader, proper_prefixes
from parsers.own._common import decode_json, object_arguments, tojson_typed
from parsers.own._schema_types import property_schema

SPEC = _fmt.SPEC
_WS = " \t\n\r"
_ATTR = re.compile(r'[ \t\n\r]+([A-Za-z_][A-Za-z0-9_.:-]*)="([^"]*)"')
_ENTITY = re.compile("&(quot|amp);")
_JSON_TYPES = {"number", "boolean", "null", "object", "array"}
PENDING = "pending"  # more text could change the answer


def unescape(value: str) -> str:
    """An attribute value as the template's ``escape_attr`` wrote it, unescaped (one pass)."""
    return _ENTITY.sub(lambda m: '"' if m.group(1) == "quot" else "&", value)


@dataclass(frozen=True)
class _Parse:
    """A parse of the rest of a block: where it ends, whether it ends cleanly, its items (``("c", name)`` opens a
    call, ``("a", key, value)`` adds an argument, ``("j", arguments)`` sets them all) and where a call cut off by
    the end of the text starts (``-1``: none)."""

    end: int
    clean: bool
    items: tuple
    cut_at: int = -1


def _prepend(items: tuple, result):
    if result is None or result is PENDING:
        return result
    return _Parse(result.end, result.clean, items + result.items, result.cut_at)


class _BlockSearch:
    """The preferred parse of the block at ``start`` (after ``<|open|>tools<|sep|>``, or at a bare
    ``<|open|>call``): ``run()`` gives a :class:`_Parse`, ``PENDING`` or ``None`` (malformed). Rules are
    memoised by position, so the search stays polynomial however many closers the values hold."""

    def __init__(self, buf: str, start: int, final: bool, tools: list | None):
        self.buf, self.start, self.final, self.n, self.tools = buf, start, final, len(buf), tools
        self.memo: dict[tuple, object] = {}

    def run(self):
        try:
            return self._calls(self.start, True)
        except RecursionError:
            return None

    def _memo(self, key: tuple, make):
        if key not in self.memo:
            self.memo[key] = make()
        return self.memo[key]

    def _ws(self, i: int) -> int:
        while i < self.n and self.buf[i] in _WS:
            i += 1
        return i

    def _partial(self, i: int, *markers: str) -> bool:
        rest = self.buf[i:]
        return not self.final and any(m.startswith(rest) for m in markers)

    def _end(self, i: int):
        """The end of the text at ``i``: clean once final."""
        return _Parse(i, True, ()) if self.final else PENDING

    def _attrs(self, i: int):
        """``(attributes, after SEP)`` for the attributes of a tag starting at ``i``; ``PENDING`` or ``None``."""
        buf = self.buf
        attrs: dict[str, str] = {}
        while True:
            q = self._ws(i)
            if buf.startswith(_fmt.SEP, q):
                return attrs, q + len(_fmt.SEP)
            m = _ATTR.match(buf, i)
            if m is None:
                if q == self.n or self._partial(q, _fmt.SEP):
                    return None if self.final else PENDING
                if not self.final and re.fullmatch(r'[ \t\n\r]+[A-Za-z_][A-Za-z0-9_.:-]*(="[^"]*)?=?', buf[i:]):
                    return PENDING
                return None
            attrs[m.group(1)] = unescape(m.group(2))
            i = m.end()

    def _cut_off(self, q: int) -> bool:
        """At the end of the text, the call at ``q`` has no parse: was it cut off (more text could complete it,
        and no block closer follows)?"""
        if not self.final or self.buf.find(_fmt.TOOLS_CLOSE, q) >= 0 or self.buf.find(_fmt.CALL_HEAD, q + 1) >= 0:
            return False
        return _BlockSearch(self.buf, q, False, self.tools)._call(q) is PENDING

    # ---- grammar rules

    def _calls(self, i: int, first: bool):
        """Whitespace, then a call, the block closer, or (after a call, drift) the message end or the end."""
        return self._memo(("calls", i, first), lambda: self._calls_(i, first))

    def _calls_(self, i: int, first: bool):
        buf = self.buf
        q = self._ws(i)
        if buf.startswith(_fmt.CALL_HEAD, q):
            result = self._call(q)
            if result is None and self._cut_off(q):
                return _Parse(self.n, True, (), q)
            return result
        if buf.startswith(_fmt.TOOLS_CLOSE, q):
            return self._after_block(q + len(_fmt.TOOLS_CLOSE))
        if q == self.n:
            return self._end(q) if not first else (None if self.final else PENDING)
        if self._partial(q, _fmt.CALL_HEAD, _fmt.TOOLS_CLOSE, _fmt.MESSAGE_CLOSE):
            return PENDING
        if first:
            return None
        if buf.startswith(_fmt.MESSAGE_CLOSE, q):  # drift: the block closer is missing
            return self._after_block(q)
        return _Parse(i, False, ())  # drift: text after the calls ends the block

    def _call(self, q: int):
        """``<|open|>call ATTRS<|sep|>`` then the arguments."""
        head = self._attrs(q + len(_fmt.CALL_HEAD))
        if head is None or head is PENDING:
            return head
        attrs, j = head
        name = attrs.get("tool")
        if not name:
            return None
        return _prepend((("c", name),), self._args(j, name, frozenset()))

    def _args(self, i: int, name: str, keys: frozenset):
        return self._memo(("args", i, keys), lambda: self._args_(i, name, keys))

    def _args_(self, i: int, name: str, keys: frozenset):
        buf = self.buf
        q = self._ws(i)
        if buf.startswith(_fmt.ARGUMENT_HEAD, q) or buf.startswith(_fmt.JSON_HEAD, q):
            json_block = buf.startswith(_fmt.JSON_HEAD, q)
            head = self._attrs(q + len(_fmt.JSON_HEAD if json_block else _fmt.ARGUMENT_HEAD))
            if head is None or head is PENDING:
                return head
            attrs, j = head
            if json_block:
                return self._json(j, name, keys)
            if "key" not in attrs or "type" not in attrs or attrs["key"] in keys:
                return None  # the template writes both attributes, and each key once
            return self._value(j, name, attrs["key"], attrs["type"], keys)
        if buf.startswith(_fmt.CALL_CLOSE, q):
            return self._calls(q + len(_fmt.CALL_CLOSE), False)
        if buf.startswith(_fmt.CALL_HEAD, q) or buf.startswith(_fmt.TOOLS_CLOSE, q):
            return self._calls(q, False)  # drift: the call closer is missing
        if q == self.n:
            return None if self.final else PENDING
        return PENDING if self._partial(q, _fmt.ARGUMENT_HEAD, _fmt.JSON_HEAD, _fmt.CALL_CLOSE) else None

    def _closers(self, closer: str, start: int) -> list[int]:
        out, c = [], self.buf.find(closer, start)
        while c >= 0:
            out.append(c)
            c = self.buf.find(closer, c + 1)
        return out

    def _value(self, start: int, name: str, key: str, type_: str, keys: frozenset):
        """The value from ``start``: the first ``<|close|>argument<|sep|>`` after which the rest parses cleanly,
        else the first after which it parses."""
        fallback = None
        for c in self._closers(_fmt.ARGUMENT_CLOSE, start):
            ok, value = self._typed(self.buf[start:c], name, key, type_)
            if not ok:
                continue
            result = self._args(c + len(_fmt.ARGUMENT_CLOSE), name, keys | {key})
            if result is PENDING:
                return PENDING
            if result is not None:
                parse = _prepend((("a", key, value),), result)
                if parse.clean:
                    return parse
                fallback = fallback or parse
        if not self.final:
            return PENDING
        return fallback

    def _json(self, start: int, name: str, keys: frozenset):
        """A JSON arguments block: the first ``<|close|>json<|sep|>`` ending a JSON object that lets the rest
        parse (cleanly first)."""
        fallback = None
        for c in self._closers(_fmt.JSON_CLOSE, start):
            arguments = _decoded_object(self.buf[start:c])
            if arguments is None:
                continue
            result = self._args(c + len(_fmt.JSON_CLOSE), name, keys | set(arguments))
            if result is PENDING:
                return PENDING
            if result is not None:
                parse = _prepend((("j", arguments),), result)
                if parse.clean:
                    return parse
                fallback = fallback or parse
        return PENDING if not self.final else fallback

    def _typed(self, raw: str, name: str, key: str, type_: str) -> tuple[bool, object]:
        if type_ == "string":
            return True, raw
        if type_ in _JSON_TYPES:
            try:
                return True, decode_json(raw)
            except ValueError:
                return False, None
        return True, tojson_typed(raw, property_schema(self.tools, name, key))

    def _after_block(self, i: int):
        """After the block: ``<|close|>message<|sep|>`` and the end of the text make a clean end."""
        buf = self.buf
        q = self._ws(i)
        if buf.startswith(_fmt.MESSAGE_CLOSE, q):
            r = self._ws(q + len(_fmt.MESSAGE_CLOSE))
            if r == self.n:
                return self._end(r)
            return _Parse(q + len(_fmt.MESSAGE_CLOSE), False, ())
        if q == self.n:
            return self._end(q)
        if self._partial(q, _fmt.MESSAGE_CLOSE):
            return PENDING
        return _Parse(i, False, ())


def _decoded_object(text: str) -> dict | None:
    try:
        return object_arguments(decode_json(text.strip()))
    except ValueError:
        return None


class _Reader(StepReader):
    """Incremental reader: ``push(text)`` / ``finish()`` return events ``("content"|"reasoning", text)`` and
    ``("call", index, name, arguments_json)``; ``step`` is the current state (reasoning, text, block)."""

    _TEXT_MARKERS = (_fmt.TOOLS_OPEN, _fmt.RESPONSE_OPEN, _fmt.RESPONSE_CLOSE, _fmt.MESSAGE_CLOSE, _fmt.CALL_HEAD)
    _FRAME = (_fmt.RESPONSE_OPEN, _fmt.RESPONSE_CLOSE, _fmt.MESSAGE_CLOSE)

    def __init__(self, tools: list | None, prefix: str):
        self.tools = tools
        markers = tuple(dict.fromkeys(SPEC.markers + SPEC.stop_markers + (_fmt.CALL_HEAD,)))
        self.prefixes = proper_prefixes(markers)
        self.maxlen = max(map(len, markers))
        super().__init__()
        self.call_at = -1
        self.bare = False
        head = prefix.rstrip()
        self.think_allowed = not head.endswith((_fmt.RESPONSE_OPEN, _fmt.THINK_CLOSE))
        self.step = self._text
        if head.endswith(_fmt.THINK_OPEN):
            self.step, self.think_allowed = self._reasoning, False

    def _held_call(self) -> bool:
        return False

    def _at_end(self) -> None:  # pragma: no cover - no call is held at the end (_block always decides)
        pass

    def _surface(self, at: int, reason: str) -> None:  # pragma: no cover - no step raises Malformed
        pass

    def _compact(self) -> None:
        cut = self.call_at if self.call_at >= 0 else self.pos
        if cut > 0:
            self.buf, self.pos = self.buf[cut:], self.pos - cut
            if self.call_at >= 0:
                self.call_at = 0

    def _reasoning(self) -> bool:
        marker = self._scan(self._emit_reasoning, (_fmt.THINK_CLOSE, _fmt.RESPONSE_OPEN, _fmt.TOOLS_OPEN))
        if marker is None:
            return False
        self.step = self._text
        if marker == _fmt.TOOLS_OPEN:  # straight from thinking to the calls
            self._begin_block(marker)
        return True

    def _text(self) -> bool:
        markers = self._TEXT_MARKERS + ((_fmt.THINK_OPEN, _fmt.THINK_CLOSE) if self.think_allowed else ())
        marker = self._scan(self._emit_content, markers)
        if marker is None:
            return False
        if marker in (_fmt.THINK_OPEN, _fmt.THINK_CLOSE):
            self.think_allowed = False
            if self.content.started:  # after content: text
                self._emit_content(marker)
            elif marker == _fmt.THINK_OPEN:
                self.step = self._reasoning
        elif marker in self._FRAME:  # structure: dropped
            self.think_allowed = False
        else:
            self._begin_block(marker)
        return True

    def _emit_content(self, text: str) -> None:
        if text and not text.isspace():
            self.think_allowed = False
        super()._emit_content(text)

    def _begin_block(self, marker: str) -> None:
        self.think_allowed = False
        self.call_at = self.pos - len(marker)
        self.bare = marker == _fmt.CALL_HEAD
        self.step = self._block

    def _block(self) -> bool:
        start = self.call_at if self.bare else self.call_at + len(_fmt.TOOLS_OPEN)
        result = _BlockSearch(self.buf, start, self.final, self.tools).run()
        if result is PENDING:
            return False
        at, self.call_at = self.call_at, -1
        self.step = self._text
        if result is None and self.bare:  # not a whole call: prose that names a call opener
            self._emit_content(self.buf[at : at + len(_fmt.CALL_HEAD)])
            self.pos = at + len(_fmt.CALL_HEAD)
        elif result is None and self._block_cut_off(start):
            self._cut_off(self.buf[at:], "unterminated tools block")
            self.pos = len(self.buf)
        elif result is None:
            self.diagnostics.append(f"malformed call surfaced as content: {self.buf[at : at + 80]!r}")
            self._emit_content(_fmt.TOOLS_OPEN)
            self.pos = at + len(_fmt.TOOLS_OPEN)
        else:
            assert isinstance(result, _Parse)
            for name, arguments in _calls(result.items):
                self.events.append(("call", self.n_calls, name, json.dumps(arguments, ensure_ascii=False)))
                self.n_calls += 1
            if result.cut_at >= 0:
                self._cut_off(self.buf[result.cut_at :], "unterminated call")
            self.pos = result.end
        return True

    def _block_cut_off(self, start: int) -> bool:
        """At the end of the text, the block from ``start`` has no parse: cut off when more text could complete
        it and no block closer is in it."""
        if self.buf.find(_fmt.TOOLS_CLOSE, start) >= 0:
            return False
        return _BlockSearch(self.buf, start, False, self.tools).run() is PENDING


def _calls(items: tuple) -> list[tuple[str, dict]]:
    calls: list[tuple[str, dict]] = []
    for item in items:
        if item[0] == "c":
            calls.append((item[1], {}))
        elif item[0] == "a":
            calls[-1][1][item[1]] = item[2]
        else:
            calls[-1][1].update(item[1])
    return calls


class KimiK3Parser(OwnParser):
    """Parser protocol implementation for the Kimi K3 XTML format (see the module docstring for the rules)."""

    name = "toolcall-harness:kimi_k3"
    formats = ("kimi_k3",)
    stops = SPEC.stop_markers
    limitations = (
        "A tools block is decided only at the end of the text (a later closer could still make an earlier "
        "one part of a raw string value): its calls stream in one piece at the end.",
        "Ambiguities the format cannot resolve are read the earliest way that parses to a clean end: a string "
        "value holding ``<|close|>argument<|sep|>`` followed by a whole argument tag is cut there.",
        "The ``index`` attribute is not checked against the call's position.",
    )

    def reader(self, tools: list | None, prefix: str, whole: bool) -> _Reader:
        return _Reader(tools, prefix)


PARSERS = [KimiK3Parser]  # registry entry (see harness/parse/registry.py)

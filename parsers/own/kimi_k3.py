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

from harness.formats import kimi_k3 as _fmt
from parsers.own._base import OwnParser, StepReader, proper_prefixes
from parsers.own._common import decode_json, object_arguments, tojson_typed
from parsers.own._schema_types import property_schema
from parsers.own._search import PENDING, Parse, RuleSearch, parse_items, prepend

SPEC = _fmt.SPEC
_WS = " \t\n\r"
_ATTR = re.compile(r'[ \t\n\r]+([A-Za-z_][A-Za-z0-9_.:-]*)="([^"]*)"')
_ENTITY = re.compile("&(quot|amp);")
_JSON_TYPES = {"number", "boolean", "null", "object", "array"}


def unescape(value: str) -> str:
    """An attribute value as the template's ``escape_attr`` wrote it, unescaped (one pass)."""
    return _ENTITY.sub(lambda m: '"' if m.group(1) == "quot" else "&", value)


_ATTRS_SO_FAR = re.compile(r'[ \t\n\r]+[A-Za-z_][A-Za-z0-9_.:-]*(="[^"]*)?=?')  # an attribute cut off by the end


class _BlockSearch(RuleSearch):
    """The preferred parse of a block in ``buf``: ``run(start)`` (``start`` after ``<|open|>tools<|sep|>``, or at
    a bare ``<|open|>call``) gives a :class:`~parsers.own._search.Parse` (items ``("c", name)`` open a call,
    ``("a", key, value)`` add an argument, ``("j", arguments)`` set them all), ``PENDING`` or ``None``
    (malformed). The rules are generators driven by :class:`~parsers.own._search.RuleSearch` (memoised, no
    recursion however many calls the block holds, linear in it for the shapes the template writes)."""

    def __init__(self, buf: str, final: bool, tools: list | None):
        super().__init__(buf, final)
        self.tools = tools
        self.clean_before = _clean_before(buf) if final else self.n + 1

    def run(self, start: int):
        return self.solve(("calls", start, True))

    def _ws(self, i: int) -> int:
        while i < self.n and self.buf[i] in _WS:
            i += 1
        return i

    def _partial(self, i: int, *markers: str) -> bool:
        if self.final or self.n - i > max(map(len, markers)):
            return False
        rest = self.buf[i:]
        return any(m.startswith(rest) for m in markers)

    def _end(self, i: int):
        """The end of the text at ``i``: clean once final."""
        return Parse(i, True) if self.final else PENDING

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
                if not self.final and _ATTRS_SO_FAR.fullmatch(buf, i):
                    return PENDING
                return None
            attrs[m.group(1)] = unescape(m.group(2))
            i = m.end()

    def _cut_off(self, q: int) -> bool:
        """At the end of the text, the call at ``q`` has no parse: was it cut off (more text could complete it,
        and no block closer follows)?"""
        if not self.final or self.buf.find(_fmt.TOOLS_CLOSE, q) >= 0 or self.buf.find(_fmt.CALL_HEAD, q + 1) >= 0:
            return False
        return _BlockSearch(self.buf, False, self.tools).solve(("call", q)) is PENDING

    # ---- grammar rules (generators: ``result = yield (rule, *args)``; ``return`` gives the rule's result)

    def _calls(self, i: int, first: bool):
        """Whitespace, then a call, the block closer, or (after a call, drift) the message end or the end."""
        buf = self.buf
        q = self._ws(i)
        if buf.startswith(_fmt.CALL_HEAD, q):
            result = yield ("call", q)
            if result is None and self._cut_off(q):
                return Parse(self.n, True, (), q)
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
        return Parse(i, False)  # drift: text after the calls ends the block

    def _call(self, q: int):
        """``<|open|>call ATTRS<|sep|>`` then the arguments."""
        head = self._attrs(q + len(_fmt.CALL_HEAD))
        if head is None or head is PENDING:
            return head
        attrs, j = head
        name = attrs.get("tool")
        if not name:
            return None
        return prepend((("c", name),), (yield ("args", j, name, frozenset())))

    def _args(self, i: int, name: str, keys: frozenset):
        buf = self.buf
        q = self._ws(i)
        if buf.startswith(_fmt.ARGUMENT_HEAD, q) or buf.startswith(_fmt.JSON_HEAD, q):
            json_block = buf.startswith(_fmt.JSON_HEAD, q)
            head = self._attrs(q + len(_fmt.JSON_HEAD if json_block else _fmt.ARGUMENT_HEAD))
            if head is None or head is PENDING:
                return head
            attrs, j = head
            if json_block:
                return (yield ("json", j, name, keys))
            if "key" not in attrs or "type" not in attrs or attrs["key"] in keys:
                return None  # the template writes both attributes, and each key once
            return (yield ("value", j, name, attrs["key"], attrs["type"], keys))
        if buf.startswith(_fmt.CALL_CLOSE, q):
            return (yield ("calls", q + len(_fmt.CALL_CLOSE), False))
        if buf.startswith(_fmt.CALL_HEAD, q) or buf.startswith(_fmt.TOOLS_CLOSE, q):
            return (yield ("calls", q, False))  # drift: the call closer is missing
        if q == self.n:
            return None if self.final else PENDING
        after = (_fmt.ARGUMENT_HEAD, _fmt.JSON_HEAD, _fmt.CALL_CLOSE, _fmt.CALL_HEAD, _fmt.TOOLS_CLOSE)  # as above
        return PENDING if self._partial(q, *after) else None

    def _value(self, start: int, name: str, key: str, type_: str, keys: frozenset):
        """The value from ``start``: the first ``<|close|>argument<|sep|>`` after which the rest parses cleanly,
        else the first after which it parses (closers known to lead to no parse, or once there is that fallback
        to no clean one, are jumped: :meth:`~parsers.own._search.RuleSearch.first`)."""
        fallback, after = None, keys | {key}
        context = ("args", name, after)
        at = start
        while (c := self.first(_fmt.ARGUMENT_CLOSE, at, self.n, context, fallback is not None)) is not None:
            if fallback is not None and c >= self.clean_before:
                break  # no clean parse from here on: the fallback stands
            ok, value = self._typed(self.buf[start:c], name, key, type_)
            if ok:
                result = yield ("args", c + len(_fmt.ARGUMENT_CLOSE), name, after)
                if result is PENDING:
                    return PENDING
                self.record(context, c, result)
                if result is not None:
                    parse = prepend((("a", key, value),), result)
                    if parse.clean:
                        return parse
                    fallback = fallback or parse
            at = c + 1
        if not self.final:
            return PENDING
        return fallback

    def _json(self, start: int, name: str, keys: frozenset):
        """A JSON arguments block: the first ``<|close|>json<|sep|>`` ending a JSON object that lets the rest
        parse (cleanly first)."""
        fallback = None
        at = start
        while (c := self.first(_fmt.JSON_CLOSE, at, self.n)) is not None:
            arguments = _decoded_object(self.buf[start:c])
            if arguments is not None:
                result = yield ("args", c + len(_fmt.JSON_CLOSE), name, keys | set(arguments))
                if result is PENDING:
                    return PENDING
                if result is not None:
                    parse = prepend((("j", arguments),), result)
                    if parse.clean:
                        return parse
                    fallback = fallback or parse
            at = c + 1
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
            return Parse(q + len(_fmt.MESSAGE_CLOSE), False, ())
        if q == self.n:
            return self._end(q)
        if self._partial(q, _fmt.MESSAGE_CLOSE):
            return PENDING
        return Parse(i, False, ())


def _clean_before(buf: str) -> int:
    """At the end of the text: a clean parse ends at the end after ``<|close|>call<|sep|>``,
    ``<|close|>tools<|sep|>`` or ``<|close|>message<|sep|>`` (and whitespace), or drops a last call cut off by
    the end; so a value closer at or after the returned offset leads to no clean parse."""
    end = len(buf)
    while end and buf[end - 1] in _WS:
        end -= 1
    if any(buf.endswith(m, 0, end) for m in (_fmt.CALL_CLOSE, _fmt.TOOLS_CLOSE, _fmt.MESSAGE_CLOSE)):
        return len(buf) + 1
    last = buf.rfind(_fmt.CALL_HEAD)
    return last if last >= 0 and buf.find(_fmt.TOOLS_CLOSE, last) < 0 else -1


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
        self._search: _BlockSearch | None = None
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
        search = self._search
        if search is None or search.buf is not self.buf or search.final != self.final:
            search = self._search = _BlockSearch(self.buf, self.final, self.tools)  # kept for the next block
        result = search.run(start)
        if result is PENDING:  # only the end of the text decides a whole block: searched again when doubled
            self._park(len(self.buf) - self.call_at)
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
            assert isinstance(result, Parse)
            for name, arguments in _calls(parse_items(result)):
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
        return _BlockSearch(self.buf, False, self.tools).run(start) is PENDING


def _calls(items: list) -> list[tuple[str, dict]]:
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

"""The project's own FunctionGemma tool-call parser: one incremental reader for one-shot and streaming use.

No real FunctionGemma template is available offline (the llama-cpp-python 0.3.36 sdist has none), so the format
is taken from public facts and the observed case, each named with its source in
:mod:`harness.formats.functiongemma`. A call is written::

    <start_function_call>call:NAME{key:value,...}<end_function_call>

with keys bare (sorted by the template), strings between ``<escape>`` markers with nothing escaped, objects
``{key:value,...}`` and arrays ``[value,...]`` inline, booleans ``true``/``false`` and numbers bare. Calls follow one
another with nothing between them; content (if any) comes before them; ``<start_function_response>``,
``<end_of_turn>`` and ``<eos>`` end generation.

Reading rules:

- A string ends only at the next ``<escape>``: everything before it (braces, commas, colons, quotes, newlines,
  even ``<end_function_call>`` or ``<start_function_call>``) is data and stays a string.
- A bare value runs to the next ``,``, ``}`` or ``]`` (a protocol marker inside it is a fault) and is typed with
  the project's schema-typing policy (:func:`parsers.own._schema_types.typed_value`) under the property's schema from
  ``tools`` (nested objects and arrays follow the schema's ``properties``/``items``): with a schema, ``"7"``
  under ``string`` stays ``"7"``; without one, JSON literals and numbers are typed (``true``, ``null``, ``1.5``,
  ``1e+16``), Python's ``None``/``True``/``False`` (what a Jinja template prints) become null/true/false, and any
  other word stays a string (the unquoted-string drift). A number beyond the double range is a fault.
- A key runs to ``:`` (``<escape>key<escape>`` is accepted too); surrounding whitespace is dropped unless the
  tool declares the key with it. A name runs from ``call:`` to ``{``, stripped; it may hold ``-`` and ``.``.
- Drift recovered: a value in JSON double quotes (``key:"..."``, JSON escapes, raw control characters allowed) is
  that JSON string, markers inside it included, when ``,``, ``}`` or ``]`` follows it (else it is read as a bare
  value): mlx-swift-lm reads ``{a:"<escape>hi<escape>"}`` as ``{"a": "<escape>hi<escape>"}`` and pins it
  (``shared/seeds/000``). Whitespace around keys, values, commas and brackets; a trailing comma; a missing
  ``<end_function_call>`` when the arguments are followed only by whitespace up to the end of the text or the
  next ``<start_function_call>``.
- A call cut off by the end of the text (more text could have completed it; no ``<end_function_call>`` or
  later ``<start_function_call>`` in it) is dropped with a diagnostic, its markup kept out of content.
- Everything else (no ``call:``, a name holding whitespace or a marker, a bare key without ``:``) is
  *surfaced*: the call's raw text, from ``<start_function_call>`` up to the fault
  (or up to a later ``<start_function_call>``, if that comes first), becomes content; content then runs to the
  next ``<end_function_call>`` (kept) or ``<start_function_call>``; a diagnostic names the fault.
- Content is the text outside calls, concatenated and stripped (``None`` when empty); FunctionGemma has no
  reasoning channel. Trailing stop markers are dropped; elsewhere they are text.

Streaming: content is released as soon as it cannot be the start of a marker; each call is held until it is
decided and then emitted whole (name and arguments JSON), so streaming equals one-shot for any chunking,
malformed input included. A held call is re-read only when a chunk brings a ``>`` (the end of any marker that
can decide it) or at the end, so a long call costs linear time per ``>``.
"""

from __future__ import annotations

import json
import math
import re
from typing import NoReturn

from harness.formats.functiongemma import CALL_CLOSE, CALL_OPEN, ESCAPE, SPEC
from parsers.own._base import BlockReader, OwnParser, proper_prefixes
from parsers.own._common import skip
from parsers.own._schema_types import typed_value

_STOPS = SPEC.stop_markers
_MARKERS = tuple(dict.fromkeys(SPEC.markers + _STOPS))
_PREFIXES, _MAXLEN = proper_prefixes(_MARKERS), max(map(len, _MARKERS))
_HEAD = "call:"

_WS = re.compile(r"\s*")
_KEY_END = re.compile(r"[:<,{}\[\]]")
_BARE_END = re.compile(r"[,}\]<]")
_PYTHON_LITERALS = {"None": None, "True": True, "False": False}


class FunctionGemmaParser(OwnParser):
    """Parser protocol implementation for FunctionGemma (see the module docstring for the reading rules).
    ``prefix`` is accepted for the protocol (the generation prompt pre-fills nothing that matters)."""

    name = "toolcall-harness:functiongemma"
    formats = ("functiongemma",)
    limitations = (
        "The reading is built from public descriptions, a re-implementation (Ollama) and one observed "
        "output, not from the real template: how the template writes null and non-integral floats is "
        "unconfirmed, and no rendered corpus exists offline (``make eval MODEL=functiongemma-270m`` runs "
        "only the observed case).",
        "A key holding ``:`` and a string holding ``<escape>`` cannot be written unambiguously (the format "
        "has no escape); a string value written with the ``<escape>`` type is kept a string even when the "
        "schema asks for a number.",
    )
    stops = _STOPS

    def reader(self, tools: list | None, prefix: str, whole: bool) -> _Reader:
        return _Reader(tools)


class _Reader(BlockReader):
    """Incremental reader: ``push(text)`` / ``finish()`` return events ``("content", text)`` and
    ``("call", index, name, arguments_json)``. Outside a call the text is scanned for ``<start_function_call>``;
    inside one, the buffer keeps the call's raw text from ``call_at`` and :class:`_CallReader` reads it whole
    (again only once a ``>`` arrived: ``dirty``). Surfacing and resync are
    :class:`~parsers.own._base.BlockReader`'s."""

    prefixes, maxlen = _PREFIXES, _MAXLEN
    call_open, call_close = CALL_OPEN, CALL_CLOSE

    def __init__(self, tools: list | None):
        self.tools = tools
        super().__init__()
        self.step = self._text
        self.call_at = 0
        self.in_call = False
        self.dirty = False  # a held call may have become decidable

    def push(self, text: str) -> list[tuple]:
        self.dirty = self.dirty or ">" in text
        return super().push(text)

    def finish(self) -> list[tuple]:
        self.dirty = True
        return super().finish()

    def _compact(self) -> None:
        cut = self.call_at if self.in_call else self.pos
        if cut:
            self.buf, self.pos, self.call_at = self.buf[cut:], self.pos - cut, self.call_at - cut

    def _held_call(self) -> bool:
        return False  # at the end of the text (final, dirty) _CallReader decides every call

    def _reset_call(self) -> None:
        self.in_call = False

    def _text(self) -> bool:
        if self._scan(self._emit_content, (CALL_OPEN,)) is None:
            return False
        self.dirty = True
        self._begin_call()
        return True

    def _call_start(self) -> bool:
        if not self.dirty:
            return False
        self.dirty = False
        start = self.call_at + len(CALL_OPEN)
        result = _CallReader(self.buf, self.final, self.tools).read(start)
        if result[0] == "more":
            return False
        if result[0] == "ok":
            _, end, name, args = result
            self.events.append(("call", self.n_calls, name, json.dumps(args, ensure_ascii=False)))
            self.n_calls += 1
            self._reset_call()
            self.pos, self.step = end, self._text
        elif self.final and _CallReader(self.buf, False, self.tools).read(start)[0] == "more":
            self._drop_at_end(result[2])  # more text could have completed it: cut off by the end
        else:
            self._surface(result[1], result[2])
        return True


class _More(Exception):
    """The call's text ends before it can be decided."""


class _Bad(Exception):
    """The call breaks the grammar at buffer offset ``at``."""

    def __init__(self, at: int, reason: str):
        super().__init__(reason)
        self.at, self.reason = at, reason


class _CallReader:
    """Recursive descent over one held call (from just after ``<start_function_call>``). ``read`` returns
    ``("ok", end, name, arguments)``, ``("more",)`` or ``("bad", at, reason)``; a fault is only declared on
    text that cannot change with more text, so the verdict is the same for every chunking."""

    def __init__(self, buf: str, final: bool, tools: list | None):
        self.buf, self.final, self.tools = buf, final, tools

    def read(self, i: int) -> tuple:
        try:
            return ("ok", *self._call(i))
        except _More:
            return ("more",)
        except _Bad as bad:
            return ("bad", bad.at, bad.reason)
        except RecursionError:
            return ("bad", len(self.buf), "nesting too deep")

    def _short(self, at: int, reason: str) -> NoReturn:
        """The text ran out at ``at``: more may come, or (at the end) it is a fault."""
        raise _Bad(at, reason) if self.final else _More()

    def _ws(self, i: int) -> int:
        i = skip(_WS, self.buf, i)
        if i == len(self.buf):
            self._short(i, "unterminated call")
        return i

    def _partial(self, i: int, *words: str) -> bool:
        """True when the text from ``i`` is a proper prefix of one of ``words`` and more may come."""
        rest = self.buf[i:]
        return not self.final and any(len(rest) < len(w) and w.startswith(rest) for w in words)

    def _call(self, i: int) -> tuple:
        buf = self.buf
        i = self._ws(i)
        if not buf.startswith(_HEAD, i):
            if self._partial(i, _HEAD):
                raise _More()
            raise _Bad(i, "expected 'call:'")
        i += len(_HEAD)
        j = buf.find("{", i)
        k = buf.find("<", i, j if j >= 0 else len(buf))
        if k >= 0:
            raise _Bad(k, "a marker in the tool name")
        if j < 0:
            self._short(len(buf), "unterminated call")
        name = buf[i:j].strip()
        if not name or any(c.isspace() or c in "}:," for c in name):
            raise _Bad(j, f"bad tool name {name[:30]!r}")
        schema = _parameters(self.tools, name)
        args, i = self._object(j + 1, schema)
        i = skip(_WS, buf, i)
        if buf.startswith(CALL_CLOSE, i):
            return i + len(CALL_CLOSE), name, args
        if buf.startswith(CALL_OPEN, i):  # drift: the closer is missing before the next call
            return i, name, args
        if i == len(buf):
            if self.final:  # drift: the closer is missing at the end of the text
                return i, name, args
            raise _More()
        if self._partial(i, CALL_CLOSE, CALL_OPEN):
            raise _More()
        raise _Bad(i, "expected <end_function_call>")

    def _object(self, i: int, schema) -> tuple[dict, int]:
        buf, out = self.buf, dict[str, object]()
        props = schema.get("properties") if isinstance(schema, dict) else None
        props = props if isinstance(props, dict) else {}
        i = self._ws(i)
        if buf[i] == "}":
            return out, i + 1
        while True:
            key, i = self._key(i, props)
            value, i = self._value(self._ws(i), props.get(key))
            out[key] = value
            i = self._ws(i)
            c = buf[i]
            if c == ",":
                i = self._ws(i + 1)
                if buf[i] == "}":  # drift: a trailing comma
                    return out, i + 1
                continue
            if c == "}":
                return out, i + 1
            raise _Bad(i, f"unexpected {c!r} after a value")

    def _key(self, i: int, props: dict) -> tuple[str, int]:
        buf = self.buf
        if buf.startswith(ESCAPE, i):  # drift: a quoted key
            j = buf.find(ESCAPE, i + len(ESCAPE))
            if j < 0:
                self._short(len(buf), "unterminated key")
            key, i = buf[i + len(ESCAPE) : j], self._ws(j + len(ESCAPE))
            if buf[i] != ":":
                raise _Bad(i, "expected ':' after a key")
            return key, i + 1
        scan = i
        while True:
            m = _KEY_END.search(buf, scan)
            if m is None:
                self._short(len(buf), "unterminated key")
            c = m.group()
            if c == ":":
                raw = buf[i : m.start()]
                key = raw if raw in props or raw.strip() == raw else raw.strip()
                return key, m.end()
            if c == "<":
                at = m.start()
                if any(buf.startswith(marker, at) for marker in _MARKERS):
                    raise _Bad(at, "a marker in a key")
                if self._partial(at, *_MARKERS):
                    raise _More()
                scan = at + 1
                continue
            raise _Bad(m.start(), f"unexpected {c!r} in a key")

    def _value(self, i: int, schema) -> tuple:
        buf = self.buf
        if buf.startswith(ESCAPE, i):
            j = buf.find(ESCAPE, i + len(ESCAPE))
            if j < 0:
                self._short(len(buf), "unterminated string")
            return buf[i + len(ESCAPE) : j], j + len(ESCAPE)
        c = buf[i]
        if c == "{":
            return self._object(i + 1, schema)
        if c == "[":
            return self._array(i + 1, schema)
        if c == "<" and self._partial(i, ESCAPE):
            raise _More()
        if c == '"':
            quoted = self._json_string(i)
            if quoted is not None:
                return quoted
        return self._bare(i, schema)

    def _json_string(self, i: int) -> tuple[str, int] | None:
        """Drift: the JSON string opening at ``i`` and the offset after it, when it closes before the call's
        ``<end_function_call>`` and ``,``, ``}`` or ``]`` follows it (whitespace between); ``None`` when it is no such
        string (then it is read as a bare value)."""
        buf, j = self.buf, i + 1
        end = buf.find(CALL_CLOSE, j)
        end = len(buf) if end < 0 else end
        while j < end and buf[j] != '"':
            j += 2 if buf[j] == "\\" else 1
        if j >= end:
            if end == len(buf) and not self.final:
                raise _More()
            return None
        try:
            value = json.loads(buf[i : j + 1], strict=False)
        except ValueError:
            return None
        k = self._ws(j + 1)
        return (value, j + 1) if buf[k] in ",}]" else None

    def _array(self, i: int, schema) -> tuple[list, int]:
        buf, out = self.buf, list[object]()
        items = schema.get("items") if isinstance(schema, dict) else None
        i = self._ws(i)
        if buf[i] == "]":
            return out, i + 1
        while True:
            value, i = self._value(i, items)
            out.append(value)
            i = self._ws(i)
            c = buf[i]
            if c == ",":
                i = self._ws(i + 1)
                if buf[i] == "]":  # drift: a trailing comma
                    return out, i + 1
                continue
            if c == "]":
                return out, i + 1
            raise _Bad(i, f"unexpected {c!r} in an array")

    def _bare(self, i: int, schema) -> tuple:
        """A bare scalar up to ``,``, ``}`` or ``]``, typed by the schema policy."""
        buf, scan = self.buf, i
        while True:
            m = _BARE_END.search(buf, scan)
            if m is None:
                self._short(len(buf), "unterminated value")
            if m.group() != "<":
                break
            at = m.start()
            if any(buf.startswith(marker, at) for marker in _MARKERS):
                raise _Bad(at, "a marker in a value")
            if self._partial(at, *_MARKERS):
                raise _More()
            scan = at + 1
        token = buf[i : m.start()].strip()
        if not token:
            raise _Bad(i, "empty value")
        if schema is None and token in _PYTHON_LITERALS:
            value = _PYTHON_LITERALS[token]
        else:
            value = typed_value(token, schema)
        if isinstance(value, float) and not math.isfinite(value):
            raise _Bad(i, f"number beyond the double range {token[:30]!r}")
        return value, m.start()


def _parameters(tools: list | None, name: str):
    """The declared parameters schema of tool ``name`` (None when the tool is not declared)."""
    for tool in tools or []:
        function = tool.get("function", tool) if isinstance(tool, dict) else {}
        if isinstance(function, dict) and function.get("name") == name:
            return function.get("parameters") or {}
    return None


PARSERS = [FunctionGemmaParser]  # registry entry (see harness/parse/registry.py)

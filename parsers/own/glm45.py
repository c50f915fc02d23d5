"""The project's own GLM tool-call parser: one incremental reader for one-shot and streaming use, for the formats
``glm45`` (:class:`Glm45Parser`, here) and ``glm47`` (:class:`parsers.own.glm47.Glm47Parser`, the same reader).

Format facts come from the real chat templates (llama-cpp-python 0.3.36 sdist, ``vendor/llama.cpp/models/
templates``; see :mod:`harness.formats.glm45` and :mod:`harness.formats.glm47`):

- ``GLM-4.6.jinja`` (glm45, GLM-4.5 and GLM-4.6) writes ``\\n<think>REASONING</think>`` (or ``\\n<think></think>``),
  ``\\n`` + the content, then per call ``\\n<tool_call>NAME`` + ``\\n<arg_key>K</arg_key>\\n<arg_value>V</arg_value>``
  per argument + ``\\n</tool_call>``;
- ``GLM-4.7-Flash.jinja`` (glm47) writes ``<think>REASONING</think>`` (or ``</think>``), the content, then
  ``<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>...</tool_call>`` with nothing in between; its
  generation prompt already ends with ``<think>`` (thinking on) or ``</think>`` (off).

Keys and string values are written raw (nothing escaped); other values with ``tojson``. Generation ends with
``<|user|>``, ``<|observation|>`` or ``<|endoftext|>``.

Reading rules:

- A call starts at ``<tool_call>``. The name runs from the first non-space character to the next whitespace,
  ``<`` or ``{``; an empty name or one holding quotes, brackets, ``>``, ``=`` or ``,`` is malformed. Between the
  parts of a call any whitespace (or none) is accepted in both formats, so the newline and the inline layouts
  both read, whichever format is named.
- Then zero or more ``<arg_key>KEY</arg_key>`` + ``<arg_value>VALUE</arg_value>`` pairs and ``</tool_call>``.
  A key runs to ``</arg_key>`` (a marker before it is malformed); it is kept raw, except that surrounding
  whitespace is dropped when ``tools`` declares the stripped key and not the raw one.
- A value ends at the first ``</arg_value>`` that is followed (after optional whitespace) by ``<arg_key>`` or
  ``</tool_call>`` -- or by the end of the text. Every other ``</arg_value>``, and any ``</tool_call>``,
  ``<tool_call>``, ``<arg_key>`` or ``<think>`` text inside a value, is data.
- Typing: the text carries no types, so each value is typed by its property's schema with the shared policy,
  :func:`parsers.own._schema_types.typed_value` (``property_schema(tools, name, key)``). One GLM fact is applied
  first (:func:`parsers.own._common.tojson_typed`): the template writes every non-string value with ``tojson``,
  never padded and never as ``None`` or ``True``, so when the schema allows ``string`` among other types, a
  text that is not exactly a JSON text (``None``, `` null``, ``001``) is the string itself. Undeclared tools
  and properties get the policy's schema-less reading (JSON objects, arrays, numbers, booleans and null
  decode; anything else is a string).
- Drift recovered:

  - a missing ``</tool_call>`` when only whitespace (or stop markers) follows a complete value up to the end
    (canitoolcall's ``glm47-truncated-before-close-call`` wants no call there: a policy difference, since
    more arguments could have followed), or the closer cut off by the end;
  - a missing ``</arg_value>`` before the value's first ``</tool_call>``, when only whitespace follows that up to
    the end and the value holds no ``</arg_value>``;
  - a JSON call instead of the name (``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, also
    ``"parameters"``, arguments as a JSON string, the OpenAI ``function`` envelope, an array of calls) and JSON
    arguments after the name (``<tool_call>NAME {"a": 1}</tool_call>``), both read to the first ``</tool_call>``
    before which the JSON decodes (values keep their JSON types; mlx-lm's ``glm47`` parser accepts the same);
  - a double-serialized call (SGLang PR #12456; observed case ``glm_literal_backslash_escapes_double_serialized_
    sglang``), recognised by the two-character escapes ``\\n``/``\\t``/``\\r`` where the layout puts whitespace
    (after the name, between parts): its keys and values are JSON-unescaped (``\\"`` -> ``"``) before typing when
    a value shows they were escaped (a container that decodes only unescaped), kept raw when a text shows they
    were not (it is no valid escaped string body, e.g. a raw ``"``) or when unescaping changes nothing; a call
    that shows neither and whose texts unescaping would change (``a\\\\``: escaped ``a\\`` or raw ``a\\\\``?) is
    *surfaced* (the drift slice's ``literal-backslash-escapes`` mutator escapes only the layout);
  - JSON double-encoded inside a value whose schema wants an object or array (``{\\"a\\": 1}``): decoded by the
    shared typing policy (:func:`parsers.own._schema_types.typed_value`, rule 4).
- A call cut off by the end of the text (inside its name, a key or a value, with no ``</tool_call>`` or later
  ``<tool_call>`` in it) is dropped with a diagnostic, its markup kept out of content (:mod:`parsers.own._base`).
- Everything else (a bad name, text between parts, a marker inside a key) is *surfaced*: the block's raw text,
  from ``<tool_call>`` up to the fault (or to a later ``<tool_call>`` when that comes first), becomes content,
  then content runs to the next ``</tool_call>`` (kept) or ``<tool_call>``; a diagnostic names the fault. Prose
  is never dropped.
- Reasoning: a ``<think>...</think>`` block at the start of the text (only whitespace before it) is reasoning; a
  prefix whose last think marker is an open ``<think>`` starts the text in reasoning. glm47 only: when the
  prefix holds no think marker (an engine or a harness that cuts the prompt's pre-filled ``<think>`` away), text
  before a ``</think>`` that comes before any ``<tool_call>`` is reasoning, as the GLM-4.7 template writes it
  (``REASONING</think>``). Inside reasoning only ``</think>`` ends it; an unclosed block is all reasoning.
- Content is the text outside calls and reasoning, concatenated and stripped of surrounding whitespace;
  reasoning likewise (``None`` when empty). Trailing stop markers are dropped; elsewhere they are text.

Streaming: content and reasoning are released as soon as they cannot be the start of a marker (a trailing
proper prefix of any ``<``-marker is held back). Each ``<tool_call>`` block is held until it is decided and then
emitted whole (name and arguments JSON), so streaming equals one-shot for any chunking, malformed input included.
glm47 with a prefix that does not say whether the text starts in reasoning holds the text back until a
``</think>``, a ``<tool_call>`` or the end decides it.
"""

from __future__ import annotations

import json
import re
from typing import Literal, overload

from harness.formats.glm45 import (
    CALL_CLOSE,
    CALL_OPEN,
    KEY_CLOSE,
    KEY_OPEN,
    MARKERS,
    STOP_MARKERS,
    THINK_CLOSE,
    THINK_OPEN,
    VALUE_CLOSE,
    VALUE_OPEN,
)
from parsers.own._base import OwnParser, ThinkBlockReader, proper_prefixes
from parsers.own._common import Malformed
from parsers.own._common import reject_constant as _reject_constant
from parsers.own._common import tojson_typed as _typed
from parsers.own._schema_types import property_schema

_STOPS = STOP_MARKERS
_SCAN_MARKERS = tuple(m for m in dict.fromkeys(MARKERS + _STOPS) if m.startswith("<"))
_PREFIXES, _MAXLEN = proper_prefixes(_SCAN_MARKERS), max(map(len, _SCAN_MARKERS))
_INNER = (VALUE_OPEN, VALUE_CLOSE, KEY_OPEN, CALL_CLOSE, CALL_OPEN)  # markers that may not occur inside a key

_NAME_END = re.compile(r"[\s<{]")
_BAD_NAME = re.compile(r"[\s\"'{}()\[\]<>=,]")
_ESCAPES = ("\\n", "\\t", "\\r")  # two-character escapes of a double-serialized call (drift)


class GlmParser(OwnParser):
    """Parser protocol implementation for GLM (see the module docstring for the rules)."""

    stops: tuple[str, ...] = _STOPS
    implicit_think = False

    def reader(self, tools: list | None, prefix: str, whole: bool) -> _Reader:
        return _Reader(tools, prefix, self.implicit_think)


class Glm45Parser(GlmParser):
    """GLM-4.5 / GLM-4.6 (newline layout; the completion writes its own ``<think>``)."""

    name = "toolcall-harness:glm45"
    formats = ("glm45",)
    limitations = (
        "A string value holding ``</arg_value>`` followed (after optional whitespace) by ``<arg_key>`` or "
        "``</tool_call>`` is cut there: the template writes it unescaped and the cut is the first reading "
        "that fits. A key holding ``</arg_key>`` or another marker cannot be read (the call is surfaced).",
        "A string value that is exactly a JSON text of another type its schema allows (``null`` under "
        "``anyOf [string, null]``, ``12`` under ``anyOf [integer, string]``) is read as that type; the "
        "template writes both alike. For undeclared properties any JSON-looking string (``1e5``, ``true``, "
        "``[1]``) is read as JSON.",
        "glm47 with no think marker in the prefix: a ``</think>`` in prose before the first call turns the "
        "prose before it into reasoning, and such content streams only once decided (see above).",
        "Other drift is surfaced, not recovered: ``key=value`` arguments (mlx-lm reads them), "
        "Python-literal arguments, JSON arguments after some ``<arg_key>`` pairs.",
        "A tool name holding whitespace, ``<``, quotes, brackets, braces or ``=`` cannot be read.",
    )


class _Reader(ThinkBlockReader):
    """Incremental reader of GLM completions. ``push(text)`` / ``finish()`` return events:
    ``("content"|"reasoning", text)`` and ``("call", index, name, arguments_json)``.

    ``step`` is the handler of the current state; it returns True when it made progress and False when it needs
    more text. Call-state handlers raise :class:`Malformed`, which surfaces the block as content. Inside a block
    the buffer keeps the block's raw text from ``<tool_call>`` (``call_at``) on. The text, ``<think>`` block,
    surfacing and resync are :class:`~parsers.own._base.ThinkBlockReader`'s.
    """

    prefixes, maxlen = _PREFIXES, _MAXLEN
    call_open, call_close = CALL_OPEN, CALL_CLOSE
    think_open, think_close = THINK_OPEN, THINK_CLOSE
    value_at: int  # buffer offset, set per block

    def __init__(self, tools: list | None, prefix: str, implicit_think: bool):
        self.tools = tools
        super().__init__()
        self.scan = 0
        self.step = self._text
        self.think_allowed = True  # a <think> block may still open the text
        self._reset_call()
        opened, closed = prefix.rfind(THINK_OPEN), prefix.rfind(THINK_CLOSE)
        if opened > closed:  # the prompt pre-filled an open <think>
            self.step, self.think_allowed = self._think, False
        elif implicit_think and opened < 0 and closed < 0:  # the prefix does not say: look for </think>
            self.step = self._undecided

    # ---- driving ------------------------------------------------------------------------------------------

    def _at_end(self) -> None:
        if self.step == self._sep and self.after_value and self.pos == len(self.buf):
            self._accept()  # drift: </tool_call> is missing at the end of the text
        elif self.step == self._json and self._json_accept(self.buf[self.value_at :]):
            self.pos = len(self.buf)  # drift: the same after a JSON body
        elif self.step == self._value and self._value_closed_by_call_close():
            self._accept()  # drift: </arg_value> is missing before the last </tool_call>
        else:
            self._drop_at_end("unterminated call")

    def _value_closed_by_call_close(self) -> bool:
        """At the end of the text inside a value: a first ``</tool_call>``, no ``</arg_value>`` before it and only
        whitespace after it, ends the value (its ``</arg_value>`` is missing; canitoolcall's
        ``glm47-missing-last-close-arg-value``)."""
        i = self.buf.find(CALL_CLOSE, self.value_at)
        if i < 0 or self.buf[i + len(CALL_CLOSE) :].strip() or VALUE_CLOSE in self.buf[self.value_at : i]:
            return False
        self.pairs.append((self.key, self.buf[self.value_at : i]))
        self.pos = len(self.buf)
        return True

    def _compact(self) -> None:
        """Drop consumed text (inside a block, only what precedes its ``<tool_call>``)."""
        cut = self.call_at if self.in_call else self.pos
        if cut:
            self.buf = self.buf[cut:]
            self.pos, self.scan, self.call_at = self.pos - cut, max(0, self.scan - cut), max(0, self.call_at - cut)
            self.value_at = max(0, self.value_at - cut)

    # ---- text outside calls ---------------------------------------------------------------------------------

    def _undecided(self) -> bool:
        """glm47 without a think marker in the prefix: is the text before the first ``</think>`` reasoning?
        Holds everything (``pos`` stays at its start) until ``</think>``, ``<tool_call>`` or the end decides."""
        buf = self.buf
        i = buf.find("<", max(self.scan, self.pos))
        while i != -1:
            if buf.startswith(THINK_CLOSE, i):
                self._emit_reasoning(buf[self.pos : i])
                self.pos, self.step, self.think_allowed = i + len(THINK_CLOSE), self._text, False
                return True
            if buf.startswith(CALL_OPEN, i):
                self.step, self.think_allowed = self._text, False
                return True
            if buf.startswith(THINK_OPEN, i) and not buf[self.pos : i].strip():  # an explicit block after all
                self.pos, self.step, self.think_allowed = i + len(THINK_OPEN), self._think, False
                return True
            if self._held_prefix(i):
                self.scan = i
                return False
            i = buf.find("<", i + 1)
        self.scan = len(buf)
        if self.final:  # no </think> and no call: all content
            self.step, self.think_allowed = self._text, False
            return True
        return False

    # ---- calls ----------------------------------------------------------------------------------------------

    def _reset_call(self) -> None:
        self.in_call = False
        self.call_at = 0  # buffer offset of the block's <tool_call>
        self.value_at = 0  # start of the value (or key) being read
        self.name = ""
        self.escaped = False  # a double-serialized call (literal \n between parts)
        self.after_value = False  # the last part read was a complete value
        self.json_kind = ""  # drift: "call" (JSON call body) or "args" (JSON after the name)
        self.key = ""
        self.pairs: list[tuple[str, str]] = []  # raw (key, value) texts, typed when the block is accepted

    def _accept(self) -> None:
        pairs = _unescaped_pairs(self.pairs) if self.escaped else self.pairs
        if pairs is None:
            self._surface(self.pos, "a double-serialized call whose values may or may not be escaped")
            return
        arguments = {}
        for key, value in pairs:
            key = self._declared_key(key)
            arguments[key] = _typed(value, property_schema(self.tools, self.name, key))
        self.events.append(("call", self.n_calls, self.name, json.dumps(arguments, ensure_ascii=False)))
        self.n_calls += 1
        self._reset_call()
        self.step = self._text

    def _declared_key(self, key: str) -> str:
        stripped = key.strip()
        if (
            stripped != key
            and property_schema(self.tools, self.name, key) is None
            and property_schema(self.tools, self.name, stripped) is not None
        ):
            return stripped
        return key

    @overload
    def _skip(self, pos: int, escapes: Literal[False]) -> int: ...
    @overload
    def _skip(self, pos: int, escapes: bool) -> int | None: ...
    def _skip(self, pos: int, escapes: bool) -> int | None:
        """The offset after whitespace (and, with ``escapes``, two-character ``\\n``-style escapes) from ``pos``;
        None when the buffer ends inside what may be an escape."""
        buf, n = self.buf, len(self.buf)
        while pos < n:
            if buf[pos].isspace():
                pos += 1
            elif escapes and buf[pos] == "\\":
                if pos + 1 == n:
                    return pos if self.final else None
                if buf[pos : pos + 2] not in _ESCAPES:
                    return pos
                pos += 2
            else:
                return pos
        return pos

    def _call_start(self) -> bool:
        """``<tool_call>NAME``: the name runs to the first whitespace, ``<`` or ``{``. Drift: a JSON call object
        (or array of them) instead of a name."""
        start = self._skip(self.pos, False)
        if start == len(self.buf):
            return False
        if self.buf[start] in "{[":
            self.pos = self.value_at = self.scan = start
            self.step, self.json_kind = self._json, "call"
            return True
        m = _NAME_END.search(self.buf, start)
        if m is None:
            return False
        name = self.buf[start : m.start()]
        while name.endswith(_ESCAPES):  # drift: a double-serialized call writes the layout's "\n" as two characters
            name, self.escaped = name[:-2], True
        if not name or _BAD_NAME.search(name):
            raise Malformed(m.start(), "bad tool name")
        self.name, self.pos, self.step = name, m.start(), self._sep
        return True

    def _json(self) -> bool:
        """Drift: a JSON call object (``json_kind == "call"``) or a JSON arguments object after the name
        (``"args"``) up to the first ``</tool_call>`` before which it decodes."""
        buf = self.buf
        while True:
            i = buf.find(CALL_CLOSE, self.scan)
            if i == -1:
                self.scan = max(self.value_at, len(buf) - len(CALL_CLOSE) + 1)
                return False
            if self._json_accept(buf[self.value_at : i]):
                self.pos = i + len(CALL_CLOSE)
                return True
            self.scan = i + 1

    def _json_accept(self, body: str) -> bool:
        """Emit the calls ``body`` holds and return True; False when it holds none."""
        if self.json_kind == "args":
            arguments = _json_object(body)
            calls = None if arguments is None else [(self.name, arguments)]
        else:
            calls = _json_calls(body)
        if not calls:
            return False
        for name, arguments in calls:
            self.events.append(("call", self.n_calls, name, json.dumps(arguments, ensure_ascii=False)))
            self.n_calls += 1
        self._reset_call()
        self.step = self._text
        return True

    def _sep(self) -> bool:
        """Between parts: whitespace, then ``<arg_key>`` or ``</tool_call>``."""
        pos = self._skip(self.pos, True)
        if pos is None:
            return False
        if self.buf.find("\\", self.pos, pos) >= 0:
            self.escaped = True
        self.pos = pos
        if pos == len(self.buf):
            return False
        if self.buf.startswith(KEY_OPEN, pos):
            self.pos, self.step, self.after_value = pos + len(KEY_OPEN), self._key, False
            self.value_at = self.scan = self.pos
            return True
        if self.buf.startswith(CALL_CLOSE, pos):
            self.pos = pos + len(CALL_CLOSE)
            self._accept()
            return True
        if self.buf[pos] == "{" and not self.pairs:  # drift: JSON arguments after the name
            self.pos = self.value_at = self.scan = pos
            self.step, self.json_kind = self._json, "args"
            return True
        rest = self.buf[pos:]
        if self._held_prefix(pos) and (KEY_OPEN.startswith(rest) or CALL_CLOSE.startswith(rest)):
            return False
        if self.final and KEY_OPEN.startswith(rest):
            return False  # maybe an argument, cut off by the end of the text: the call is (_at_end)
        if self.final and CALL_CLOSE.startswith(rest):
            self.pos = len(self.buf)  # drift: the closer cut off by the end of the text
            self._accept()
            return True
        raise Malformed(pos, "expected <arg_key> or </tool_call>")

    def _key(self) -> bool:
        """``KEY</arg_key>``: a marker before ``</arg_key>`` is malformed."""
        buf = self.buf
        i = buf.find("<", self.scan)
        while i != -1:
            if buf.startswith(KEY_CLOSE, i):
                self.key = buf[self.value_at : i]
                self.pos, self.step = i + len(KEY_CLOSE), self._before_value
                return True
            if any(buf.startswith(m, i) for m in _INNER):
                raise Malformed(i, "unterminated <arg_key>")
            if self._held_prefix(i):
                self.scan = i
                return False
            i = buf.find("<", i + 1)
        self.scan = len(buf)
        return False

    def _before_value(self) -> bool:
        """Between ``</arg_key>`` and ``<arg_value>``: whitespace only."""
        pos = self._skip(self.pos, self.escaped)
        if pos is None:
            return False
        self.pos = pos
        if pos == len(self.buf):
            return False
        if self.buf.startswith(VALUE_OPEN, pos):
            self.pos, self.step = pos + len(VALUE_OPEN), self._value
            self.value_at = self.scan = self.pos
            return True
        if self._held_prefix(pos) and VALUE_OPEN.startswith(self.buf[pos:]):
            return False
        raise Malformed(pos, "expected <arg_value> after </arg_key>")

    def _value(self) -> bool:
        """``VALUE</arg_value>``: the first closer followed by ``<arg_key>``, ``</tool_call>`` or the end (or a part
        of either cut off by it)."""
        buf = self.buf
        while True:
            i = buf.find(VALUE_CLOSE, self.scan)
            if i == -1:
                self.scan = max(self.value_at, len(buf) - len(VALUE_CLOSE) + 1)
                return False
            j = self._skip(i + len(VALUE_CLOSE), self.escaped)
            if j is None:
                self.scan = i
                return False
            rest = buf[j : j + _MAXLEN]
            cut = self.final and (KEY_OPEN.startswith(buf[j:]) or CALL_CLOSE.startswith(buf[j:]))  # by the end
            if buf.startswith(KEY_OPEN, j) or buf.startswith(CALL_CLOSE, j) or cut:
                self.pairs.append((self.key, buf[self.value_at : i]))
                self.pos, self.step, self.after_value = i + len(VALUE_CLOSE), self._sep, True
                return True
            if j == len(buf) or (self._held_prefix(j) and (KEY_OPEN.startswith(rest) or CALL_CLOSE.startswith(rest))):
                self.scan = i
                return False
            self.scan = i + 1  # data: not followed by the next part


def _decode(text: str):
    """Strict JSON (no NaN/Infinity); None when ``text`` is not JSON."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return None


def _json_object(text: str) -> dict | None:
    value = _decode(text)
    return value if isinstance(value, dict) else None


def _json_calls(text: str) -> list[tuple[str, dict]] | None:
    """The calls a JSON call body holds: ``{"name", "arguments"|"parameters"}`` (arguments an object, a JSON string
    holding one, or missing/null), the OpenAI envelope ``{"type": "function", "function": {...}}``, or a non-empty
    array of them; None otherwise."""
    value = _decode(text)
    items = value if isinstance(value, list) else [value]
    calls = []
    for obj in items:
        if isinstance(obj, dict) and "name" not in obj and isinstance(obj.get("function"), dict):
            obj = obj["function"]
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or not obj["name"].strip():
            return None
        args = obj["arguments"] if "arguments" in obj else obj.get("parameters")
        if isinstance(args, str):
            args = _decode(args)
        args = {} if args is None else args
        if not isinstance(args, dict):
            return None
        calls.append((obj["name"].strip(), args))
    return calls or None


def _unescape(text: str) -> str | None:
    """JSON-unescape the text of a double-serialized call (``\\"`` -> ``"``, ``\\n`` -> newline); None when it is
    not a valid JSON string body (a raw ``"``, a lone backslash: text that was not escaped)."""
    try:
        return json.loads(f'"{text}"')
    except ValueError:
        return None


def _unescaped_pairs(pairs: list[tuple[str, str]]) -> list[tuple[str, str]] | None:
    """The ``(key, value)`` texts of a call whose layout is double-serialized (literal ``\\n`` between parts): JSON-
    unescaped when a value shows its values were escaped too (a container that decodes only unescaped, as in the
    observed case), kept raw when one shows they were not (text that is no escaped string body) or when unescaping
    changes nothing; None (ambiguous: surface) when the texts show neither and unescaping would change them."""
    texts = [text for pair in pairs for text in pair]
    unescaped = [_unescape(text) for text in texts]
    escaped = any(
        _decode(text) is None and isinstance(_decode(u), (dict, list))
        for text, u in zip(texts, unescaped, strict=False)
        if u is not None
    )
    raw = any(u is None for u in unescaped)
    if escaped and not raw:
        done = [u for u in unescaped if u is not None]  # all of them: none is raw
        return list(zip(done[::2], done[1::2], strict=False))
    if (raw and not escaped) or unescaped == texts:
        return pairs
    return None


PARSERS = [Glm45Parser]  # registry entry (see harness/parse/registry.py); glm47: parsers/own/glm47.py

"""The project's own Gemma 4 tool-call parser: one incremental reader for one-shot and streaming use.

Format facts come from the real chat template, ``google-gemma-4-31B-it.jinja`` (llama-cpp-python 0.3.36
sdist; see :mod:`harness.formats.gemma4`). Its tool-call loop writes

    <|tool_call>call:NAME{key:value,...}<tool_call|>

with top-level keys raw and sorted, and its ``format_argument`` macro (``escape_keys=False``) writes values:
strings raw between ``<|"|>`` markers (nothing escaped), objects ``{key:value,...}`` with bare keys at every
depth, arrays ``[v,...]``, booleans ``true``/``false``, null as ``None`` and numbers via Python ``str()``.
A thought channel is ``<|channel>thought\\n...<channel|>``; ``<|tool_response>``, ``<turn|>`` and ``<eos>``
end generation.

Reading rules (strict text first; drift is tolerated where the strict reading fails, plus one case where
the strict reading would give an implausible key):

- A string ends only at the next ``<|"|>``; everything before it (quotes, backslashes, braces, newlines,
  even ``<tool_call|>``) is data. A key is everything up to the next ``:``.
- Scalars: ``None``/``null`` -> null, ``true``/``false`` (also ``True``/``False``), integers of any size,
  floats in ``str()``/JSON form (``1.5``, ``1e+100``, ``-0.0``). ``inf``/``nan`` (what ``str()`` writes for
  non-finite floats) are not JSON, so a call holding one is malformed and surfaced.
- Drift recovered: whitespace around values, commas and brackets; whitespace (space, tab, CR, LF) around a key
  at any depth (``, key:``
  written JSON-style, arguments on new lines: seed 000 saw gemma-4-e2b write ``, key:`` nested; transformers and
  mlx-lm trim keys too), so a key's own surrounding whitespace cannot be read back; keys written
  ``<|"|>key<|"|>`` (the template's ``escape_keys=True`` form); a trailing comma; the paren form
  ``call:NAME(key:value)``; a missing ``<tool_call|>`` (or one cut off by the end of the text) when the arguments
  are followed only by whitespace up to the end of the text or the next ``<|tool_call>``; ``<|tool_call>`` or
  ``<|channel>`` written twice; a ``<channel|>`` with no open channel (dropped: it carries nothing); a stray
  ``<tool_call|>`` right before a ``<|tool_call>`` (whitespace between), read as part of that call's opener
  (so it goes with the call: dropped when the call is read, surfaced with it when not; a ``<tool_call|>``
  anywhere else outside a call is content).
- Drift recovered, ``key='value'`` (observed ``gemma4_key_equals_value_ollama``; also ``key="value"``): a bare
  key (no space, comma, bracket, quote, ``=``, ``:`` or ``<`` in it) followed by ``=``, optional whitespace
  and a quote is a string argument; the string runs to the first matching quote that is followed (after
  optional whitespace) by ``,`` or the container's close, and is taken as written. A ``=`` not followed by a
  quote, or followed by a quote that no such closing quote matches before the call's ``<tool_call|>``, is part
  of the key (the strict reading: ``{a=b:1}`` has the key ``a=b``, ``{0=':None}`` the key ``0='``).
- Drift recovered, the generic envelope ``call:tool_call{args:{...},id:<|"|>NAME<|"|>}`` (observed
  ``gemma4_wrapper_call_with_id_field_fastflowlm``'s shape): a call named ``tool_call`` whose arguments are
  exactly an ``args`` object and an ``id`` string that is a valid name is the call ``NAME(args)`` -- unless
  ``tools`` declares a tool named ``tool_call``.
- A call cut off by the end of the text (an unterminated string, key or container, no ``<tool_call|>`` or later
  ``<|tool_call>`` in it) is dropped with a diagnostic, its markup kept out of content (:mod:`parsers.own._base`).
- Everything else that breaks the grammar (unquoted ``key=value``, JSON-quoted strings) is *surfaced*: the
  call's raw text, from ``<|tool_call>`` to the next ``<tool_call|>`` (inclusive) or ``<|tool_call>``
  (exclusive) after the fault, becomes content and a diagnostic names the fault.
- Content is the text outside calls (prose before, between and after them, concatenated) and reasoning the
  thought channels' text (label dropped); both are stripped of surrounding whitespace (``None`` when empty).
  A prefix that leaves a thought channel open starts the text in reasoning; a ``<|tool_call>`` inside an
  unclosed channel ends it. Trailing stop markers are dropped; elsewhere stop markers are plain text.
- Limits of the strict reading (the template cannot write these unambiguously): a key holding ``:`` or a
  marker, or whose first non-space character is ``}``, or with whitespace around it; a name holding ``{``,
  ``(`` or ``<``; a string holding ``<|"|>``.

Streaming: content and reasoning are released as soon as they cannot be the start of a marker. By default
each call is held until its close and then emitted whole (name and arguments JSON), so streaming matches
one-shot on every input, malformed ones included: nothing emitted ever needs retracting.
``Gemma4Parser(eager=True)`` instead emits a call's name when complete and its arguments as JSON fragments
as they are read; on well-formed text that equals one-shot for any chunking, but a call found malformed
after its name was streamed cannot be retracted (its raw text goes to content and the partial call stays; a
call cut off by the end of the text keeps its partial call too, with no markup in content).
A call named ``tool_call`` (a possible envelope) is held to its close in eager mode too.
"""

from __future__ import annotations

import json
import math
import re

from harness.formats.gemma4 import CALL_CLOSE, CALL_OPEN, CHANNEL_CLOSE, CHANNEL_OPEN, SPEC, STRING_DELIM
from parsers.own._base import BlockReader, OwnParser, proper_prefixes
from parsers.own._base import TextField as _Field
from parsers.own._common import Malformed, skip
from parsers.own._common import suffix_in as _suffix_in

_STOPS = SPEC.stop_markers
_MARKERS = tuple(dict.fromkeys(SPEC.markers + _STOPS))
_PREFIXES, _MAXLEN = proper_prefixes(_MARKERS), max(map(len, _MARKERS))
_LABEL = "thought"  # channel name the template writes after <|channel>
_ENVELOPE = "tool_call"  # the generic envelope's name (drift)

_WS = re.compile(r"\s*")
_NAME_END = re.compile(r"[{(<]")
_KEY_END = re.compile(r"[:<=]")
_BARE_KEY = re.compile(r"[^\s,{}()\[\]'\"=:<]+")  # a key before ``='`` (drift: key='value')
_BARE_END = re.compile(r"[\s,}\])<]")
_INT = re.compile(r"-?\d+")
_FLOAT = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_LITERALS = {"None": None, "null": None, "true": True, "false": False, "True": True, "False": False}


class Gemma4Parser(OwnParser):
    """Parser protocol implementation for Gemma 4 (see the module docstring for the reading rules); ``eager``
    streams call names and argument fragments as they are read (one-shot parsing always holds calls)."""

    name = "toolcall-harness:gemma4"
    formats = ("gemma4",)
    limitations = (
        "A key holding ``:`` or a marker, or starting with ``}``; a tool name holding ``{``, ``(`` or "
        '``<``; a string holding ``<|"|>``: the template writes them unescaped, so they cannot be read '
        "back unambiguously (the call is surfaced as content). A key with whitespace around it reads back "
        "trimmed (models write ``, key:``).",
        "Drift that is surfaced, not recovered: unquoted ``key=value`` arguments; strings in JSON quotes "
        "(so the observed envelope ``gemma4_wrapper_call_with_id_field_fastflowlm``, whose inner string is "
        '``"..."``, is surfaced); an envelope of another shape (``name`` instead of ``id``, extra members).',
        "A bare key followed by ``=`` and a quote is read as the ``key='value'`` drift, so a strict key of "
        "that shape (``a='b``) cannot be read back (the generated keys never hold ``=``).",
    )
    stops = _STOPS

    def __init__(self, eager: bool = False):
        self.eager = eager

    def reader(self, tools: list | None, prefix: str, whole: bool) -> _Reader:
        return _Reader(tools, prefix, self.eager and not whole)


class _Frame:
    """An open object or array inside a call: its closing char and members read so far."""

    __slots__ = ("closer", "count")

    def __init__(self, closer: str):
        self.closer, self.count = closer, 0


class _Reader(BlockReader):
    """Pushdown reader of Gemma 4 completions (recursive descent with an explicit stack, so it can stop
    at any chunk boundary and resume). ``push(text)`` / ``finish()`` return events:
    ``("content"|"reasoning", text)``, ``("name", index, name)``, ``("args", index, json_fragment)`` (eager)
    or ``("call", index, name, json_text)`` (held calls, emitted at the close).

    ``step`` is the handler of the current state; it returns True when it made progress and False when it
    needs more text. Handlers raise :class:`Malformed`, which surfaces the current call as content (its raw
    text is kept in ``raw``, the buffer cut at the call); :class:`~parsers.own._base.BlockReader` resyncs after it.
    """

    prefixes, maxlen = _PREFIXES, _MAXLEN
    call_open, call_close = CALL_OPEN, CALL_CLOSE
    raw: list[str]  # consumed text of the current call (set by _reset_call)
    base: int  # where in the buffer the rest of its raw text starts

    def __init__(self, tools: list | None, prefix: str, eager: bool):
        self.eager = eager
        self.declared = _declared_names(tools)
        super().__init__()
        self.mark: int | None = None  # start of the token being read (name, key, scalar)
        self.scan = 0  # where the token scan resumes
        self.step = self._text
        self._reset_call()
        self._enter_prefix(prefix)

    # ---- driving -----------------------------------------------------------------------------------

    def _at_end(self) -> None:
        rest = self.buf[skip(_WS, self.buf, self.pos) :]
        if self.step == self._after_args and (not rest or CALL_CLOSE.startswith(rest) or CALL_OPEN.startswith(rest)):
            self.pos = len(self.buf)  # drift: the close marker is missing (or cut off) at the end of the text
            self._accept()
        else:
            self._drop_at_end("unterminated call")

    def _block_text(self) -> str:
        return "".join(self.raw) + self.buf[self.base :]

    def _compact(self) -> None:
        """Drop consumed text (kept as raw call text while inside a call) so the buffer stays small."""
        cut = self.pos if self.mark is None else min(self.mark, self.pos)
        if not cut:
            return
        if self.in_call:
            self.raw.append(self.buf[self.base : cut])
        self.buf, self.pos, self.scan = self.buf[cut:], self.pos - cut, max(self.scan - cut, 0)
        self.base = 0
        if self.mark is not None:
            self.mark -= cut

    def _enter_prefix(self, prefix: str) -> None:
        """Start in reasoning when the pre-filled prefix leaves a thought channel open."""
        i = prefix.rfind(CHANNEL_OPEN)
        if i < 0 or CHANNEL_CLOSE in prefix[i:]:
            return
        self.buf, self.step = prefix[i + len(CHANNEL_OPEN) :], self._label
        self._advance()
        self.events.clear()
        self.reasoning = _Field()

    # ---- text outside calls ----------------------------------------------------------------------

    def _text(self) -> bool:
        marker = self._scan(self._emit_content, (CALL_OPEN, CHANNEL_OPEN, CALL_CLOSE, CHANNEL_CLOSE))
        if marker == CALL_OPEN:
            self._begin_call()
        elif marker == CHANNEL_OPEN:
            self.step = self._label
        elif marker == CALL_CLOSE:
            return self._stray_close()
        elif marker == CHANNEL_CLOSE:  # drift: a channel closer with no open channel carries nothing
            self.diagnostics.append("a stray <channel|> outside a thought channel dropped")
        return marker is not None

    def _stray_close(self) -> bool:
        """After a ``<tool_call|>`` met in text: followed (whitespace between) by ``<|tool_call>`` it is read as
        part of that call's opener (drift: dropped if the call is read, surfaced with it if not); else content."""
        at = self.pos - len(CALL_CLOSE)
        j = skip(_WS, self.buf, self.pos)
        rest = self.buf[j : j + len(CALL_OPEN)]
        if self.buf.startswith(CALL_OPEN, j):
            opener, self.pos = self.buf[at : j + len(CALL_OPEN)], j + len(CALL_OPEN)
            self.diagnostics.append("a stray <tool_call|> before <|tool_call> read as part of the call opener")
            self._begin_call()
            self.raw = [opener]
            return True
        if not self.final and len(rest) < len(CALL_OPEN) and CALL_OPEN.startswith(rest):
            self.pos = at  # wait: the next call opener may follow
            return False
        self._emit_content(CALL_CLOSE)
        return True

    def _label(self) -> bool:
        """Skip the channel name ``thought`` the template writes after ``<|channel>`` (drift: a second
        ``<|channel>`` right after the first is read as one)."""
        j = skip(_WS, self.buf, self.pos)
        if self.buf.startswith(CHANNEL_OPEN, j):
            self.pos = j + len(CHANNEL_OPEN)
            self.diagnostics.append("a doubled <|channel> read as one")
            return True
        head = self.buf[j : j + len(CHANNEL_OPEN)]
        if not self.final and len(head) < len(CHANNEL_OPEN) and CHANNEL_OPEN.startswith(head):
            return False  # whitespace, or the start of a second <|channel>, so far
        rest = self.buf[self.pos : self.pos + len(_LABEL) + 1]
        if not self.final and len(rest) <= len(_LABEL) and _LABEL.startswith(rest):
            return False
        if rest.startswith(_LABEL) and (len(rest) == len(_LABEL) or rest[-1].isspace() or rest[-1] == "<"):
            self.pos += len(_LABEL)
        self.step = self._reasoning
        return True

    def _reasoning(self) -> bool:
        # A call inside an unclosed thought channel ends the channel (drift).
        marker = self._scan(self._emit_reasoning, (CHANNEL_CLOSE, CALL_OPEN))
        if marker == CHANNEL_CLOSE:
            self.step = self._text
        elif marker == CALL_OPEN:
            self._begin_call()
        return marker is not None

    # ---- calls ---------------------------------------------------------------------------------

    def _reset_call(self) -> None:
        self.in_call = False
        self.raw = []  # consumed text of the current call (before ``base`` in the buffer)
        self.base = 0
        self.frags: list[str] = []  # its arguments as JSON fragments (held mode)
        self.stack: list[_Frame] = []
        self.name, self.key, self.index, self.quote = "", "", -1, ""
        self.streaming = False  # eager and this call's name sent: arguments stream as read
        self.mark = None

    def _begin_call(self) -> None:
        self._reset_call()
        self.in_call, self.raw = True, [CALL_OPEN]
        self.base = self.pos  # the call's raw text goes on from here (the rest of the buffer is not copied)
        self.step = self._call_start

    def _accept(self) -> None:
        if not self.streaming:
            name, arguments = self._unwrapped(self.name, "".join(self.frags))
            self.events.append(("call", self.n_calls, name, arguments))
            self.n_calls += 1
        self._reset_call()
        self.step = self._text

    def _unwrapped(self, name: str, arguments: str) -> tuple[str, str]:
        """Drift: ``call:tool_call{args:{...},id:NAME}`` (a generic envelope, observed case
        ``gemma4_wrapper_call_with_id_field_fastflowlm``) is the call ``NAME(args)`` unless ``tool_call`` is a
        declared tool; any other call is returned as it is."""
        if not self._maybe_envelope(name):
            return name, arguments
        value = json.loads(arguments)
        inner, real = value.get("args"), value.get("id")
        if (
            set(value) != {"args", "id"}
            or not isinstance(inner, dict)
            or not isinstance(real, str)
            or not real.strip()
            or _NAME_END.search(real)
        ):
            return name, arguments
        self.diagnostics.append(f"call unwrapped from a {_ENVELOPE}{{args,id}} envelope")
        return real.strip(), json.dumps(inner, ensure_ascii=False)

    def _maybe_envelope(self, name: str) -> bool:
        return name == _ENVELOPE and _ENVELOPE not in self.declared

    def _surface(self, at: int, reason: str) -> None:
        """Give the current call's raw text up to ``at`` to content; the rest is read by ``_resync``."""
        raw = "".join(self.raw) + self.buf[self.base : at]
        self.diagnostics.append(f"malformed call surfaced as content ({reason}): {raw[:80]!r}")
        self.pos = at
        self._reset_call()
        self._emit_content(raw)
        self.step = self._resync

    def _arg(self, fragment: str) -> None:
        if not fragment:
            return
        if self.streaming:
            self.events.append(("args", self.index, fragment))
        else:
            self.frags.append(fragment)

    def _skip_ws(self) -> int:
        self.pos = skip(_WS, self.buf, self.pos)
        return self.pos

    def _call_start(self) -> bool:
        """``call:`` after ``<|tool_call>``."""
        pos = self._skip_ws()
        if self.buf.startswith(CALL_OPEN, pos):  # drift: the opener written twice
            self.pos = pos + len(CALL_OPEN)
            self.diagnostics.append("a doubled <|tool_call> read as one")
            return True
        if len(self.buf) - pos < len(CALL_OPEN) and CALL_OPEN.startswith(self.buf[pos:]) and not self.final:
            return False
        rest = self.buf[pos : pos + 5]
        if rest == "call:":
            self.pos = self.mark = self.scan = pos + 5
            self.step = self._name
            return True
        if "call:".startswith(rest):
            return False
        raise Malformed(pos, "expected 'call:'")

    def _name(self) -> bool:
        """The tool name runs to ``{`` (or ``(``, the paren drift)."""
        m = _NAME_END.search(self.buf, self.scan)
        if m is None:
            self.scan = len(self.buf)
            return False
        name = self.buf[self.mark : m.start()].strip()
        if m.group() == "<" or not name:
            raise Malformed(m.start(), "bad tool name")
        self.name, self.mark, self.pos = name, None, m.end()
        if self.eager and not self._maybe_envelope(name):  # a possible envelope is held to the close
            self.streaming, self.index, self.n_calls = True, self.n_calls, self.n_calls + 1
            self.events.append(("name", self.index, name))
        self._open("}" if m.group() == "{" else ")")
        return True

    def _open(self, closer: str) -> None:
        self.stack.append(_Frame(closer))
        self._arg("[" if closer == "]" else "{")
        self.step = self._value if closer == "]" else self._member

    def _close(self) -> bool:
        """Close the innermost container; ``pos`` is at its closing char."""
        frame = self.stack.pop()
        self.pos += 1
        self._arg("]" if frame.closer == "]" else "}")
        self.step = self._after if self.stack else self._after_args
        return True

    def _member(self) -> bool:
        """After ``{`` or ``,`` in an object: a key, or the close."""
        j = skip(_WS, self.buf, self.pos)
        if j == len(self.buf):
            return False
        if self.buf[j] == self.stack[-1].closer:
            self.pos = j
            return self._close()
        self.mark = self.scan = self.pos  # the key keeps its whitespace (strict reading)
        self.step = self._key
        return True

    def _key(self) -> bool:
        """A bare key runs to ``:``; a marker inside it is a fault, ``<|"|>`` first makes it quoted; a bare key
        followed by ``=`` and a quote is the ``key='value'`` drift."""
        buf = self.buf
        m = _KEY_END.search(buf, self.scan)
        while m is not None and m.group() in "<=":
            i = m.start()
            if m.group() == "=":
                j = skip(_WS, buf, i + 1)
                if j == len(buf) and not self.final:
                    self.scan = i
                    return False
                key = buf[self.mark : i].strip()
                if j < len(buf) and buf[j] in "'\"" and _BARE_KEY.fullmatch(key):
                    end = self._equals_end(j)
                    if end is None:  # the closing quote may still arrive
                        self.scan = i
                        return False
                    if end < 0:  # no closing quote in the call: the strict reading (the key holds ``='``)
                        m = _KEY_END.search(buf, i + 1)
                        continue
                    self._key_done(key)
                    self.quote, self.mark, self.pos = buf[j], j + 1, j + 1
                    self.scan, self.step = j + 1, self._equals_string
                    return True
                m = _KEY_END.search(buf, i + 1)
                continue
            if buf.startswith(STRING_DELIM, i) and not buf[self.mark : i].strip():
                self.mark = self.scan = i + len(STRING_DELIM)
                self.step = self._quoted_key
                return True
            if any(buf.startswith(marker, i) for marker in _MARKERS):
                raise Malformed(i, "key without ':' before a marker")
            if len(buf) - i < _MAXLEN and buf[i:] in _PREFIXES:
                self.scan = i
                return False
            m = _KEY_END.search(buf, i + 1)
        if m is None:
            self.scan = len(buf)
            return False
        key = self._clean_key(buf[self.mark : m.start()])
        self.mark, self.pos = None, m.end()
        self._key_done(key)
        return True

    def _equals_end(self, at: int) -> int | None:
        """Where the ``key='value'`` string opened by the quote at ``at`` ends: the first matching quote followed
        (after optional whitespace) by ``,`` or the container's close, before the call's ``<tool_call|>``; -1 when
        there is none (the text is the strict reading); None while more text may bring one."""
        buf, quote, closer = self.buf, self.buf[at], self.stack[-1].closer
        limit = buf.find(CALL_CLOSE, at + 1)
        k = buf.find(quote, at + 1, limit if limit != -1 else len(buf))
        while k != -1:
            j = skip(_WS, buf, k + 1)
            if j == len(buf):
                return k if self.final else None
            if buf[j] in (",", closer):
                return k
            k = buf.find(quote, k + 1, limit if limit != -1 else len(buf))
        return None if limit == -1 and not self.final else -1

    def _equals_string(self) -> bool:
        """Drift ``key='value'`` (or ``key="value"``): the value runs to the first matching quote followed by
        ``,`` or the container's close (whitespace between); it is a string, taken as written."""
        buf, closer = self.buf, self.stack[-1].closer
        k = buf.find(self.quote, self.scan)
        while k != -1:
            j = skip(_WS, buf, k + 1)
            if j == len(buf) and not self.final:
                self.scan = k
                return False
            if j < len(buf) and buf[j] in (",", closer):
                self._arg(json.dumps(buf[self.mark : k], ensure_ascii=False))
                self.mark, self.pos, self.step = None, k + 1, self._after
                return True
            k = buf.find(self.quote, k + 1)
        self.scan = len(buf)
        return False

    def _quoted_key(self) -> bool:
        i = self.buf.find(STRING_DELIM, self.scan)
        if i == -1:
            assert self.mark is not None  # set with this step
            self.scan = max(self.mark, len(self.buf) - len(STRING_DELIM) + 1)
            return False
        self.key, self.mark, self.pos = self.buf[self.mark : i], None, i + len(STRING_DELIM)
        self.step = self._colon
        return True

    def _colon(self) -> bool:
        pos = self._skip_ws()
        if pos == len(self.buf):
            return False
        if self.buf[pos] != ":":
            raise Malformed(pos, "expected ':' after a key")
        self.pos += 1
        self._key_done(self.key)
        return True

    @staticmethod
    def _clean_key(raw: str) -> str:
        """Whitespace around a bare key is layout (``, key:`` written JSON-style), not part of the key."""
        return raw.strip(" \t\r\n")

    def _key_done(self, key: str) -> None:
        frame = self.stack[-1]
        self._arg(("," if frame.count else "") + json.dumps(key, ensure_ascii=False) + ":")
        frame.count += 1
        self.step = self._value

    def _value(self) -> bool:
        """A value after ``key:`` or in an array (where ``]`` may close it)."""
        pos, buf = self._skip_ws(), self.buf
        if pos == len(buf):
            return False
        c, frame = buf[pos], self.stack[-1]
        if c == "]" and frame.closer == "]":
            return self._close()
        if c == "<" and not buf.startswith(STRING_DELIM, pos):
            if len(buf) - pos < len(STRING_DELIM) and STRING_DELIM.startswith(buf[pos:]):
                return False
            raise Malformed(pos, "unexpected marker")
        if frame.closer == "]":
            self._arg("," if frame.count else "")
            frame.count += 1
        if c == "<":
            self.pos += len(STRING_DELIM)
            self._arg('"')
            self.step = self._string
        elif c in "{[":
            self.pos += 1
            self._open("}" if c == "{" else "]")
        else:
            self.mark = self.scan = pos
            self.step = self._scalar
        return True

    def _string(self) -> bool:
        """String content runs to the next ``<|"|>``; a trailing partial delimiter is held."""
        buf = self.buf
        i = buf.find(STRING_DELIM, self.pos)
        if i == -1:
            end = len(buf) - _suffix_in(buf, _DELIM_PREFIXES, len(STRING_DELIM))
            self._arg(_escape(buf[self.pos : end]))
            self.pos = end
            return False
        self._arg(_escape(buf[self.pos : i]) + '"')
        self.pos = i + len(STRING_DELIM)
        self.step = self._after
        return True

    def _scalar(self) -> bool:
        m = _BARE_END.search(self.buf, self.scan)
        if m is None:
            self.scan = len(self.buf)
            return False
        token = self.buf[self.mark : m.start()]
        try:
            value = _scalar_value(token)
        except ValueError:
            assert self.mark is not None  # set with this step
            raise Malformed(self.mark, f"bad value {token[:30]!r}") from None
        self._arg(json.dumps(value))
        self.mark, self.pos = None, m.start()
        self.step = self._after
        return True

    def _after(self) -> bool:
        """After a value: ``,`` or the container's close."""
        pos = self._skip_ws()
        if pos == len(self.buf):
            return False
        c, frame = self.buf[pos], self.stack[-1]
        if c == ",":
            self.pos += 1
            self.step = self._value if frame.closer == "]" else self._member
            return True
        if c == frame.closer:
            return self._close()
        raise Malformed(pos, f"unexpected {c!r} after a value")

    def _after_args(self) -> bool:
        """After the arguments: ``<tool_call|>`` (or, drift, the next call's ``<|tool_call>``)."""
        buf, pos = self.buf, self._skip_ws()
        if buf.startswith(CALL_CLOSE, pos) or buf.startswith(CALL_OPEN, pos):
            self.pos += len(CALL_CLOSE) if buf.startswith(CALL_CLOSE, pos) else 0
            self._accept()
            return True
        rest = buf[pos : pos + _MAXLEN]
        if CALL_CLOSE.startswith(rest) or CALL_OPEN.startswith(rest):
            return False
        raise Malformed(pos, "expected <tool_call|>")


_DELIM_PREFIXES = proper_prefixes((STRING_DELIM,))


def _escape(text: str) -> str:
    """JSON string body of ``text`` (escaping is per character, so pieces concatenate)."""
    return json.dumps(text, ensure_ascii=False)[1:-1] if text else ""


def _scalar_value(token: str):
    """A bare scalar as written by ``str()``/the template; raises ValueError for anything else."""
    if token in _LITERALS:
        return _LITERALS[token]
    if _INT.fullmatch(token):
        return int(token)  # ValueError beyond Python's int string limit
    if _FLOAT.fullmatch(token):
        value = float(token)
        if math.isfinite(value):
            return value
    raise ValueError(token)


def _declared_names(tools: list | None) -> set[str]:
    """The tool names of OpenAI-style tool declarations."""
    fns = [tool.get("function", tool) for tool in tools or [] if isinstance(tool, dict)]
    return {fn["name"] for fn in fns if isinstance(fn, dict) and isinstance(fn.get("name"), str)}


PARSERS = [Gemma4Parser]  # registry entry (see harness/parse/registry.py)

"""The project's own Harmony (gpt-oss) tool-call parser: one incremental reader for one-shot and streaming use.

Format facts come from the real chat template, ``openai-gpt-oss-120b.jinja`` (llama-cpp-python 0.3.36 sdist; see
:mod:`harness.formats.harmony`), and from the shapes gpt-oss writes in the field (the observed corpus). The
prompt ends ``<|start|>assistant``, so the text starts inside the first message header. A completion is a
sequence of messages::

    HEADER<|message|>BODY<|end|>            (or <|call|> / <|return|>, or the end of the text)
    <|start|>assistant HEADER<|message|>BODY ...

Reading rules:

- A header runs to ``<|message|>``. It may start with ``<|start|>`` and the role ``assistant``, and holds, in any
  order and separated by whitespace: ``<|channel|>NAME``, a recipient ``to=RECIPIENT``, and a content type
  (``<|constrain|>json``, or one bare word: ``json``, ``code``). So the template's ``to=functions.f<|channel|>
  commentary json`` and the field's ``<|channel|>commentary to=functions.f <|constrain|>json`` read alike. A
  name or recipient runs to whitespace or ``<|``. Drift: a second ``<|channel|>`` restarts a header that has
  addressed no function yet (``<|channel|>commentary to=assistant<|channel|>final``), with a diagnostic.
- A message whose recipient is ``functions.NAME`` -- or a bare ``NAME`` that is not a built-in tool (``python``,
  ``browser.*``, ``container.*``), as vLLM reads it -- is a call to ``NAME`` on whatever channel it is written
  (``commentary``, ``analysis``, ...). Its body is JSON: the end of the value is found by scanning JSON syntax
  (strings, escapes, nesting), never by searching for ``<|call|>``, so ``<|call|>``, ``<|message|>`` or a whole
  fake message inside a string value are data. The value must be an object, decoded strictly (no ``NaN``, no raw
  control characters in strings, no numbers beyond the double range); after it, only whitespace and then
  ``<|call|>``, ``<|end|>``, ``<|return|>``, the next ``<|start|>``/``<|channel|>`` or the end of the text may
  follow. An empty body is a call without arguments.
- A message to a built-in tool (recipient ``python``, ``browser.*``, ``container.*``, in the header or after the
  role) is neither a client call nor text for the user: it is dropped up to its end marker, with a diagnostic
  (llama.cpp's gpt-oss parser returns no content for it either).
- Any other message is text: ``analysis`` is reasoning; ``final``, ``commentary`` without a recipient (a
  preamble) and a message without a channel are content. A body ends at ``<|end|>``, ``<|call|>``, ``<|return|>``
  or ``<|endoftext|>`` (consumed) or where another header starts (``<|start|>``, ``<|channel|>``, ``<|message|>``,
  ``<|constrain|>``: the closer is missing). Messages of one field are joined with ``\\n`` (as vLLM joins them);
  content and reasoning are stripped of surrounding whitespace (``None`` when empty).
- A message cut off by the end of the text (a header with markup that never reaches ``<|message|>``, or call
  arguments whose JSON never ends and holds no end marker or ``<|start|>``) is dropped with a diagnostic, its
  markup kept out of content (:mod:`parsers.own._base`).
- Faults are *surfaced*, never dropped: a header with an unknown marker or a second bare word, a call to
  ``assistant``, a role other than ``assistant``, and a call body that is not a JSON object (or has text after
  it) give the message's raw text, from its start up to the fault, to content; content then runs to the next
  end marker (kept) or ``<|start|>``, and a diagnostic names the fault. Text with no Harmony structure at all
  is content.
- A prefix that pre-fills a whole header (``...<|start|>assistant<|channel|>analysis<|message|>``) starts the
  text in that message's body. Trailing stop markers (``<|call|>``, ``<|return|>``, ``<|endoftext|>``) are dropped;
  elsewhere they end a message.

Streaming: text bodies are released as soon as they cannot be the start of a marker (a trailing proper prefix of
any marker is held back); a header is held until its ``<|message|>``; a call is held until it is decided (its
JSON is read and followed by an end, or it is found malformed) and then emitted whole (name and arguments JSON),
so streaming equals one-shot for any chunking, malformed input included.
"""

from __future__ import annotations

import json
import re

from harness.formats.harmony import (
    CALL,
    CHANNEL,
    CONSTRAIN,
    END,
    ENDOFTEXT,
    FUNCTIONS,
    MESSAGE,
    RECIPIENT,
    RETURN,
    SPEC,
    START,
)
from parsers.own._base import OwnParser, StepReader, proper_prefixes
from parsers.own._base import TextField as _Field
from parsers.own._common import JsonExtent, Malformed, run_at, skip
from parsers.own._common import finite_float as _finite_float
from parsers.own._common import reject_constant as _reject_constant

_STOPS = SPEC.stop_markers
_MARKERS = tuple(dict.fromkeys(SPEC.markers + _STOPS))
_PREFIXES, _MAXLEN = proper_prefixes(_MARKERS), max(map(len, _MARKERS))

_ENDS = (END, CALL, RETURN, ENDOFTEXT)  # close a message (consumed)
_HEADS = (START, CHANNEL, MESSAGE, CONSTRAIN)  # start a header (a body missing its closer ends there)
_ROLE = "assistant"
_BUILTINS = frozenset({"python", "browser", "container"})  # gpt-oss built-in tools, not client functions

_WS = re.compile(r"\s*")
_WORD = re.compile(r"(?:(?!<\|)\S)*")
_JSON_WS = re.compile(r"[ \t\n\r]*")


class HarmonyParser(OwnParser):
    """Parser protocol implementation for Harmony (see the module docstring for the reading rules).

    ``tools`` is accepted for the protocol; the arguments are self-describing JSON."""

    name = "toolcall-harness:harmony"
    formats = ("harmony",)
    limitations = (
        "A tool name holding whitespace or ``<|`` cannot be read (the header has no quoting); the template "
        "would write such a name unescaped.",
        "A body holding a marker text as *prose* (reasoning or content that spells ``<|end|>``) ends the "
        "message there: the template has no escape for it (it refuses only "
        "``<|channel|>analysis<|message|>`` and ``<|channel|>final<|message|>`` in content).",
        "Content type ``code`` (or any type) does not change how a call body is read: it must be a JSON "
        "object, else the call is surfaced (vLLM would return the raw text as the arguments string).",
    )
    stops = _STOPS

    def reader(self, tools: list | None, prefix: str, whole: bool) -> _Reader:
        return _Reader(prefix)


class _Reader(StepReader):
    """Incremental reader of Harmony completions. ``push(text)`` / ``finish()`` return events:
    ``("content"|"reasoning", text)`` and ``("call", index, name, arguments_json)``.

    ``step`` is the handler of the current state; it returns True when it made progress and False when it needs
    more text. Handlers of a message raise :class:`Malformed`, which surfaces the message as content. While a
    header or a call is read, the buffer keeps the message's raw text from ``msg_at`` on.
    """

    prefixes, maxlen = _PREFIXES, _MAXLEN
    msg_at: int  # buffer offsets, set per message
    scan: int

    def __init__(self, prefix: str):
        super().__init__()
        self.field: _Field | None = None
        self._reset_message()
        self.step = self._header
        self._enter_prefix(prefix)

    # ---- driving -----------------------------------------------------------------------------------

    def _held_call(self) -> bool:
        """A header or call is being read (a header of only whitespace holds nothing)."""
        return self.holding and not (self.step == self._header and not self.buf[self.msg_at :].strip())

    def _at_end(self) -> None:
        if self.step == self._header and not self._has_marker():
            self._surface(len(self.buf), "header without <|message|>", quiet=True)  # plain text
        elif self.step == self._header:
            self._drop_cut_off("header without <|message|>")
        elif self.step in (self._call_body, self._after_json) and self._json_done_or_none():
            self._accept()  # the call ends at the end of the text (its <|call|> was the stop marker)
        elif any(m in self.buf[self.pos :] for m in _ENDS + (START,)):  # a marker read as JSON string data
            self._surface(len(self.buf), "unterminated call arguments")
        else:
            self._drop_cut_off("unterminated call arguments")

    def _drop_cut_off(self, reason: str) -> None:
        """The message (a header, or a call's arguments) was cut off by the end of the text: dropped."""
        self._cut_off(self.buf[self.msg_at :], reason)
        self.pos = len(self.buf)
        self._new_message()

    def _compact(self) -> None:
        """Drop consumed text (a header or call being read keeps its raw text from ``msg_at``)."""
        cut = self.msg_at if self.holding else self.pos
        if cut:
            self.buf, self.pos, self.scan = self.buf[cut:], self.pos - cut, max(self.scan - cut, 0)
            if self.json is not None:
                self.json.shift(cut)
            self.msg_at = 0 if self.holding else self.msg_at - cut

    def _enter_prefix(self, prefix: str) -> None:
        """A prefix pre-filling a whole header (``<|start|>assistant<|channel|>X<|message|>``) starts the text in
        that message's body; any other prefix leaves the text at the start of a header (after the role)."""
        i = prefix.rfind(START)
        tail = prefix[i:] if i >= 0 else ""
        if MESSAGE not in tail:
            return
        self.buf = tail
        self._advance()
        self.events.clear()
        self.content, self.reasoning = _Field(), _Field()
        if self.field is not None:
            self.field = self.reasoning if self.kind == "reasoning" else self.content
        self.diagnostics.clear()

    # ---- messages ----------------------------------------------------------------------------------

    def _reset_message(self) -> None:
        self.holding = True  # a header or call is being read (raw text kept from msg_at)
        self.msg_at = self.pos
        self.scan = self.pos  # where the header scan resumes
        self.json: JsonExtent | None = None  # the call's JSON value, once its ``{`` is met
        self.name, self.kind = "", ""
        self.args: dict | None = None

    def _new_message(self) -> None:
        self._reset_message()
        self.field = None
        self.step = self._header

    def _has_marker(self) -> bool:
        raw = self.buf[self.msg_at :]
        return any(m in raw for m in _MARKERS)

    def _header(self) -> bool:
        """Everything up to ``<|message|>``; a closing marker (or a second ``<|start|>``) before it is a fault."""
        buf = self.buf
        i = buf.find("<|", self.scan)
        while i != -1:
            if buf.startswith(MESSAGE, i):
                self._read_header(buf[self.msg_at : i], i)
                return True
            marker = next((m for m in _MARKERS if buf.startswith(m, i)), None)
            if marker is None:
                if self._held_prefix(i):
                    self.scan = i
                    return False
            elif marker == START and buf[self.msg_at : i].strip():
                raise Malformed(i, "<|start|> inside a header")
            elif marker in _ENDS:
                raise Malformed(i + len(marker), f"{marker} inside a header")
            i = buf.find("<|", i + 1)
        self.scan = max(self.msg_at, len(buf) - 1)
        return False

    def _read_header(self, header: str, at: int) -> None:
        """Parse the header text (before ``<|message|>`` at buffer offset ``at``) and enter the body."""
        h = header.lstrip()
        if h.startswith(START):
            h = h[len(START) :]
            role = run_at(_WORD, h)
            if role != _ROLE:
                raise Malformed(at, f"message from {role or 'no role'!r}")
            h = h[len(role) :]
        channel = recipient = ctype = None
        words: list[str] = []
        i, n = 0, len(h)
        while True:
            i = skip(_WS, h, i)
            if i >= n:
                break
            if h.startswith(CHANNEL, i) and channel is not None and (recipient in (None, _ROLE)) and ctype is None:
                # drift: a second channel restarts a header that addressed no function (``commentary
                # to=assistant<|channel|>final``, llama.cpp's gpt-oss tests)
                self.diagnostics.append(f"a header restarted at a second <|channel|> (after {channel!r})")
                channel = recipient = None
                words.clear()
            if h.startswith(CHANNEL, i) or h.startswith(CONSTRAIN, i):
                is_channel = h.startswith(CHANNEL, i)
                i += len(CHANNEL if is_channel else CONSTRAIN)
                word = run_at(_WORD, h, i)
                if not word or (channel if is_channel else ctype) is not None:
                    raise Malformed(at, "bad header")
                if is_channel:
                    channel = word
                else:
                    ctype = word
            elif h.startswith(RECIPIENT, i):
                i += len(RECIPIENT)
                word = run_at(_WORD, h, i)
                if not word or recipient is not None:
                    raise Malformed(at, "bad recipient")
                recipient = word
            elif h.startswith("<|", i):
                raise Malformed(at, "unknown marker in a header")
            else:
                word = run_at(_WORD, h, i)
                words.append(word)
            i += len(word)
        if words and words[0] == _ROLE:
            words.pop(0)
        if len(words) > (0 if ctype is not None else 1):
            raise Malformed(at, f"unexpected {words[-1]!r} in a header")
        self.pos = at + len(MESSAGE)
        if recipient is None:
            self._begin_text("reasoning" if channel == "analysis" else "content")
            return
        name = recipient.removeprefix(FUNCTIONS)
        if not recipient.startswith(FUNCTIONS) and recipient.split(".", 1)[0] in _BUILTINS:
            self.diagnostics.append(f"a message to the built-in tool {recipient!r} dropped")
            self.holding, self.kind, self.field = False, "builtin", None
            self.step = self._builtin_body
            return
        if not name or recipient == _ROLE:
            raise Malformed(self.pos, f"not a function call (recipient {recipient!r})")
        self.name, self.kind = name, "call"
        self.step = self._call_body

    # ---- text bodies ---------------------------------------------------------------------------------

    def _begin_text(self, kind: str) -> None:
        self.holding, self.kind = False, kind
        self.field = self.reasoning if kind == "reasoning" else self.content
        self.field.sep()
        self.step = self._body

    def _body(self) -> bool:
        marker = self._scan(self._emit_field, _ENDS + _HEADS)
        if marker is None:
            return False
        if marker in _HEADS:  # the next header starts at it
            self.pos -= len(marker)
        self._new_message()
        return True

    def _emit_field(self, text: str) -> None:
        # Only _body calls this, and only _begin_text (which sets the field) makes _body the step.
        assert self.field is not None
        text = self.field.push(text)
        if text:
            self.events.append((self.kind, text))

    def _builtin_body(self) -> bool:
        """The body of a message to a built-in tool (``python``, ``container.exec``): no client call and not
        text for the user, so nothing of it is kept, up to its end marker or the next ``<|start|>``."""
        marker = self._scan(lambda text: None, _ENDS + (START,))
        if marker is None:
            return False
        if marker == START:
            self.pos -= len(marker)
        self._new_message()
        return True

    def _resync(self) -> bool:
        """After a surfaced message: content up to the next end marker (kept) or ``<|start|>``."""
        marker = self._scan(self._emit_content, _ENDS + (START,))
        if marker is None:
            return False
        if marker in _ENDS:
            self._emit_content(marker)
        else:  # the next header starts at <|start|>
            self.pos -= len(marker)
        self._new_message()
        return True

    def _surface(self, at: int, reason: str, quiet: bool = False) -> None:
        """Give the current message's raw text up to ``at`` to content; ``_resync`` reads on."""
        raw = self.buf[self.msg_at : at]
        if not quiet:
            self.diagnostics.append(f"malformed message surfaced as content ({reason}): {raw[:80]!r}")
        self.content.sep()
        self._emit_content(raw)
        self.holding, self.kind, self.field = False, "content", None
        self.pos = at
        self.step = self._resync

    # ---- call bodies -----------------------------------------------------------------------------

    def _json_done_or_none(self) -> bool:
        return self.json is None or self.json.end is not None

    def _accept(self) -> None:
        self.events.append(("call", self.n_calls, self.name, json.dumps(self.args or {}, ensure_ascii=False)))
        self.n_calls += 1
        self._new_message()

    def _call_body(self) -> bool:
        """Whitespace, then ``{`` (or, drift, an end marker right away: a call without arguments)."""
        pos = skip(_JSON_WS, self.buf, self.pos)
        self.pos = pos
        if pos == len(self.buf):
            return False
        if self.buf.startswith("<", pos):
            self.step = self._after_json
            return True
        if self.buf[pos] != "{":
            raise Malformed(pos, "call arguments are not a JSON object")
        self.json = JsonExtent(pos, "the call's JSON")
        self.step = self._json
        return True

    def _json(self) -> bool:
        """Find the end of the JSON value by its syntax (resumable), then decode it."""
        extent = self.json
        assert extent is not None  # _call_body set it with this step
        end = extent.advance(self.buf)
        if end is None:
            return False
        self.args = _arguments(self.buf[extent.start : end], end)
        self.pos = end
        self.step = self._after_json
        return True

    def _after_json(self) -> bool:
        """After the arguments: an end marker (consumed), the next header, or the end of the text."""
        buf = self.buf
        pos = self.pos = skip(_JSON_WS, buf, self.pos)
        if pos == len(buf):
            return False
        marker = next((m for m in _ENDS + (START, CHANNEL) if buf.startswith(m, pos)), None)
        if marker is not None:
            self.pos += len(marker) if marker in _ENDS else 0
            self._accept()
            return True
        if self._held_prefix(pos):
            return False
        raise Malformed(pos, "text after the call's JSON")


def _arguments(text: str, end: int) -> dict:
    """The call's arguments object; raises :class:`Malformed` at ``end`` for invalid JSON or a non-object."""
    try:
        value = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except (ValueError, RecursionError) as exc:
        raise Malformed(end, f"invalid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise Malformed(end, "call arguments are not a JSON object")
    return value


PARSERS = [HarmonyParser]  # registry entry (see harness/parse/registry.py)

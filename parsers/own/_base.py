"""The protocol side every own parser shares, written once: :class:`OwnParser` (``parse`` is the stream fed
whole), :class:`OwnStream` (the session: stop-marker tail, reader, deltas), :class:`StopTail`, :class:`TextField`
and the folding of reader events into a :class:`~harness.core.messages.Message` or
:class:`~harness.core.protocol.Delta` lists. A parser module keeps only its grammar: a reader and a short
:class:`OwnParser` subclass naming it, its stop markers and its known limitations (a tuple of strings).

A reader is any object with ``push(text) -> events``, ``finish() -> events`` and ``diagnostics: list[str]``;
events are ``("content"|"reasoning", text)``, ``("call", index, name, arguments_json[, call_id])`` and, for a
reader that streams a call in pieces, ``("name", index, name)`` / ``("args", index, fragment)``. Marker
hold-back and the surfacing of faults are the reader's (its grammar decides what a marker and a fault are).

A call *cut off* by the end of the text (still being read, nothing in it wrong so far, neither its closer nor a
later call opener in it: a closer read as data shows a call that was written whole) is dropped: no call, its
markup not given to content, a diagnostic naming it; the prose before it is kept (:meth:`StepReader._cut_off`).
A call found malformed before the end stays surfaced as content. This is the ``scrubbed`` outcome the judge's
``malformed=either`` and ``no-markup`` policies accept (SGLang's Gemma 4 fix, ``shared/seeds/004``;
canitoolcall's truncated fixtures); ``lossless`` wants the text surfaced instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version
from typing import Any, Protocol

from harness.core.messages import Message, ToolCall
from harness.core.protocol import Delta, ToolCallDelta
from parsers.own._common import Malformed, skip

try:
    VERSION = _dist_version("toolcall-harness")
except PackageNotFoundError:  # running from a bare checkout
    VERSION = "0+unknown"


class Reader(Protocol):
    diagnostics: list[str]

    def push(self, text: str) -> list[tuple]: ...

    def finish(self) -> list[tuple]: ...


class TextField:
    """Strips surrounding whitespace from a streamed text field (content or reasoning).

    Leading whitespace is dropped; trailing whitespace is held until more text follows, so the
    concatenation of what ``push`` returns equals ``"".join(all pushed).strip()``.
    """

    def __init__(self) -> None:
        self.started, self.held = False, ""

    def push(self, text: str) -> str:
        if not self.started:
            text = text.lstrip()
        body = text.rstrip()
        if not body:
            self.held += text if self.started else ""
            return ""
        out, self.held, self.started = self.held + body, text[len(body) :], True
        return out

    def sep(self) -> None:
        """Start a new message of the field (Harmony): a ``\\n`` released only when more text follows."""
        if self.started:
            self.held += "\n"


def proper_prefixes(markers) -> frozenset[str]:
    """Every proper (non-empty, shorter) prefix of each of ``markers``."""
    return frozenset(m[:k] for m in markers for k in range(1, len(m)))


class StopTail:
    """Holds back a trailing run of stop markers (and the whitespace between and after them) until text follows.

    ``push(chunk)`` returns the text that is certainly not part of the final stop-marker run; ``flush()`` at the
    end returns what was held when it turned out not to be a run of whole stop markers (it ends in a partial
    one). The held part is the longest suffix made of stop markers and whitespace, optionally ending with a
    proper prefix of a stop marker, that starts at a marker (leading whitespace is released); the longest one is
    found over every way to split it, so a marker that ends with its own first character (MiniMax's ``[e~[``)
    is held whole, and one-shot and streaming hold the same text.
    """

    def __init__(self, stops: tuple[str, ...]) -> None:
        self.stops = stops
        self.prefixes = proper_prefixes(stops)
        self.maxlen = max(map(len, stops))
        self.pending = ""

    def _run_start(self, s: str, partial: bool) -> int:
        """The smallest ``j`` with ``s[j:]`` = stops and whitespace (then, if ``partial``, a proper prefix)."""
        n = len(s)
        starts = {n}
        if partial:
            starts |= {n - k for k in range(1, min(self.maxlen, n + 1)) if s[n - k :] in self.prefixes}
        todo, best = list(starts), n
        while todo:
            p = todo.pop()
            best = min(best, p)
            steps = [p - 1] if p > 0 and s[p - 1].isspace() else []
            steps += [p - len(m) for m in self.stops if s.endswith(m, 0, p)]
            for q in steps:
                if q not in starts:
                    starts.add(q)
                    todo.append(q)
        return best

    def push(self, chunk: str) -> str:
        s = self.pending + chunk
        j = self._run_start(s, partial=True)
        while j < len(s) and s[j].isspace():  # a run starts at a stop marker, not at whitespace
            j += 1
        out, self.pending = s[:j], s[j:]
        return out

    def flush(self) -> str:
        held, self.pending = self.pending, ""
        return "" if self._run_start(held, partial=False) == 0 else held


_BLOCK_WS = re.compile(r"[ \t\n\r]*")  # between a call block's body and its closer
PARK_FROM = 1024  # characters a step holds before it parks the reader (StepReader._park)


class StepReader:
    """The driver of a step reader: ``step`` is the handler of the current state; it returns True when it made
    progress and False when it needs more text, and raises :class:`~parsers.own._common.Malformed` at a fault,
    which :meth:`_surface` (the grammar's) gives to content. ``push``/``finish`` return the events made since.

    ``__init__`` sets the empty buffer (``buf``, ``pos``, ``final``), the ``content``/``reasoning``
    :class:`TextField` (fed by :meth:`_emit_content`/:meth:`_emit_reasoning`), ``events``, ``diagnostics`` and
    ``n_calls``; subclasses call it, then set ``step``. They set ``prefixes``/``maxlen`` (the proper prefixes of
    every marker and the longest marker's length: :meth:`_scan` holds them back), ``text_stop`` where a marker
    can start other than at ``<``, and implement :meth:`_held_call` (True while a call is read), :meth:`_at_end`
    (what a call open at the end of the text becomes) and :meth:`_surface` (a grammar that raises
    :class:`~parsers.own._common.Malformed` or holds calls); :meth:`_compact` drops consumed text before each push.
    A step that searches the whole text it holds may :meth:`_park` the reader instead of searching again on
    every push.
    """

    buf: str
    pos: int
    final: bool
    events: list[tuple]
    diagnostics: list[str]
    content: TextField
    reasoning: TextField
    step: Callable[[], bool]  # the handler of the current state
    prefixes: frozenset[str] = frozenset()
    maxlen = 1
    text_stop: re.Pattern[str] = re.compile("<")  # where a marker may start

    def __init__(self) -> None:
        self.buf, self.pos = "", 0
        self.final = False
        self.content, self.reasoning = TextField(), TextField()
        self.events = []
        self.diagnostics = []
        self.n_calls = 0
        self._parked: list[str] | None = None  # pushes collected while parked (see _park)

    def push(self, text: str) -> list[tuple]:
        if self._parked is not None:
            if not self._wakes(text):
                return []
            text, self._parked = "".join(self._parked), None
        self._append(text)
        self._advance()
        return self._take()

    def finish(self) -> list[tuple]:
        if self._parked is not None:
            self._append("".join(self._parked))
            self._parked = None
        self.final = True
        self._advance()
        return self._take()

    def _append(self, text: str) -> None:
        """Drop consumed text (:meth:`_compact`), then append ``text`` to the buffer through a local name, the
        buffer's only reference then, which CPython grows in place (``self.buf += text`` copies the whole
        buffer on every push: quadratic in a long call streamed in small chunks)."""
        self._compact()
        buf, self.buf = self.buf, ""
        buf += text
        self.buf = buf

    def _park(self, held: int, wake: tuple[str, ...] = ()) -> None:
        """For a step that returned False after searching the ``held`` characters it keeps (a call block
        decided only by what follows it), once they are :data:`PARK_FROM` or more: later pushes are only
        collected, no step runs, until one brings one of ``wake`` (also across pushes), the collected text is as
        long as ``held`` (so a block is searched O(1) times per doubling: linear, not quadratic, in its length),
        or the text ends. It only delays a decision: a step decides on more text what it would have decided on
        less."""
        if held >= PARK_FROM:
            self._parked, self._parked_len, self._park_limit = [], 0, held
            self._park_tail = self.buf[max(0, len(self.buf) - self.maxlen + 1) :]
            self._wake_markers = wake

    def _wakes(self, text: str) -> bool:
        """Collect ``text`` while parked; True when it ends the parking (:meth:`_park`)."""
        assert self._parked is not None
        self._parked.append(text)
        self._parked_len += len(text)
        window = self._park_tail + text
        if self._parked_len >= self._park_limit or any(marker in window for marker in self._wake_markers):
            return True
        self._park_tail = window[max(0, len(window) - self.maxlen + 1) :]
        return False

    def _advance(self) -> None:
        while True:
            try:
                while self.step():
                    pass
            except Malformed as err:
                self._surface(err.at, err.reason)
                continue
            if not (self.final and self._held_call()):
                return
            self._at_end()

    def _take(self) -> list[tuple]:
        events, self.events = self.events, []
        return events

    def _compact(self) -> None:
        """Drop consumed text before a push (the grammar knows what it still needs)."""

    def _held_call(self) -> bool:  # pragma: no cover - subclasses implement it
        raise NotImplementedError

    def _at_end(self) -> None:  # pragma: no cover - subclasses implement it
        raise NotImplementedError

    def _surface(self, at: int, reason: str) -> None:  # pragma: no cover - subclasses implement it
        raise NotImplementedError

    def _emit_content(self, text: str) -> None:
        text = self.content.push(text)
        if text:
            self.events.append(("content", text))

    def _emit_reasoning(self, text: str) -> None:
        text = self.reasoning.push(text)
        if text:
            self.events.append(("reasoning", text))

    def _cut_off(self, raw: str, reason: str) -> None:
        """Record that ``raw``, a call cut off by the end of the text, was dropped (the module docstring)."""
        self.diagnostics.append(f"call cut off by the end of the text dropped ({reason}): {raw[:80]!r}")

    def _held_prefix(self, i: int) -> bool:
        """True when the buffer ends at ``i`` with a proper prefix of a marker that more text may complete."""
        return not self.final and len(self.buf) - i < self.maxlen and self.buf[i:] in self.prefixes

    def _cut_marker(self, i: int) -> bool:
        """True when the text ended (``final``) at ``i`` with 2 or more characters of a marker after complete
        calls: markup cut off by the end of generation, which is dropped rather than given to content (the
        judge's ``malformed=either`` and ``no-markup`` policies; SGLang's Gemma 4 fix, ``shared/seeds/004``)."""
        left = len(self.buf) - i  # a marker prefix is shorter than maxlen: look no further
        return self.final and self.n_calls > 0 and 2 <= left < self.maxlen and self.buf[i:] in self.prefixes

    def _block_closed(self, close: str, opener: str, what: str, accept: Callable[[], None]) -> bool:
        """After a call block's body: ``close`` (consumed), or (drift) the next block's ``opener`` (left), each
        accepting the block with ``accept``; at the end of the text a cut-off prefix of either also accepts it.
        False while more text is needed; raises :class:`Malformed` (``expected <close> after <what>``) otherwise.
        Whitespace before them is skipped."""
        buf = self.buf
        pos = self.pos = skip(_BLOCK_WS, buf, self.pos)
        if pos == len(buf):
            return False
        if buf.startswith(close, pos) or buf.startswith(opener, pos):
            self.pos += len(close) if buf.startswith(close, pos) else 0
            accept()
            return True
        rest = buf[pos : pos + self.maxlen]
        if close.startswith(rest) or opener.startswith(rest):
            if not self.final:
                return False
            self.pos = len(buf)  # the closer cut off by the end of the text
            accept()
            return True
        raise Malformed(pos, f"expected {close} after {what}")

    def _scan(self, emit, markers: tuple[str, ...]) -> str | None:
        """Emit text up to the first of ``markers`` (tried where ``text_stop`` matches) and consume the marker;
        return it, or None when the buffer ran out (a trailing possible marker prefix is held unless final)."""
        buf, start = self.buf, self.pos
        found = self.text_stop.search(buf, start)
        while found:
            i = found.start()
            for marker in markers:
                if buf.startswith(marker, i):
                    emit(buf[start:i])
                    self.pos = i + len(marker)
                    return marker
            if self._held_prefix(i):
                emit(buf[start:i])
                self.pos = i
                return None
            if self._cut_marker(i):
                emit(buf[start:i])
                self.pos = len(buf)
                return None
            found = self.text_stop.search(buf, i + 1)
        emit(buf[start:])
        self.pos = len(buf)
        return None


class BlockReader(StepReader):
    """A :class:`StepReader` whose calls are blocks that open at ``call_open`` (and close at ``call_close``, where
    the format has a closer): :meth:`_text` reads the text outside them and calls :meth:`_begin_call` right after
    a ``call_open``, which makes :meth:`_call_start` the step. While a block is read (``in_call``) the buffer keeps
    its raw text from ``call_at`` on; a fault (:meth:`_surface`) gives that text, up to the fault or to a later
    ``call_open`` when that comes first, to content with a diagnostic; then :meth:`_resync` reads content up to
    the next ``call_close`` (kept) or ``call_open`` (a new block), or, for a format without a closer, the text
    reads on. A block still open at the end of the text is cut off (:meth:`_drop_at_end`, for :meth:`_at_end`).
    Subclasses implement :meth:`_text`, :meth:`_call_start` and :meth:`_reset_call` (which forgets the current
    block and sets ``in_call`` False).
    """

    call_open = ""
    call_close = ""
    in_call: bool
    call_at: int  # buffer offset of the current block's call_open

    def _text(self) -> bool:  # pragma: no cover - subclasses implement it
        raise NotImplementedError

    def _call_start(self) -> bool:  # pragma: no cover - subclasses implement it
        raise NotImplementedError

    def _reset_call(self) -> None:  # pragma: no cover - subclasses implement it
        raise NotImplementedError

    def _held_call(self) -> bool:
        return self.in_call

    def _begin_call(self) -> None:
        """A block starts at the ``call_open`` just consumed."""
        self._reset_call()
        self.in_call, self.call_at = True, self.pos - len(self.call_open)
        self.step = self._call_start

    def _block_text(self) -> str:
        """The current block's raw text from its ``call_open`` to the end of the buffer."""
        return self.buf[self.call_at :]

    def _drop_at_end(self, reason: str) -> None:
        """At the end of the text, inside a block: cut off (dropped, :meth:`_cut_off`) unless a later ``call_open``
        or a ``call_close`` in it shows a malformed block, which is surfaced (:meth:`_surface`)."""
        raw = self._block_text()
        body = raw.find(self.call_open) + len(self.call_open)
        if raw.find(self.call_open, body) >= 0 or (self.call_close and raw.find(self.call_close, body) >= 0):
            self._surface(len(self.buf), reason)
            return
        self._cut_off(raw, reason)
        self._keep_read_calls()
        self._reset_call()
        self.pos = len(self.buf)
        self.step = self._text

    def _keep_read_calls(self) -> None:
        """Emit the calls of the current block read whole before it was cut off (a grammar with several calls
        in one block overrides this)."""

    def _surface(self, at: int, reason: str) -> None:
        """Give the block's raw text up to ``at`` (or to a later ``call_open``, if sooner) to content."""
        later = self.buf.find(self.call_open, self.call_at + len(self.call_open))
        if 0 <= later < at:
            at = later
        raw = self.buf[self.call_at : at]
        self.diagnostics.append(f"malformed call surfaced as content ({reason}): {raw[:80]!r}")
        self._reset_call()
        self.pos = at
        self._emit_content(raw)
        self.step = self._resync if self.call_close else self._text

    def _resync(self) -> bool:
        """After a surfaced block: content up to the next ``call_close`` (kept) or ``call_open``."""
        marker = self._scan(self._emit_content, (self.call_close, self.call_open))
        if marker == self.call_close:
            self._emit_content(marker)
        elif marker == self.call_open:
            self.pos -= len(marker)
        if marker is not None:
            self.step = self._text
        return marker is not None


class ThinkBlockReader(BlockReader):
    """A :class:`BlockReader` whose text may open with a ``think_open`` ... ``think_close`` reasoning block (Qwen's
    and GLM's ``<think>``): only a block at the start of the text (whitespace before it at most) is reasoning,
    ``think_open`` anywhere else is content, and inside reasoning only ``think_close`` ends it. ``think_allowed``
    (set in ``__init__``: False when the prefix already opened the block and :meth:`_think` is the first step)
    turns False at the first other text or call.
    """

    think_open = ""
    think_close = ""
    think_allowed: bool

    def _text(self) -> bool:
        markers = (self.call_open, self.think_open) if self.think_allowed else (self.call_open,)
        marker = self._scan(self._emit_content, markers)
        if marker == self.think_open:
            self.think_allowed = False
            if self.content.started:  # only a block at the start of the text is reasoning
                self._emit_content(marker)
            else:
                self.step = self._think
        elif marker == self.call_open:
            self.think_allowed = False
            self._begin_call()
        return marker is not None

    def _think(self) -> bool:
        if self._scan(self._emit_reasoning, (self.think_close,)) is None:
            return False
        self.step = self._text
        return True

    def _emit_content(self, text: str) -> None:
        if text and not text.isspace():
            self.think_allowed = False
        super()._emit_content(text)


def message_from_events(events: list[tuple], diagnostics: list[str]) -> Message:
    """Fold events into a :class:`Message` (``name``/``args`` pieces join the call of their index)."""
    content, reasoning = [], []
    pieces: list[list[str]] = []  # [name, arguments JSON so far], in call order
    for event in events:
        if event[0] == "content":
            content.append(event[1])
        elif event[0] == "reasoning":
            reasoning.append(event[1])
        elif event[0] == "name":
            pieces.append([event[2], ""])
        elif event[0] == "args":
            pieces[-1][1] += event[2]
        else:
            pieces.append([event[2], event[3]])
    calls = [ToolCall(name, json.loads(args)) for name, args in pieces]
    return Message("".join(content) or None, "".join(reasoning) or None, calls, list(diagnostics))


def deltas_from_events(events: list[tuple]) -> list[Delta]:
    """Events as deltas, merging neighbouring content (or reasoning) pieces and a call's argument fragments."""
    out: list[Delta] = []
    for event in events:
        kind, last = event[0], out[-1] if out else None
        if kind in ("content", "reasoning"):
            if last is not None and getattr(last, kind) is not None and not last.tool_calls:
                setattr(last, kind, getattr(last, kind) + event[1])
            else:
                out.append(Delta(**{kind: event[1]}))
        elif kind == "args" and last is not None and last.tool_calls and last.tool_calls[-1].index == event[1]:
            piece = last.tool_calls[-1]
            piece.arguments = (piece.arguments or "") + event[2]
        elif kind == "args":
            out.append(Delta(tool_calls=[ToolCallDelta(event[1], arguments=event[2])]))
        elif kind == "name":
            out.append(Delta(tool_calls=[ToolCallDelta(event[1], name=event[2])]))
        else:
            call_id = event[4] if len(event) > 4 else None
            out.append(Delta(tool_calls=[ToolCallDelta(event[1], name=event[2], arguments=event[3], id=call_id)]))
    return out


class OwnStream:
    """Streaming session: ``feed(chunk) -> list[Delta]`` as text arrives, ``finish() -> list[Delta]`` once.

    A trailing run of ``stops`` is held back (:class:`StopTail`) before the text reaches ``reader``."""

    def __init__(self, reader: Reader, stops: tuple[str, ...]):
        self._reader = reader
        self._tail = StopTail(stops)

    @property
    def diagnostics(self) -> list[str]:
        return self._reader.diagnostics

    def push_events(self, chunk: str) -> list[tuple]:
        text = self._tail.push(chunk)
        return self._reader.push(text) if text else []

    def finish_events(self) -> list[tuple]:
        return self._reader.push(self._tail.flush()) + self._reader.finish()

    def feed(self, chunk: str, token_ids: list[int] | None = None) -> list[Delta]:
        return deltas_from_events(self.push_events(chunk))

    def finish(self) -> list[Delta]:
        return deltas_from_events(self.finish_events())


class OwnParser:
    """Parser protocol implementation over a reader: subclasses set ``name``, ``formats``, ``stops`` (the
    format's stop markers), ``limitations`` (what the parser cannot do, one sentence each, shown in reports)
    and implement :meth:`reader`."""

    name = ""
    formats: tuple[str, ...] = ()
    library = "toolcall-harness"
    version = VERSION
    incremental = True
    stops: tuple[str, ...] = ()
    limitations: tuple[str, ...] = ()

    def reader(self, tools: list | None, prefix: str, whole: bool) -> Any:
        """A fresh reader for one completion; ``whole`` is True for :meth:`parse` (the text arrives at once)."""
        raise NotImplementedError

    def parse(self, text: str, tools: list | None = None, prefix: str = "") -> Message:
        """Parse a whole completion (the stream fed whole); never raises on malformed text (faults are
        surfaced as content)."""
        session = OwnStream(self.reader(tools, prefix, True), self.stops)
        events = session.push_events(text) + session.finish_events()
        return message_from_events(events, session.diagnostics)

    def stream(self, tools: list | None = None, prefix: str = "") -> OwnStream:
        return OwnStream(self.reader(tools, prefix, False), self.stops)

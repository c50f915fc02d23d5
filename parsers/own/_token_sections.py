"""The incremental reader shared by the project's parsers for formats whose calls sit in a *section* of
special tokens: Kimi K2 (``parsers/own/kimi_k2.py``), DeepSeek V3.1 (``parsers/own/deepseek_v31.py``) and DeepSeek V3.2
(``parsers/own/deepseek_v32.py``). Not a parser itself (it is not listed in ``PARSER_MODULES``).

The shape all three share: content (optionally after a ``<think>...</think>`` block), then a section opener,
one or more calls each between a call opener and a call closer, and a section closer; generation ends with a
stop marker. A subclass of :class:`SectionReader` names the markers and reads one call's inside (its
*grammar*); this module does everything else, identically for the three formats:

- **Text.** Content is the text outside calls and reasoning, concatenated and stripped of surrounding
  whitespace (``None`` when empty); reasoning likewise. A trailing run of stop markers (and whitespace) is
  dropped; a stop marker elsewhere is text.
- **Reasoning.** The prefix (what the prompt pre-filled) decides where the text starts: after an unclosed
  ``<think>`` it starts in reasoning, after ``</think>`` in content, and with neither the subclass decides
  (``REASONING_WITHOUT_PREFIX``). In content, a ``<think>`` block at the very start (only whitespace before
  it) is reasoning, and a ``</think>`` at the very start closes an empty one (DeepSeek V3.2's template writes
  one there with thinking off). Reasoning ends at ``</think>`` or at a section opener, or a call opener (the
  model went from thinking straight to its calls, with or without the section opener: the calls are read).
  ``<think>``/``</think>`` anywhere else are text.
- **Sections.** A section opener starts a section; so does a call opener met in content (drift: the section
  opener is missing). Inside a section only whitespace may separate calls. After at least one call, text that
  is neither a call opener nor the section closer ends the section (drift: the closer is missing) and is
  content again; a missing closer at the end of the text is accepted too, and so is one cut off by the end.
  An empty section (opener, whitespace, closer) carries nothing and is dropped with a diagnostic.
- **Cut off.** A call (or a section with no call yet) still open at the end of the text, with no call
  opener, call closer or section closer after its opener, is dropped with a diagnostic: its markup does not
  reach content (:mod:`parsers.own._base`).
- **Faults are surfaced, never dropped.** A call that breaks its grammar (or a section opener followed by
  text) gives its raw text, from its opener up to the fault, to content (when the first
  call of a section fails, the section opener goes with it, and so does the section closer later; a section
  begun by a bare call opener keeps its closer as content unless one of its calls was read); the text
  after the fault is content up to the next call opener (a new call), section closer or section opener. A
  fault's text is cut at a later call opener, so one broken call does not swallow the next. Every fault
  adds a diagnostic.

Streaming: content and reasoning are released as soon as they cannot be the start of a marker (a trailing
proper prefix of any marker of the format is held back); each call is emitted whole (name and arguments JSON)
once it is decided -- at its closer, or at what proves the closer missing -- so streaming equals one-shot for
any chunking, malformed text included: nothing emitted is ever retracted.
"""

from __future__ import annotations

import json
import re

from parsers.own._base import OwnParser, StepReader, proper_prefixes
from parsers.own._common import JsonExtent, Malformed, object_arguments, skip

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"

_WS = re.compile(r"\s*")
_JSON_WS = re.compile(r"[ \t\n\r]*")


# ---- the reader ------------------------------------------------------------------------------------------


class SectionReader(StepReader):
    """Incremental reader: ``push(text)`` / ``finish()`` return events ``("content"|"reasoning", text)`` and
    ``("call", index, name, arguments_json)``.

    Subclasses set the class attributes below and implement :meth:`_call_start`, the step that runs right after
    a call opener; their call steps read ``self.buf`` from ``self.pos``, return True when they made progress and
    False when they need more text, raise :class:`Malformed` on a fault, and end with :meth:`_accept` (or set
    ``self.complete`` to a ``(name, arguments)`` pair and return False when only a missing closer at the end of
    the text remains: :meth:`finish` then accepts it).
    """

    SECTION_OPEN = ""
    SECTION_CLOSE = ""
    CALL_OPEN = ""
    CALL_CLOSE = ""  # "" for a grammar that closes its calls itself
    MARKERS: tuple[str, ...] = ()  # every marker of the format (held back at chunk ends)
    STOPS: tuple[str, ...] = ()
    THINK = True  # read <think>...</think>
    THINK_OPEN, THINK_CLOSE = THINK_OPEN, THINK_CLOSE  # the think markers (MiniMax-M3: <mm:think>)
    REASONING_WITHOUT_PREFIX = False  # start in reasoning when the prefix has no think marker
    complete: tuple[str, dict] | None  # (name, arguments) of a call that only lacks its closer

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        markers = tuple(
            dict.fromkeys(cls.MARKERS + cls.STOPS + ((cls.THINK_OPEN, cls.THINK_CLOSE) if cls.THINK else ()))
        )
        cls.prefixes = proper_prefixes(markers)
        cls.maxlen = max(map(len, markers)) if markers else 1

    def __init__(self, tools: list | None, prefix: str):
        self.tools = tools
        super().__init__()
        self.think_allowed = self.THINK  # a think block may still open the text
        self.section_open_pending = False  # the section opener waits for its first call's verdict
        self.section_silent = True  # the section's closer is protocol (its opener was consumed, or a
        # section without opener gave a call)
        self.section_implicit = False  # the section began at a bare call opener
        self.section_calls = 0
        self.in_block = False  # the buffer is kept from block_at (a fault surfaces it)
        self.block_at = 0
        self.call_open_at = -1  # the current call's opener (a later one cuts a fault's text)
        self.complete = None  # (name, arguments) of a call that only lacks its closer
        self.step = self._text
        if self.THINK:
            opened, closed = prefix.rfind(self.THINK_OPEN), prefix.rfind(self.THINK_CLOSE)
            if opened > closed or (opened == closed == -1 and self.REASONING_WITHOUT_PREFIX):
                self.step, self.think_allowed = self._think, False

    # ---- driving -----------------------------------------------------------------------------------

    def _compact(self) -> None:
        if not self.in_block and self.pos:
            self.buf, self.pos = self.buf[self.pos :], 0

    def _held_call(self) -> bool:
        return self.in_block

    def _at_end(self) -> None:
        if self.complete is not None and not self.buf[self.pos :].strip():
            self.pos = len(self.buf)
            self._accept(*self.complete)  # drift: the closer is missing at the end of the text
            return
        reason = "unterminated call" if self.call_open_at >= 0 else "tool-call section without a call"
        start = self.call_open_at + len(self.CALL_OPEN) if self.call_open_at >= 0 else self.block_at
        if any(m and self.buf.find(m, start) >= 0 for m in (self.CALL_OPEN, self.CALL_CLOSE, self.SECTION_CLOSE)):
            self._surface(len(self.buf), reason)  # a later marker: the call was malformed, not cut off
            return
        self._cut_off(self.buf[self.block_at :], reason)
        self.in_block, self.call_open_at, self.complete = False, -1, None
        self.pos, self.step = len(self.buf), self._text

    # ---- helpers for subclasses ------------------------------------------------------------------------

    def held_prefix(self, i: int, *markers: str) -> bool:
        """True when ``buf[i:]`` is a proper prefix of one of ``markers`` and more text may come."""
        rest = self.buf[i:]
        return not self.final and any(len(rest) < len(m) and m.startswith(rest) for m in markers)

    def skip_ws(self) -> int:
        """Offset of the first non-whitespace character at or after ``pos`` (``len(buf)`` when none)."""
        return skip(_WS, self.buf, self.pos)

    # ---- text outside calls ----------------------------------------------------------------------

    def _text(self) -> bool:
        markers: tuple[str, ...] = (self.SECTION_OPEN, self.CALL_OPEN)
        if self.think_allowed:
            markers += (self.THINK_OPEN, self.THINK_CLOSE)
        marker = self._scan(self._emit_content, markers)
        if marker in (self.THINK_OPEN, self.THINK_CLOSE):
            self.think_allowed = False
            if self.content.started:  # content came first (in this same scan): the marker is text
                self._emit_content(marker)
            elif marker == self.THINK_OPEN:
                self.step = self._think
            # else: a leading </think> closes an empty block
        elif marker == self.SECTION_OPEN:
            self._begin_section(self.pos - len(marker))
        elif marker == self.CALL_OPEN:  # drift: no section opener
            self._begin_bare_call(self.pos - len(marker))
        return marker is not None

    def _begin_bare_call(self, at: int) -> None:
        """A call opener outside a section (drift: the section opener is missing) starts an implicit section."""
        self.section_open_pending, self.section_silent, self.section_calls = False, False, 0
        self.section_implicit = True
        self._begin_call(at, at)

    def _think(self) -> bool:
        marker = self._scan(self._emit_reasoning, (self.THINK_CLOSE, self.SECTION_OPEN, self.CALL_OPEN))
        if marker is None:
            return False
        self.step = self._text
        if marker == self.SECTION_OPEN:  # the model went from thinking straight to its calls
            self._begin_section(self.pos - len(marker))
        elif marker == self.CALL_OPEN:  # ... without the section opener (drift)
            self._begin_bare_call(self.pos - len(marker))
        return True

    def _emit_content(self, text: str) -> None:
        if text and not text.isspace():
            self.think_allowed = False
        super()._emit_content(text)

    # ---- sections and calls ------------------------------------------------------------------------

    def _begin_section(self, at: int) -> None:
        self.think_allowed = False
        self.section_open_pending, self.section_silent, self.section_calls = True, False, 0
        self.section_implicit = False
        self.in_block, self.block_at, self.call_open_at = True, at, -1
        self.step = self._section_next

    def _begin_call(self, block_at: int, open_at: int) -> None:
        self.think_allowed = False
        self.in_block, self.block_at, self.call_open_at = True, block_at, open_at
        self.complete = None
        self.pos = open_at + len(self.CALL_OPEN)
        self.step = self._call_start

    def _call_start(self) -> bool:  # pragma: no cover - subclasses implement it
        raise NotImplementedError

    def _section_next(self) -> bool:
        """Inside a section: whitespace, then a call opener or the section closer. After a call, other text
        ends the section (drift) and is content."""
        buf = self.buf
        i = self.skip_ws()
        if i == len(buf):
            return False
        if buf.startswith(self.CALL_OPEN, i):
            first = self.section_open_pending
            self._begin_call(self.block_at if first else i, i)
            return True
        if buf.startswith(self.SECTION_CLOSE, i):
            self.pos = i + len(self.SECTION_CLOSE)
            if self.section_calls == 0:  # an empty section carries nothing
                self.diagnostics.append("empty tool-call section dropped")
                self._end_section()
                return True
            if not self.section_silent:  # its opener went to content with a faulty first call
                self._emit_content(self.SECTION_CLOSE)
            self._end_section()
            return True
        if self.held_prefix(i, self.CALL_OPEN, self.SECTION_CLOSE):
            return False
        if self.section_calls == 0:
            raise Malformed(i, "text in a tool-call section before its first call")
        self._end_section()  # drift: no closer; the text (from pos, whitespace included) is content
        return True

    def _end_section(self) -> None:
        self.in_block = False
        self.step = self._text

    def _accept(self, name: str, arguments: dict) -> None:
        self.events.append(("call", self.n_calls, name, json.dumps(arguments, ensure_ascii=False)))
        self.n_calls += 1
        self.section_calls += 1
        if self.section_open_pending or self.section_implicit:
            self.section_open_pending, self.section_silent = False, True
        self.in_block, self.call_open_at, self.complete = False, -1, None
        self.step = self._section_next

    def _surface(self, at: int, reason: str) -> None:
        """Give the block's raw text up to ``at`` (or to a later call opener, if sooner) to content; the rest
        is read by :meth:`_resync`."""
        if self.call_open_at >= 0:
            later = self.buf.find(self.CALL_OPEN, self.call_open_at + len(self.CALL_OPEN), at)
            if later >= 0:
                at = later
        raw = self.buf[self.block_at : at]
        self.diagnostics.append(f"malformed call surfaced as content ({reason}): {raw[:80]!r}")
        if self.section_open_pending:
            self.section_open_pending, self.section_silent = False, False
        self.in_block, self.call_open_at, self.complete = False, -1, None
        self.pos = at
        self._emit_content(raw)
        self.step = self._resync

    def _resync(self) -> bool:
        """After a fault: content up to the next call opener (a new call of the same section), the section
        closer (kept as content when the section's opener was) or a section opener."""
        marker = self._scan(self._emit_content, (self.CALL_OPEN, self.SECTION_CLOSE, self.SECTION_OPEN))
        if marker is None:
            return False
        at = self.pos - len(marker)
        if marker == self.CALL_OPEN:
            self._begin_call(at, at)
        elif marker == self.SECTION_CLOSE:
            if not self.section_silent:
                self._emit_content(marker)
            self._end_section()
        else:
            self.pos = at
            self._end_section()
        return True


class JsonCallReader(SectionReader):
    """Calls written ``CALL_OPEN HEAD SEP ARGS CALL_CLOSE`` with JSON ``ARGS`` (Kimi K2: the head is the call id;
    DeepSeek V3.1: the tool name).

    - The head runs to ``SEP``; any other marker of the format before it is a fault. :meth:`head_name` turns
      it into the tool name (None: a fault).
    - ``ARGS`` is one JSON object (drift: a JSON string holding one), found by its syntax (:class:`JsonExtent`),
      with any whitespace around it. Text that does not start a JSON value goes to :meth:`_args_other`.
    - Then ``CALL_CLOSE``; drift: a missing closer right before the next call opener, the section closer or
      the end of the text.
    """

    SEP = ""
    name: str | None  # the current call (set by _begin_call)
    args: dict | None
    extent: JsonExtent | None  # its arguments' JSON, while read

    def head_name(self, head: str, arguments: dict) -> str | None:
        return head.strip() or None

    def _begin_call(self, block_at: int, open_at: int) -> None:
        super()._begin_call(block_at, open_at)
        self.head, self.name, self.args, self.extent, self.fenced = "", None, None, None, False

    def _call_start(self) -> bool:
        """The head, up to the separator."""
        buf = self.buf
        i = buf.find("<", self.pos)
        while i != -1:
            if buf.startswith(self.SEP, i):
                self.head = buf[self.pos : i]
                self.pos = i + len(self.SEP)
                self.step = self._args_start
                return True
            marker = next((m for m in self.MARKERS + self.STOPS if buf.startswith(m, i)), None)
            if marker is not None:
                raise Malformed(i, f"{marker} before {self.SEP}")
            if self.held_prefix(i, *self.MARKERS, *self.STOPS):
                return False
            i = buf.find("<", i + 1)
        return False

    def _args_start(self) -> bool:
        i = self.skip_ws()
        if i == len(self.buf):
            return False
        if self.buf[i] in '{["':
            self.pos, self.extent, self.step = i, JsonExtent(i), self._args
            return True
        return self._args_other(i)

    def _args_other(self, i: int) -> bool:
        raise Malformed(i, "expected JSON arguments")

    def _args(self) -> bool:
        extent = self.extent
        assert extent is not None  # _args_start set it with this step
        done = extent.decoded(self.buf, "JSON arguments")
        if done is None:
            return False
        end, value = done
        args = object_arguments(value)
        if args is None:
            raise Malformed(end, "the arguments are not a JSON object")
        self.args, self.pos = args, end
        self.name = self.head_name(self.head, args)
        self.complete = (self.name, args) if self.name else None
        self.step = self._after_args
        return True

    def _after_args(self) -> bool:
        buf = self.buf
        i = self.skip_ws()
        if self.fenced:  # DeepSeek V3 drift: a closing code fence
            if buf.startswith("```", i):
                self.pos, self.fenced = i + 3, False
                i = self.skip_ws()
            elif self.held_prefix(i, "```"):
                return False
        if i == len(buf):
            return False
        if buf.startswith(self.CALL_CLOSE, i):
            end = i + len(self.CALL_CLOSE)
        elif buf.startswith(self.CALL_OPEN, i) or buf.startswith(self.SECTION_CLOSE, i):
            end = i  # drift: the call closer is missing
        elif self.held_prefix(i, self.CALL_CLOSE, self.CALL_OPEN, self.SECTION_CLOSE):
            return False
        elif self.final and any(m.startswith(buf[i:]) for m in (self.CALL_CLOSE, self.CALL_OPEN, self.SECTION_CLOSE)):
            end = len(buf)  # drift: the closer (or the next marker) cut off by the end of the text
        else:
            raise Malformed(i, f"expected {self.CALL_CLOSE} after the arguments")
        if not self.name:
            raise Malformed(end, f"no tool name in {self.head!r}")
        self.pos = end
        assert self.args is not None  # _args set it before making this the step
        self._accept(self.name, self.args)
        return True


class SectionParser(OwnParser):
    """Parser protocol implementation over a :class:`SectionReader` subclass (``READER``)."""

    READER: type[SectionReader] = SectionReader

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls.stops = cls.READER.STOPS

    def reader(self, tools: list | None, prefix: str, whole: bool) -> SectionReader:
        return self.READER(tools, prefix)

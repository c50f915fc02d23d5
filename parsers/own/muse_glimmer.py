"""The project's own Muse Glimmer tool-call parser: recipient-addressed messages read here, each ATEM block by the
reader of :mod:`parsers.own.qwen3_coder` with Muse's markers.

Format facts come from the real chat template (``muse-glimmer.jinja``, llama-cpp-python 0.3.36 sdist; see
:mod:`harness.formats.muse_glimmer` for the template lines). The prompt ends ``<|start|>assistant``, so the text
starts inside the first message header::

     to=self<|message|>REASONING<|eom|>
    <|start|>assistant to=user<|message|>PROSE<|eom|>
    <|start|>assistant to=NAME<|message|><atem:function_calls>
    <atem:invoke name="NAME">
    <atem:parameter name="KEY">VALUE</atem:parameter>
    </atem:invoke>
    </atem:function_calls><|eot|>

Reading rules:

- A message starts with a header: optional ``<|start|>assistant``, optional `` to=RECIPIENT`` (no whitespace or
  ``<`` in it), then ``<|message|>``; text at a message start that cannot become a header is a content message
  without one. A body ends at ``<|eom|>`` or ``<|eot|>`` (consumed) or (drift: its end marker missing) at the next
  ``<|start|>``.
- Recipient ``self``: reasoning; ``user`` or none: content (llama.cpp's parser reads both so). Bodies of one field
  are joined with ``\\n``; markup quoted inside a ``self`` or ``user`` body is text, never a call.
- Any other recipient addresses a tool: after whitespace its body is one ATEM block (``<atem:function_calls>``, or a
  bare ``<atem:invoke``), read as MiniMax-M2's block is (:mod:`parsers.own.minimax_m2`: a ``</atem:parameter>``
  ends a value only where the rest of the block parses, the first parse whose ``</atem:function_calls>`` is
  followed by ``<|eom|>``, ``<|eot|>``, ``<|start|>``, another block or the end wins; values typed by the tool's
  schema after the template's ``tojson`` fact). The call's name is the invoke's ``name``. Drift: stray
  ``</atem:function_calls>`` / ``</atem:invoke>`` before the block are dropped. A body that holds no block, or a
  malformed block, is surfaced: the message's raw text, header included, becomes content, with a diagnostic;
  text after a block in its message is content.
- A block or header cut off by the end of the text is dropped (its markup kept out of content), with a diagnostic;
  a malformed block is surfaced as content. A prefix ending in a whole header (``...<|start|>assistant
  to=self<|message|>``, llama.cpp's continued reasoning) starts the text in that message's body. Content and
  reasoning are stripped; a trailing ``<|eot|>`` is dropped.

Streaming: reasoning and content released as soon as they cannot start a marker, a header held until its
``<|message|>``, each block emitted whole once decided (at the marker after its closer).
"""

from __future__ import annotations

import re

from harness.formats import muse_glimmer as _fmt
from parsers.own._common import skip
from parsers.own.qwen3_coder import Dialect, XmlCallParser
from parsers.own.qwen3_coder import _Reader as _XmlReader

START, MESSAGE, EOM, EOT = _fmt.START, _fmt.MESSAGE, _fmt.EOM, _fmt.EOT
MUSE_GLIMMER = Dialect(
    _fmt.SPEC,
    _fmt.INVOKE_OPEN,
    '">',
    _fmt.INVOKE_CLOSE,
    _fmt.PARAMETER_OPEN,
    _fmt.PARAMETER_CLOSE,
    padded=False,
    tojson=True,
    block_ends=(EOM, EOT, START),
)
_NAME_LIMIT = 512
_HEADER = re.compile(  # [whitespace] [<|start|>assistant] [ to=RECIPIENT] <|message|>
    rf"[ \t\r\n]*(?:{re.escape(_fmt.ROLE)})?[ \t]*"
    rf"(?:{_fmt.RECIPIENT}([^\s<]{{1,{_NAME_LIMIT}}}))?[ \t]*{re.escape(MESSAGE)}"
)
_RECIPIENT_CHARS = re.compile(r"[^\s<]*")
_WS = re.compile(r"[ \t\r\n]*")
_STRAY = (_fmt.CALL_CLOSE, _fmt.INVOKE_CLOSE)  # closers a tool body may (drift) hold before its block


def _header_may_follow(rest: str) -> bool:
    """True when ``rest`` (the text at a message start, no ``<|message|>`` in it yet) can still become a header."""
    s = rest.lstrip(" \t\r\n")
    if len(s) < len(_fmt.ROLE) and _fmt.ROLE.startswith(s):
        return True
    s = s.removeprefix(_fmt.ROLE).lstrip(" \t")
    if s.startswith(_fmt.RECIPIENT):
        name = _RECIPIENT_CHARS.match(s, len(_fmt.RECIPIENT))
        assert name is not None  # the pattern matches the empty string
        if name.end() - len(_fmt.RECIPIENT) > _NAME_LIMIT:
            return False
        s = s[name.end() :].lstrip(" \t")
    elif _fmt.RECIPIENT.startswith(s):
        return True
    return MESSAGE.startswith(s)


class _Reader(_XmlReader):
    """The message reader; ``_call`` (a block) and the block search are :mod:`parsers.own.qwen3_coder`'s, which
    returns to ``_text``, here the rest of the current message. ``kind`` is the current body's field."""

    def __init__(self, tools: list | None, prefix: str):
        super().__init__(MUSE_GLIMMER, tools, "")
        self.kind, self.header = "content", ""
        self.step = self._header
        tail = prefix[prefix.rfind(START) :] if START in prefix else prefix
        header = _HEADER.fullmatch(tail) if tail.rstrip().endswith(MESSAGE) else None
        if header is not None:
            self._open(header.group(1))

    def _open(self, recipient: str | None) -> None:
        """Enter the body of a message to ``recipient``."""
        if recipient == _fmt.SELF:
            self.kind, self.step = "reasoning", self._text
            self.reasoning.sep()
        elif recipient in (None, _fmt.USER):
            self.kind, self.step = "content", self._text
            self.content.sep()
        else:
            self.kind, self.step = "content", self._tool_body

    def _emit_content(self, text: str) -> None:
        """Content; the raw header of a tool message whose block is surfaced comes first."""
        if self.header and text:
            self.content.sep()
            text, self.header = self.header + text, ""
        super()._emit_content(text)

    def _header(self) -> bool:
        buf, pos = self.buf, self.pos
        found = _HEADER.match(buf, pos)
        if found is not None:
            self.pos = found.end()
            self._open(found.group(1))
            if self.step == self._tool_body:
                self.header = buf[pos : self.pos]  # kept for a surfaced block, dropped once its call is read
            return True
        rest = buf[pos:]
        if not rest.strip() or (_header_may_follow(rest) and not self.final):
            if self.final:
                self.pos = len(buf)
            return False
        if _header_may_follow(rest) and (_fmt.RECIPIENT in rest or START in rest):
            self._cut_off(rest, "message header without <|message|>")
            self.pos = len(buf)
            return False
        self.kind, self.step = "content", self._text  # text without a header: a content message
        self.content.sep()
        lead = skip(_WS, buf, pos)
        if buf.startswith(START, lead):  # opening no assistant header: text (the body then moves past it)
            self.diagnostics.append(f"a {START} that opens no assistant message kept as content")
            self._emit_content(buf[pos : lead + len(START)])
            self.pos = lead + len(START)
        return True

    def _text(self) -> bool:
        """A reasoning or content body, or the rest of a tool message after its block, up to the message's end."""
        emit = self._emit_reasoning if self.kind == "reasoning" else self._emit_content
        marker = self._scan(emit, MUSE_GLIMMER.block_ends)
        if marker is None:
            return False
        if marker == START:  # drift: the end marker is missing; the next header starts here
            self.pos -= len(START)
        self.kind, self.step = "content", self._header
        return True

    def _tool_body(self) -> bool:
        """A message to a tool: whitespace (drift: stray block closers, dropped), then its ATEM block; other text
        surfaces the message as content."""
        d, buf = self.d, self.buf
        pos = skip(_WS, buf, self.pos)
        while (stray := next((m for m in _STRAY if buf.startswith(m, pos)), None)) is not None:
            pos = skip(_WS, buf, pos + len(stray))
        self.pos = pos
        if buf.startswith(d.call_open, pos) or buf.startswith(d.function_open, pos):
            self.call_at, self.bare, self.step = pos, not buf.startswith(d.call_open, pos), self._call
            return True
        if any(m.startswith(buf[pos:]) for m in (d.call_open, d.function_open, *_STRAY)):
            if not self.final:
                return False
            self._cut_off(self.header + buf[pos:], "a tool message cut off before its ATEM block")
            self.header, self.pos, self.step = "", len(buf), self._text
            return False
        self.diagnostics.append(f"a tool message without an ATEM block surfaced as content: {buf[pos : pos + 80]!r}")
        self.step = self._text
        return True

    def _call(self) -> bool:
        done = super()._call()
        if done:  # the block was decided: its calls read, cut off, or surfaced with the header
            self.header = ""
        return done


class MuseGlimmerParser(XmlCallParser):
    """The Muse Glimmer format (`` to=NAME<|message|><atem:function_calls>...`` messages)."""

    dialect = MUSE_GLIMMER
    limitations = (
        "A body holding ``<|eom|>``, ``<|eot|>`` or ``<|start|>`` as prose (reasoning or an answer that spells "
        "one) ends there: the template has no escape for them. Recipients with whitespace or ``<`` cannot be read.",
        'A value holding ``</atem:parameter>`` followed by whitespace and ``<atem:parameter name="`` (or a whole '
        "block end followed by ``<|eom|>``) is cut there when the rest parses. Typing: under a schema that "
        'allows both, the string ``"null"`` and null, ``"true"`` and true, ``"5"`` and 5 are written alike and '
        "read as the non-string.",
        "The recipient of a tool message is not checked against the invoke's name (the call takes the invoke's).",
    )

    def reader(self, tools: list | None, prefix: str, whole: bool) -> _Reader:
        return _Reader(tools, prefix)


PARSERS = [MuseGlimmerParser]  # registry entry (see harness/parse/registry.py)

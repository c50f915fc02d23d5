"""The project's own Command R+ tool-call parser: one incremental reader for one-shot and streaming use.

Format facts: :mod:`harness.formats.command_r` (``CohereForAI-c4ai-command-r-plus-tool_use.jinja`` in the
llama-cpp-python 0.3.36 sdist): the trimmed content, then ``\\nAction:\\n```json\\n[CALL, ...]```\\n`` with each CALL
``{"tool_name": "NAME", "parameters": {...}}``; ``<|END_OF_TURN_TOKEN|>`` ends generation.

Reading rules:

- A block opens at ``Action:`` followed (after optional whitespace) by a code fence ```` ``` ```` with an optional
  ``json`` tag; ``Action:`` followed by anything else is prose. After optional whitespace comes a JSON array, read
  to its ``]`` by its syntax and checked element by element as the Cohere reader does
  (:mod:`parsers.own.cohere`: each element an object with a string ``tool_name`` and object ``parameters``, drift:
  a JSON string holding one); then optional whitespace and the closing fence. Drift recovered: the fence missing
  at the end of the text (or cut off there) or before the next ``Action:``.
- A block cut off by the end of the text (nothing wrong in it so far, no later ``Action:``) is dropped with a
  diagnostic, the prose before it kept (:mod:`parsers.own._base`); this includes an ``Action:`` that ends the
  text. Anything else in a block (no ``[`` after the fence, an element that is not a call, text after the array)
  is *surfaced*: the block's raw text up to the fault becomes content, with a diagnostic, and reading goes on.
- Content is the text outside the blocks, stripped of surrounding whitespace (``None`` when empty);
  ``<|CHATBOT_TOKEN|>`` is dropped wherever it stands (llama.cpp reads content as wrapped in it); a trailing
  ``<|END_OF_TURN_TOKEN|>`` is dropped, elsewhere it is text. No reasoning; ``prefix`` is accepted for the
  protocol (the template pre-fills nothing).

Streaming: content is released as soon as it cannot be the start of ``Action:`` or a marker; a block is held
until it is decided, then its calls are emitted whole, so streaming equals one-shot for any chunking.
"""

from __future__ import annotations

import re

from harness.formats.command_r import ACTION, CHATBOT, FENCE, SPEC
from parsers.own._base import OwnParser, proper_prefixes
from parsers.own._common import JsonExtent, Malformed, skip
from parsers.own.cohere import _Reader as _ActionListReader

_STOPS = SPEC.stop_markers
_READ = (ACTION, *(m for m in SPEC.markers if m.startswith("<")))  # what the reader holds back while streaming
_WS = re.compile(r"[ \t\n\r]*")
_TAG = "json"


class CommandRParser(OwnParser):
    """Parser protocol implementation for Command R+ ``Action:`` code blocks (see the module docstring).

    ``tools`` and ``prefix`` are accepted for the protocol: the JSON carries its types."""

    name = "toolcall-harness:command_r"
    formats = ("command_r",)
    stops = _STOPS
    limitations = (
        "Action: is plain text: prose that writes Action: and a code fence opens a call block (surfaced back as "
        "content with a diagnostic when it holds no list of calls), and an Action: that ends the text is dropped "
        "as a cut-off opener.",
        "A call to the directly-answer tool the template's instruction names (its way to answer without tools) is "
        "returned as a call, as llama.cpp returns it.",
        "Text after the action block is content, although the template never writes any.",
    )

    def reader(self, tools: list | None, prefix: str, whole: bool) -> _Reader:
        return _Reader()


class _Reader(_ActionListReader):
    """The Cohere action-list reader (list, elements, acceptance, compaction) with Command R+'s delimiters: a block
    opens at ``Action:`` and its list is closed by the code fence. ``call_close`` is empty: the opener's own
    fence must not read as a closer when a block is cut off."""

    prefixes, maxlen = proper_prefixes(_READ), max(map(len, _READ))
    text_stop = re.compile(r"[A<]")
    call_open, call_close, list_close = ACTION, "", FENCE

    def __init__(self) -> None:
        super().__init__("")
        self.think_allowed = False

    def _text(self) -> bool:
        marker = self._scan(self._emit_content, (ACTION, CHATBOT))
        if marker == ACTION:
            self._begin_call()
        return marker is not None  # <|CHATBOT_TOKEN|>: markup, dropped

    def _call_start(self) -> bool:
        """After ``Action:``: whitespace, the fence (else prose), an optional ``json`` tag, whitespace, ``[``."""
        buf = self.buf
        pos = skip(_WS, buf, self.pos)
        tag = pos + len(FENCE)
        if not buf.startswith(FENCE, pos):
            return False if FENCE.startswith(buf[pos:]) else self._prose()  # more text, or cut off (dropped)
        if len(buf) < tag + len(_TAG) and _TAG.startswith(buf[tag:]):
            return False
        start = skip(_WS, buf, tag + len(_TAG) if buf.startswith(_TAG, tag) else tag)
        if start == len(buf):
            return False
        if buf[start] != "[":
            raise Malformed(start, "expected a JSON list of calls in the Action: code block")
        self.pos = start
        self.extent = JsonExtent(start, "the action list")
        self.step = self._list
        return True

    def _prose(self) -> bool:
        """``Action:`` with no code fence after it: the word is content, and reading goes on after it."""
        end = self.call_at + len(ACTION)
        self._reset_call()
        self.pos = end
        self._emit_content(ACTION)
        self.step = self._text
        return True


PARSERS = [CommandRParser]  # registry entry (see harness/parse/registry.py)

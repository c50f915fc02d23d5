"""Seed 004's two SGLang Gemma 4 behaviours, as candidate parsers: before (``SGLangMainGemma4``) and after
(``SGLangFixGemma4``) its fix for protocol markers leaking into ``message.content``.

Reproductions of the behaviour ``shared/seeds/004_24c1da59bf3fbd65.txt`` describes, not SGLang's code: the calls
are read by the project's own Gemma 4 parser (:mod:`parsers.own.gemma4`); what these classes add is where SGLang
puts the text around them.

One-shot (``FunctionCallParser.parse_non_stream`` over ``Gemma4Detector.detect_and_parse``):

- no call parsed: main re-surfaces the whole text as content; the fix runs it through ``scrub_markup``, which cuts
  at ``<|tool_call`` (the prefix the opener stabilises on), so a partial, truncated or malformed opener and
  everything after it are gone, prose after an unparseable block included (the PR's stated trade-off);
- calls parsed: content is the text before the first ``<|tool_call>`` plus the tail after the last
  ``<tool_call|>``; main appends the tail verbatim (a trailing ``<|tool_call`` stays), the fix scrubs it.
- The closer ``<tool_call|>`` is not scrubbed one-shot (the PR's known gap 2: ``'All done.<tool_call|>'``).

Streaming (the same in both but at the end): text is released per chunk except a tail that may still become
``<|tool_call>``; from a whole ``<|tool_call>`` on, everything is held to the end and read as one-shot (no call
parsed: nothing more is released, in both, as the PR's table says). At the end, held text that never became an
opener is released verbatim by main (``finish_streaming``'s ``bot_token in residual`` guard cannot see it) and
scrubbed by the fix. A partial opener followed by more text in a later chunk is released in both: the PR's known
gap 1 (``['Hi.', '<|tool_call', ' oops more text']`` -> ``'Hi.<|tool_call oops more text'``).

``SGLangUnparsedBlock(fmt)``: the other detectors the PR's pinning tests cover (``qwen25``, ``mistral``,
``deepseekv32``, ``minimax``): ``scrub_markup`` is the identity there, so main and the fix both surface the whole
text when no call parses (the own parser of the format reads the calls).
"""

from __future__ import annotations

from harness.core.messages import Message
from harness.core.protocol import BufferedStream, Delta, message_to_deltas
from harness.formats.gemma4 import CALL_CLOSE, CALL_OPEN
from harness.parse.registry import get_parser
from parsers.own.gemma4 import Gemma4Parser

OPENER_PREFIX = CALL_OPEN[:-1]  # "<|tool_call": where the fix's Gemma4Detector.scrub_markup cuts
_OWN = Gemma4Parser()


def _identity(text: str) -> str:
    return text


def _scrub(text: str) -> str:
    """The fix's ``Gemma4Detector.scrub_markup``: the text cut at ``<|tool_call``."""
    at = text.find(OPENER_PREFIX)
    return text if at < 0 else text[:at]


def _partial_opener(text: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``<|tool_call>``."""
    return next((k for k in range(min(len(text), len(CALL_OPEN) - 1), 0, -1) if CALL_OPEN.startswith(text[-k:])), 0)


class SGLangMainGemma4:
    """SGLang main before the fix (module docstring); ``scrub`` is the identity."""

    name = "candidate:sglang-main-gemma4"
    library, version, formats, incremental = "seed-004-candidate", "main", ("gemma4",), True
    scrub = staticmethod(_identity)

    def parse(self, text: str, tools: list | None = None, prefix: str = "") -> Message:
        calls = _OWN.parse(text, tools, prefix).tool_calls
        if not calls:
            return Message(content=self.scrub(text).strip() or None)
        head, last = text[: text.find(CALL_OPEN)], text.rfind(CALL_CLOSE)
        tail = text[last + len(CALL_CLOSE) :] if last >= 0 else ""
        return Message(content=(head.strip() + self.scrub(tail)).strip() or None, tool_calls=calls)

    def stream(self, tools: list | None = None, prefix: str = "") -> _Stream:
        return _Stream(self, tools, prefix)


class SGLangFixGemma4(SGLangMainGemma4):
    """SGLang with the fix (module docstring): ``scrub_markup`` cuts at ``<|tool_call``."""

    name, version = "candidate:sglang-fix-gemma4", "fix"
    scrub = staticmethod(_scrub)


class _Stream:
    """``parse_streaming_increment`` + ``finish_streaming`` as the module docstring describes them."""

    def __init__(self, parser: SGLangMainGemma4, tools: list | None, prefix: str):
        self.parser, self.tools, self.prefix = parser, tools, prefix
        self.buf, self.held, self.in_call = "", "", False

    def feed(self, chunk: str, token_ids: list[int] | None = None) -> list[Delta]:
        if self.in_call:
            self.held += chunk
            return []
        self.buf += chunk
        at = self.buf.find(CALL_OPEN)
        if at >= 0:
            out, self.held, self.buf, self.in_call = self.buf[:at], self.buf[at:], "", True
        else:
            keep = _partial_opener(self.buf)
            out, self.buf = self.buf[: len(self.buf) - keep], self.buf[len(self.buf) - keep :]
        return [Delta(content=out)] if out else []

    def finish(self) -> list[Delta]:
        if not self.in_call:
            rest = self.parser.scrub(self.buf)
            return [Delta(content=rest)] if rest else []
        message = self.parser.parse(self.held, self.tools, self.prefix)
        if not message.tool_calls:
            return []  # an unparseable block is dropped when streamed, by main and the fix alike
        return message_to_deltas(message)


class SGLangUnparsedBlock:
    """Main and the fix on a format whose ``scrub_markup`` is the identity: the whole text when no call parses."""

    library, version, incremental = "seed-004-candidate", "main+fix", False

    def __init__(self, fmt: str):
        self.own = get_parser(f"toolcall-harness:{fmt}", fmt)
        self.name, self.formats = f"candidate:sglang-{fmt}", (fmt,)

    def parse(self, text: str, tools: list | None = None, prefix: str = "") -> Message:
        message = self.own.parse(text, tools, prefix)
        return message if message.tool_calls else Message(content=text.strip() or None)

    def stream(self, tools: list | None = None, prefix: str = "") -> BufferedStream:
        return BufferedStream(self, tools, prefix)

"""The project's own Hermes JSON tool-call parser: one incremental reader for one-shot and streaming use.

Format facts come from the real chat templates (llama-cpp-python 0.3.36 sdist, ``vendor/llama.cpp/models/
templates``; see :mod:`harness.formats.hermes`):

- ``NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja`` writes each call as
  ``<tool_call>\\n{"name": "NAME", "arguments": ARGS}\\n</tool_call>`` right after ``<|im_start|>assistant``
  and drops the message content of a turn with calls;
- ``Qwen-Qwen2.5-7B-Instruct.jinja`` writes the content first, then ``\\n<tool_call>\\n{...}\\n</tool_call>``
  per call;
- ``Qwen-Qwen3-0.6B.jinja`` does the same after an optional ``<think>\\nREASONING\\n</think>\\n\\n`` block, and
  with thinking off pre-fills ``<think>\\n\\n</think>\\n\\n`` in the prompt;
- ``ibm-granite-granite-4.0.jinja`` / ``ibm-granite-granite-4.1.jinja`` write the content, then each call after a
  ``\\n`` (none before a first call without content), in Granite turns, and no reasoning.

``ARGS`` is ``tojson`` of the arguments (transformers' ``tojson``: ``json.dumps`` without HTML escaping, non-ASCII
kept), so a string value may hold a literal ``</tool_call>``; ``<|im_end|>`` (or ``<|endoftext|>``; Granite's
``<|end_of_text|>``) ends generation.

Reading rules:

- A call starts at ``<tool_call>``. After optional whitespace comes a JSON value; its end is found by
  scanning JSON syntax (strings, escapes, nesting), never by searching for ``</tool_call>``, so the closer
  inside a string value is data. The value is then decoded with :func:`json.loads` (``NaN``, ``Infinity``
  and numbers beyond the double range are rejected: they are not JSON).
- A call object is ``{"name": str, "arguments": ARGS}``. Drift recovered: ``"parameters"`` instead of
  ``"arguments"``; ``ARGS`` written as a JSON-encoded string holding an object; ``ARGS`` missing or ``null``
  (a call without arguments); the OpenAI envelope ``{"type": "function", "function": {"name", "arguments"}}``;
  several call objects (or a JSON array of them) inside one ``<tool_call>`` block; any whitespace (or none)
  around the JSON; a missing ``</tool_call>`` when only whitespace follows the JSON up to the end of the text
  or the next ``<tool_call>``, or a part of it (or of the next ``<tool_call>``) cut off by the end of the text.
- A call cut off by the end of the text (unterminated JSON, a lone ``<tool_call>``, no later ``<tool_call>`` in
  it) is dropped with a diagnostic, its markup kept out of content (:mod:`parsers.own._base`); call objects of
  the same block read whole before it are kept.
- Everything else (invalid JSON, JSON that is not a call, text after the JSON) is *surfaced*: the block's raw
  text, from ``<tool_call>`` up to the fault (or up to a later ``<tool_call>`` when that comes first), becomes
  content, then content runs to the next ``</tool_call>`` (kept) or ``<tool_call>``; a diagnostic names the
  fault. Prose is never dropped.
- Reasoning: a ``<think>...</think>`` block at the start of the text (only whitespace before it) is
  reasoning; a prefix that leaves ``<think>`` open starts the text in reasoning. Inside reasoning only
  ``</think>`` ends it (a call written inside thinking stays reasoning text, as Qwen's reasoning parsers in
  vLLM and SGLang read it); an unclosed block at the end is all reasoning. ``<think>`` anywhere else is
  content.
- Content is the text outside calls and reasoning, concatenated and stripped of surrounding whitespace;
  reasoning likewise (``None`` when empty). Trailing stop markers are dropped; elsewhere they are text.

Streaming: content and reasoning are released as soon as they cannot be the start of a marker (a trailing
proper prefix of any marker of the format is held back). Each ``<tool_call>`` block is held until it is
decided -- at its ``</tool_call>``, at the next ``<tool_call>`` or at the end -- and then emitted whole (name
and arguments JSON per call), so streaming equals one-shot for any chunking, malformed input included:
nothing emitted ever needs retracting.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from harness.formats import FormatSpec
from harness.formats.hermes import CALL_CLOSE, CALL_OPEN, SPEC
from parsers.own._base import OwnParser, ThinkBlockReader, proper_prefixes
from parsers.own._common import JsonExtent, Malformed, skip
from parsers.own._common import finite_float as _finite_float
from parsers.own._common import reject_constant as _reject_constant

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"  # Qwen-Qwen3-0.6B.jinja

_STOPS = SPEC.stop_markers
_MARKERS = tuple(dict.fromkeys(SPEC.markers + _STOPS + (THINK_OPEN, THINK_CLOSE)))
_PREFIXES, _MAXLEN = proper_prefixes(_MARKERS), max(map(len, _MARKERS))

_JSON_WS = re.compile(r"[ \t\n\r]*")


class HermesParser(OwnParser):
    """Parser protocol implementation for the Hermes JSON format (see the module docstring for the rules).

    ``tools`` is accepted for the protocol; the format is self-describing JSON, so it is not needed."""

    name = "toolcall-harness:hermes"
    formats: tuple[str, ...] = ("hermes",)
    stops: tuple[str, ...] = _STOPS
    limitations: tuple[str, ...] = (
        "Arguments that are not a JSON object (a JSON-encoded string is decoded first) leave the call surfaced as "
        "content; Python-literal arguments (``{'a': True}``) are not read.",
        "A call written inside ``<think>`` stays reasoning text, as Qwen's reasoning parsers read it.",
    )

    READER: type[HermesReader]  # set below (the reader class is defined after the parser)

    def reader(self, tools: list | None, prefix: str, whole: bool) -> HermesReader:
        return self.READER(prefix)


class HermesReader(ThinkBlockReader):
    """Incremental reader of Hermes completions. ``push(text)`` / ``finish()`` return events:
    ``("content"|"reasoning", text)`` and ``("call", index, name, arguments_json)``.

    ``step`` is the handler of the current state; it returns True when it made progress and False when it
    needs more text. Call-state handlers raise :class:`Malformed`, which surfaces the block as content.
    Inside a block the buffer keeps the block's raw text from ``<tool_call>`` (``call_at``) on. The text,
    ``<think>`` block, surfacing and resync are :class:`~parsers.own._base.ThinkBlockReader`'s.
    """

    prefixes, maxlen = _PREFIXES, _MAXLEN
    call_open, call_close = CALL_OPEN, CALL_CLOSE
    think_open, think_close = THINK_OPEN, THINK_CLOSE

    @classmethod
    def for_spec(cls, spec: FormatSpec) -> type[HermesReader]:
        """This reader with the block and reasoning markers of another JSON-in-tags format (Apriel,
        Nemotron-Nano-v2, Apertus): ``spec.call`` around the JSON, ``spec.reasoning`` (else ``spec.thought``, else
        ``<think>``)."""
        think = spec.reasoning_markers or spec.thought_markers or (THINK_OPEN, THINK_CLOSE)
        markers = tuple(dict.fromkeys(spec.markers + spec.stop_markers + think))
        attrs: dict = {"prefixes": proper_prefixes(markers), "maxlen": max(map(len, markers))}
        attrs["text_stop"] = re.compile("[" + re.escape("".join(sorted({m[0] for m in markers}))) + "]")
        attrs |= {"call_open": spec.call_open, "call_close": spec.call_close}
        attrs |= {"think_open": think[0], "think_close": think[1]}
        return type(f"{spec.name}Reader", (cls,), attrs)

    def __init__(self, prefix: str):
        super().__init__()
        self.step = self._text
        self.think_allowed = True  # a <think> block may still open the text
        self._reset_call()
        i = prefix.rfind(self.think_open)
        if i >= 0 and self.think_close not in prefix[i:]:  # the prompt pre-filled an open <think>
            self.step, self.think_allowed = self._think, False

    # ---- driving -----------------------------------------------------------------------------------

    def _at_end(self) -> None:
        if self.step == self._after_value and self.pos == len(self.buf):
            self._accept()  # drift: </tool_call> is missing at the end of the text
        else:
            self._drop_at_end("unterminated call")

    def _compact(self) -> None:
        """Drop consumed text (inside a block, only what precedes its ``<tool_call>``)."""
        cut = self.call_at if self.in_call else self.pos
        if cut:
            self.buf, self.pos = self.buf[cut:], self.pos - cut
            if self.in_call:
                self.call_at = 0
                if self.json is not None:
                    self.json.shift(cut)

    # ---- calls ---------------------------------------------------------------------------------

    def _reset_call(self) -> None:
        self.in_call = False
        self.call_at = 0  # buffer offset of the block's <tool_call>
        self.json: JsonExtent | None = None  # the JSON value being read
        self.pending: list[tuple[str, dict]] = []  # calls read in this block, emitted when it is accepted

    def _accept(self) -> None:
        self._keep_read_calls()
        self._reset_call()
        self.step = self._text

    def _keep_read_calls(self) -> None:
        for name, arguments in self.pending:
            self.events.append(("call", self.n_calls, name, json.dumps(arguments, ensure_ascii=False)))
            self.n_calls += 1
        self.pending = []

    def _call_start(self) -> bool:
        """After ``<tool_call>`` (or between values of one block): whitespace, then ``{`` or ``[``."""
        pos = self.pos = skip(_JSON_WS, self.buf, self.pos)
        if pos == len(self.buf):
            return False
        if self.buf[pos] not in "{[":
            raise Malformed(pos, f"expected a JSON object after {self.call_open}")
        self.json = JsonExtent(pos, "the call's JSON")
        self.step = self._value
        return True

    def _value(self) -> bool:
        """Find the end of the JSON value by its syntax (resumable), then decode it."""
        extent = self.json
        assert extent is not None  # _call_start set it with this step
        end = extent.advance(self.buf)
        if end is None:
            return False
        self.pending += _calls(self.buf[extent.start : end], end, self.call_object)
        self.pos = end
        self.step = self._after_value
        return True

    def call_object(self, obj) -> tuple[str, dict] | None:
        """``(name, arguments)`` of one decoded call object, or None when it is not one (the module docstring's
        ``{"name", "arguments"}`` rules; a format whose objects differ overrides this)."""
        return _call(obj)

    def _after_value(self) -> bool:
        """After a JSON value: ``</tool_call>``, another value, or (drift) the next ``<tool_call>``."""
        buf = self.buf
        pos = self.pos = skip(_JSON_WS, buf, self.pos)
        if pos == len(buf):
            return False
        if buf.startswith(self.call_close, pos):
            self.pos += len(self.call_close)
            self._accept()
            return True
        if buf.startswith(self.call_open, pos):  # drift: the closer is missing before the next call
            self._accept()
            return True
        if buf[pos] in "{[":
            self.step = self._call_start
            return True
        rest = buf[pos : pos + self.maxlen]
        if self.call_close.startswith(rest) or self.call_open.startswith(rest):
            if not self.final:
                return False
            self.pos = len(buf)  # drift: the closer (or the next opener) cut off by the end of the text
            self._accept()
            return True
        raise Malformed(pos, f"expected {self.call_close} after the call's JSON")


def _decode(text: str):
    """Strict JSON: no NaN/Infinity, no number that overflows a double."""
    return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)


def _calls(text: str, end: int, call_object: Callable[[object], tuple[str, dict] | None]) -> list[tuple[str, dict]]:
    """The calls one JSON value holds: a call object (read by ``call_object``) or a non-empty array of them.
    Raises :class:`Malformed` at ``end`` (the value's end) for invalid JSON or JSON that is not a call."""
    try:
        value = _decode(text)
    except (ValueError, RecursionError) as exc:
        raise Malformed(end, f"invalid JSON: {exc}") from None
    items = value if isinstance(value, list) else [value]
    calls = [call_object(item) for item in items]
    found = [call for call in calls if call is not None]
    if not found or len(found) < len(calls):
        raise Malformed(end, "JSON that is not a tool call")
    return found


def _call(obj) -> tuple[str, dict] | None:
    """``(name, arguments)`` of one call object, or None when it is not one (see the module docstring)."""
    if not isinstance(obj, dict):
        return None
    if "name" not in obj and isinstance(obj.get("function"), dict):  # OpenAI envelope
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return None
    args = obj["arguments"] if "arguments" in obj else obj.get("parameters")
    if isinstance(args, str):  # arguments JSON-encoded as a string
        try:
            args = _decode(args)
        except (ValueError, RecursionError):
            return None
    if args is None:
        args = {}
    return (name, args) if isinstance(args, dict) else None


HermesParser.READER = HermesReader

PARSERS = [HermesParser]  # registry entry (see harness/parse/registry.py)

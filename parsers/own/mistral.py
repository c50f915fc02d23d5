"""The project's own Mistral tool-call parser (``[TOOL_CALLS]``): one incremental reader for one-shot and
streaming use.

Format facts come from the real chat templates (llama-cpp-python 0.3.36 sdist, ``vendor/llama.cpp/models/
templates``; see :mod:`harness.formats.mistral`):

- ``Mistral-Small-3.2-24B-Instruct-2506.jinja`` writes each call ``[TOOL_CALLS]NAME[CALL_ID]ID[ARGS]ARGS``
  (``ID``: 9 characters, or the template raises), drops the turn's content, and ends with ``</s>``;
- ``unsloth-mistral-Devstral-Small-2507.jinja`` writes the content first, then ``[TOOL_CALLS]NAME[ARGS]ARGS``
  per call, then ``</s>``;
- Magistral Small 2506 (no template in the sdist; its model card and mistral-common's v11 template generator)
  starts its turn with plain-text ``<think>REASONING</think>``, then content and calls;
- ``ARGS`` is ``tojson`` of the arguments (``json.dumps``, non-ASCII kept), so a string value may hold
  ``[TOOL_CALLS]``, ``[ARGS]`` or ``</s>`` literally.

Reading rules:

- A call starts at ``[TOOL_CALLS]``. Then, after optional whitespace, either
  - ``NAME`` (a run of characters other than whitespace, ``[``, ``]``, ``{``, ``}`` and ``"``), optionally
    ``[CALL_ID]ID`` (``ID`` a run of the same characters, possibly empty), then ``[ARGS]`` and a JSON object:
    one call. ``ID`` is passed on as the streamed tool call's ``id``. Drift recovered: ``[ARGS]`` missing
    (``NAME{...}``), whitespace between ``[ARGS]`` and the object; or
  - a JSON array of call objects, or one call object (the older format, Mistral 7B v0.3 / Nemo):
    ``{"name": str, "arguments": ARGS}`` (``"parameters"`` accepted too; ``ARGS`` an object or a JSON string
    holding one; an optional string ``"id"``, passed on).
- The JSON's end is found by scanning its syntax (strings, escapes, nesting), never by searching for the next
  marker, so marker text inside a string value is data; it is then decoded with :func:`json.loads` (``NaN``,
  ``Infinity`` and numbers beyond the double range are not JSON).
- A call cut off by the end of the text (its JSON unterminated, or nothing after ``[TOOL_CALLS]``; no later
  ``[TOOL_CALLS]`` in it) is dropped with a diagnostic, its markup kept out of content (:mod:`parsers.own._base`).
- Anything else (no name, an unknown marker after the name, invalid JSON, arguments that are not an object)
  is *surfaced*: the raw text from ``[TOOL_CALLS]`` up to the fault (or up to a later ``[TOOL_CALLS]`` when that
  comes first) becomes content, with a diagnostic, and reading goes on from there. Prose is never dropped.
- Content is the text outside calls (before, between and after them), concatenated and stripped of
  surrounding whitespace (``None`` when empty). Trailing ``</s>`` is dropped; elsewhere it is text.
- Reasoning: a ``<think>`` ... ``</think>`` block at the start of the text (whitespace before it at most) is
  reasoning, stripped; ``<think>`` after other text or a call is content; inside the block only ``</think>`` ends
  it (a ``[TOOL_CALLS]`` there is reasoning text); a block the end of the text cuts off is reasoning up to the
  end; a prefix whose last ``<think>`` is not closed starts the text in reasoning
  (:class:`MistralThinkReader`, shared with :mod:`parsers.own.mistral_reasoning`, whose block is ``[THINK]``).

Streaming: content is released as soon as it cannot be the start of a marker (a trailing proper prefix of any
marker of the format or of the reasoning block's, such as ``[``, ``[TOOL`` or ``<thi``, is held back). Each call
is held from ``[TOOL_CALLS]`` until its JSON closes and is then emitted whole (name, arguments JSON and id), so
streaming equals one-shot for any chunking, malformed input included: nothing emitted ever needs retracting.
"""

from __future__ import annotations

import json
import re

from harness.formats.mistral import ARGS, CALL_ID, SPEC, THINK_CLOSE, THINK_OPEN, TOOL_CALLS
from parsers.own._base import BlockReader, OwnParser, ThinkBlockReader, proper_prefixes
from parsers.own._common import JsonExtent, Malformed, object_arguments, skip
from parsers.own.llama3_json import NESTED_TOO_DEEP

_STOPS = SPEC.stop_markers
_MARKERS = tuple(dict.fromkeys(SPEC.markers + _STOPS + SPEC.thought_markers))
_PREFIXES, _MAXLEN = proper_prefixes(_MARKERS), max(map(len, _MARKERS))

_WS = re.compile(r"[ \t\n\r]*")
_WORD = re.compile(r'[^\s\[\]{}"]*')
_TEXT_STOP = re.compile(r"[\[<]")
_COMPACT_AT = 4096


class MistralParser(OwnParser):
    """Parser protocol implementation for Mistral ``[TOOL_CALLS]`` calls (see the module docstring).

    ``tools`` is accepted for the protocol: the JSON carries its types. ``prefix`` (the templates pre-fill
    nothing) matters only when it leaves a ``<think>`` open."""

    name = "toolcall-harness:mistral"
    formats = ("mistral",)
    limitations = (
        "The one-shot :class:`~harness.core.messages.Message` has no place for call ids: the ``[CALL_ID]`` "
        '(or old-format ``"id"``) is returned only on streamed deltas (``ToolCallDelta.id``).',
        "``[THINK]...[/THINK]`` reasoning (Magistral 2507 and later) is not read: it stays content (the "
        "``mistral_reasoning`` format reads it); only Magistral Small 2506's plain-text ``<think>`` is.",
        "A ``[TOOL_CALLS]`` inside an unclosed ``<think>`` block stays reasoning text (as llama.cpp reads one inside "
        "``[THINK]``); vLLM 0.33's mistral parser ends the reasoning there and reads the call.",
        "Parallel calls written without a ``[TOOL_CALLS]`` before each "
        "(``[TOOL_CALLS]a[ARGS]{}b[ARGS]{}``) give the first call; the rest is surfaced as content.",
    )
    stops = _STOPS

    def reader(self, tools: list | None, prefix: str, whole: bool) -> MistralReader:
        return _Reader(prefix)


class MistralReader(BlockReader):
    """Incremental reader. ``push(text)`` / ``finish()`` return events (see
    :func:`parsers.own._base.deltas_from_events`).

    ``step`` is the handler of the current state; it returns True when it made progress and False when it
    needs more text. Call-state handlers raise :class:`Malformed`, which surfaces the call as content (once
    :meth:`_faulted` may). Inside a call the buffer keeps its raw text from ``[TOOL_CALLS]`` (``call_at``) on.
    The format has no call closer: after a surfaced call the text reads on (:class:`~parsers.own._base.BlockReader`).
    """

    prefixes, maxlen = _PREFIXES, _MAXLEN
    text_stop = _TEXT_STOP
    call_open = TOOL_CALLS

    def __init__(self):
        super().__init__()
        self.step = self._text
        self._reset_call()

    def _reset_call(self) -> None:
        self.in_call = False
        self.call_at = 0  # buffer offset of the call's [TOOL_CALLS]
        self.name_at = 0
        self.name = ""
        self.call_id: str | None = None
        self.json: JsonExtent | None = None
        self.fault: tuple[int, str] = (0, "")

    # ---- driving ---------------------------------------------------------------------------------

    def _compact(self) -> None:
        if not self.in_call and self.pos >= _COMPACT_AT:
            self.buf, self.pos = self.buf[self.pos :], 0

    def _at_end(self) -> None:
        self._drop_at_end("unterminated call")

    def _surface(self, at: int, reason: str) -> None:
        """A fault at ``at``: :meth:`_faulted` surfaces the call once it may."""
        self.fault = (at, reason)
        self.step = self._faulted

    # ---- text outside calls ----------------------------------------------------------------------

    def _text(self) -> bool:
        if self._scan(self._emit_content, (TOOL_CALLS,)) is None:
            return False
        self._begin_call()
        return True

    def _faulted(self) -> bool:
        """The call broke the rules at ``fault``: surface it, once no later ``[TOOL_CALLS]`` can still be
        arriving at or before the fault (its characters may be what broke the rules: ``[TOOL_CALLS][TOOL_CALLS]``
        faults at the second one's ``T``), so the cut never depends on how the text was chunked."""
        at, reason = self.fault
        buf, n = self.buf, len(TOOL_CALLS)
        if not self.final:
            for p in range(max(self.call_at + n, at - n + 1), min(at + 1, len(buf))):
                if len(buf) - p < n and TOOL_CALLS.startswith(buf[p:]):
                    return False
        super()._surface(at, reason)
        return True

    # ---- calls ---------------------------------------------------------------------------------

    def _call_start(self) -> bool:
        """After ``[TOOL_CALLS]``: a tool name, or JSON (the older format)."""
        j = self.pos = skip(_WS, self.buf, self.pos)
        if j == len(self.buf):
            return False
        if self.buf[j] in "[{":  # the older format; a marker here ([ARGS]: no name) fails the JSON scan
            self.json = JsonExtent(j)
            self.step = self._old_json
            return True
        self.name_at = j
        self.step = self._name
        return True

    def _word(self, at: int) -> int | None:
        """End of the name/id run starting at ``at``; None when it may continue past the buffer."""
        end = skip(_WORD, self.buf, at)
        return None if end == len(self.buf) and not self.final else end

    def _name(self) -> bool:
        end = self._word(self.name_at)
        if end is None:
            return False
        if end == self.name_at:
            raise Malformed(end, "no tool name after [TOOL_CALLS]")
        self.name = self.buf[self.name_at : end]
        return self._after_word(end, allow_id=True)

    def _id(self) -> bool:
        end = self._word(self.pos)
        if end is None:
            return False
        self.call_id = self.buf[self.pos : end]
        return self._after_word(end, allow_id=False)

    def _after_word(self, end: int, allow_id: bool) -> bool:
        buf = self.buf
        if allow_id and buf.startswith(CALL_ID, end):
            self.pos = end + len(CALL_ID)
            self.step = self._id
            return True
        if buf.startswith(ARGS, end):
            self.pos = end + len(ARGS)
            self.step = self._args_start
            return True
        if buf.startswith("{", end):  # drift: [ARGS] is missing
            self.pos = end
            self.step = self._args_start
            return True
        rest = buf[end:]
        if not self.final and (ARGS.startswith(rest) or (allow_id and CALL_ID.startswith(rest))):
            return False  # the word is complete; the marker after it is still arriving (the step reruns)
        raise Malformed(end, "expected [ARGS] after the tool name" if allow_id else "expected [ARGS] after the id")

    def _args_start(self) -> bool:
        j = self.pos = skip(_WS, self.buf, self.pos)
        if j == len(self.buf):
            return False
        if self.buf[j] != "{":
            raise Malformed(j, "expected a JSON object after [ARGS]")
        self.json = JsonExtent(j)
        self.step = self._args
        return True

    def _scan_json(self) -> tuple[int, object] | None:
        extent = self.json
        assert extent is not None  # set with the step (_args, _old_json) that calls this
        return extent.decoded(self.buf, too_deep=NESTED_TOO_DEEP)  # None: at the end, the call is unterminated

    def _args(self) -> bool:
        scanned = self._scan_json()
        if scanned is None:
            return False
        end, value = scanned
        if not isinstance(value, dict):
            raise Malformed(end, "arguments are not a JSON object")
        self._accept([(self.name, value, self.call_id)], end)
        return True

    def _old_json(self) -> bool:
        scanned = self._scan_json()
        if scanned is None:
            return False
        end, value = scanned
        items = value if isinstance(value, list) else [value]
        calls = [_json_call(item) for item in items]
        found = [call for call in calls if call is not None]
        if not found or len(found) < len(calls):
            raise Malformed(end, "JSON that is not a list of tool calls")
        self._accept(found, end)
        return True

    def _accept(self, calls: list[tuple], end: int) -> None:
        for name, arguments, call_id in calls:
            self.events.append(("call", self.n_calls, name, json.dumps(arguments, ensure_ascii=False), call_id))
            self.n_calls += 1
        self._reset_call()
        self.pos = end
        self.step = self._text


class MistralThinkReader(ThinkBlockReader, MistralReader):
    """:class:`MistralReader` whose text may open with a reasoning block ``think_open`` ... ``think_close``
    (:class:`~parsers.own._base.ThinkBlockReader`'s rules); a subclass sets the block's markers and the hold-back
    ``prefixes`` / ``maxlen`` that cover them. ``prefix`` (the prompt's tail) whose last ``think_open`` is not
    closed starts the text in reasoning (a continued turn)."""

    def __init__(self, prefix: str):
        super().__init__()
        self.think_allowed = True  # a reasoning block may still open the text
        i = prefix.rfind(self.think_open)
        if i >= 0 and self.think_close not in prefix[i:]:
            self.step, self.think_allowed = self._think, False


class _Reader(MistralThinkReader):
    think_open, think_close = THINK_OPEN, THINK_CLOSE


def _json_call(obj) -> tuple[str, dict, str | None] | None:
    """``(name, arguments, id)`` of one older-format call object, or None when it is not one."""
    if not isinstance(obj, dict):
        return None
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return None
    args = obj["arguments"] if "arguments" in obj else obj.get("parameters", {})
    arguments = object_arguments(args)
    call_id = obj.get("id")
    if arguments is None or (call_id is not None and not isinstance(call_id, str)):
        return None
    return name, arguments, call_id


PARSERS = [MistralParser]  # registry entry (see harness/parse/registry.py)

"""The project's own Llama 3.x JSON tool-call parser: one incremental reader for one-shot and streaming use.

Format facts come from the real chat templates (llama-cpp-python 0.3.36 sdist, ``vendor/llama.cpp/models/
templates``; see :mod:`harness.formats.llama3_json`): ``meta-llama-Llama-3.1-8B-Instruct.jinja`` and
``meta-llama-Llama-3.2-3B-Instruct.jinja`` write a call as the whole assistant turn,
``{"name": "NAME", "parameters": ARGS}`` (``ARGS`` = ``tojson``), with no marker before it, and end the turn
with ``<|eot_id|>``; 3.1 writes a built-in tool's call as ``<|python_tag|>NAME.call(k="v", ...)`` ended by
``<|eom_id|>``. One call per turn: the templates refuse more.

Reading rules:

- A call is a JSON object whose keys are ``name`` (a non-empty string) and exactly one of ``parameters`` /
  ``arguments`` (an object, or a JSON string holding one), optionally with ``"type": "function"``; nothing
  else. Such an object is a call wherever it starts in the text: at the start (what the templates write),
  after prose (prose before a call is content), or after ``<|python_tag|>`` (the tag is consumed).
- Every ``{`` outside a call is a candidate: its end is found by scanning JSON syntax (strings, escapes,
  nesting; never by searching for ``}``), and the text is decoded with :func:`json.loads` (``NaN``,
  ``Infinity`` and numbers beyond the double range are not JSON). A candidate that is valid JSON but not
  call-shaped is content as a whole (calls nested inside it are data); one that is not valid JSON gives its
  ``{`` to content and the scan goes on right after it.
- Parallel calls: after a call, ``;`` (with any whitespace around it) followed by another call is a
  separator and is dropped; in any other place ``;`` is content. Whitespace between calls is dropped with
  the content's surrounding whitespace.
- ``<|python_tag|>`` followed by a call object: the call. Followed by ``NAME.call(...)`` up to the end of
  the text: a built-in tool call. Its arguments are read as the template writes them (``k="v"`` pairs,
  values raw between the quotes, separated by ``, ``), or else as a Python call with literal keyword values;
  raw values are strings unless the tool is declared with a non-string type for that property, then they
  are typed by :func:`parsers.own._schema_types.typed_value`. Anything else after the tag is *surfaced*: the tag
  and the text stay in content, with a diagnostic. A call cut off by the end of the text after the tag or a
  ``;`` separator (nothing after the tag, or its JSON unterminated) is dropped with a diagnostic, its markup
  kept out of content; an unterminated ``{`` with neither before it is content (it may be prose).
- Content is the text outside calls, concatenated and stripped of surrounding whitespace (``None`` when
  empty). Trailing stop markers (``<|eot_id|>``, ``<|eom_id|>``, ``<|end_of_text|>``) are dropped; elsewhere
  they are text. The format has no reasoning.

Streaming: content is released as soon as it cannot be the start of a marker or of a call (a trailing
proper prefix of any marker is held back, and so is a ``{`` until its JSON is decided: invalid, or closed).
Each call is emitted whole (name and arguments JSON) once its object closes; a ``;`` after a call is held
until the next object is decided. Decisions never depend on how the text was chunked, so streaming equals
one-shot for any chunking, and nothing emitted is ever retracted.
"""

from __future__ import annotations

import ast
import json
import re

from harness.formats.llama3_json import PYTHON_TAG, SPEC
from parsers.own._base import OwnParser, StepReader, proper_prefixes
from parsers.own._common import JsonExtent, Malformed, object_arguments, skip
from parsers.own._schema_types import allowed_types, property_schema, typed_value

_STOPS = SPEC.stop_markers
_MARKERS = tuple(dict.fromkeys(SPEC.markers + _STOPS))
_PREFIXES, _MAXLEN = proper_prefixes(_MARKERS), max(map(len, _MARKERS))

_WS = re.compile(r"[ \t\n\r]*")
_TEXT_STOP = re.compile(r"[{<]")
_CALL_KEYS = frozenset({"name", "type", "parameters", "arguments"})
_BUILTIN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\.call\((.*)\)\Z", re.S)
_RAW_ARG = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="(.*?)"(?:, (?=[A-Za-z_][A-Za-z0-9_]*=")|\Z)', re.S)
_COMPACT_AT = 4096
NESTED_TOO_DEEP = "nested too deeply"  # this reader's (and Mistral's) word for JSON nested past the decoder


class Llama3JsonParser(OwnParser):
    """Parser protocol implementation for Llama 3.x JSON calls (see the module docstring for the rules).

    ``tools`` types the raw values of built-in ``NAME.call(k="v")`` calls; JSON calls carry their types.
    ``prefix`` is accepted for the protocol: these templates pre-fill nothing."""

    name = "toolcall-harness:llama3_json"
    formats = ("llama3_json",)
    limitations = (
        'The format has no marker, so a call-shaped JSON object written in prose (``{"name": "f", '
        '"parameters": {}}`` quoted as an example) is read as a call. Objects of another shape (``{"name": '
        '"Bob"}``) stay content.',
        'A call with neither ``parameters`` nor ``arguments`` (``{"name": "get_time"}``) is not read as a '
        "call (it would be indistinguishable from prose JSON); it stays content.",
        'A JSON array of calls (``[{"name": ...}, ...]``) is not read: Llama 3.x does not write it (3.2\'s '
        "*pythonic* ``[f(a=1)]`` format is another format).",
        "Raw code after ``<|python_tag|>`` (Llama 3.1's ``code_interpreter`` habit) is not mapped to a "
        'call: the templates write ``code_interpreter.call(code="...")``; raw code is surfaced as content '
        "with the tag.",
        "A built-in call (``<|python_tag|>NAME.call(...)``) is decided at the end of the text, so "
        "streaming holds it until ``finish``.",
    )
    stops = _STOPS

    def reader(self, tools: list | None, prefix: str, whole: bool) -> _Reader:
        return _Reader(tools)


# ---- the Llama 3 reader ---------------------------------------------------------------------------------


class _Reader(StepReader):
    """Incremental reader. ``push(text)`` / ``finish()`` return events (see
    :func:`parsers.own._base.deltas_from_events`).

    ``step`` is the handler of the current state; it returns True when it made progress and False when it
    needs more text. Offsets kept across pushes (``sep_at``, ``tag_at``, the candidate's scan) point into
    ``buf``; the buffer is compacted only in the plain-text state, where none is held. No step raises
    :class:`Malformed` (a candidate that is not a call is content) and none holds a call at the end.
    """

    prefixes, maxlen = _PREFIXES, _MAXLEN
    text_stop = _TEXT_STOP

    def __init__(self, tools: list | None):
        self.tools = tools
        super().__init__()
        self.step = self._text
        self.after_call = False  # a ';' right after a call may separate the next one
        self.sep_at: int | None = None  # start of a held ';' separator
        self.tag_at: int | None = None  # start of the <|python_tag|> before the candidate
        self.json: JsonExtent | None = None

    # ---- driving ---------------------------------------------------------------------------------

    def _compact(self) -> None:
        if self.step == self._text and self.pos >= _COMPACT_AT:
            self.buf, self.pos = self.buf[self.pos :], 0

    def _held_call(self) -> bool:
        return False

    # ---- text outside calls --------------------------------------------------------------------------

    def _text(self) -> bool:
        if self.after_call:
            decided = self._separator()
            if decided is not None:
                return decided
        marker = self._scan(self._emit_content, ("{", PYTHON_TAG))
        if marker == "{":
            self._candidate_at(self.pos - 1)
        elif marker == PYTHON_TAG:
            self.tag_at = self.pos - len(PYTHON_TAG)
            self.step = self._after_tag
        return marker is not None

    def _separator(self) -> bool | None:
        """Right after a call: ``;`` (whitespace around it) before another call is dropped. Returns None when
        no separator follows (the text is read as usual), False when more text is needed, True on progress."""
        buf = self.buf
        j = skip(_WS, buf, self.pos)
        if j == len(buf) and not self.final:
            return False
        if j == len(buf) or buf[j] != ";":
            self.after_call = False
            return None
        k = skip(_WS, buf, j + 1)
        rest = buf[k : k + len(PYTHON_TAG)]
        if not self.final and (k == len(buf) or (rest != PYTHON_TAG and PYTHON_TAG.startswith(rest))):
            return False  # the next call (or its <|python_tag|>) may still be arriving
        self.after_call = False
        if buf.startswith("{", k):
            self.sep_at = self.pos
            self._candidate_at(k)
            return True
        if buf.startswith(PYTHON_TAG, k):
            self.sep_at, self.tag_at, self.pos = self.pos, k, k + len(PYTHON_TAG)
            self.step = self._after_tag
            return True
        return None

    def _after_tag(self) -> bool:
        """After ``<|python_tag|>``: a call object, or a built-in ``NAME.call(...)`` to the end."""
        buf = self.buf
        j = skip(_WS, buf, self.pos)
        if j == len(buf):
            if not self.final:
                return False
            self._drop_cut_off("nothing after <|python_tag|>")
            return True
        if buf[j] == "{":
            self._candidate_at(j)
        else:
            self.pos = j
            self.step = self._builtin
        return True

    def _builtin(self) -> bool:
        if not self.final:
            return False
        parsed = _builtin_call(self.buf[self.pos :].rstrip(), self.tools)
        if parsed is None:
            assert self.tag_at is not None  # only _after_tag, after a tag, makes this the step
            self.pos = self.tag_at  # surfaced below from the tag on
            self._not_a_call(None, "text after <|python_tag|> is neither a call object nor NAME.call(...)")
            self._emit_content(self.buf[self.pos :])
            self.pos = len(self.buf)
            return True
        self._accept(*parsed, end=len(self.buf))
        return True

    # ---- call candidates -------------------------------------------------------------------------------

    def _candidate_at(self, at: int) -> None:
        self.json = JsonExtent(at)
        self.pos = at
        self.step = self._candidate

    def _candidate(self) -> bool:
        extent = self.json
        assert extent is not None  # _candidate_at set it with this step
        try:
            done = extent.decoded(self.buf, too_deep=NESTED_TOO_DEEP)
        except Malformed as exc:  # not JSON, or JSON that does not decode
            self._not_a_call(None, exc.reason)
            return True
        if done is None:
            if not self.final:
                return False
            if self.tag_at is None and self.sep_at is None:  # a lone unterminated ``{``: maybe prose
                self._not_a_call(None, "unterminated JSON")
            else:
                self._drop_cut_off("unterminated JSON")
            return True
        end, value = done
        parsed = _json_call(value)
        if parsed is None:
            self._not_a_call(end, "JSON that is not a call")
            return True
        self._accept(*parsed, end=end)
        return True

    def _accept(self, name: str, arguments: dict, end: int) -> None:
        self.events.append(("call", self.n_calls, name, json.dumps(arguments, ensure_ascii=False), None))
        self.n_calls += 1
        self.pos = end
        self.sep_at = self.tag_at = self.json = None
        self.after_call = True
        self.step = self._text

    def _drop_cut_off(self, reason: str) -> None:
        """A call after ``<|python_tag|>`` or a ``;`` separator, cut off by the end of the text: dropped, with the
        tag and separator (:mod:`parsers.own._base`)."""
        starts = [i for i in (self.sep_at, self.tag_at, self.json.start if self.json else None) if i is not None]
        self._cut_off(self.buf[min(starts) :], reason)
        self.sep_at = self.tag_at = self.json = None
        self.pos, self.step = len(self.buf), self._text

    def _not_a_call(self, end: int | None, reason: str) -> None:
        """The candidate is not a call: a held separator and ``<|python_tag|>`` go to content (the tag with a
        diagnostic), then the whole JSON value when it was valid (``end``), else only its ``{``."""
        start = self.json.start if self.json is not None else self.pos
        if self.sep_at is not None:
            self._emit_content(self.buf[self.sep_at : self.tag_at if self.tag_at is not None else start])
        if self.tag_at is not None:
            raw = self.buf[self.tag_at : start]
            self.diagnostics.append(
                f"<|python_tag|> not followed by a call, surfaced as content ({reason}): "
                f"{self.buf[self.tag_at : self.tag_at + 80]!r}"
            )
            self._emit_content(raw)
        if self.json is not None:
            stop = end if end is not None else start + 1
            self._emit_content(self.buf[start:stop])
            self.pos = stop
        else:
            self.pos = start
        self.sep_at = self.tag_at = self.json = None
        self.step = self._text


def _json_call(value) -> tuple[str, dict] | None:
    """``(name, arguments)`` when ``value`` is call-shaped (see the module docstring), else None."""
    if not isinstance(value, dict) or set(value) - _CALL_KEYS:
        return None
    name = value.get("name")
    if not isinstance(name, str) or not name or value.get("type", "function") != "function":
        return None
    keys = [k for k in ("parameters", "arguments") if k in value]
    if len(keys) != 1:
        return None
    arguments = object_arguments(value[keys[0]])
    return (name, arguments) if arguments is not None else None


def _builtin_call(text: str, tools: list | None) -> tuple[str, dict] | None:
    """``NAME.call(k="v", ...)`` as Llama 3.1's template writes a built-in tool call (values raw), or as a
    Python call with literal keyword values; None when the text is neither."""
    m = _BUILTIN.match(text)
    if m is None:
        return None
    name, inner = m.group(1), m.group(2)
    arguments: dict = {}
    pos = 0
    while pos < len(inner):
        arg = _RAW_ARG.match(inner, pos)
        if arg is None:
            break
        arguments[arg.group(1)] = _raw_value(arg.group(2), property_schema(tools, name, arg.group(1)))
        pos = arg.end()
    if pos == len(inner):
        return name, arguments
    return _python_call(text)


def _raw_value(text: str, schema):
    """A built-in call's raw value: the template can only paste strings, so it is a string unless the tool
    declares a type for it that is not a string."""
    if schema is None or "string" in allowed_types(schema):
        return text
    return typed_value(text, schema)


def _python_call(text: str) -> tuple[str, dict] | None:
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "call"
        and isinstance(node.func.value, ast.Name)
        and not node.args
    ):
        return None
    arguments = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            return None
        try:
            arguments[keyword.arg] = ast.literal_eval(keyword.value)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
    try:
        json.dumps(arguments)
    except (TypeError, ValueError):
        return None
    return node.func.value.id, arguments


PARSERS = [Llama3JsonParser]  # registry entry (see harness/parse/registry.py)

"""The project's own Qwen3-Coder XML tool-call parser (Qwen3-Coder, Nemotron-3-Nano): one incremental reader for
one-shot and streaming use. The reader is shared with the MiniMax-M2 parser (:mod:`parsers.own.minimax_m2`), which
differs only in its markers (:class:`Dialect`).

Format facts come from the real chat templates (llama-cpp-python 0.3.36 sdist; see
:mod:`harness.formats.qwen3_coder` for the template lines)::

    <tool_call>
    <function=NAME>
    <parameter=KEY>
    VALUE
    </parameter>
    </function>
    </tool_call>

VALUE is written raw, untyped and unescaped: strings as they are, containers as JSON, other scalars with Python
``str()`` (``True``, ``None``, ``1e-07``). The templates pad it with one newline on each side.

Reading rules:

- A call block starts at ``<tool_call>``. Inside it: whitespace, ``<function=NAME>``, then parameters
  ``<parameter=KEY>VALUE</parameter>`` separated by whitespace, then ``</function>``, whitespace and
  ``</tool_call>``. NAME and KEY run to the next ``>`` (no newline or ``<`` in them, at most 512 characters).
  Several ``<function=...>`` blocks inside one ``<tool_call>`` are read as several calls.
- A value's end is chosen by structure, never by the first closer: a ``</parameter>`` ends the value only when
  whitespace and then ``<parameter=`` or ``</function>`` follow it, and the parse from there on has to reach the
  block's end. A value may therefore hold ``</parameter>``, ``</function>``, ``</tool_call>`` or ``<tool_call>``
  as data. Among the parses of a block, the first (earliest value ends) whose ``</tool_call>`` is followed by
  whitespace and then the next ``<tool_call>`` or the end of the text wins ("clean" end); when no parse ends
  cleanly (text follows the last call), the first parse is taken.
- One newline at each end of a value is padding and is removed (a value's own newlines are kept); the rest is
  typed by the tool's schema with :func:`parsers.own._schema_types.typed_value` (``True``/``None`` and Python-literal
  containers are understood; without a declared schema only JSON-looking text is decoded).
- Drift recovered: a parameter whose ``</parameter>`` is missing before ``</function>`` (its value runs to the
  ``</function>``; with Qwen3-Coder's padding the one newline before it is the value's padding, in unpadded
  MiniMax it is structure). It is taken when no strict parse exists, and also when the strict parse's value
  would run across a call boundary -- ``</function>``, optionally ``</tool_call>`` and a new ``<tool_call>``,
  then ``<function=`` -- and the parse that ends the value at that boundary's ``</function>`` holds (so the
  first of two calls missing its last ``</parameter>`` no longer swallows the second). A value with no
  ``</parameter>`` in it that holds, after whitespace, a whole ``<parameter=KEY>`` tag of a KEY the tool declares
  and the call does not set ends there (vLLM's missing-close-parameter case; undeclared or already set keys stay
  data, so a value cannot inject an argument). ``</tool_call>`` missing (or cut off) at the end of the text or
  missing before the next ``<tool_call>``; any whitespace (or none) between the structural tags; no padding
  newlines. A bare ``<function=...>`` with no ``<tool_call>`` before it (llama.cpp's Qwen3-Coder tests) is a
  call when it parses whole and only whitespace, ``</tool_call>``, another call or the end follows; otherwise
  its text is content.
- Typing drift: JSON double-encoded inside a value whose schema wants an object or array (``{\\"a\\": 1}``) is
  decoded by the shared policy (:func:`parsers.own._schema_types.typed_value`, rule 4).
- A call cut off by the end of the text (more text could still complete it, and no ``</tool_call>`` or later
  ``<tool_call>`` is in it) is dropped with a diagnostic, its markup kept out of content; in a block of several
  functions the complete ones before it are kept (:mod:`parsers.own._base`).
- Everything else (no ``<function=`` after ``<tool_call>``, text between parameters) is *surfaced*: the
  ``<tool_call>`` opener stays in content and the text after it is read again as content (a later
  ``<tool_call>`` starts a new block); a diagnostic names the fault. Prose is never dropped.
- Reasoning: the templates pre-fill ``<think>`` in the prompt (Nemotron with thinking on; MiniMax always), and the
  rendered completion then starts inside the reasoning, with no opener. Qwen3-Coder dialect: a prefix that
  leaves ``<think>`` open starts the text in reasoning, up to ``</think>`` or (drift, llama.cpp's Qwen3.5 tests)
  a ``<tool_call>``, else to the end; a ``<think>`` right at its start is that opener written again. With no
  think marker in the prefix (and for MiniMax, whatever the prefix says), text before a ``</think>`` that comes
  before any call is reasoning; an explicit ``<think>`` at the start (only whitespace before it) opens a
  reasoning block that runs to ``</think>`` (or to the end). A prefix that closes its ``<think>`` block
  (thinking off) makes the text content from the start. ``<think>`` and ``</think>`` after content or a call are
  content.
- Content is the text outside calls and reasoning, concatenated and stripped of surrounding whitespace;
  reasoning likewise (``None`` when empty). Trailing stop markers (``<|im_end|>``, ``<|endoftext|>``) are
  dropped; elsewhere they are text.

Streaming: content is released as soon as it cannot be the start of a marker (a trailing proper prefix of any
marker is held back); reasoning after an explicit ``<think>`` likewise. Each call block is held until it is
decided -- when its clean end (the next ``<tool_call>``, or the end of the text) is seen, or, at the end of the
text, a fallback or a fault -- and its calls are then emitted whole (name and arguments JSON per call), so
streaming equals one-shot for any chunking, malformed input included: nothing emitted ever needs retracting.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass

from harness.formats import FormatSpec
from harness.formats import qwen3_coder as _fmt
from parsers.own._base import OwnParser, StepReader, proper_prefixes
from parsers.own._common import tojson_typed
from parsers.own._schema_types import property_schema, typed_value
from parsers.own._search import PENDING, Parse, RuleSearch, parse_items, prepend

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
_NAME_LIMIT = 512
_WS = " \t\n\r"


@dataclass(frozen=True)
class Dialect:
    """The markers of one XML parameter format (Qwen3-Coder's or MiniMax-M2's)."""

    spec: FormatSpec
    function_open: str  # "<function="           '<invoke name="'
    name_end: str  # ">"                    '">'   (ends a name and a key)
    function_close: str  # "</function>"          "</invoke>"
    parameter_open: str  # "<parameter="          '<parameter name="'
    parameter_close: str  # "</parameter>"         "</parameter>"
    padded: bool  # one newline of padding on each side of a value
    tojson: bool = False  # non-strings written with tojson (MiniMax), not Python str() (Qwen3-Coder)
    prefilled_think: bool = False  # a prefix that leaves <think> open starts the text in reasoning
    block_ends: tuple[str, ...] = ()  # what may follow a block's closer and still end it cleanly (Muse: <|eom|>)

    @property
    def call_open(self) -> str:
        return self.spec.call_open

    @property
    def call_close(self) -> str:
        return self.spec.call_close

    @functools.cached_property
    def boundary(self) -> re.Pattern:
        """A call boundary inside a value: ``</function>``, optionally ``</tool_call>`` + ``<tool_call>``, then
        ``<function=`` (whitespace between)."""
        ws, e = "[ \t\n\r]*", re.escape
        return re.compile(
            f"{e(self.function_close)}{ws}(?:{e(self.call_close)}{ws}{e(self.call_open)}{ws})?{e(self.function_open)}"
        )


QWEN3_CODER = Dialect(
    _fmt.SPEC,
    _fmt.FUNCTION_OPEN,
    ">",
    _fmt.FUNCTION_CLOSE,
    _fmt.PARAMETER_OPEN,
    _fmt.PARAMETER_CLOSE,
    padded=True,
    prefilled_think=True,
)


class XmlCallParser(OwnParser):
    """Parser protocol implementation for an XML parameter format (see the module docstring for the rules)."""

    dialect: Dialect = QWEN3_CODER

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls.name, cls.formats = f"toolcall-harness:{cls.dialect.spec.name}", (cls.dialect.spec.name,)
        cls.stops = cls.dialect.spec.stop_markers

    def reader(self, tools: list | None, prefix: str, whole: bool) -> _Reader:
        return _Reader(self.dialect, tools, prefix)


class Qwen3CoderParser(XmlCallParser):
    """The Qwen3-Coder / Nemotron-3-Nano format (``<tool_call>`` / ``<function=...>`` / ``<parameter=...>``)."""

    dialect = QWEN3_CODER
    limitations = (
        "Text at the start of the completion, before any ``</think>``, call or explicit ``<think>``, is "
        "held until one of them (or the end) decides whether it is reasoning or content: the render cut "
        "(and a real prompt ending in ``<think>``) leaves no opener to tell them apart. A plain prose "
        "answer (Qwen3-Coder writes no reasoning) therefore streams in one piece at the end.",
        "A call followed by other text (prose after the calls, which the templates never write) is decided "
        "only at the end of the text, since a later ``</tool_call>`` could still make the first one part "
        "of a value.",
        "Ambiguities the format cannot resolve, read the way the templates most likely meant: a value "
        "holding ``</parameter>`` followed by whitespace and ``<parameter=`` (or by ``</function>`` and a "
        "new ``<function=``) is cut there when the rest parses as parameters; a value holding a whole call "
        "end followed by a new call opener (``</parameter></function></tool_call><tool_call>``, also "
        "without ``</tool_call>``, the drift of a missing block closer) is cut there; a value holding a "
        "call boundary (``</function>``, optionally ``</tool_call><tool_call>``, then ``<function=``) is "
        "cut there when the rest parses (the missing ``</parameter>`` drift above); an unterminated call "
        "followed by another call is read as one call whose last value runs into the next call.",
        "Typing is the shared policy's (:mod:`parsers.own._schema_types`), with the template's own "
        'ambiguities: under a schema that allows both, the string ``"None"`` and null (``None``), the '
        'string ``"True"`` and the boolean, the string ``"5"`` and the number 5 are written alike and read '
        "as the non-string. The policy also reads ``null`` and ``true`` as null and true, although this "
        'template writes them ``None`` / ``True``: the string ``"null"`` under ``anyOf [string, null]`` '
        "comes back as null (generated seed 5, 400 cases: 5 cases). Under an ``integer`` schema an "
        "integral float such as ``140.0`` stays a string (the observed mlx-lm case). Keys and names "
        "holding ``>`` cannot be written.",
        "A bare ``<function=...>`` (no ``<tool_call>``) is a call only when it parses whole up to the end, "
        "another call or ``</tool_call>``; else it is content. After the prompt's open ``<think>``, a "
        "``<think>`` written again is the same opener (llama.cpp's Qwen3.5 test keeps it as reasoning text).",
    )


# ---- the block search ----------------------------------------------------------------------------------


class _BlockSearch(RuleSearch):
    """Finds the preferred parse of a call block in ``buf`` (see the module docstring): ``run(start)`` returns a
    :class:`~parsers.own._search.Parse` (items ``("f", name)`` open a call, ``("p", key, raw_value)`` add an
    argument), ``PENDING`` (not decidable before more text arrives) or ``None`` (no parse: the block is
    malformed). A result once decided never changes as text is appended. The rules are generators driven by
    :class:`~parsers.own._search.RuleSearch` (memoised, no recursion, linear in the block for the shapes the
    templates write).
    """

    def __init__(self, d: Dialect, buf: str, final: bool):
        super().__init__(buf, final)
        self.d = d

    def run(self, start: int, bare: bool = False):
        """The block at ``start``; ``bare``: it starts at a bare function opener (no call_open before it)."""
        return self.solve(("functions", start if bare else start + len(self.d.call_open)))

    # -- helpers

    def _ws(self, i: int) -> int:
        buf, n = self.buf, self.n
        while i < n and buf[i] in _WS:
            i += 1
        return i

    def _partial(self, i: int, *markers: str) -> bool:
        """True when the buffer ends at ``i`` inside one of ``markers`` (more text could complete it)."""
        return not self.final and _ends_in(self.buf, i, markers)

    def _name(self, i: int):
        """``(name, after)`` for a name starting at ``i`` and ending at the dialect's ``name_end``."""
        buf, end = self.buf, self.d.name_end
        j = buf.find(end, i, i + _NAME_LIMIT + len(end))
        stop = j if j >= 0 else min(self.n, i + _NAME_LIMIT + len(end))
        if any(buf[k] in "<>\n" for k in range(i, stop)) or (j < 0 and stop < self.n) or j == i:
            return None
        if j < 0:
            return None if self.final else PENDING
        return buf[i:j], j + len(end)

    # -- grammar rules (generators: ``result = yield (rule, *args)``; ``return`` gives the rule's result)

    def _functions(self, i: int):
        """Whitespace, then ``<function=NAME>`` (a call's header)."""
        q = self._ws(i)
        if q == self.n:
            return None if self.final else PENDING
        if self.buf.startswith(self.d.function_open, q):
            named = self._name(q + len(self.d.function_open))
            if named is None or named is PENDING:
                return named
            return prepend((("f", named[0]),), (yield ("params", named[1])))
        return PENDING if self._partial(q, self.d.function_open) else None

    def _params(self, i: int):
        """After a header or a parameter: whitespace, then ``<parameter=KEY>`` or ``</function>``."""
        d, buf = self.d, self.buf
        q = self._ws(i)
        if q == self.n:
            return None if self.final else PENDING
        if buf.startswith(d.parameter_open, q):
            named = self._name(q + len(d.parameter_open))
            if named is None or named is PENDING:
                return named
            return (yield ("value", named[1], named[0]))
        if buf.startswith(d.function_close, q):
            return (yield ("after_function", q + len(d.function_close)))
        return PENDING if self._partial(q, d.parameter_open, d.function_close) else None

    def _value(self, start: int, key: str):
        """A value from ``start``: the preferred ``</parameter>`` (or, as drift, ``</function>``) that ends it.

        Candidates in order: each ``</parameter>`` before the first call boundary (``</function>``, optionally
        ``</tool_call>`` and ``<tool_call>``, then ``<function=``) in the value; when there is one, each
        ``</function>`` up to it (drift: the value's ``</parameter>`` is missing there); only at the end of the
        text, each ``</parameter>`` after the boundary, then the other ``</function>`` ends. The first clean
        parse wins, else the first parse. Candidates are found one at a time; once there is a fallback, those
        known to lead to no parse (or no clean one) are jumped (:meth:`~parsers.own._search.RuleSearch.first`)."""
        d, buf, n = self.d, self.buf, self.n
        found = d.boundary.search(buf, start)
        boundary = found.start() if found else n
        stages = [(d.parameter_close, start, boundary)]
        if found:
            stages.append((d.function_close, start, boundary + 1))
        late = [(d.parameter_close, boundary, n), (d.function_close, boundary + 1 if found else start, n)]
        fallback = None
        for stage in stages + [None] + late:
            if stage is None:
                if not self.final:  # the value may run on to a closer that has not arrived yet
                    return PENDING
                continue
            closer, at, hi = stage
            then = "params" if closer == d.parameter_close else "after_function"
            while (c := self.first(closer, at, hi, then, fallback is not None)) is not None:
                result = yield (then, c + len(closer))
                if result is PENDING:
                    return PENDING
                self.record(then, c, result)
                if result is not None:
                    raw = buf[start:c]
                    if closer != d.parameter_close and raw.endswith("\n") and not d.padded:
                        raw = raw[:-1]  # drift: the newline after the missing closer is structure
                    parse = prepend((("p", key, raw),), result)
                    if parse.clean:
                        return parse
                    fallback = fallback or parse
                at = c + 1
        return fallback

    def _after_function(self, i: int):
        """After ``</function>``: ``</tool_call>``, another ``<function=...>``, or (drift) nothing / a new block."""
        d, buf = self.d, self.buf
        q = self._ws(i)
        if q == self.n:
            return Parse(i, True, ()) if self.final else PENDING  # drift: </tool_call> missing at the end
        if buf.startswith(d.call_close, q):
            return self._after_block(q + len(d.call_close))
        if buf.startswith(d.function_open, q):
            result = yield ("functions", q)
            if result is None and self.final and _cut_off(d, buf, q, bare=True):
                return Parse(self.n, True, (), q)  # the block's next function was cut off by the end: dropped
            return result
        if any(buf.startswith(m, q) for m in (d.call_open, *d.block_ends)):  # drift: </tool_call> missing there
            return Parse(i, True, ())
        if self.final and _ends_in(buf, q, (d.call_close, d.call_open, d.function_open)):
            return Parse(self.n, True, ())  # drift: </tool_call> (or the next opener) cut off by the end
        return PENDING if self._partial(q, d.call_close, d.function_open, d.call_open, *d.block_ends) else None

    def _after_block(self, i: int):
        """After ``</tool_call>``: a clean end when only whitespace, then a new block, one of the dialect's
        ``block_ends`` or the end, follows."""
        q = self._ws(i)
        if q == self.n:
            return Parse(i, True, ()) if self.final else PENDING
        ends = (self.d.call_open, *self.d.block_ends)
        if any(self.buf.startswith(m, q) for m in ends):
            return Parse(i, True, ())
        if self._partial(q, *ends):
            return PENDING
        return Parse(i, False, ())


# ---- the reader ---------------------------------------------------------------------------------------


class _Reader(StepReader):
    """Incremental reader. ``push(text)`` / ``finish()`` return events: ``("content"|"reasoning", text)`` and
    ``("call", index, name, arguments_json)``.

    ``step`` is the handler of the current state (undecided start, explicit reasoning, text, call block); it
    returns True when it made progress and False when it needs more text. No step raises
    :class:`~parsers.own._common.Malformed` (:class:`_BlockSearch` decides a block) and none holds a call at the
    end (at the end of the text a block is always decided).
    """

    def __init__(self, dialect: Dialect, tools: list | None, prefix: str):
        self.d, self.tools = dialect, tools
        spec = dialect.spec
        think_open, think_close = spec.reasoning_markers or (THINK_OPEN, THINK_CLOSE)  # Seed-OSS: <seed:think>
        self.think_open, self.think_close = think_open, think_close
        think = (think_open, think_close) if spec.reasoning_markers or not spec.thought_markers else ()
        markers = tuple(dict.fromkeys(spec.markers + spec.stop_markers + think + (dialect.function_open,)))
        self.prefixes = proper_prefixes(markers)
        self.maxlen = max(map(len, markers))
        self.text_stop = re.compile("[" + re.escape("".join(sorted({m[0] for m in markers}))) + "]")
        super().__init__()
        self.scan = 0
        self.call_at = -1
        self.bare = False  # the block being read starts at a bare function opener
        self._search: _BlockSearch | None = None
        e = re.escape
        self._tag = re.compile(rf"(?<=\s){e(dialect.parameter_open)}([^<>\n]{{1,{_NAME_LIMIT}}}?){e(dialect.name_end)}")
        i = prefix.rfind(think_open)
        closed = i >= 0 and think_close in prefix[i:]
        if closed:  # thinking off: no reasoning in the text
            self.step = self._text
        elif i >= 0 and dialect.prefilled_think:  # thinking on: the text starts inside reasoning
            self.step = self._prefilled
        else:
            self.step = self._start

    # ---- driving

    def _held_call(self) -> bool:
        return False

    def _compact(self) -> None:
        cut = self.call_at if self.call_at >= 0 else self.pos
        if cut > 0:
            self.buf = self.buf[cut:]
            self.pos -= cut
            self.scan = max(0, self.scan - cut)
            if self.call_at >= 0:
                self.call_at = 0

    # ---- text states

    def _start(self) -> bool:
        """Undecided start: reasoning if a ``</think>`` comes before any call, else content."""
        buf, start = self.buf, self.pos
        found = self.text_stop.search(buf, max(self.scan, start))
        while found:
            i = found.start()
            if buf.startswith(self.think_close, i):
                self._emit_reasoning(buf[start:i])
                self.pos, self.step = i + len(self.think_close), self._text
                return True
            if buf.startswith(self.d.call_open, i) or buf.startswith(self.d.function_open, i):
                self.step = self._text  # content up to the call: the text state emits it
                return True
            if buf.startswith(self.think_open, i):
                if buf[start:i].strip():  # <think> after text: all content
                    self.step = self._text
                else:  # an explicit reasoning block
                    self.pos, self.step = i + len(self.think_open), self._reasoning
                return True
            if self._held_prefix(i):
                self.scan = i
                return False
            found = self.text_stop.search(buf, i + 1)
        if self.final:
            self.step = self._text
            return True
        self.scan = len(buf)
        return False

    def _reasoning(self) -> bool:
        if self._scan(self._emit_reasoning, (self.think_close,)) is not None:
            self.step = self._text
            return True
        return False

    def _prefilled(self) -> bool:
        """The prompt left ``<think>`` open: a ``<think>`` at the very start is that opener written again."""
        buf, j = self.buf, self.pos
        while j < len(buf) and buf[j] in _WS:
            j += 1
        if buf.startswith(self.think_open, j):
            self.pos = j + len(self.think_open)
            self.diagnostics.append("a <think> after the prompt's open <think> read as the same opener")
        elif not self.final and self.think_open.startswith(buf[j : j + len(self.think_open)]):
            return False  # whitespace, or the start of a <think>, so far
        self.step = self._open_reasoning
        return True

    def _open_reasoning(self) -> bool:
        """Reasoning after the prompt's ``<think>``, up to ``</think>`` or (drift) a ``<tool_call>``."""
        marker = self._scan(self._emit_reasoning, (self.think_close, self.d.call_open))
        if marker is None:
            return False
        if marker != self.think_close:  # a call ends the reasoning: the text state reads it
            self.pos -= len(marker)
        self.step = self._text
        return True

    def _text(self) -> bool:
        marker = self._scan(self._emit_content, (self.d.call_open, self.d.function_open))
        if marker is not None:
            self.call_at = self.pos - len(marker)
            self.bare = marker == self.d.function_open
            self.step = self._call
            return True
        return False

    # ---- calls

    def _call(self) -> bool:
        search = self._search
        if search is None or search.buf is not self.buf or search.final != self.final:
            search = self._search = _BlockSearch(self.d, self.buf, self.final)  # kept for the buffer's next block
        result = search.run(self.call_at, self.bare)
        if result is PENDING:  # searched again at a block opener after it (a clean end), or when doubled
            opener = self.d.call_open
            self._park(len(self.buf) - self.call_at, (opener,) if opener != self.d.function_open else ())
            return False
        at, self.call_at = self.call_at, -1
        if result is None and self.bare:  # not a whole call: prose that names a function opener
            opener_end = at + len(self.d.function_open)
            self._emit_content(self.buf[at:opener_end])
            self.pos = opener_end
        elif result is None and _cut_off(self.d, self.buf, at):
            self._cut_off(self.buf[at:], "unterminated call")
            self.pos = len(self.buf)
        elif result is None:
            opener_end = at + len(self.d.call_open)
            self.diagnostics.append(f"malformed call surfaced as content: {self.buf[at : at + 80]!r}")
            self._emit_content(self.buf[at:opener_end])
            self.pos = opener_end
        else:
            for name, arguments in self._calls(parse_items(result)):
                self.events.append(("call", self.n_calls, name, arguments))
                self.n_calls += 1
            if result.cut_at >= 0:
                self._cut_off(self.buf[result.cut_at :], "unterminated call")
            self.pos = result.end
        self.step = self._text
        return True

    def _calls(self, items: list) -> list[tuple[str, str]]:
        calls: list[tuple[str, dict]] = []
        pairs: list[tuple[str, str]] = []
        for item in [*items, ("f", None)]:  # the sentinel flushes the last call's pairs
            if item[0] == "p":
                pairs.append((item[1], item[2]))
                continue
            if calls:
                self._arguments(*calls[-1], self._split_unclosed(calls[-1][0], pairs))
            pairs = []
            if item[1] is not None:
                calls.append((item[1], {}))
        return [(name, json.dumps(arguments, ensure_ascii=False)) for name, arguments in calls]

    def _split_unclosed(self, name: str, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """Drift (vLLM's ``missing-close-parameter`` shape): a value with no ``</parameter>`` in it that holds,
        after whitespace, a whole ``<parameter=KEY>`` tag whose KEY the tool declares and the call does not set
        is cut there (its closer is missing); the tag starts that parameter. Undeclared or already set keys
        stay data (a value may quote the format)."""
        keys = {key for key, _ in pairs}
        out = []
        for key, raw in pairs:
            while self.d.parameter_close not in raw:
                m = self._tag.search(raw)
                if not m or m.group(1) in keys or property_schema(self.tools, name, m.group(1)) is None:
                    break
                head = raw[: m.start()]
                out.append((key, head if self.d.padded or not head.endswith("\n") else head[:-1]))
                key, raw = m.group(1), raw[m.end() :]
                keys.add(key)
            out.append((key, raw))
        return out

    def _arguments(self, name: str, arguments: dict, pairs: list[tuple[str, str]]) -> None:
        """Type each raw value (padding removed) by its schema into ``arguments``."""
        for key, raw in pairs:
            if self.d.padded:
                raw = raw[1:] if raw.startswith("\n") else raw
                raw = raw[:-1] if raw.endswith("\n") else raw
            schema = property_schema(self.tools, name, key)
            value = tojson_typed(raw, schema) if self.d.tojson else typed_value(raw, schema)
            arguments[key] = value if _jsonable(value) else raw


def _cut_off(d: Dialect, buf: str, at: int, bare: bool = False) -> bool:
    """At the end of the text, the block (``bare``: the function) at ``at`` has no parse: was it cut off by the
    end -- no ``</tool_call>`` or later ``<tool_call>`` in it, and more text could have completed it?"""
    body = at + len(d.function_open if bare else d.call_open)
    if buf.find(d.call_close, body) >= 0 or buf.find(d.call_open, body) >= 0:
        return False
    return _BlockSearch(d, buf, final=False).run(at, bare) is PENDING


def _ends_in(buf: str, i: int, markers: tuple[str, ...]) -> bool:
    """True when ``buf`` ends at ``i`` inside one of ``markers`` (``buf[i:]`` is a prefix of one), looking at no
    more than the longest marker's length."""
    rest = len(buf) - i
    return rest <= max(map(len, markers)) and any(m.startswith(buf[i:]) for m in markers)


def _jsonable(value) -> bool:
    """False for a Python literal JSON cannot hold (bytes, sets, tuples as keys); such a value stays its text."""
    if not isinstance(value, (dict, list)):
        return True
    try:
        json.dumps(value)
        return True
    except (TypeError, ValueError):
        return False


PARSERS = [Qwen3CoderParser]  # registry entry (see harness/parse/registry.py)

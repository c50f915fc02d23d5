"""The project's own DeepSeek V3.2 (DSML) tool-call parser: one incremental reader for one-shot and streaming use.

Format facts (:mod:`harness.formats.deepseek_v32`, from ``deepseek-ai-DeepSeek-V3.2.jinja`` in the
llama-cpp-python 0.3.36 sdist)::

    CONTENT\\n\\n<｜DSML｜function_calls>
    <｜DSML｜invoke name="NAME">
    <｜DSML｜parameter name="KEY" string="true">RAW STRING</｜DSML｜parameter>
    <｜DSML｜parameter name="KEY" string="false">JSON</｜DSML｜parameter>
    </｜DSML｜invoke>
    </｜DSML｜function_calls>

``<｜end▁of▁sentence｜>`` ends generation.

Reading rules (the shared section reader, :mod:`parsers.own._token_sections`, does text, reasoning, sections,
faults and streaming; this module reads one ``invoke``):

- ``<｜DSML｜invoke name="NAME">`` (whitespace around the attribute allowed; ``/>`` closes a call without
  arguments, the shape DeepSeek V4 writes), then parameters separated by any whitespace, then
  ``</｜DSML｜invoke>``; drift: the closer missing before the next ``<｜DSML｜invoke``, before
  ``</｜DSML｜function_calls>`` or at the end of the text (also cut off by it); a JSON object as the whole body
  instead of parameters (SGLang's "direct JSON" shape).
- A parameter tag is ``<｜DSML｜parameter name="KEY" string="KIND">``; the key may hold ``"`` (it ends at the
  ``"`` that the rest of the tag follows); ``string`` may be missing.
- Values are typed by the ``string`` attribute first, then by the tool's schema
  (:func:`parsers.own._schema_types.typed_value` with :func:`~parsers.own._schema_types.property_schema`):

  - ``string="true"``: the raw text up to the first ``</｜DSML｜parameter>`` is the string, exactly (no
    stripping, no unescaping: ``"123"`` stays ``"123"``). Drift: when the declared schema admits no string,
    the schema types the text.
  - ``string="false"``: JSON. A value starting with ``{``, ``[`` or ``"`` is found by its JSON syntax, so
    DSML tags inside its strings are data; other values run to the first closer. Text that is not JSON is
    typed by the schema.
  - no (or another) ``string`` attribute: typed by the schema.
  - A repeated key keeps its last value.
  - Drift: a value whose ``</｜DSML｜parameter>`` is missing before the next call (``</｜DSML｜invoke>``,
    whitespace and a whole ``<｜DSML｜invoke name="...">`` tag come before any parameter closer) ends at that
    ``</｜DSML｜invoke>`` (one newline before it is structure); without the next call's tag it is not cut (a
    value may hold ``</｜DSML｜invoke>\\n</｜DSML｜function_calls>``), and an unterminated last call holding
    such a closer is surfaced (one holding none was cut off by the end of the text: dropped).
  - Drift: JSON double-encoded inside a value whose schema wants an object or array (``{\\"a\\": 1}``) is
    decoded by the shared policy (:func:`parsers.own._schema_types.typed_value`, rule 4).
- Thinking: the prompt pre-fills ``<think>`` (thinking on) or ``<think></think>`` (off). A prefix that leaves
  ``<think>`` open -- and a prefix with no think marker at all (the prompt's tail unknown) -- starts the
  text in reasoning, up to
  ``</think>`` or to ``<｜DSML｜function_calls>`` (calls straight after thinking are read). A prefix that
  closed thinking starts in content, where a leading ``</think>`` (this template writes one with thinking
  off) closes an empty block.
"""

from __future__ import annotations

import re
from typing import Literal

from harness.formats.deepseek_v32 import (
    BLOCK_CLOSE,
    BLOCK_OPEN,
    DSML,
    INVOKE_CLOSE,
    INVOKE_OPEN,
    PARAM_CLOSE,
    PARAM_OPEN,
    SPEC,
)
from parsers.own._common import JsonExtent, Malformed, decode_json, skip
from parsers.own._schema_types import allowed_types, property_schema, typed_value
from parsers.own._token_sections import SectionParser, SectionReader

_INVOKE_HEAD = re.compile(r'\s+name="(?P<name>[^"]*)"\s*(?P<close>/?)>')
_PARAM_HEAD = re.compile(r'\s+name="(?P<key>.*?)"(?:\s+string="(?P<kind>[^"]*)")?\s*>', re.DOTALL)
_JSON_WS = re.compile(r"[ \t\n\r]*")
_TAGS = ("<" + DSML, "</" + DSML)


def _call_boundary(invoke_open: str, invoke_close: str) -> re.Pattern[str]:
    """A call boundary inside a parameter value: the value's closer is missing (drift)."""
    return re.compile(re.escape(invoke_close) + r"\s*" + re.escape(invoke_open) + r'\s+name="[^"]*"\s*/?>')


def _next_tag(buf: str, start: int, end: int | None = None) -> int:
    """Offset of the first DSML tag start in ``buf[start:end]``, or -1."""
    found = [i for i in (buf.find(tag, start, end) for tag in _TAGS) if i >= 0]
    return min(found) if found else -1


class DeepSeekV32Reader(SectionReader):
    SECTION_OPEN = BLOCK_OPEN
    SECTION_CLOSE = BLOCK_CLOSE
    CALL_OPEN = INVOKE_OPEN
    CALL_CLOSE = INVOKE_CLOSE
    PARAM_OPEN = PARAM_OPEN
    PARAM_CLOSE = PARAM_CLOSE
    CALL_BOUNDARY = _call_boundary(INVOKE_OPEN, INVOKE_CLOSE)
    MARKERS = SPEC.markers
    STOPS = SPEC.stop_markers
    REASONING_WITHOUT_PREFIX = True
    # The current invoke (set by _begin_call) and parameter.
    name: str
    args: dict
    key: str
    kind: str | None
    extent: JsonExtent | Literal[False] | None  # the JSON being read; None: not looked at yet; False: not JSON

    def _begin_call(self, block_at: int, open_at: int) -> None:
        super()._begin_call(block_at, open_at)
        self.name, self.args = "", {}
        self.key, self.kind = "", None
        self.value_at, self.find_from, self.extent = 0, 0, None

    def _call_start(self) -> bool:
        """``name="NAME">`` (or ``/>``) after ``<｜DSML｜invoke``."""
        buf = self.buf
        gt = buf.find(">", self.pos)
        lt = buf.find("<", self.pos, gt if gt >= 0 else len(buf))
        if lt >= 0:
            raise Malformed(lt, "malformed invoke tag")
        if gt == -1:
            return False
        m = _INVOKE_HEAD.fullmatch(buf, self.pos, gt + 1)
        if not m or not m.group("name").strip():
            raise Malformed(gt + 1, "malformed invoke tag")
        self.name, self.pos = m.group("name").strip(), gt + 1
        if m.group("close"):
            self._accept(self.name, {})
        else:
            self.step = self._body
        return True

    def _body(self) -> bool:
        """Between parameters: whitespace, then a parameter, the invoke closer, or (drift) a JSON body."""
        buf = self.buf
        self.complete = (self.name, self.args)
        i = self.skip_ws()
        if i == len(buf):
            return False
        if buf.startswith(self.PARAM_OPEN, i):
            self.pos, self.complete, self.step = i + len(self.PARAM_OPEN), None, self._param_head
            return True
        if buf.startswith(self.CALL_CLOSE, i):
            self.pos = i + len(self.CALL_CLOSE)
        elif buf.startswith(self.CALL_OPEN, i) or buf.startswith(self.SECTION_CLOSE, i):
            self.pos = i  # drift: the invoke closer is missing
        elif buf[i] == "{" and not self.args and self.extent is None:
            self.pos, self.complete, self.extent, self.step = i, None, JsonExtent(i), self._json_body
            return True
        elif self.held_prefix(i, self.PARAM_OPEN, self.CALL_CLOSE, self.CALL_OPEN, self.SECTION_CLOSE):
            return False
        elif self.final and self.PARAM_OPEN.startswith(buf[i:]):
            return False  # maybe a parameter, cut off by the end of the text: the call is (_at_end)
        elif self.final and any(m.startswith(buf[i:]) for m in (self.CALL_CLOSE, self.CALL_OPEN, self.SECTION_CLOSE)):
            self.pos = len(buf)  # drift: the closer (or the next invoke) cut off by the end of the text
        else:
            raise Malformed(i, f"expected {self.PARAM_OPEN} or {self.CALL_CLOSE}")
        self._accept(self.name, self.args)
        return True

    def _json_body(self) -> bool:
        """Drift: the arguments as one JSON object instead of parameters."""
        extent = self.extent
        assert isinstance(extent, JsonExtent)  # _body set it with this step
        done = extent.decoded(self.buf, "JSON body")
        if done is None:
            return False
        end, value = done
        if not isinstance(value, dict):
            raise Malformed(end, "the JSON body is not an object")
        self.args, self.pos, self.step = value, end, self._body
        return True

    def _param_head(self) -> bool:
        """``name="KEY" string="KIND">`` after ``<｜DSML｜parameter``."""
        buf = self.buf
        limit = _next_tag(buf, self.pos)
        end = limit if limit >= 0 else len(buf)
        j = self.pos
        while True:
            gt = buf.find(">", j, end)
            if gt == -1:
                if limit >= 0:
                    raise Malformed(limit, "malformed parameter tag")
                return False
            m = _PARAM_HEAD.fullmatch(buf, self.pos, gt + 1)
            if m:
                break
            j = gt + 1
        self.key, self.kind = m.group("key"), m.group("kind")
        self.value_at = self.find_from = self.pos = gt + 1
        self.extent = None
        self.step = self._param_value
        return True

    def _param_value(self) -> bool:
        buf, start = self.buf, self.value_at
        if (self.kind or "").lower() == "false" and self.extent is not False:
            if self.extent is None:
                if start == len(buf):
                    return False
                self.extent = JsonExtent(start) if buf[start] in '{["' else False
            if self.extent:
                try:
                    end = self.extent.advance(buf)
                except Malformed:
                    end = -1
                if end is None and not self.final:
                    return False
                if end is not None and end >= 0:
                    k = skip(_JSON_WS, buf, end)
                    if buf.startswith(self.PARAM_CLOSE, k):
                        try:
                            value = decode_json(buf[start:end])
                        except ValueError:
                            pass
                        else:
                            self._set(value, k + len(self.PARAM_CLOSE))
                            return True
                    elif self.held_prefix(k, self.PARAM_CLOSE):
                        return False
                self.extent = False  # not JSON after all: the raw text up to the first closer
        close = buf.find(self.PARAM_CLOSE, max(start, self.find_from))
        boundary = self.CALL_BOUNDARY.search(buf, start, close if close >= 0 else len(buf))
        if boundary:  # drift: the parameter closer is missing before the next call
            end = boundary.start()
            self._set(self._typed(buf[start : end - (buf[end - 1 : end] == "\n" and end > start)]), end)
            return True
        if close == -1:
            self.find_from = max(start, len(buf) - len(self.PARAM_CLOSE) + 1)
            return False
        self._set(self._typed(buf[start:close]), close + len(self.PARAM_CLOSE))
        return True

    def _set(self, value, end: int) -> None:
        self.args[self.key] = value
        self.pos, self.step = end, self._body

    def _typed(self, raw: str):
        """One raw value: the ``string`` attribute first, then the schema (see the module docstring)."""
        schema = property_schema(self.tools, self.name, self.key)
        kind = (self.kind or "").lower()
        if kind == "true":
            if schema is not None and "string" not in allowed_types(schema):
                return typed_value(raw, schema)
            return raw
        if kind == "false":
            try:
                return decode_json(raw.strip())
            except ValueError:
                pass
        return typed_value(raw, schema)


class DeepSeekV32Parser(SectionParser):
    """Parser protocol implementation for the DeepSeek V3.2 format (see the module docstring for the rules)."""

    name = "toolcall-harness:deepseek_v32"
    formats = ("deepseek_v32",)
    limitations = (
        'A ``string="true"`` value holding ``</｜DSML｜parameter>`` cannot be read back (the format has no '
        "escape; the value is cut at the first closer): ``FormatSpec.unrepresentable``.",
        "Called with no prefix (or one without a think marker), text is reasoning until ``</think>`` or "
        "the call block: a thinking-off completion must come with the prompt's tail (``<think></think>``) "
        "as its prefix.",
        "A parameter key holding ``<｜DSML｜`` or ``</｜DSML｜`` is a fault (such a tag bounds the parameter tag).",
        'A raw value holding ``</｜DSML｜invoke>``, whitespace and a whole ``<｜DSML｜invoke name="...">`` tag '
        "is cut there (read as the missing-closer drift above).",
    )
    READER = DeepSeekV32Reader


PARSERS = [DeepSeekV32Parser]  # registry entry (see harness/parse/registry.py)

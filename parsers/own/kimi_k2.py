"""The project's own Kimi K2 tool-call parser: one incremental reader for one-shot and streaming use.

Format facts (:mod:`harness.formats.kimi_k2`, from ``moonshotai-Kimi-K2.jinja`` in the llama-cpp-python 0.3.36
sdist): content, then ``<|tool_calls_section_begin|>``, per call
``<|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>ARGS<|tool_call_end|>`` with ``ARGS`` the
arguments' JSON (``tojson``), then ``<|tool_calls_section_end|>``; ``<|im_end|>`` ends generation.

Reading rules (the shared section reader, :mod:`parsers.own._token_sections`, does text, reasoning, sections,
faults and streaming; this module reads one call):

- The call id runs from ``<|tool_call_begin|>`` to ``<|tool_call_argument_begin|>`` (surrounding whitespace
  ignored); any other marker before the argument marker is a fault. ``ARGS`` is one JSON object, found by
  its syntax, so marker text inside strings is data; drift: a JSON string holding the object.
- The tool name comes from the id, in this order:

  1. ``functions.NAME:IDX`` or ``NAME:IDX`` with a decimal ``IDX``: ``NAME`` is everything before the *last*
     colon (after ``functions.``), so names holding ``.`` or ``:`` survive. When ``tools`` are declared and
     ``NAME`` is not among them but ``NAME`` is ``functions`` glued to a declared name
     (``functionsexec:0``), that declared name.
  2. Otherwise, with ``tools`` declared: the longest declared name that the id (with or without a leading
     ``functions.``/``functions``) equals, or that is followed in it by ``:`` and any index, or by digits
     only (an index glued on: ``functionsexec5``, ``functions.exec5``).
  3. Otherwise, the id without its ``functions.`` prefix (or a ``functions`` glued before a letter): a
     non-numeric index after the last colon is cut off (``functions.search:call_1`` -> ``search``); with
     no colon, trailing digits are the glued index (``functions.exec5`` -> ``exec``).
  4. An id that is empty or only digits (a bare call counter; SGLang's ``kimi_k2`` detector reads the same
     drift): the one declared tool, or the only declared tool whose properties include every argument key.

  A call whose name cannot be found is a fault (surfaced as content).
- A ``<think>...</think>`` block at the start is reasoning (Kimi-K2-Thinking writes one; this template does
  not); a prefix that leaves ``<think>`` open starts the text in reasoning; the section opener ends reasoning.
"""

from __future__ import annotations

import re

from harness.formats.kimi_k2 import ARGUMENT_BEGIN, CALL_BEGIN, CALL_END, ID_PREFIX, SECTION_BEGIN, SECTION_END, SPEC
from parsers.own._token_sections import JsonCallReader, SectionParser

_CANONICAL = re.compile(r"(?:functions\.)?(.+):([0-9]+)", re.DOTALL)
_GLUED_INDEX = re.compile(r"(.*?\D)[0-9]+", re.DOTALL)
_GLUED_PREFIX = "functions"


def _declared(tools: list | None) -> list[dict]:
    out = []
    for tool in tools or []:
        function = tool.get("function", tool) if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str) and function["name"]:
            out.append(function)
    return out


def tool_name(call_id: str, tools: list | None, arguments: dict) -> str | None:
    """The tool name a Kimi call id stands for (see the module docstring for the rules); None when none."""
    raw = call_id.strip()
    functions = _declared(tools)
    names = sorted({f["name"] for f in functions}, key=len, reverse=True)
    canonical = _CANONICAL.fullmatch(raw)
    if canonical:
        name = canonical.group(1)
        glued = name[len(_GLUED_PREFIX) :] if name.startswith(_GLUED_PREFIX) else ""
        if names and name not in names and glued in names:
            return glued
        return name
    bodies = []
    if raw.startswith(ID_PREFIX):
        bodies.append(raw[len(ID_PREFIX) :])
    elif raw.startswith(_GLUED_PREFIX) and raw[len(_GLUED_PREFIX) :][:1].isalpha():
        bodies.append(raw[len(_GLUED_PREFIX) :])
    body = bodies[0] if bodies else raw
    bodies.append(raw)
    for candidate in bodies:
        for name in names:
            rest = candidate[len(name) :] if candidate.startswith(name) else None
            if rest is not None and (rest == "" or rest[0] == ":" or rest.isdigit()):
                return name
    if not body or body.isdigit():
        return _infer(functions, arguments)
    if ":" in body:
        return body.rpartition(":")[0] or _infer(functions, arguments)
    glued = _GLUED_INDEX.fullmatch(body)
    return glued.group(1) if glued else body


def _infer(functions: list[dict], arguments: dict) -> str | None:
    """The tool a call without a name is for: the only declared one, or the only one whose properties cover
    every argument key."""
    if len(functions) == 1:
        return functions[0]["name"]
    fits = [f["name"] for f in functions if set(arguments) <= set((f.get("parameters") or {}).get("properties") or {})]
    return fits[0] if len(fits) == 1 else None


class KimiK2Reader(JsonCallReader):
    SECTION_OPEN = SECTION_BEGIN
    SECTION_CLOSE = SECTION_END
    CALL_OPEN = CALL_BEGIN
    SEP = ARGUMENT_BEGIN
    CALL_CLOSE = CALL_END
    MARKERS = SPEC.markers
    STOPS = SPEC.stop_markers

    def head_name(self, head: str, arguments: dict) -> str | None:
        return tool_name(head, self.tools, arguments)


class KimiK2Parser(SectionParser):
    """Parser protocol implementation for the Kimi K2 format (see the module docstring for the rules)."""

    name = "toolcall-harness:kimi_k2"
    formats = ("kimi_k2",)
    limitations = (
        "Without declared ``tools``, rule 3 cuts the trailing digits of a name written without any index "
        "(``functions.get_v2`` reads as ``get_v``); with ``tools`` declared, rule 2 finds ``get_v2``.",
        "The index in the id is not checked against the call's position (the template numbers calls per "
        "turn, other renderings per conversation); the parser numbers calls by their order in the text.",
    )
    READER = KimiK2Reader


PARSERS = [KimiK2Parser]  # registry entry (see harness/parse/registry.py)

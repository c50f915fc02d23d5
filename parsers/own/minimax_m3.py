"""The project's own MiniMax-M3 tool-call parser (format ``minimax_m3``): the shared section reader of
:mod:`parsers.own._token_sections` with MiniMax-M3's namespaced XML call grammar.

Format facts (:mod:`harness.formats.minimax_m3`, from ``MiniMax-M3.jinja`` in the llama-cpp-python 0.3.36
sdist), with ``NS`` = ``]<]minimax[>[``: content, then ``NS<tool_call>``, per call
``NS<invoke name="NAME">`` + one ``NS<KEY>VALUE NS</KEY>`` element per argument + ``NS</invoke>``, then
``NS</tool_call>``; ``[e~[`` ends generation. Objects are expanded into one element per key, arrays into
``NS<item>`` elements; scalars are raw text (strings unescaped, numbers as Python writes them, booleans
``true``/``false``); ``None`` is never written.

Reading rules (text, reasoning, sections, faults and streaming are the section reader's):

- Reasoning: ``<mm:think>...</mm:think>`` at the start of the text, or a bare ``</mm:think>`` there (a turn
  without reasoning); a prefix ending in an open ``<mm:think>`` starts the text in reasoning.
- A call runs from ``NS<invoke name="`` to the first ``NS</invoke>`` (the namespace token cannot occur in a
  value, so nothing inside a value can end it); NAME runs to ``">``. The body is elements with optional
  whitespace between them: ``NS<TAG>`` then either raw text up to ``NS</TAG>`` (a scalar) or child elements up
  to ``NS</TAG>`` (a container); a closing tag that does not match, or text beside child elements, is a fault.
- Typing by the tool's schema (:func:`parsers.own._schema_types.property_schema`, then the nested ``properties``
  / ``items``): where the schema allows a string, child elements are the string as written (llama.cpp's
  ``minimax-m3.cpp`` reads such a value as raw text up to its closer); otherwise children that are all
  ``item`` elements under a schema without object type (or with array type) are an array, other children an
  object. Raw text goes through :func:`parsers.own._common.tojson_typed` (a text that is no JSON text is a
  string where a string is allowed); empty text is ``""`` where a string is allowed, else ``[]``/``{}``/null
  as the schema's types allow.
- Drift recovered: whitespace between elements and around the block's parts; a missing ``NS</tool_call>``
  (the section reader's rules). A call cut off by the end of the text is dropped.
"""

from __future__ import annotations

import re

from harness.formats import minimax_m3 as _fmt
from parsers.own._common import Malformed
from parsers.own._common import tojson_typed as _typed
from parsers.own._schema_types import allowed_types, property_schema, schema_alternatives
from parsers.own._token_sections import SectionParser, SectionReader

NS = _fmt.NS
_OPEN_TAG, _CLOSE_TAG = NS + "<", NS + "</"

_TEXT_STOP = re.compile(r"[<\]\[]")  # where a marker may start: <mm:think>, ]<]minimax[>[, ]~b], [e~[
Node = str | tuple  # raw text, or ([(tag, Node), ...], the raw text of those elements)


def _elements(body: str, i: int, close: str) -> tuple[list[tuple[str, Node]], int]:
    """The elements of ``body`` from ``i`` up to ``close`` (``NS</TAG>`` or ``NS</invoke>``): ``(elements, end)``
    with ``end`` right after ``close``. Raises :class:`Malformed` (offsets relative to ``body``)."""
    out: list[tuple[str, Node]] = []
    while True:
        j = len(body) - len(body[i:].lstrip())  # skip whitespace between elements
        if body.startswith(close, j):
            return out, j + len(close)
        if not body.startswith(_OPEN_TAG, j) or body.startswith(_CLOSE_TAG, j):
            raise Malformed(j, f"expected an element or {close!r}")
        k = body.find(">", j + len(_OPEN_TAG))
        if k < 0:
            raise Malformed(j, "unterminated tag")
        tag = body[j + len(_OPEN_TAG) : k]
        value, i = _value(body, k + 1, NS + "</" + tag + ">")
        out.append((tag, value))


def _value(body: str, i: int, close: str) -> tuple[Node, int]:
    """One element's value from ``i``: raw text up to ``close`` or child elements up to it."""
    j = body.find(NS, i)
    if j < 0:
        raise Malformed(i, f"no {close!r}")
    if body.startswith(close, j):
        return body[i:j], j + len(close)
    if body.startswith(_CLOSE_TAG, j) or body[i:j].strip():
        raise Malformed(j, f"expected {close!r}")
    children, end = _elements(body, i, close)
    return (children, body[i : end - len(close)]), end


def _sub_schema(schema, key: str):
    """The schema of property ``key`` of an object ``schema`` (its alternatives searched), or None."""
    for option in schema_alternatives(schema):
        properties = option.get("properties")
        if isinstance(properties, dict) and key in properties:
            return properties[key]
    return None


def _items_schema(schema):
    for option in schema_alternatives(schema):
        if isinstance(option.get("items"), dict):
            return option["items"]
    return None


def typed(node: Node, schema) -> object:
    """The value of ``node`` under ``schema`` (None: undeclared)."""
    types = allowed_types(schema) if schema is not None else None
    if isinstance(node, str):
        if node == "" and types is not None and "string" not in types:
            for kind, empty in (("array", []), ("object", {}), ("null", None)):
                if kind in types:
                    return empty
        return _typed(node, schema)
    children, raw = node
    if types is not None and "string" in types:  # a string alternative takes the text as written (llama.cpp)
        return raw
    is_array = all(tag == _fmt.ITEM for tag, _ in children) and (
        types is None or "array" in types or "object" not in types
    )
    if is_array:
        items = _items_schema(schema)
        return [typed(child, items) for _, child in children]
    return {tag: typed(child, _sub_schema(schema, tag)) for tag, child in children}


class MiniMaxM3Reader(SectionReader):
    """The section reader with MiniMax-M3's markers; a call is read whole once its ``NS</invoke>`` arrived."""

    SECTION_OPEN = _fmt.CALL_OPEN
    SECTION_CLOSE = _fmt.CALL_CLOSE
    CALL_OPEN = _fmt.INVOKE_OPEN
    CALL_CLOSE = _fmt.INVOKE_CLOSE
    MARKERS = _fmt.SPEC.markers + (_fmt.INVOKE_OPEN, _fmt.INVOKE_CLOSE)
    STOPS = _fmt.SPEC.stop_markers
    THINK_OPEN, THINK_CLOSE = _fmt.THINK_OPEN, _fmt.THINK_CLOSE

    def __init__(self, tools: list | None, prefix: str):
        super().__init__(tools, prefix)
        self.text_stop = _TEXT_STOP

    def _call_start(self) -> bool:
        buf, start = self.buf, self.pos
        end = buf.find(self.CALL_CLOSE, start)
        stop = len(buf) if end < 0 else end  # only a marker starting before the closer matters: look no further
        later = min(
            (k for m in (self.CALL_OPEN, self.SECTION_CLOSE) if (k := buf.find(m, start, stop + len(m) - 1)) >= 0),
            default=-1,
        )
        if 0 <= later and (end < 0 or later < end):
            raise Malformed(later, f"{self.CALL_CLOSE!r} missing")
        if end < 0:
            return False
        quote = buf.find('">', start, end)
        name = buf[start:quote] if quote >= 0 else ""
        if not name or any(c in name for c in '"<>\n'):
            raise Malformed(start, "bad tool name")
        body = buf[quote + 2 : end + len(self.CALL_CLOSE)]
        try:
            elements, _ = _elements(body, 0, self.CALL_CLOSE)
        except Malformed as exc:
            raise Malformed(quote + 2 + exc.at, exc.reason) from None
        args: dict = {}
        for key, node in elements:
            args[key] = typed(node, property_schema(self.tools, name, key))
        self.pos = end + len(self.CALL_CLOSE)
        self._accept(name, args)
        return True


class MiniMaxM3Parser(SectionParser):
    """The MiniMax-M3 format (``NS<tool_call>`` / ``NS<invoke name=...>`` / ``NS<KEY>``; see the module docstring)."""

    name = "toolcall-harness:minimax_m3"
    formats = ("minimax_m3",)
    READER = MiniMaxM3Reader
    limitations = (
        "Null arguments cannot be written (the template omits them); an empty element is read by its schema "
        '(``""``, ``[]``, ``{}`` or null), ``""`` when undeclared.',
        'Typing: under a schema that allows both, the string ``"true"`` and true, ``"5"`` and 5 are written '
        "alike and read as the non-string. An object whose keys are all ``item`` reads as an array unless the "
        "schema says object.",
    )


PARSERS = [MiniMaxM3Parser]  # registry entry (see harness/parse/registry.py)

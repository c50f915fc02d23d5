"""Typing untyped argument text by the tool's JSON schema: the policy shared by the project's parsers for formats
whose text carries no types (GLM ``<arg_value>``, Qwen3-Coder ``<parameter>``, MiniMax ``<parameter>``).

:func:`typed_value` decides, for the raw text of one argument and the schema of its property:

1. The types the schema allows: ``type`` (a name or a list), the alternatives of ``anyOf`` / ``oneOf``
   (recursively), the types of ``enum`` / ``const`` values. ``{}`` or a missing schema allows anything.
2. If only ``string`` is allowed, the text is the value, as written (``"001"`` stays ``"001"``).
3. Otherwise the first reading that the schema allows, in this order: ``null`` (``null``, ``None``),
   ``boolean`` (``true``/``false``, any case: templates that print Python values write ``True``), ``integer``
   (JSON integer syntax; also a number with a zero fraction such as ``140.0`` when the schema allows integers
   but not other numbers: JSON Schema counts it as an integer), ``number`` (JSON number syntax), ``object`` /
   ``array`` (JSON, then a Python literal: Qwen3-Coder's template prints dicts with ``True``/``None``), and
   finally ``string`` when allowed.
4. Drift, only when the schema allows ``object`` or ``array`` but not ``string`` and step 3 found no container:
   JSON double-encoded inside the value (``{\\"a\\": 1}``, escaped quotes, seen in
   ``glm_literal_backslash_escapes_double_serialized_sglang`` and SGLang/smolagents reports) is decoded --
   both as a JSON string body (``\\\\`` -> ``\\``) and with only ``\\"`` -> ``"`` -- and a reading is taken when it is
   a container the schema validates (``jsonschema``); when both readings validate and differ, neither is taken.
5. When nothing the schema allows fits, the text is kept as a string (the scorer then reports the type).
6. No schema (an undeclared tool or property): the text is JSON-decoded when it is a JSON object, array,
   number, boolean or null, else kept as a string — so ``"001"``, ``"1.10 "`` and ``"hello"`` stay strings.

Sources: the templates in the llama-cpp-python 0.3.36 sdist (``GLM-4.6.jinja``, ``Qwen3-Coder.jinja``,
``MiniMax-M2.jinja``) write string arguments raw and other values with ``tojson`` or Python ``str()``; vLLM's
``qwen3coder`` and ``glm45`` tool parsers convert by the declared ``type`` the same way (their faults with
``anyOf`` and ``"001"`` are what this module avoids).
"""

from __future__ import annotations

import ast
import functools
import json
import re
from decimal import Decimal
from typing import Any

import jsonschema

_INT = re.compile(r"-?(0|[1-9][0-9]*)\Z")
_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?\Z")
_JSON_TYPES = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
    type(None): "null",
}
ANY = frozenset({"null", "boolean", "integer", "number", "object", "array", "string"})


def allowed_types(schema: Any) -> frozenset[str]:
    """The JSON types ``schema`` admits (see the module docstring); every type for ``{}`` / None / non-dicts."""
    if not isinstance(schema, dict):
        return ANY
    found: set[str] = set()
    kind = schema.get("type")
    if isinstance(kind, str):
        found.add(kind)
    elif isinstance(kind, list):
        found.update(k for k in kind if isinstance(k, str))
    for key in ("anyOf", "oneOf"):
        for option in schema.get(key) or []:
            found.update(allowed_types(option))
    values = list(schema.get("enum") or []) + ([schema["const"]] if "const" in schema else [])
    found.update(_JSON_TYPES.get(type(v), "string") for v in values)
    if not found and not any(k in schema for k in ("type", "anyOf", "oneOf", "enum", "const")):
        return ANY
    return frozenset(found)


def typed_value(text: str, schema: Any = None) -> Any:
    """The value of one untyped argument ``text`` under its property ``schema`` (None: no schema)."""
    if schema is None:
        return _untyped(text)
    types = allowed_types(schema)
    if types == {"string"}:
        return text
    stripped = text.strip()
    if "null" in types and stripped in ("null", "None"):
        return None
    if "boolean" in types and stripped.lower() in ("true", "false"):
        return stripped.lower() == "true"
    if "integer" in types and _INT.match(stripped):
        return int(stripped)
    if "integer" in types and "number" not in types and _NUMBER.match(stripped) and _integral(stripped):
        return int(Decimal(stripped))  # JSON Schema: 140.0 is an integer (a model writes it so, mlx-lm case)
    if "number" in types and _NUMBER.match(stripped):
        return int(stripped) if _INT.match(stripped) else float(stripped)
    if types & {"object", "array"}:
        value = _container(stripped)
        if _fits_container(value, types):
            return value
        if "string" not in types and '\\"' in stripped:
            found = _double_encoded(stripped, types, schema)
            if found is not None:
                return found[0]
    return text


def _fits_container(value: Any, types: frozenset[str]) -> bool:
    return (isinstance(value, dict) and "object" in types) or (isinstance(value, list) and "array" in types)


def _double_encoded(text: str, types: frozenset[str], schema: dict) -> tuple[Any] | None:
    """``(value,)`` for JSON double-encoded in ``text`` (rule 4 of the module docstring); None when no reading, or
    two different readings, are containers that ``schema`` validates."""
    readings = []
    for unescaped in (_json_string_body(text), text.replace('\\"', '"')):
        try:
            value = json.loads(unescaped) if unescaped is not None else None
        except (ValueError, RecursionError):
            continue
        if _fits_container(value, types) and _validates(value, schema) and value not in readings:
            readings.append(value)
    return (readings[0],) if len(readings) == 1 else None


def _json_string_body(text: str) -> str | None:
    try:
        return json.loads(f'"{text}"')
    except ValueError:
        return None


def _validates(value: Any, schema: dict) -> bool:
    try:
        return _validator(json.dumps(schema, sort_keys=True)).is_valid(value)
    except (TypeError, ValueError, jsonschema.exceptions.SchemaError):
        return True  # an unusable schema: its types (checked above) are the evidence


@functools.lru_cache(maxsize=256)
def _validator(schema_json: str):
    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema)


def _integral(text: str) -> bool:
    value = Decimal(text)
    return value == value.to_integral_value() and abs(value) < Decimal(10) ** 30


def _untyped(text: str) -> Any:
    stripped = text.strip()
    if stripped != text or not stripped:
        return text
    if stripped in ("true", "false", "null") or _NUMBER.match(stripped) or stripped[0] in "[{":
        try:
            return json.loads(stripped)
        except json.JSONDecodeError:
            return text
    return text


def _container(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def property_schema(tools: list | None, tool_name: str, key: str) -> Any:
    """The schema of argument ``key`` of tool ``tool_name`` in OpenAI-style ``tools``; None when the tool or the
    property is not declared."""
    for tool in tools or []:
        function = tool.get("function", tool) if isinstance(tool, dict) else {}
        if function.get("name") == tool_name:
            properties = (function.get("parameters") or {}).get("properties") or {}
            return properties.get(key)
    return None


def schema_alternatives(schema: Any) -> list[dict]:
    """``schema`` and, recursively, its ``anyOf`` / ``oneOf`` alternatives (dicts only; ``[]`` for a non-dict)."""
    if not isinstance(schema, dict):
        return []
    out = [schema]
    for key in ("anyOf", "oneOf"):
        for alternative in schema.get(key) or ():
            out += schema_alternatives(alternative)
    return out

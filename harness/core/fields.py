"""Typed reads of the fields of decoded JSON objects, with one wording for every mistyped field.

Readers of external JSON (case files, :mod:`harness.core.cases`; worker replies, :mod:`harness.engines.client`)
check each field they read with these helpers and prefix the :class:`FieldProblem` with where the object came
from (``file:line``, a worker's request). Messages: ``field 'tags': expected a list of strings, got string``;
``field 'tool_calls[0].name': expected a string, got null``; ``field 'kind': expected one of strict, drift, got
'weird'``; ``field 'function' is missing (expected an object)``. Type names are JSON's, as the format docs write
them: string, number, bool, null, list, object. Nothing is coerced: a value is returned as it was, or refused.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from harness.core.errors import did_you_mean

#: what ``data.get(name, MISSING)`` gives for a field that is absent (``null`` is a value)
MISSING: Any = type("Missing", (), {"__repr__": lambda self: "MISSING"})()


class FieldProblem(ValueError):
    """A field of a JSON object is missing, mistyped or out of range; ``str()`` is the message (``field 'F': ...``),
    ``field`` the field's path (``tools[0].function.name``)."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def json_type(value: Any) -> str:
    """The JSON name of ``value``'s type: ``string``, ``number``, ``bool``, ``null``, ``list``, ``object`` (else the
    Python type's name)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    names = {str: "string", list: "list", dict: "object", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def problem(field: str, expected: str, value: Any) -> FieldProblem:
    """The :class:`FieldProblem` of ``value`` (or :data:`MISSING`) where ``expected`` (``a string or null``) was due."""
    if value is MISSING:
        return FieldProblem(field, f"field {field!r} is missing (expected {expected})")
    return FieldProblem(field, f"field {field!r}: expected {expected}, got {json_type(value)}")


def string(value: Any, field: str, null: bool = False, empty: bool = True) -> Any:
    """``value`` when it is a string (non-empty unless ``empty``), or None when ``null``; else raise."""
    if value is None and null:
        return value
    if isinstance(value, str):
        if value or empty:
            return value
        raise FieldProblem(field, f"field {field!r}: expected a non-empty string, got an empty one")
    raise problem(field, ("a string" if empty else "a non-empty string") + (" or null" if null else ""), value)


def string_list(value: Any, field: str, null: bool = False) -> Any:
    """``value`` when it is a list of strings (or None when ``null``); else raise, naming the first bad item."""
    if value is None and null:
        return value
    if not isinstance(value, list):
        raise problem(field, "a list of strings" + (" or null" if null else ""), value)
    for i, item in enumerate(value):
        string(item, f"{field}[{i}]")
    return value


def obj(value: Any, field: str, null: bool = False) -> Any:
    """``value`` when it is an object (or None when ``null``); else raise."""
    if isinstance(value, dict) or (value is None and null):
        return value
    raise problem(field, "an object" + (" or null" if null else ""), value)


def array(value: Any, field: str, null: bool = False) -> Any:
    """``value`` when it is a list (or None when ``null``); else raise."""
    if isinstance(value, list) or (value is None and null):
        return value
    raise problem(field, "a list" + (" or null" if null else ""), value)


def boolean(value: Any, field: str) -> bool:
    """``value`` when it is ``true`` or ``false``; else raise."""
    if isinstance(value, bool):
        return value
    raise problem(field, "true or false", value)


def integer(value: Any, field: str, null: bool = False, minimum: int | None = None) -> Any:
    """``value`` when it is an integer (not a bool, not ``1.0``; at least ``minimum``), or None when ``null``."""
    if value is None and null:
        return value
    if not isinstance(value, int) or isinstance(value, bool):
        what = "an integer" if minimum is None else f"an integer ≥ {minimum}"
        raise problem(field, what + (" or null" if null else ""), value)
    if minimum is not None and value < minimum:
        raise FieldProblem(field, f"field {field!r}: expected an integer ≥ {minimum}, got {value}")
    return value


def one_of(value: Any, field: str, choices: Collection[str]) -> Any:
    """``value`` when it is one of ``choices`` (strings); else raise: ``expected one of a, b, got 'c'`` and, for a
    string close to a choice, ``(did you mean 'a'?)``."""
    if isinstance(value, str) and value in choices:
        return value
    shown = f"{value!r}{did_you_mean(value, choices)}" if isinstance(value, str) else json_type(value)
    raise FieldProblem(field, f"field {field!r}: expected one of {', '.join(choices)}, got {shown}")

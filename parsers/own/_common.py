"""Grammar pieces the project's own parsers share: the longest marker-prefix suffix of a buffer, finding where a
JSON value ends by its syntax, resumably (:class:`JsonExtent`, raising :class:`Malformed`), strict JSON
decoding (:func:`decode_json`, :func:`object_arguments`), and typing the raw value text of a template that writes
non-strings with ``tojson`` (:func:`tojson_typed`). The protocol side (stream, stop tail, text fields, event folding) is
:mod:`parsers.own._base`.
"""

from __future__ import annotations

import json
import math
import re

from parsers.own._schema_types import allowed_types, typed_value

TOO_DEEP = "JSON nested too deeply"  # the fault of a JSON value nested deeper than the decoder follows


def skip(pattern: re.Pattern[str], text: str, pos: int = 0) -> int:
    """Where a run of ``pattern`` (one that matches the empty string, such as ``\\s*``) starting at ``pos`` ends."""
    return _always(pattern, text, pos).end()


def run_at(pattern: re.Pattern[str], text: str, pos: int = 0) -> str:
    """The run of ``pattern`` (one that matches the empty string) at ``pos``: possibly ``""``."""
    return _always(pattern, text, pos).group()


def _always(pattern: re.Pattern[str], text: str, pos: int) -> re.Match[str]:
    match = pattern.match(text, pos)
    if match is None:  # only for a pattern that cannot match the empty string: a caller's bug
        raise ValueError(f"pattern {pattern.pattern!r} must match the empty string")
    return match


def suffix_in(text: str, prefixes: frozenset[str], maxlen: int) -> int:
    """Length of the longest suffix of ``text`` that is in ``prefixes`` (0 when none)."""
    for k in range(min(maxlen - 1, len(text)), 0, -1):
        if text[-k:] in prefixes:
            return k
    return 0


def finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is beyond the double range")
    return value


def reject_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def decode_json(text: str, too_deep: str = TOO_DEEP):
    """Strict JSON: no NaN/Infinity, no number that overflows a double. Raises ``ValueError`` (``too_deep``
    when the value nests deeper than the decoder can follow)."""
    try:
        return json.loads(text, parse_constant=reject_constant, parse_float=finite_float)
    except RecursionError:
        raise ValueError(too_deep) from None


def object_arguments(value) -> dict | None:
    """Call arguments as an object: a JSON object, or (drift) a JSON string holding one; None otherwise."""
    if isinstance(value, str):
        try:
            value = decode_json(value)
        except ValueError:
            return None
    return value if isinstance(value, dict) else None


def is_json_text(text: str) -> bool:
    """True when ``text`` is exactly a JSON text (what ``tojson`` may write: no padding, no NaN)."""
    if not text or text != text.strip():
        return False
    try:
        json.loads(text, parse_constant=reject_constant)
    except (ValueError, RecursionError):
        return False
    return True


def tojson_typed(text: str, schema) -> object:
    """The value of one raw argument ``text`` under its property ``schema`` (None: undeclared), for a template
    that writes strings raw and every other value with ``tojson`` (GLM-4.x, MiniMax-M2).

    The shared policy (:func:`parsers.own._schema_types.typed_value`) after one template fact: where the schema allows
    a string next to other types, a text ``tojson`` cannot have written (``None``, `` null``, ``001``) is the
    string itself."""
    if schema is not None:
        types = allowed_types(schema)
        if "string" in types and types != {"string"} and not is_json_text(text):
            return text
    return typed_value(text, schema)


_JSON_STRING_STOP = re.compile(r'["\\\x00-\x1f]')  # inside a JSON string: its end, an escape, a control char
_JSON_OUTSIDE_STOP = re.compile(r"[^ \t\n\r,:0-9+\-.eEtrufalsn]")  # outside strings: anything but plain lexemes
_JSON_CLOSERS = {"}": "{", "]": "["}


class Malformed(Exception):
    """The text breaks the format's rules at buffer offset ``at`` (the current block, or a JSON value that cannot
    be JSON there: :class:`JsonExtent`); ``reason`` says how."""

    def __init__(self, at: int, reason: str):
        super().__init__(reason)
        self.at, self.reason = at, reason


class JsonExtent:
    """Finds, resumably, where one JSON object, array or string that starts at ``start`` ends, by scanning its
    syntax (strings, escapes, nesting) -- so marker text inside strings is data. ``what`` names the value in the
    fault for a stray character (``unexpected '<' in {what}``)."""

    def __init__(self, start: int, what: str = "JSON"):
        self.start = self.scan = start
        self.what = what
        self.stack: list[str] = []
        self.in_string = False
        self.end: int | None = None

    def decoded(self, buf: str, what: str = "JSON", too_deep: str = TOO_DEEP) -> tuple[int, object] | None:
        """``(end, value)`` once the value is complete (:meth:`advance`, then :func:`decode_json`); None while
        more text is needed. Raises :class:`Malformed` where :meth:`advance` does, and at ``end`` (``invalid
        {what}: ...``) for a value that does not decode."""
        end = self.advance(buf)
        if end is None:
            return None
        try:
            return end, decode_json(buf[self.start : end], too_deep)
        except ValueError as exc:
            raise Malformed(end, f"invalid {what}: {exc}") from None

    def shift(self, cut: int) -> None:
        """The buffer lost its first ``cut`` characters (all before ``start``): move the offsets with it."""
        self.start, self.scan = self.start - cut, self.scan - cut
        if self.end is not None:
            self.end -= cut

    def advance(self, buf: str) -> int | None:
        """The end offset (exclusive) once the value is complete (and on every later call); None while more text
        is needed. Raises :class:`Malformed` at a character JSON cannot have there."""
        if self.end is None:
            self.end = self._advance(buf)
        return self.end

    def _advance(self, buf: str) -> int | None:
        while True:
            if self.in_string:
                m = _JSON_STRING_STOP.search(buf, self.scan)
                if m is None:
                    self.scan = len(buf)
                    return None
                i, c = m.start(), m.group()
                if c == '"':
                    self.in_string, self.scan = False, i + 1
                    if not self.stack:
                        return i + 1
                elif c == "\\":
                    if i + 1 == len(buf):  # the escaped character has not arrived yet
                        self.scan = i
                        return None
                    self.scan = i + 2
                else:
                    raise Malformed(i, "control character inside a JSON string")
                continue
            m = _JSON_OUTSIDE_STOP.search(buf, self.scan)
            if m is None:
                self.scan = len(buf)
                return None
            i, c = m.start(), m.group()
            self.scan = i + 1
            if c == '"':
                self.in_string = True
            elif c in "{[":
                self.stack.append(c)
            elif c in "}]" and self.stack and self.stack[-1] == _JSON_CLOSERS[c]:
                self.stack.pop()
                if not self.stack:
                    return i + 1
            else:
                raise Malformed(i, f"unexpected {c!r} in {self.what}")

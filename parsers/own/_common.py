"""Pieces the project's own parsers share: stripping a streamed text field, folding reader events into a
message or into deltas, the longest marker-prefix suffix of a buffer, holding back a trailing run of stop markers
(:class:`StopTail`), finding where a JSON value ends by its syntax, resumably (:class:`JsonExtent`, raising
:class:`Malformed`), strict JSON number/constant hooks, and typing the raw value text of a template that writes
non-strings with ``tojson`` (:func:`tojson_typed`).

Readers emit events ``("content"|"reasoning", text)`` and ``("call", index, name, arguments_json)``; the parsers
turn them into a :class:`~harness.core.messages.Message` (one-shot) or :class:`~harness.core.protocol.Delta` lists (streaming).
"""

from __future__ import annotations

import json
import math
import re

from harness.core.messages import Message, ToolCall
from harness.core.protocol import Delta, ToolCallDelta
from parsers.own._schema_types import allowed_types, typed_value


class TextField:
    """Strips surrounding whitespace from a streamed text field (content or reasoning).

    Leading whitespace is dropped; trailing whitespace is held until more text follows, so the
    concatenation of what ``push`` returns equals ``"".join(all pushed).strip()``.
    """

    def __init__(self) -> None:
        self.started, self.held = False, ""

    def push(self, text: str) -> str:
        if not self.started:
            text = text.lstrip()
        body = text.rstrip()
        if not body:
            self.held += text if self.started else ""
            return ""
        out, self.held, self.started = self.held + body, text[len(body) :], True
        return out


def message_from_events(events: list[tuple], diagnostics: list[str]) -> Message:
    """Fold events into a :class:`Message`."""
    content, reasoning, calls = [], [], []
    for event in events:
        if event[0] == "content":
            content.append(event[1])
        elif event[0] == "reasoning":
            reasoning.append(event[1])
        else:
            calls.append(ToolCall(event[2], json.loads(event[3])))
    return Message("".join(content) or None, "".join(reasoning) or None, calls, list(diagnostics))


def deltas_from_events(events: list[tuple]) -> list[Delta]:
    """Events as deltas, merging neighbouring content (or reasoning) pieces."""
    out: list[Delta] = []
    for event in events:
        kind, last = event[0], out[-1] if out else None
        if kind in ("content", "reasoning"):
            if last is not None and getattr(last, kind) is not None and not last.tool_calls:
                setattr(last, kind, getattr(last, kind) + event[1])
            else:
                out.append(Delta(**{kind: event[1]}))
        else:
            out.append(Delta(tool_calls=[ToolCallDelta(event[1], name=event[2], arguments=event[3])]))
    return out


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


class StopTail:
    """Holds back a trailing run of stop markers (and the whitespace after them) until text follows.

    ``push(chunk)`` returns the text that is certainly not part of the final stop-marker run; ``flush()`` at the
    end returns what was held if it turned out not to be trailing (a partial marker)."""

    def __init__(self, stops: tuple[str, ...]) -> None:
        self.stops = stops
        self.prefixes = frozenset(m[:k] for m in stops for k in range(1, len(m)))
        self.maxlen = max(map(len, stops))
        self.held = ""  # complete stop markers and whitespace
        self.partial = ""  # a trailing proper prefix of a stop marker

    def push(self, chunk: str) -> str:
        s = self.partial + chunk
        cut = len(s) - suffix_in(s, self.prefixes, self.maxlen)
        j = cut
        while j > 0:
            if s[j - 1].isspace():
                j -= 1
                continue
            stop = next((m for m in self.stops if s.endswith(m, 0, j)), None)
            if stop is None:
                break
            j -= len(stop)
        self.partial = s[cut:]
        if j == 0 and self.held:  # the held run goes on
            self.held += s[:cut]
            return ""
        while j < cut and s[j].isspace():  # a run starts at a stop marker, not at whitespace
            j += 1
        out, self.held = self.held + s[:j], s[j:cut]
        return out

    def flush(self) -> str:
        return self.held + self.partial if self.partial else ""


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
    syntax (strings, escapes, nesting) -- so marker text inside strings is data."""

    def __init__(self, start: int):
        self.start = self.scan = start
        self.stack: list[str] = []
        self.in_string = False
        self.end: int | None = None

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
                raise Malformed(i, f"unexpected {c!r} in JSON")

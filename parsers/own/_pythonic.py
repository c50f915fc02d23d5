"""The pythonic call list the own parsers of Llama 4 (:mod:`parsers.own.llama4_pythonic`) and LFM2
(:mod:`parsers.own.lfm2`) share: ``[NAME(key=value, ...), NAME2(...)]``, values written as Python literals.

- :class:`CallListExtent` finds, resumably, where a call list that starts at ``[`` ends, by its syntax: the head
  ``[NAME(`` first (so ``[link text](url)`` or ``[1, 2]`` is known not to be one after a few characters), then
  strings (``'...'`` / ``"..."``, backslash escapes) and the nesting of ``( [ {``, so brackets and marker text
  inside strings are data. It raises :class:`~parsers.own._common.Malformed` at a character a call list cannot
  have there (a head that is not ``[NAME(``, a closer that does not match, ``<|`` outside a string).
- :func:`parse_call_list` reads the whole list: ``[(name, arguments)]`` or ``ValueError``.

Reading rules of :func:`parse_call_list` (a lenient reader of what the templates and models write, not Python):

- A list of one or more calls, ``,``-separated (a trailing ``,`` allowed), whitespace (newlines too) anywhere
  between tokens. A call is ``NAME(key=value, ...)``: ``NAME`` letters, digits, ``_``, ``.``, ``-`` (dotted
  ``Calendar.create_event``, hyphenated and digit-first tool names: LFM2.5's template pastes names raw); a key
  is any text up to ``=`` without whitespace at its ends, newlines, quotes, brackets, ``,`` or ``=`` (the
  template pastes keys raw too: ``first name=``, ``a.b=``, ``2fa=``); no positional arguments; a key given
  twice is an error.
- Values: strings in ``'`` or ``"`` with Python's escapes (``\\n``, ``\\'``, ``\\xhh``, ``\\uXXXX``,
  ``\\N{...}``; an unknown escape keeps its backslash; a ``\\uXXXX`` surrogate pair is joined), raw newlines
  and control characters inside a string accepted (a template pastes strings raw); integers and finite floats
  (``1e400`` is an error); ``True``/``False``/``None`` and JSON's ``true``/``false``/``null`` (a template writes
  a nested object with ``tojson``); lists; tuples (as lists); dicts with string keys. Anything else (a bare
  name, a call as a value, a set, a non-string dict key) is an error.
"""

from __future__ import annotations

import re
import unicodedata

from parsers.own._common import Malformed, finite_float

_WS = "[ \t\r\n]*"
_NAME = r"[\w.\-]+"
HEAD = re.compile(rf"\[{_WS}({_NAME}){_WS}\(")
_PARTIAL_HEAD = re.compile(rf"\[{_WS}(?:{_NAME}{_WS})?\Z")
_BODY_STOP = re.compile(r"""['"()\[\]{}<]""")
_CLOSERS = {")": "(", "]": "[", "}": "{"}
_MAX_DEPTH = 200


class CallListExtent:
    """Where one call list starting at ``start`` (a ``[``) ends, found resumably (module docstring).

    ``headed`` turns True once the head ``[NAME(`` has arrived: from then on the text is being read as a call.
    ``advance(buf, final)`` returns the end offset (exclusive) once the list closed, None while more text is
    needed; it raises :class:`Malformed` at the first character a call list cannot have."""

    def __init__(self, start: int):
        self.start = self.scan = start
        self.headed = False
        self.stack: list[str] = []
        self.quote = ""  # the quote of the string being read, "" outside strings
        self.end: int | None = None

    def shift(self, cut: int) -> None:
        """The buffer lost its first ``cut`` characters (all before ``start``)."""
        self.start, self.scan = self.start - cut, self.scan - cut
        if self.end is not None:
            self.end -= cut

    def advance(self, buf: str, final: bool = False) -> int | None:
        if self.end is None:
            self.end = self._advance(buf, final)
        return self.end

    def _advance(self, buf: str, final: bool) -> int | None:
        if not self.headed:
            head = HEAD.match(buf, self.start)
            if head is None:
                if not final and _PARTIAL_HEAD.match(buf, self.start):
                    return None
                raise Malformed(self.start + 1, "not a call list: expected [NAME( after [")
            self.headed, self.stack, self.scan = True, ["[", "("], head.end()
        while True:
            if self.quote:
                i = self._string_end(buf)
                if i is None:
                    return None
                self.quote, self.scan = "", i + 1
                continue
            m = _BODY_STOP.search(buf, self.scan)
            if m is None:
                self.scan = len(buf)
                return None
            i, c = m.start(), m.group()
            if c == "<":
                if i + 1 == len(buf) and not final:
                    self.scan = i
                    return None
                if buf.startswith("<|", i):
                    raise Malformed(i, "a marker inside the call list, outside a string")
                self.scan = i + 1
            elif c in "'\"":
                self.quote, self.scan = c, i + 1
            elif c in "([{":
                if len(self.stack) >= _MAX_DEPTH:
                    raise Malformed(i, "call list nested too deeply")
                self.stack.append(c)
                self.scan = i + 1
            elif self.stack[-1] == _CLOSERS[c]:
                self.stack.pop()
                self.scan = i + 1
                if not self.stack:
                    return i + 1
            else:
                raise Malformed(i, f"unexpected {c!r} in the call list")

    def _string_end(self, buf: str) -> int | None:
        """The offset of the closing quote of the string being read (``scan`` is inside it), or None."""
        i = self.scan
        while True:
            j = _quote_or_escape(buf, self.quote, i)
            if j < 0:
                self.scan = len(buf)
                return None
            if buf[j] == self.quote:
                return j
            if j + 1 == len(buf):  # the escaped character has not arrived yet
                self.scan = j
                return None
            i = j + 2


# ---- the reader of a whole list ------------------------------------------------------------------------

_SKIP = re.compile(_WS)
_CALL_NAME = re.compile(_NAME)
_KEY = re.compile(r"[^\s=,()\[\]{}'\"]+(?:[ \t]+[^\s=,()\[\]{}'\"]+)*")
_NUMBER = re.compile(r"[-+]?(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][-+]?\d+)?")
_WORD = re.compile(r"[A-Za-z_]\w*")
_CONSTANTS = {"True": True, "False": False, "None": None, "true": True, "false": False, "null": None}
_SIMPLE_ESCAPES = {
    "\\": "\\",
    "'": "'",
    '"': '"',
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\n": "",
}
_HEX = {"x": 2, "u": 4, "U": 8}


def parse_call_list(text: str) -> list[tuple[str, dict]]:
    """``[(name, arguments)]`` of the call list ``text`` (the whole of it; module docstring), else ``ValueError``."""
    reader = _Reader(text)
    calls = reader.call_list()
    if reader.pos != len(text):
        raise ValueError(f"text after the call list at {reader.pos}")
    return calls


class _Reader:
    def __init__(self, text: str):
        self.text, self.pos = text, 0

    def ws(self) -> None:
        self.pos = _SKIP.match(self.text, self.pos).end()  # type: ignore[union-attr]  # matches the empty string

    def peek(self) -> str:
        self.ws()
        return self.text[self.pos : self.pos + 1]

    def expect(self, c: str) -> None:
        if self.peek() != c:
            raise ValueError(f"expected {c!r} at {self.pos}")
        self.pos += 1

    def items(self, close: str, item) -> list:
        """``item()`` repeated, ``,``-separated (trailing ``,`` allowed) up to ``close`` (consumed)."""
        out = []
        while self.peek() != close:
            out.append(item())
            if self.peek() == ",":
                self.pos += 1
            elif self.peek() != close:
                raise ValueError(f"expected ',' or {close!r} at {self.pos}")
        self.pos += 1
        return out

    def call_list(self) -> list[tuple[str, dict]]:
        self.expect("[")
        calls = self.items("]", self.call)
        if not calls:
            raise ValueError("an empty list holds no call")
        return calls

    def call(self) -> tuple[str, dict]:
        self.ws()
        m = _CALL_NAME.match(self.text, self.pos)
        if m is None:
            raise ValueError(f"expected a function name at {self.pos}")
        self.pos = m.end()
        self.expect("(")
        arguments: dict = {}
        for key, value in self.items(")", self.keyword):
            if key in arguments:
                raise ValueError(f"argument {key!r} given twice")
            arguments[key] = value
        return m.group(), arguments

    def keyword(self) -> tuple[str, object]:
        self.ws()
        m = _KEY.match(self.text, self.pos)
        if m is None:
            raise ValueError(f"expected a keyword argument at {self.pos}")
        self.pos = m.end()
        self.expect("=")
        return m.group(), self.value(0)

    def value(self, depth: int) -> object:
        if depth > _MAX_DEPTH:
            raise ValueError("nested too deeply")
        c = self.peek()
        if c in ("'", '"'):
            return self.string(c)
        if c == "[":
            self.pos += 1
            return self.items("]", lambda: self.value(depth + 1))
        if c == "(":
            return self.parenthesized(depth)
        if c == "{":
            self.pos += 1
            return dict(self.items("}", lambda: self.member(depth + 1)))
        m = _NUMBER.match(self.text, self.pos)
        if m is not None:
            self.pos = m.end()
            return _number(m.group())
        m = _WORD.match(self.text, self.pos)
        if m is not None and m.group() in _CONSTANTS:
            self.pos = m.end()
            return _CONSTANTS[m.group()]
        raise ValueError(f"expected a literal at {self.pos}")

    def parenthesized(self, depth: int) -> object:
        """``(v)`` is ``v``; ``()``, ``(v,)`` and ``(v, w)`` are tuples, read as lists."""
        self.pos += 1
        if self.peek() == ")":
            self.pos += 1
            return []
        first = self.value(depth + 1)
        if self.peek() == ")":
            self.pos += 1
            return first
        self.expect(",")
        return [first, *self.items(")", lambda: self.value(depth + 1))]

    def member(self, depth: int) -> tuple[str, object]:
        key = self.value(depth)
        if not isinstance(key, str):
            raise ValueError(f"a dict key that is not a string: {key!r}")
        self.expect(":")
        return key, self.value(depth)

    def string(self, quote: str) -> str:
        text, i = self.text, self.pos + 1
        out: list[str] = []
        while True:
            j = _quote_or_escape(text, quote, i)
            if j < 0:
                raise ValueError("unterminated string")
            out.append(text[i:j])
            if text[j] == quote:
                self.pos = j + 1
                return _join_surrogates("".join(out))
            piece, i = _escape(text, j + 1)
            out.append(piece)


def _quote_or_escape(text: str, quote: str, i: int) -> int:
    """The offset of the first ``quote`` or backslash from ``i`` (-1: neither), the backslash looked for only up
    to the quote (searching the whole rest of a long text for each string would be quadratic)."""
    q = text.find(quote, i)
    b = text.find("\\", i, q if q >= 0 else len(text))
    return b if b >= 0 else q


def _escape(text: str, i: int) -> tuple[str, int]:
    """The character(s) the escape after a backslash (``text[i]`` its first character) stands for, and where the
    string goes on."""
    c = text[i : i + 1]
    if c in _SIMPLE_ESCAPES and c:
        return _SIMPLE_ESCAPES[c], i + 1
    if c in _HEX:
        digits = text[i + 1 : i + 1 + _HEX[c]]
        if len(digits) != _HEX[c] or not all(d in "0123456789abcdefABCDEF" for d in digits):
            raise ValueError(f"truncated \\{c} escape")
        code = int(digits, 16)
        if code > 0x10FFFF:
            raise ValueError(f"\\{c} escape beyond Unicode")
        return chr(code), i + 1 + _HEX[c]
    if c == "N" and text.startswith("{", i + 1):
        end = text.find("}", i + 2)
        try:
            return unicodedata.lookup(text[i + 2 : end]), end + 1
        except KeyError:
            raise ValueError("unknown \\N{...} name") from None
    if c and c in "01234567":
        m = re.match("[0-7]{1,3}", text[i : i + 3])
        assert m is not None
        return chr(int(m.group(), 8)), i + len(m.group())
    return "\\", i  # an unknown escape keeps its backslash (Python's rule); the character reads on


def _join_surrogates(s: str) -> str:
    """``\\ud83d\\ude00`` (a surrogate pair written as two escapes) as the one character it encodes."""
    if not any("\ud800" <= ch <= "\udfff" for ch in s):
        return s
    try:
        return s.encode("utf-16", "surrogatepass").decode("utf-16")
    except UnicodeDecodeError:
        raise ValueError("a lone surrogate in a string") from None


def _number(text: str) -> int | float:
    if text.lstrip("+-").startswith("_") or "__" in text or text.endswith("_"):
        raise ValueError(f"bad number {text!r}")
    plain = text.replace("_", "")
    if any(c in plain for c in ".eE"):
        return finite_float(plain)
    return int(plain)

"""A reader of the small C++ subset that llama.cpp's ``tests/test-chat.cpp`` writes its chat test cases in.

Not a C++ parser. It reads:

- tokens: string literals (escapes ``\\n \\t \\" \\\\ \\x.. \\ooo \\u.... \\U........``, prefixes ``u8 u U L``,
  raw strings ``R"delim(...)delim"``; adjacent literals are joined into one token, as the compiler does),
  character literals, identifiers, numbers and punctuation; comments and preprocessor lines are skipped;
- top-level items (a declaration up to ``;``, or a function header and its body);
- the statements of a body: simple statements up to ``;``, blocks, and ``for``/``if``/``while``/``switch``/
  ``try``/``do`` with their bodies;
- expressions of literals, names (``a::b``), calls ``f(...)``, braced lists ``{...}`` and ``+``.

Anything else raises :class:`CppError` naming the line; callers turn it into an unsupported case.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from harness.core.errors import HarnessError


class CppError(HarnessError):
    """A construct outside the subset; ``line`` is the 1-based source line (``0`` when unknown)."""

    def __init__(self, message: str, line: int):
        super().__init__(f"line {line}: {message}")
        self.reason, self.line = message, line


@dataclass(frozen=True)
class Token:
    """``kind``: ``str`` (decoded text), ``char``, ``id``, ``num`` or ``punct``; ``line``: where it starts."""

    kind: str
    value: str
    line: int

    def is_punct(self, value: str) -> bool:
        return self.kind == "punct" and self.value == value

    def is_id(self, value: str | None = None) -> bool:
        return self.kind == "id" and (value is None or self.value == value)


_PUNCT = sorted(
    "<<= >>= :: -> == != <= >= && || << >> += -= *= /= ++ -- { } ( ) [ ] ; , . = + - * / % < > ! & | ^ ~ ? : #".split(),
    key=len,
    reverse=True,
)
_STRING_START = re.compile(r'(?:u8|u|U|L)?(R?)"')
_CHAR_START = re.compile(r"(?:u8|u|U|L)?'")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_NUMBER = re.compile(r"(?:\d|\.\d)(?:[eEpP][+-]|[\w.'])*")
_RAW_DELIM = re.compile(r'[^\s()\\"]{0,16}\(')
_SIMPLE_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}
_OCTAL = re.compile(r"[0-7]{1,3}")
_HEX = re.compile(r"[0-9A-Fa-f]+")


def decode_escapes(body: str, line: int) -> str:
    """The text of an ordinary literal's ``body`` (between the quotes): escapes decoded to UTF-8 bytes, the
    bytes decoded as UTF-8. Raises :class:`CppError` for an unknown escape or bytes that are not UTF-8."""
    out = bytearray()
    i = 0
    while i < len(body):
        j = body.find("\\", i)
        if j < 0:
            out += body[i:].encode("utf-8")
            break
        out += body[i:j].encode("utf-8")
        if j + 1 >= len(body):
            raise CppError("string literal ends in a backslash", line)
        e = body[j + 1]
        i = j + 2
        if e in _SIMPLE_ESCAPES:
            out += _SIMPLE_ESCAPES[e].encode("utf-8")
        elif e == "\n":  # line splice
            continue
        elif e in "01234567":
            digits = _OCTAL.match(body, j + 1).group()  # type: ignore[union-attr]
            if int(digits, 8) > 255:
                raise CppError(f"octal escape \\{digits} is out of range", line)
            out.append(int(digits, 8))
            i = j + 1 + len(digits)
        elif e == "x":
            m = _HEX.match(body, i)
            if not m or int(m.group(), 16) > 255:
                raise CppError(f"bad hex escape \\x{m.group() if m else ''}", line)
            out.append(int(m.group(), 16))
            i = m.end()
        elif e in "uU":
            size = 4 if e == "u" else 8
            digits = body[i : i + size]
            if len(digits) != size or not _HEX.fullmatch(digits):
                raise CppError(f"bad universal character name \\{e}{digits}", line)
            cp = int(digits, 16)
            if cp > 0x10FFFF or 0xD800 <= cp <= 0xDFFF:
                raise CppError(f"universal character name \\{e}{digits} is not a character", line)
            out += chr(cp).encode("utf-8")
            i += size
        else:
            raise CppError(f"unknown escape \\{e}", line)
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        raise CppError("string literal is not valid UTF-8 (its \\x or octal escapes)", line) from None


def _quoted_end(text: str, start: int, quote: str, line: int) -> int:
    """Index of the closing ``quote`` of an ordinary literal whose body starts at ``start``."""
    i = start
    while True:
        if i >= len(text) or text[i] == "\n":
            raise CppError("unterminated string literal", line)
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == quote:
            return i
        i += 1


def tokenize(text: str) -> list[Token]:
    """The tokens of C++ source ``text``; adjacent string literals are joined (the first one's line).

    Raises :class:`CppError` for an unterminated literal or comment, a bad escape or an unknown character."""
    tokens: list[Token] = []
    i, line, n, line_start = 0, 1, len(text), True
    while i < n:
        c = text[i]
        if c == "\n":
            line, i, line_start = line + 1, i + 1, True
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if c == "#" and line_start:  # preprocessor line, with backslash continuations
            while i < n and text[i] != "\n":
                if text[i] == "\\" and text.startswith("\n", i + 1):
                    line, i = line + 1, i + 1
                i += 1
            continue
        line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise CppError("unterminated comment", line)
            line += text.count("\n", i, j)
            i = j + 2
            continue
        m = _STRING_START.match(text, i)
        if m:
            start_line = line
            if m.group(1):
                d = _RAW_DELIM.match(text, m.end())
                if not d:
                    raise CppError("bad raw string delimiter", line)
                close = ")" + d.group()[:-1] + '"'
                j = text.find(close, d.end())
                if j < 0:
                    raise CppError(f"unterminated raw string (no {close})", line)
                value = text[d.end() : j]
                line += value.count("\n")
                i = j + len(close)
            else:
                j = _quoted_end(text, m.end(), '"', line)
                value = decode_escapes(text[m.end() : j], line)
                i = j + 1
            if tokens and tokens[-1].kind == "str":
                tokens[-1] = Token("str", tokens[-1].value + value, tokens[-1].line)
            else:
                tokens.append(Token("str", value, start_line))
            continue
        m = _CHAR_START.match(text, i)
        if m:
            j = _quoted_end(text, m.end(), "'", line)
            tokens.append(Token("char", decode_escapes(text[m.end() : j], line), line))
            i = j + 1
            continue
        m = _IDENT.match(text, i) or _NUMBER.match(text, i)
        if m:
            tokens.append(Token("id" if m.re is _IDENT else "num", m.group(), line))
            i = m.end()
            continue
        punct = next((p for p in _PUNCT if text.startswith(p, i)), None)
        if punct is None:
            raise CppError(f"unexpected character {c!r}", line)
        tokens.append(Token("punct", punct, line))
        i += len(punct)
    return tokens


_PAIRS = {"(": ")", "[": "]", "{": "}"}


def matching(tokens: list[Token], i: int) -> int:
    """Index of the bracket closing the one at ``tokens[i]``; raises :class:`CppError` when unbalanced."""
    stack = []
    for j in range(i, len(tokens)):
        t = tokens[j]
        if t.kind != "punct":
            continue
        if t.value in _PAIRS:
            stack.append(_PAIRS[t.value])
        elif t.value in (")", "]", "}"):
            if not stack or stack.pop() != t.value:
                raise CppError(f"unbalanced {t.value!r}", t.line)
            if not stack:
                return j
    raise CppError(f"unclosed {tokens[i].value!r}", tokens[i].line)


@dataclass
class Item:
    """A top-level item: ``head`` (tokens up to ``;`` or up to a function body), ``body`` (a function's tokens
    between its braces) or ``None``."""

    head: list[Token]
    body: list[Token] | None
    line: int

    def function(self) -> tuple[str, list[str]] | None:
        """``(name, parameter names)`` when the item is a function definition, else ``None``."""
        if self.body is None:
            return None
        k = next((k for k, t in enumerate(self.head) if t.is_punct("(")), None)
        if not k or self.head[k - 1].kind != "id":
            return None
        end = matching(self.head, k)
        params: list[str] = []
        current: list[Token] = []
        depth = 0
        for t in self.head[k + 1 : end] + [Token("punct", ",", 0)]:
            if t.kind == "punct" and t.value in ("(", "[", "{", "<"):
                depth += 1
            elif t.kind == "punct" and t.value in (")", "]", "}", ">", ">>"):
                depth -= len(t.value)
            if depth == 0 and t.is_punct(","):
                names = [x.value for x in current if x.kind == "id"]
                if "=" in [x.value for x in current]:
                    cut = [x.value for x in current].index("=")
                    names = [x.value for x in current[:cut] if x.kind == "id"]
                if names and names != ["void"]:
                    params.append(names[-1])
                current = []
            else:
                current.append(t)
        return self.head[k - 1].value, params


def top_level_items(tokens: list[Token]) -> list[Item]:
    """Split a file's tokens into declarations (up to ``;``) and function definitions (header + body)."""
    items: list[Item] = []
    current: list[Token] = []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t.is_punct("{"):
            j = matching(tokens, i)
            prev = current[-1] if current else None
            if prev is not None and (prev.is_punct(")") or prev.is_id("const") or prev.is_id("noexcept")):
                items.append(Item(current, tokens[i + 1 : j], current[0].line))
                current, i = [], j + 1
                continue
            current.extend(tokens[i : j + 1])
            i = j + 1
            continue
        if t.is_punct(";"):
            if current:
                items.append(Item(current, None, current[0].line))
            current, i = [], i + 1
            continue
        current.append(t)
        i += 1
    if current:
        items.append(Item(current, None, current[0].line))
    return items


@dataclass
class Stmt:
    """One statement: ``kind`` ``simple`` (``tokens`` without the ``;``), ``block``, or a control keyword
    (``for``, ``if``, ``while``, ``switch``, ``try``, ``do``) with its parenthesised ``header`` and ``body``."""

    kind: str
    line: int
    tokens: list[Token] = field(default_factory=list)
    header: list[Token] = field(default_factory=list)
    body: list[Stmt] = field(default_factory=list)


def statements(tokens: list[Token]) -> list[Stmt]:
    """The statements of a function body or block (``tokens`` without the braces)."""
    out, i = [], 0
    while i < len(tokens):
        if tokens[i].is_punct(";"):
            i += 1
            continue
        stmt, i = _statement(tokens, i)
        out.append(stmt)
    return out


def _statement(tokens: list[Token], i: int) -> tuple[Stmt, int]:
    t = tokens[i]
    if t.is_punct("{"):
        j = matching(tokens, i)
        return Stmt("block", t.line, tokens[i : j + 1], body=statements(tokens[i + 1 : j])), j + 1
    if t.kind == "id" and t.value in ("for", "if", "while", "switch"):
        if i + 1 >= len(tokens) or not tokens[i + 1].is_punct("("):
            raise CppError(f"'{t.value}' without '('", t.line)
        k = matching(tokens, i + 1)
        body, j = _statement(tokens, k + 1) if k + 1 < len(tokens) else (Stmt("simple", t.line), k + 1)
        stmt = Stmt(t.value, t.line, tokens[i:j], header=tokens[i + 2 : k], body=[body])
        if t.value == "if" and j < len(tokens) and tokens[j].is_id("else"):
            other, j = _statement(tokens, j + 1)
            stmt.body.append(other)
            stmt.tokens = tokens[i:j]
        return stmt, j
    if t.kind == "id" and t.value in ("try", "do", "else"):
        body, j = _statement(tokens, i + 1)
        stmt = Stmt(t.value, t.line, body=[body])
        while j < len(tokens) and (tokens[j].is_id("catch") or (t.value == "do" and tokens[j].is_id("while"))):
            k = matching(tokens, j + 1)
            if tokens[j].is_id("while"):
                j = k + 1
                break
            handler, j = _statement(tokens, k + 1)
            stmt.body.append(handler)
        stmt.tokens = tokens[i:j]
        return stmt, j
    j = i
    while j < len(tokens) and not tokens[j].is_punct(";"):
        j = matching(tokens, j) + 1 if tokens[j].kind == "punct" and tokens[j].value in _PAIRS else j + 1
    return Stmt("simple", t.line, tokens[i:j]), j + 1


# --- expressions -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lit:
    value: object
    line: int


@dataclass(frozen=True)
class Name:
    name: str
    line: int


@dataclass(frozen=True)
class Call:
    name: str
    args: tuple
    line: int


@dataclass(frozen=True)
class Braced:
    items: tuple
    line: int


@dataclass(frozen=True)
class Concat:
    parts: tuple
    line: int


class ExprReader:
    """Reads expressions from ``tokens`` starting at ``pos``: literals, names, calls, braced lists, ``+``."""

    def __init__(self, tokens: list[Token], pos: int = 0):
        self.tokens, self.pos = tokens, pos

    def at_end(self) -> bool:
        return self.pos >= len(self.tokens)

    def peek(self) -> Token | None:
        return None if self.at_end() else self.tokens[self.pos]

    def line(self) -> int:
        t = self.peek() or (self.tokens[-1] if self.tokens else None)
        return t.line if t else 0

    def take(self, value: str | None = None, kind: str | None = None) -> Token:
        t = self.peek()
        if t is None or (value is not None and t.value != value) or (kind is not None and t.kind != kind):
            got = "the end" if t is None else repr(t.value)
            raise CppError(f"expected {value or kind}, got {got}", self.line())
        self.pos += 1
        return t

    def accept(self, value: str) -> bool:
        t = self.peek()
        if t is not None and t.kind == "punct" and t.value == value:
            self.pos += 1
            return True
        return False

    def expression(self):
        first = self.term()
        parts = [first]
        while self.accept("+"):
            parts.append(self.term())
        return first if len(parts) == 1 else Concat(tuple(parts), first.line)

    def items(self, close: str) -> tuple:
        """Comma-separated expressions up to ``close`` (consumed); a trailing comma is allowed."""
        out = []
        while not self.accept(close):
            out.append(self.expression())
            if not self.accept(","):
                self.take(close)
                break
        return tuple(out)

    def term(self):
        t = self.take()
        if t.kind == "str" or t.kind == "char":
            return Lit(t.value, t.line)
        if t.kind == "num":
            return Lit(_number(t), t.line)
        after = self.peek()
        if t.is_punct("-") and after is not None and after.kind == "num":
            return Lit(-_number(self.take()), t.line)
        if t.is_punct("{"):
            return Braced(self.items("}"), t.line)
        if t.is_punct("("):
            inner = self.expression()
            self.take(")")
            return inner
        if t.kind == "id":
            if t.value in ("true", "false"):
                return Lit(t.value == "true", t.line)
            name = t.value
            while self.accept("::"):
                name += "::" + self.take(kind="id").value
            if self.accept("("):
                return Call(name, self.items(")"), t.line)
            if self.accept("{"):
                return Call(name, self.items("}"), t.line)
            return Name(name, t.line)
        raise CppError(f"unexpected {t.value!r} in an expression", t.line)


def _number(t: Token) -> int | float:
    text = t.value.replace("'", "").rstrip("uUlLfF")
    try:
        return int(text, 0)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            raise CppError(f"unreadable number {t.value!r}", t.line) from None


def expression(tokens: list[Token]):
    """The one expression ``tokens`` hold; raises :class:`CppError` for anything left over."""
    reader = ExprReader(tokens)
    node = reader.expression()
    if not reader.at_end():
        raise CppError(f"unexpected {reader.peek().value!r} after an expression", reader.line())  # type: ignore[union-attr]
    return node


def declaration(tokens: list[Token]) -> tuple[str, str, object] | None:
    """``(type, name, initializer node or None)`` when ``tokens`` declare one variable
    (``[static] [const] TYPE NAME [= EXPR | {...}]``), else ``None``."""
    type_tokens = {"::", "<", ">", "*", "&", ","}
    for k, t in enumerate(tokens):
        if t.kind == "id" and k > 0:
            rest = tokens[k + 1 :]
            if (
                not rest
                or rest[0].is_punct("=")
                or (rest[0].is_punct("{") and matching(tokens, k + 1) == len(tokens) - 1)
            ):
                break
        if not (t.kind == "id" or (t.kind == "punct" and t.value in type_tokens)):
            return None
    else:
        return None
    kind = " ".join(x.value for x in tokens[:k])
    if not rest:
        return kind, t.value, None
    init = expression(rest[1:]) if rest[0].is_punct("=") else Braced(ExprReader(rest, 1).items("}"), rest[0].line)
    return kind, t.value, init

"""Seeded random tool calls for the sweep: quote-, comma-, brace-, backslash-, newline- and unicode-heavy
values (and now and then a format's protocol marker), each case built from ``(seed, index)`` alone.

Value profiles (:data:`VALUE_PROFILES`, ``sweep --values``): ``mixed`` (the default: every kind of piece above) and
``code`` (string values made of source-code pieces dense in plain quotes, backticks, commas and closing brackets:
``np.genfromtxt("train.csv", delimiter=",")``, ``f("q","r")``, the shapes of ``shared/seeds/001``'s stress run).
A profile changes only which pieces strings are drawn from; the rest of a case is drawn the same way.
"""

from __future__ import annotations

import random
from typing import Any

from harness.core.messages import ToolCall
from harness.core.scenarios import MARKER_TEXTS, Scenario, shape_tags, tools_for_calls
from harness.formats import FormatSpec

DEFAULT_CUTS = 8


DEFAULT_FULL_EVERY = 50


_PIECES = (
    '"',
    "'",
    ",",
    ":",
    "{",
    "}",
    "[",
    "]",
    "\\",
    "\n",
    "\t",
    " ",
    "  ",
    "\\n",
    '\\"',
    "\\\\",
    "\r\n",
    "a",
    "b",
    "x",
    "word",
    "Paris",
    "0",
    "-1",
    "1e5",
    "null",
    "None",
    "true",
    "False",
    "{}",
    "[]",
    '{"a": 1}',
    "key: value",
    "a,b",
    "x=1",
    "(1, 2)",
    "é",
    "東京",
    "😀",
    "👨\u200d👩\u200d👧",
    "مرحبا",
    "שלום",
    "e\u0301",
    "\u00a0",
    "\u2028",
    "<",
    ">",
    "|",
    "=",
)


_CODE_PIECES = (
    '"',
    '"',
    "`",
    "'",
    ",",
    ", ",
    "}",
    "]",
    ")",
    "{",
    "[",
    "(",
    ":",
    "=",
    " ",
    "\n",
    "    ",
    "x",
    "df",
    "np.genfromtxt(",
    "train.csv",
    "delimiter=",
    "f(",
    "q",
    "print(",
    "return ",
    "\\",
    "\\n",
    "#",
    "1",
)


_CODE_WHOLE = (
    'np.genfromtxt("train.csv", delimiter=",")',
    'f("q","r")',
    'print(f"{x}, {y}")',
    "run(`ls`, {a: `b`})",
    'd = {"k": ["v", "w"], "n": 1}',
    "s = 'it''s'",
)


#: the value profiles :func:`random_scenario` knows (module docstring): string pieces, whole strings (None: the
#: default ones), pieces in a short string.
VALUE_PROFILES = {"mixed": (_PIECES, None, (0, 6)), "code": (_CODE_PIECES, _CODE_WHOLE, (2, 12))}


_WHOLE_STRINGS = (
    "",
    " ",
    "123",
    "1.10",
    "true",
    "null",
    "None",
    "NaN",
    "{}",
    "[1,2]",
    "  padded  ",
    "\\",
    'print("hi, there")',
    'np.genfromtxt("train.csv", delimiter=",")',
    "def f(x):\n    return {'x': x}\n",
)


_PLAIN_KEYS = (
    "query",
    "path",
    "city",
    "limit",
    "id",
    "x",
    "content",
    "sort_by",
    "units",
    "names",
    "options",
    "filter",
    "value",
    "text",
    "名前",
    "ID",
    "2fa",
)


_ODD_KEYS = ("max-results", "a.b", "first name", "ключ", "_private")


_PLAIN_TOOLS = ("search", "get_weather", "get_v2", "run_python", "write_file", "send_email", "lookup")


_ODD_TOOLS = ("manim-video", "web.search", "fs.read-file2", "Calc2", "x")


_SPECIAL_INTS = (0, -1, 1, 42, 2**31 - 1, -(2**31), 2**53 + 1, 2**63 - 1, -(2**63), 10**30)


_SPECIAL_FLOATS = (0.5, -2.25, 0.1, 1e-07, 6.02e23, 1e16, 3.14159, 5e-324, 1.7976931348623157e308, 1.0, -0.5)


_WORDS = (
    "Let",
    "me",
    "check",
    "that",
    "for",
    "you.",
    "Sure,",
    "done.",
    "Here",
    "are",
    "the",
    "results",
    "(2",
    "items)",
    "it's",
    '"quoted"',
    "naïve",
    "東京",
    "🙂",
    "e.g.",
    "a,b",
    "50%",
    "{ok}",
    "[1]",
)


def case_rng(seed: int, index: int, salt: str = "") -> random.Random:
    """The random generator of case ``index`` in a sweep of ``seed`` (``salt`` separates streams)."""
    return random.Random(f"{seed}:{index}{salt}")


def _marker_pool(fmt: FormatSpec) -> tuple[str, ...]:
    """Marker texts a string value may hold: this format's markers and other formats' ones, minus any that
    contains (or is part of) an unrepresentable substring."""
    pool = dict.fromkeys((*fmt.markers, *MARKER_TEXTS))
    return tuple(m for m in pool if not any(b in m or m in b for b in fmt.unrepresentable))


def _clean(text: str, forbid: tuple[str, ...]) -> str:
    while any(b in text for b in forbid):
        for b in forbid:
            text = text.replace(b, "")
    return text


def _string(rng: random.Random, markers: tuple[str, ...], forbid: tuple[str, ...], values: str = "mixed") -> str:
    pieces, whole, (low, high) = VALUE_PROFILES[values]
    roll = rng.random()
    if roll < 0.12:
        text = rng.choice(whole or _WHOLE_STRINGS)
    elif roll < 0.18:
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(30, 120)))
    else:
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(low, high)))
    if markers and rng.random() < 0.04:
        at = rng.randint(0, len(text))
        text = text[:at] + rng.choice(markers) + text[at:]
    return _clean(text, forbid)


def _identifier(
    rng: random.Random, plain: tuple, odd: tuple, p_plain: float, p_odd: float, first: str, max_tail: int
) -> str:
    """A plain name (probability ``p_plain``), an odd one (``p_odd``), else a random identifier."""
    roll = rng.random()
    if roll < p_plain:
        return rng.choice(plain)
    if roll < p_plain + p_odd:
        return rng.choice(odd)
    return rng.choice(first) + "".join(
        rng.choice("abcdefghijklmnopqrstuvwxyz0123456789_") for _ in range(rng.randint(0, max_tail))
    )


def _key(rng: random.Random) -> str:
    return _identifier(rng, _PLAIN_KEYS, _ODD_KEYS, 0.7, 0.15, "abcdefghijklmnopqrstuvwxyz_", 10)


def _value(rng: random.Random, depth: int, markers, forbid, values: str) -> Any:
    roll = rng.random()
    if roll < 0.55:
        return _string(rng, markers, forbid, values)
    if roll < 0.64:
        return rng.choice(_SPECIAL_INTS) if rng.random() < 0.4 else rng.randint(-1000, 1000)
    if roll < 0.70:
        return rng.choice(_SPECIAL_FLOATS) if rng.random() < 0.5 else round(rng.uniform(-1000, 1000), rng.randint(1, 6))
    if roll < 0.75:
        return rng.random() < 0.5
    if roll < 0.78:
        return None
    if roll < 0.89 and depth < 3:
        return _object(rng, depth + 1, markers, forbid, rng.randint(0, 3), values)
    if depth < 3:
        kind = rng.random()  # arrays of one kind: schemas stay simple
        make = (
            (lambda: _string(rng, markers, forbid, values))
            if kind < 0.5
            else (lambda: rng.randint(-100, 100))
            if kind < 0.7
            else (lambda: _object(rng, depth + 1, markers, forbid, rng.randint(1, 2), values))
        )
        return [make() for _ in range(rng.randint(0, 3))]
    return _string(rng, markers, forbid, values)


def _object(rng: random.Random, depth: int, markers, forbid, size: int, values: str = "mixed") -> dict:
    out: dict = {}
    for _ in range(size):
        out[_key(rng)] = _value(rng, depth, markers, forbid, values)
    return out


def _name(rng: random.Random) -> str:
    return _identifier(rng, _PLAIN_TOOLS, _ODD_TOOLS, 0.75, 0.15, "abcdefghijklmnopqrstuvwxyz", 14)


def _prose(rng: random.Random) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 8)))


def random_scenario(seed: int, index: int, fmt: FormatSpec, values: str = "mixed") -> Scenario:
    """Scenario ``index`` of a sweep with ``seed`` (see the module doc for the distribution; ``values``: a
    :data:`VALUE_PROFILES` name, ``KeyError`` for another); id ``sweep-{seed}-{index}``, ``seed`` the sweep seed, tags
    its shapes. Pure function of its arguments."""
    if values not in VALUE_PROFILES:
        raise KeyError(f"unknown value profile {values!r}; known: {', '.join(VALUE_PROFILES)}")
    rng = case_rng(seed, index)
    markers, forbid = _marker_pool(fmt), tuple(fmt.unrepresentable)
    n_calls = 1 if rng.random() < 0.8 else rng.choice((2, 2, 2, 3))
    calls = [ToolCall(_name(rng), _object(rng, 0, markers, forbid, rng.randint(0, 4), values)) for _ in range(n_calls)]
    scenario = Scenario(
        id=f"sweep-{seed}-{index}",
        tools=tools_for_calls(calls),
        calls=calls,
        content_after=_prose(rng) if rng.random() < 0.15 else "",
        reasoning=_prose(rng) if rng.random() < 0.10 else None,
        seed=seed,
    )
    scenario.tags = shape_tags(scenario)
    return scenario


def cut_positions(
    seed: int, index: int, length: int, cuts: int = DEFAULT_CUTS, full_every: int = DEFAULT_FULL_EVERY
) -> list[int]:
    """Truncation points ``k`` (``text[:k]``, ``0 <= k < length``) of case ``index``: every position when
    ``index % full_every == 0``, else ``cuts`` distinct seeded random positions (all when fewer), sorted."""
    if length <= 0:
        return []
    if (full_every and index % full_every == 0) or length <= cuts:
        return list(range(length))
    return sorted(case_rng(seed, index, ":cuts").sample(range(length), cuts))

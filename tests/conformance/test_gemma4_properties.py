"""Property tests of the project's own Gemma 4 parser (hypothesis): calls rendered by the real Gemma 4 chat
template parse back exactly, one-shot and streamed (eager and held) under any chunking, and arbitrary text made of
the format's fragments never raises nor drops text. Helpers: :mod:`conformance.gemma4_helpers`.
"""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.gemma4_helpers import HELD, PARSER, render, streamed, token_pieces
from conformance.suite import expected_view, split_at, view


def _plain_key(key: str) -> bool:
    """Keys the template can write bare and this reader reads back as written (documented limits: no ``:`` or
    ``<``, no whitespace around the key, no ``}`` as its first non-space character)."""
    if ":" in key or "<" in key:
        return False
    return key == key.strip(" \t\r\n") and not key.lstrip().startswith("}")


TRICKY = st.sampled_from(
    [
        '"',
        "\\",
        "a\\",
        "<tool_call|>",
        "<|tool_call>",
        "}",
        "]",
        ",",
        ":",
        "\r\n",
        '<|"',
        '<|"|',
        "<",
        "None",
        "true",
        "1",
        "",
        " ",
        "\t\x00",
        "é😀",
    ]
)
KEYS = st.one_of(st.text(max_size=10), st.from_regex(r"[a-z][a-z0-9_.\- ]{0,8}", fullmatch=True)).filter(_plain_key)
STRINGS = st.one_of(TRICKY, st.text(max_size=20), st.lists(TRICKY, max_size=4).map("".join)).filter(
    lambda s: '<|"|>' not in s
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**20, max_value=10**60),
    st.floats(allow_nan=False, allow_infinity=False),
    STRINGS,
)
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4), max_leaves=10
)
NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,15}", fullmatch=True)
CALLS = st.lists(st.tuples(NAMES, st.dictionaries(KEYS, VALUES, max_size=5)), min_size=1, max_size=3)
PROSE = st.text(st.characters(blacklist_characters="<", blacklist_categories=("Cs",)), max_size=30)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=CALLS, after=PROSE, before=PROSE, reasoning=PROSE, thinking=st.booleans(), data=st.data())
def test_property_render_parse_roundtrip(calls, after, before, reasoning, thinking, data):
    reasoning = reasoning.strip() or None
    text, prefix = render(calls, content=after, reasoning=reasoning, thinking=thinking)
    text = before + text
    content = (before + after.strip()).strip() or None
    message = PARSER.parse(text, None, prefix)
    assert view(message) == expected_view(calls, content, reasoning)
    splits = data.draw(st.lists(st.integers(0, len(text)), max_size=20).map(sorted))
    chunks = split_at(text, splits)
    for chunking in (chunks, token_pieces(text), list(text)):
        for parser in (PARSER, HELD):
            assert view(streamed(parser, chunking, None, prefix)) == view(message)


FRAGMENTS = st.sampled_from(
    [
        "<|tool_call>",
        "call:",
        "f",
        "{",
        "}",
        "[",
        "]",
        "(",
        ")",
        ":",
        ",",
        '<|"|>',
        "a",
        "1",
        "None",
        " ",
        "\n",
        "<tool_call|>",
        "<turn|>",
        "<|tool_response>",
        "<eos>",
        "=",
        '"',
        "<",
        "|",
        ">",
        "<|",
        "x y",
        "-2.5e+3",
        "<|channel>",
        "<channel|>",
        "thought",
    ]
)


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(FRAGMENTS, max_size=30), data=st.data())
def test_property_arbitrary_text_never_raises_or_drops(pieces, data):
    text = "".join(pieces)
    message = PARSER.parse(text)
    if not message.tool_calls and "channel" not in text:  # all is content, bar trailing stop markers
        body = re.sub(r"(?:<\|tool_response>|<turn\|>|<eos>)(?:\s|<\|tool_response>|<turn\|>|<eos>)*\Z", "", text)
        if any("cut off" in d for d in message.diagnostics):  # the last call, cut off by the end, is dropped
            body = body[: body.rfind("<|tool_call>")]
            if body.rstrip().endswith("<tool_call|>"):  # a stray closer before it went with it
                body = body.rstrip().removesuffix("<tool_call|>")
        assert message.content == (body.strip() or None)
    splits = data.draw(st.lists(st.integers(0, len(text)), max_size=10).map(sorted))
    chunks = split_at(text, splits)
    for chunking in (chunks, list(text)):
        assert view(streamed(HELD, chunking, leak_check=False)) == view(message)
        if not message.diagnostics:
            assert view(streamed(PARSER, chunking, leak_check=False)) == view(message)

"""Conformance of the project's own Llama 4 pythonic parser (``parsers/own/llama4_pythonic.py``) and of the
llama4_pythonic family (no offline template: canitoolcall's fixtures run): the shared suite's config plus the tests
specific to the format.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.pythonic_helpers import KEYS, NAMES, call_list, values
from conformance.suite import (
    Conformance,
    ParserConformance,
    Text,
    assert_stream_matches,
    body_without_stops,
    delta_checker,
    expected_view,
    split_at,
    view,
)
from harness.core.errors import TemplateNotFoundError
from harness.core.protocol import run_stream
from harness.corpus.peers.canitoolcall import peer_cases
from harness.formats import get_format
from harness.score.runner import evaluate_case
from harness.template.catalog import load_catalog
from harness.template.sources import load_template
from parsers.own.llama4_pythonic import Llama4PythonicParser

FMT = get_format("llama4_pythonic")
PARSER = Llama4PythonicParser()
CHECK_DELTA = delta_checker(FMT)
START, END = "<|python_start|>", "<|python_end|>"


def stream_matches(text: str, seed: int = 0, leak_check: bool = True):
    """:func:`conformance.suite.assert_stream_matches` on this file's parser, in its argument order."""
    return assert_stream_matches(PARSER, text, None, "", seed, leak_check)


# ---- the documented shapes --------------------------------------------------------------------------------

STRICT = {
    "meta-parallel": (
        '[get_weather(city="San Francisco"), get_weather(city="Seattle")]',
        [("get_weather", {"city": "San Francisco"}), ("get_weather", {"city": "Seattle"})],
    ),
    "meta-int-and-string": (
        "[get_user_info(user_id=7890, special='black')]",
        [("get_user_info", {"user_id": 7890, "special": "black"})],
    ),
    "python-start-end": (
        START + "[get_weather(city='LA', metric='C')]" + END,
        [("get_weather", {"city": "LA", "metric": "C"})],
    ),
    "no-spaces": ("[f(a='LA',b='C'),g(n=9)]", [("f", {"a": "LA", "b": "C"}), ("g", {"n": 9})]),
    "parameterless": ("[get_time()]", [("get_time", {})]),
    "literals": (
        "[r(d={'a': [1, 2.5, -0.0], 'b': None}, t=True, f=False, n=None, l=('x', 'y'), j={\"k\": null, \"v\": true})]",
        [
            (
                "r",
                {
                    "d": {"a": [1, 2.5, -0.0], "b": None},
                    "t": True,
                    "f": False,
                    "n": None,
                    "l": ["x", "y"],
                    "j": {"k": None, "v": True},
                },
            )
        ],
    ),
    "escapes": (
        r"""[w(a='Martha\'s', b="\"q\"", c='tab\there\nline', d='\u00e9\U0001F600\x41', e='back\\slash', u='\d')]""",
        [("w", {"a": "Martha's", "b": '"q"', "c": "tab\there\nline", "d": "é😀A", "e": "back\\slash", "u": "\\d"})],
    ),
    "markers-and-brackets-in-strings": (
        "[note(t='<|python_end|>]) [f(a=1)] <|eot|>', u=\"([{\")]",
        [("note", {"t": "<|python_end|>]) [f(a=1)] <|eot|>", "u": "([{"})],
    ),
    "leading-underscore-and-dotted": ("[Calendar.create_event(_limit=5)]", [("Calendar.create_event", {"_limit": 5})]),
    "whitespace-and-newlines": ("[\n  f(\n    a = 1 ,\n    b='x',\n  ),\n]", [("f", {"a": 1, "b": "x"})]),
    "content-before": ("Let me check.\n[f(a=1)]", [("f", {"a": 1})], "Let me check."),
    "content-after": ("[f(a=1)]\nDone.", [("f", {"a": 1})], "Done."),
    "big-numbers": ("[n(i=10000000000000000000000, e=1e-07, k=1_000)]", [("n", {"i": 10**22, "e": 1e-07, "k": 1000})]),
}

RECOVERED = {
    "two-lists": ("[f(a=1)] [g(b=2)]", [("f", {"a": 1}), ("g", {"b": 2})]),
    "hyphenated-name": ("[artifact-submit(x=1)]", [("artifact-submit", {"x": 1})]),
    "trailing-comma": ("[f(a=1,),]", [("f", {"a": 1})]),
    "start-with-space": (START + "  [f(a=1)]  " + END, [("f", {"a": 1})]),
}

SURFACED = {
    "start-then-prose": START + "hello",
    "start-then-not-a-call": START + "[1, 2]",
    "start-then-positional": START + "[f(1)]",
}

CUT_OFF = {
    "unterminated-string": ('[get_weather(city="San Francisco"), get_weather(city="Seattle', [], None),
    "unterminated-args": ("One moment. [f(a=", [], "One moment."),
    "start-alone": (START, [], None),
    "start-then-head": (START + "[f(", [], None),
    "second-list": ("[a(x=1)] [b(q=[1, ", [("a", {"x": 1})], None),
}

HOLD_BACK_TEXTS = [
    "Sure [f " + START + "[f(a='<|eot|>]')]" + END + " ok<|eot|>",
    "a [ b [x c <|py d <|python_st e [",
    "x [1, 2] [f(x)] [g(a=1)] y",
]


def test_prose_with_brackets_is_content():
    for text in (
        "Use this format: [link text](url). Example: [Wikipedia](https://www.wikipedia.org).",
        "A list [1, 2], an empty one [], a call without keywords [f(x)] and [it's] [f(a=b)] [f(a=1) + 2]",
        "Nested [[f(a=1)]] is read inside: no",
    ):
        message = stream_matches(text, leak_check=False)
        if "Nested" not in text:
            assert view(message) == (text, None, [])
    # a [ that is not a call list is content and the scan goes on right after it
    assert view(PARSER.parse("[[f(a=1)]]")) == expected_view([("f", {"a": 1})], "[]")


def test_python_end_is_dropped_only_after_a_call_list():
    assert PARSER.parse("[f()]\n" + END).content is None
    assert PARSER.parse("hi " + END).content == "hi " + END
    assert PARSER.parse("[f()] x " + END).content == "x " + END


def test_trailing_stop_markers_stripped_inner_kept():
    assert PARSER.parse("hi<|eot|>\n<|eom|>").content == "hi"
    assert PARSER.parse("a<|eot|>b").content == "a<|eot|>b"


def test_stream_is_incremental_and_calls_arrive_whole_at_close():
    session = PARSER.stream()
    assert [d.content for d in session.feed("Checking [the")] == ["Checking"]
    assert [d.content for d in session.feed(" weather. [get_")] == [" [the weather."]
    assert session.feed("weather(city='Pa") == []
    (delta,) = session.feed("ris')]")
    assert [(p.index, p.name, p.arguments) for p in delta.tool_calls] == [(0, "get_weather", '{"city": "Paris"}')]
    assert session.finish() == [] and session.diagnostics == []


# ---- property tests ------------------------------------------------------------------------------------

TRICKY = ["'", '"', "\\", "\n", "[", "]", "(", ")", "{", "}", "=", ",", START, END, "<|eot|>", "<|", "é😀", "\x00", ""]
CALLS = st.lists(st.tuples(NAMES, st.dictionaries(KEYS, values(TRICKY), max_size=4)), min_size=1, max_size=3)
PROSE = st.text(st.characters(blacklist_characters="[<", blacklist_categories=("Cs",)), max_size=30)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=CALLS, before=PROSE, after=PROSE, tag=st.booleans(), data=st.data())
def test_property_written_calls_roundtrip(calls, before, after, tag, data):
    """Prose, a call list (optionally between the python tags), prose: parse back exactly, whatever the chunking."""
    body = call_list(calls)
    text = before + (START + body + END if tag else body) + after
    message = PARSER.parse(text)
    assert view(message) == expected_view(calls, (before + after).strip() or None)
    splits = data.draw(st.lists(st.integers(0, len(text)), max_size=20).map(sorted))
    for chunks in (split_at(text, splits), list(text)):
        assert view(run_stream(PARSER, chunks, on_delta=CHECK_DELTA)) == view(message)


FRAGMENTS = st.sampled_from(
    [
        START,
        END,
        "<|eot|>",
        "[",
        "]",
        "(",
        ")",
        "f",
        "f(",
        "a=",
        "1",
        "'",
        '"',
        "x y",
        ",",
        "\\",
        "<",
        "<|",
        "[g(b=2)]",
        "{",
    ]
)


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(FRAGMENTS, max_size=30), data=st.data())
def test_property_arbitrary_text_never_raises_and_streams_alike(pieces, data):
    text = "".join(pieces)
    message = PARSER.parse(text)
    if not message.tool_calls and not message.diagnostics:
        assert message.content == (body_without_stops(text, FMT.stop_markers).strip() or None)
    splits = data.draw(st.lists(st.integers(0, len(text)), max_size=10).map(sorted))
    for chunks in (split_at(text, splits), list(text)):
        assert view(run_stream(PARSER, chunks)) == view(message)


# ---- the preset without an offline template, and the peer fixtures ------------------------------------------


def test_catalog_row_has_no_offline_template(monkeypatch):
    entry = load_catalog()["llama-4-scout"]
    assert (entry.format, entry.hf_repo, entry.offline_template) == (
        "llama4_pythonic",
        "meta-llama/Llama-4-Scout-17B-16E-Instruct",
        "",
    )
    assert "no offline template" in entry.offline_note
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", "/nonexistent/hf-home-for-tests")
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    with pytest.raises(TemplateNotFoundError, match="has no template for llama-4-scout"):
        load_template("llama-4-scout")


def test_every_canitoolcall_fixture_passes():
    cases, _ = peer_cases(FMT)
    assert len(cases) == 10
    for case in cases:
        records = list(evaluate_case(case, PARSER, FMT, ("oneshot", "whole", "char"), seed=3))
        assert [r.verdict for r in records] == ["pass"] * 3, (case.id, [r.detail for r in records])


class TestLlama4Pythonic(ParserConformance):
    CONFIG = Conformance(
        format="llama4_pythonic",
        parser=Llama4PythonicParser,
        strict={k: Text(*v) for k, v in STRICT.items()},
        stops=("", "<|eot|>", "<|eom|>", "<|eot|>\n"),
        recovered={k: Text(*v) for k, v in RECOVERED.items()},
        surfaced=SURFACED,
        cut_off={k: Text(*v) for k, v in CUT_OFF.items()},
        hold_back=tuple(HOLD_BACK_TEXTS),
    )
    test_own_parser_passes_every_strict_rendered_case = None  # no offline template (test_catalog_row_...)

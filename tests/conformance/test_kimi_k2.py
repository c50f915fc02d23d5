"""Conformance of the project's own Kimi K2 parser (``parsers/own/kimi_k2.py``, on the section reader it shares
with the DeepSeek parsers, ``parsers/own/_token_sections.py``) and of the kimi_k2 family end to end
(``moonshotai-Kimi-K2.jinja`` from the llama-cpp-python 0.3.36 sdist): the shared suite's config plus the tests
specific to the format (call ids, section drift, thinking, property tests).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.suite import (
    Conformance,
    ParserConformance,
    Text,
    assert_stream_matches,
    body_without_stops,
    delta_checker,
    expected_view,
    split_at,
    template,
    tool,
    view,
)
from harness.core.cases import load_cases
from harness.core.errors import UnrepresentableError
from harness.core.messages import ToolCall
from harness.core.protocol import run_stream
from harness.core.scenarios import Scenario
from harness.corpus.build import OBSERVED_FILE
from harness.formats import get_format
from harness.formats.kimi_k2 import ARGUMENT_BEGIN, CALL_BEGIN, CALL_END, SECTION_BEGIN, SECTION_END
from harness.parse import modes as chunking
from harness.template.render import render_scenario
from parsers.own.kimi_k2 import KimiK2Parser, tool_name

FMT = get_format("kimi_k2")
PARSER = KimiK2Parser()
TOKENS = ("tokens",) if chunking.has_tokenizer(FMT.name) else ()  # DeepSeek's vocabularies are vendored


def kimi_call(name: str, arguments, index: int = 0, *, call_id: str | None = None) -> str:
    """One call as the template writes it (``tojson``: ``json.dumps`` with non-ASCII kept)."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return f"{CALL_BEGIN}{call_id or f'functions.{name}:{index}'}{ARGUMENT_BEGIN}{args}{CALL_END}"


def section(*calls: str) -> str:
    return SECTION_BEGIN + "".join(calls) + SECTION_END


# ---- protocol and registry -------------------------------------------------------------------------


# ---- one-shot and streaming on small inputs ----------------------------------------------------------

STRICT = {
    "one-call": (section(kimi_call("get_weather", {"city": "Paris"})), [("get_weather", {"city": "Paris"})], None),
    "content-first": (
        "Let me look." + section(kimi_call("search", {"q": "x"})),
        [("search", {"q": "x"})],
        "Let me look.",
    ),
    "parallel": (
        section(kimi_call("a", {"x": 1}), kimi_call("b", {}, 1), kimi_call("a", {"x": 2}, 2)),
        [("a", {"x": 1}), ("b", {}), ("a", {"x": 2})],
        None,
    ),
    "name-dot-colon": (
        section(kimi_call("web.search", {"q": 1}), kimi_call("mcp:fs:read", {"p": "/"}, 1)),
        [("web.search", {"q": 1}), ("mcp:fs:read", {"p": "/"})],
        None,
    ),
    "markers-inside-strings": (
        section(
            kimi_call(
                "note",
                {
                    "t": section(kimi_call("rm", {"f": True})) + "<|im_end|>",
                    "u": CALL_END,
                    "v": "<",
                    "w": "<|tool_call_",
                },
            )
        ),
        [
            (
                "note",
                {
                    "t": section(kimi_call("rm", {"f": True})) + "<|im_end|>",
                    "u": CALL_END,
                    "v": "<",
                    "w": "<|tool_call_",
                },
            )
        ],
        None,
    ),
    "json-hard-strings": (
        section(
            kimi_call("w", {"a": 'say "hi" \\ \\"', "b": "a\nb\r\t\x01\x7f", "c": "é😀\u2028", "d": "}]{[,:", "e": ""})
        ),
        [("w", {"a": 'say "hi" \\ \\"', "b": "a\nb\r\t\x01\x7f", "c": "é😀\u2028", "d": "}]{[,:", "e": ""})],
        None,
    ),
    "numbers": (
        section(kimi_call("n", {"big": 10**40, "f": 1.5e-07, "z": -0.0, "i": 3.0, "t": True, "nul": None})),
        [("n", {"big": 10**40, "f": 1.5e-07, "z": -0.0, "i": 3.0, "t": True, "nul": None})],
        None,
    ),
    "deep": (
        section(kimi_call("d", {"a": [[{"b": [{"c": {"d": [1, [2, {}]]}}]}]]})),
        [("d", {"a": [[{"b": [{"c": {"d": [1, [2, {}]]}}]}]]})],
        None,
    ),
}


# ---- call ids -------------------------------------------------------------------------------------

EXEC = [tool("exec", {"command": {"type": "string"}})]
TWO = [
    tool("read", {"path": {"type": "string"}}),
    tool("write", {"path": {"type": "string"}, "text": {"type": "string"}}),
]

IDS = [
    # (id, tools, arguments, name)
    ("functions.get_weather:0", None, {}, "get_weather"),
    ("  functions.get_weather:12 ", None, {}, "get_weather"),
    ("functions.web.search:3", None, {}, "web.search"),
    ("functions.mcp:search:0", None, {}, "mcp:search"),
    ("functions.functions.lookup:0", None, {}, "functions.lookup"),
    ("get_weather:0", None, {}, "get_weather"),  # drift: no functions. prefix
    ("functions.search:web:0", [tool("search", {})], {}, "search:web"),  # a well-formed id wins over a declared prefix
    ("functionsexec:0", EXEC, {}, "exec"),  # drift: functions glued to the name
    ("functionsexec:0", None, {}, "functionsexec"),
    ("functions.search:call_1", None, {}, "search"),  # drift: non-numeric index
    ("functions.search:call_1", [tool("search", {})], {}, "search"),
    ("functionsexec5", None, {}, "exec"),  # observed: prefix and index glued on
    ("functionsexec5", EXEC, {}, "exec"),
    ("functions.exec5", None, {}, "exec"),
    ("functions.exec5", [tool("exec5", {})], {}, "exec5"),
    ("functions.get_v2", [tool("get_v2", {})], {}, "get_v2"),
    ("functions.get_v2", None, {}, "get_v"),  # known limitation without tools
    ("functions.search", None, {}, "search"),
    ("functions_list", None, {}, "functions_list"),
    ("search", None, {}, "search"),
    ("3", EXEC, {"command": "ls"}, "exec"),  # bare counter: the one tool
    ("0", TWO, {"path": "a", "text": "b"}, "write"),  # bare counter: the only tool that fits
    ("0", TWO, {"path": "a"}, None),  # ambiguous
    ("3", None, {}, None),
    ("", EXEC, {}, "exec"),
]


@pytest.mark.parametrize("call_id,tools,arguments,name", IDS)
def test_tool_name_from_id(call_id, tools, arguments, name):
    assert tool_name(call_id, tools, arguments) == name


def test_observed_glued_ids_are_recovered():
    (case,) = [c for c in load_cases(OBSERVED_FILE, fmt="kimi_k2")]
    message = assert_stream_matches(PARSER, case.text, case.tools, case.prefix)
    assert view(message) == view(case.expected)


def test_id_drift_in_text():
    text = section(
        kimi_call("a", {}, call_id="a:0"),
        kimi_call("b", {}, call_id="functions.b:first"),
        kimi_call("c", {}, call_id="2"),
        kimi_call("d", {}, call_id=" functions.d:3\n"),
    )
    message = assert_stream_matches(PARSER, text, [tool("c", {})])
    assert [c.name for c in message.tool_calls] == ["a", "b", "c", "d"]


# ---- drift recovered and faults surfaced ---------------------------------------------------------------

RECOVERED = {
    "whitespace-between-tokens": (
        f'{SECTION_BEGIN}\n {CALL_BEGIN} functions.f:0 {ARGUMENT_BEGIN}\n{{"a": 1}}\n{CALL_END}\n{SECTION_END}',
        [("f", {"a": 1})],
        None,
    ),
    "no-section-opener": (kimi_call("f", {"a": 1}) + kimi_call("g", {}, 1), [("f", {"a": 1}), ("g", {})], None),
    "no-section-opener-with-closer": (kimi_call("f", {}) + SECTION_END, [("f", {})], None),
    "no-section-closer": (SECTION_BEGIN + kimi_call("f", {"a": 1}), [("f", {"a": 1})], None),
    "no-call-closer-at-end": (
        SECTION_BEGIN + CALL_BEGIN + "functions.f:0" + ARGUMENT_BEGIN + '{"a": 1}',
        [("f", {"a": 1})],
        None,
    ),
    "no-call-closer-before-next": (
        SECTION_BEGIN + CALL_BEGIN + "functions.f:0" + ARGUMENT_BEGIN + "{}" + kimi_call("g", {}, 1) + SECTION_END,
        [("f", {}), ("g", {})],
        None,
    ),
    "no-call-closer-before-section-end": (
        SECTION_BEGIN + CALL_BEGIN + "functions.f:0" + ARGUMENT_BEGIN + "{}  " + SECTION_END,
        [("f", {})],
        None,
    ),
    "arguments-as-string": (
        section(kimi_call("f", json.dumps(json.dumps({"a": CALL_END})))),
        [("f", {"a": CALL_END})],
        None,
    ),
    "prose-after-section": ("Before." + section(kimi_call("f", {})) + "\n\nAfter.", [("f", {})], "Before.\n\nAfter."),
    "prose-after-call-no-closer": (
        "Before." + SECTION_BEGIN + kimi_call("f", {}) + " After.",
        [("f", {})],
        "Before. After.",
    ),
}


SURFACED = {
    "not-json": section(kimi_call("f", "city='Paris'")),
    "array-arguments": section(kimi_call("f", [1, 2])),
    "scalar-arguments": section(kimi_call("f", "3")),
    "nan": section(kimi_call("f", '{"x": NaN}')),
    "invalid-json": section(kimi_call("f", '{"x": 1,}')),
    "text-after-json": section(kimi_call("f", '{"x": 1} trailing')),
    "marker-in-id": section(CALL_BEGIN + "functions.f:0" + CALL_END),
    "no-name": section(kimi_call("f", {}, call_id="7")),
    "prose-in-section": SECTION_BEGIN + "I will call it." + SECTION_END,
}

# The last call (or an opened section) is cut off by the end of the text: dropped, what came before kept.
CUT_OFF = {
    "unterminated-json": (SECTION_BEGIN + CALL_BEGIN + "functions.f:0" + ARGUMENT_BEGIN + '{"a": "open', [], None),
    "opener-alone": ("Checking. " + SECTION_BEGIN, [], "Checking."),
    "call-opener-alone": (CALL_BEGIN + "functions.f:0", [], None),
    "second-call": (
        SECTION_BEGIN + kimi_call("a", {"x": 1}) + CALL_BEGIN + "functions.b:1" + ARGUMENT_BEGIN + '{"q"',
        [("a", {"x": 1})],
        None,
    ),
}


def test_empty_section_is_dropped():
    """An empty section carries nothing: its markers do not reach content (vLLM's Kimi K2 test shape)."""
    message = assert_stream_matches(PARSER, "All done. " + SECTION_BEGIN + SECTION_END)
    assert view(message) == ("All done.", None, []) and message.diagnostics == ["empty tool-call section dropped"]


def test_calls_straight_out_of_unclosed_reasoning():
    """No ``</think>`` and no section opener: the first call opener ends the reasoning and the calls are read
    (llama.cpp's Kimi-K2-Thinking test shape)."""
    text = (
        "<think>Two lookups needed"
        + CALL_BEGIN
        + "functions.a:0"
        + ARGUMENT_BEGIN
        + '{"n": 1}'
        + CALL_BEGIN
        + "functions.b:1"
        + ARGUMENT_BEGIN
        + '{"s": "x"}'
    )
    message = assert_stream_matches(PARSER, text)
    assert view(message) == expected_view([("a", {"n": 1}), ("b", {"s": "x"})], None, "Two lookups needed")


def test_bad_call_between_good_calls_keeps_them():
    text = "Plan." + section(kimi_call("a", {"x": 1}), kimi_call("bad", "{oops}", 1), kimi_call("b", {}, 2)) + " Done."
    message = assert_stream_matches(PARSER, text, leak_check=False)
    assert view(message) == expected_view(
        [("a", {"x": 1}), ("b", {})], "Plan." + kimi_call("bad", "{oops}", 1) + " Done."
    )


def test_first_call_bad_keeps_the_section_markers():
    text = section(kimi_call("bad", "{oops}"), kimi_call("b", {}, 1))
    message = assert_stream_matches(PARSER, text, leak_check=False)
    assert view(message) == expected_view([("b", {})], SECTION_BEGIN + kimi_call("bad", "{oops}") + SECTION_END)


def test_unterminated_string_does_not_swallow_the_next_call():
    text = (
        SECTION_BEGIN
        + CALL_BEGIN
        + "functions.f:0"
        + ARGUMENT_BEGIN
        + '{"a": "oops}'
        + CALL_END
        + kimi_call("g", {"b": 1}, 1)
        + SECTION_END
    )
    message = assert_stream_matches(PARSER, text, leak_check=False)
    assert view(message) == expected_view(
        [("g", {"b": 1})],
        SECTION_BEGIN + CALL_BEGIN + "functions.f:0" + ARGUMENT_BEGIN + '{"a": "oops}' + CALL_END + SECTION_END,
    )


def test_prose_with_angle_brackets_and_stray_markers_is_content():
    text = "Use a<b, c>d, <|tool, <|im_middle|> and " + SECTION_END + " x."
    message = assert_stream_matches(PARSER, text, leak_check=False)
    assert view(message) == (text, None, [])


def test_trailing_stop_markers_stripped_inner_kept():
    assert PARSER.parse("hi<|im_end|>\n<|im_end|>").content == "hi"
    assert PARSER.parse("a<|im_end|>b").content == "a<|im_end|>b"
    assert PARSER.parse("hi<|im_").content == "hi<|im_"


def test_think_block_and_prefix():
    """Kimi-K2-Thinking writes a think block first; the section opener also ends reasoning."""
    call = section(kimi_call("f", {"a": 1}))
    message = assert_stream_matches(PARSER, "<think>\nplan it\n</think>\nOn it." + call)
    assert view(message) == expected_view([("f", {"a": 1})], "On it.", "plan it")
    message = assert_stream_matches(PARSER, "still planning" + call, prefix="<think>")
    assert view(message) == expected_view([("f", {"a": 1})], None, "still planning")
    assert view(PARSER.parse("plain <think>x</think>")) == ("plain <think>x</think>", None, [])


# ---- streaming ----------------------------------------------------------------------------------------

HOLD_BACK_TEXTS = [
    "Sure " + section(kimi_call("f", {"a": SECTION_END + "<|im_"})) + " ok<|im_end|>",
    "a <|tool b <|tool_calls_section c <|im_e d <thin e",
    "x" + section(kimi_call("f", "{bad}")) + "y",
    "<think>r < s</think>ok " + kimi_call("f", {}),
]


def test_stream_is_incremental_and_calls_arrive_whole_at_their_end():
    session = PARSER.stream()
    assert [d.content for d in session.feed("Checking the weather.<|tool_calls")] == ["Checking the weather."]
    assert session.feed('_section_begin|><|tool_call_begin|>functions.w:0<|tool_call_argument_begin|>{"c') == []
    assert session.feed('ity": "Paris"}<|tool_call_') == []
    (delta,) = session.feed("end|>")
    (piece,) = delta.tool_calls
    assert (piece.index, piece.name, json.loads(piece.arguments)) == (0, "w", {"city": "Paris"})
    assert session.feed(kimi_call("t", {}, 1).removesuffix(CALL_END)) == []  # the closer decides
    (delta,) = session.feed(SECTION_END)  # ... or what proves it missing
    assert (delta.tool_calls[0].index, delta.tool_calls[0].name) == (1, "t")
    assert session.finish() == [] and session.diagnostics == []


# ---- property tests ----------------------------------------------------------------------------------

NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.:\-]{0,15}", fullmatch=True).filter(lambda n: not n.endswith(":"))
TRICKY = st.sampled_from(
    [
        '"',
        "\\",
        SECTION_BEGIN,
        CALL_BEGIN,
        ARGUMENT_BEGIN,
        CALL_END,
        SECTION_END,
        "<|im_end|>",
        "}",
        "]",
        "\n",
        "\x00",
        "é😀",
        "<think>",
        "</think>",
        "<",
        "<|",
        "",
    ]
)
STRINGS = st.one_of(TRICKY, st.text(max_size=20), st.lists(TRICKY, max_size=4).map("".join))
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), STRINGS)
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(STRINGS, inner, max_size=4), max_leaves=10
)
CALLS = st.lists(st.tuples(NAMES, st.dictionaries(STRINGS, VALUES, max_size=5)), min_size=1, max_size=3)
PROSE = st.text(st.characters(blacklist_characters="<", blacklist_categories=("Cs",)), max_size=30)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=CALLS, content=PROSE, data=st.data())
def test_property_written_calls_roundtrip(calls, content, data):
    """Calls written as the template writes them parse back exactly, whatever the chunking."""
    text = content + section(*(kimi_call(n, a, i) for i, (n, a) in enumerate(calls)))
    message = PARSER.parse(text)
    assert view(message) == expected_view(calls, content.strip() or None)
    splits = data.draw(st.lists(st.integers(0, len(text)), max_size=20).map(sorted))
    for chunks in (split_at(text, splits), list(text)):
        assert view(run_stream(PARSER, chunks, on_delta=delta_checker(FMT))) == view(message)


FRAGMENTS = st.sampled_from(
    [
        SECTION_BEGIN,
        SECTION_END,
        CALL_BEGIN,
        ARGUMENT_BEGIN,
        CALL_END,
        "<|im_end|>",
        "functions.f:0",
        "g:1",
        "functionsexec5",
        "3",
        " ",
        "\n",
        '{"a": 1}',
        "{",
        "}",
        '"',
        "<think>",
        "</think>",
        "<|",
        "<|tool_",
        "x y",
        "\\",
        "[1]",
        "<",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(FRAGMENTS, max_size=30), prefix=st.sampled_from(["", "<think>", "<think></think>"]), data=st.data()
)
def test_property_arbitrary_text_never_raises_or_drops(pieces, prefix, data):
    text = "".join(pieces)
    message = PARSER.parse(text, None, prefix)
    dropped = any("dropped" in d for d in message.diagnostics)  # a cut-off call or an empty section
    if not message.tool_calls and "think>" not in text and not dropped:  # every character is kept, in order
        kept = (message.reasoning or "") + (message.content or "")
        assert "".join(kept.split()) == "".join(body_without_stops(text, FMT.stop_markers).split())
    splits = data.draw(st.lists(st.integers(0, len(text)), max_size=10).map(sorted))
    for chunks in (split_at(text, splits), list(text)):
        assert view(run_stream(PARSER, chunks, None, prefix)) == view(message)


# ---- rendering through the real template ---------------------------------------------------------------

WEATHER = tool("get_weather", {"city": {"type": "string"}})


def test_catalog_row_and_offline_template():
    tmpl = template("kimi-k2")
    assert (tmpl.format, tmpl.source, tmpl.file) == ("kimi_k2", "sdist", "moonshotai-Kimi-K2.jinja")


def test_rendered_shapes():
    calls = [ToolCall("web.search", {"q": "x"}), ToolCall("get_weather", {"city": "Paris"})]
    case = render_scenario(
        template("kimi-k2"),
        Scenario("s1", [tool("web.search", {"q": {"type": "string"}}), WEATHER], calls, content_after="Checking."),
        FMT,
    )
    assert (case.prefix, case.extra["stop"]) == ("", "<|im_end|>")
    assert case.text == (
        "Checking."
        + SECTION_BEGIN
        + CALL_BEGIN
        + "functions.web.search:0"
        + ARGUMENT_BEGIN
        + '{"q": "x"}'
        + CALL_END
        + CALL_BEGIN
        + "functions.get_weather:1"
        + ARGUMENT_BEGIN
        + '{"city": "Paris"}'
        + CALL_END
        + SECTION_END
    )
    assert view(PARSER.parse(case.text, case.tools, case.prefix)) == view(case.expected)
    with pytest.raises(UnrepresentableError, match="reasoning"):
        render_scenario(template("kimi-k2"), Scenario("s2", [WEATHER], calls[1:], reasoning="Think."), FMT)


class TestKimiK2(ParserConformance):
    CONFIG = Conformance(
        format="kimi_k2",
        parser=KimiK2Parser,
        strict={k: Text(*v) for k, v in STRICT.items()},
        stops=("", "<|im_end|>", "<|im_end|>\n"),
        recovered={k: Text(text + "<|im_end|>", calls, content) for k, (text, calls, content) in RECOVERED.items()},
        surfaced=SURFACED,
        cut_off={k: Text(*v) for k, v in CUT_OFF.items()},
        hold_back=tuple(HOLD_BACK_TEXTS),
        models=("kimi-k2",),
        modes=("oneshot", "roundtrip", "whole", "char", "random", *TOKENS, "prefix"),
    )

    def check_corpus(self, model, run):
        corpus = run.corpus
        assert corpus.count("curated") >= 125 and corpus.count("generated") >= 20 and corpus.count("observed") == 1
        assert all("reasoning" in reason for _, reason in corpus.skipped)  # the template writes no reasoning
        assert any(c.id.startswith("edge-kimi_k2-") for c in corpus.cases)
        observed = run.observed()
        assert observed and all(r.verdict == "pass" for r in observed)  # the glued-id drift case is recovered

"""Conformance of the project's own Hermes parser (``parsers/own/hermes.py``) and of the hermes family end to
end: the shared suite's config plus the tests specific to the format.
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
    delta_checker,
    expected_view,
    split_at,
    template,
    tool,
    view,
)
from harness.core.errors import UnrepresentableError
from harness.core.messages import ToolCall
from harness.core.protocol import run_stream
from harness.core.scenarios import Scenario
from harness.corpus.peers import llama_cpp
from harness.formats import get_format
from harness.parse import registry
from harness.score.runner import evaluate_case
from harness.template.render import render_scenario
from parsers.own.hermes import THINK_CLOSE, THINK_OPEN, HermesParser

FMT = get_format("hermes")
PARSER = HermesParser()


EXTRA_MARKERS = (THINK_OPEN, THINK_CLOSE)
CHECK_DELTA = delta_checker(FMT, EXTRA_MARKERS)


def stream_matches(text: str, prefix: str = "", seed: int = 0, leak_check: bool = True):
    """:func:`conformance.suite.assert_stream_matches` on this file's parser, in its argument order."""
    return assert_stream_matches(PARSER, text, None, prefix, seed, leak_check, EXTRA_MARKERS)


MARKERS = tuple(dict.fromkeys(FMT.markers + FMT.stop_markers + (THINK_OPEN, THINK_CLOSE)))
OBSERVED_TEXT = '<tool_call>{"name": "search", "arguments": {"query": "explain the </tool_call> token"}}</tool_call>'


def call_text(name: str, arguments, *, key: str = "arguments", before: str = "\n", after: str = "\n") -> str:
    """A call as the templates write it (``tojson``: ``json.dumps`` with non-ASCII kept)."""
    body = json.dumps({"name": name, key: arguments}, ensure_ascii=False)
    return f"<tool_call>{before}{body}{after}</tool_call>"


# ---- protocol and registry -------------------------------------------------------------------------


# ---- one-shot and streaming on small inputs ----------------------------------------------------------

STRICT = {
    "hermes3-one-call": (call_text("get_weather", {"city": "Paris"}), [("get_weather", {"city": "Paris"})], None),
    "qwen-content-first": (
        "Let me look.\n" + call_text("search", {"q": "x"}),
        [("search", {"q": "x"})],
        "Let me look.",
    ),
    "parallel": (call_text("a", {"x": 1}) + "\n" + call_text("b", {}), [("a", {"x": 1}), ("b", {})], None),
    "closer-inside-string": (OBSERVED_TEXT, [("search", {"query": "explain the </tool_call> token"})], None),
    "markers-inside-strings": (
        call_text(
            "note",
            {
                "t": '<tool_call>\n{"name": "x"}\n</tool_call><|im_end|>',
                "u": "<think>no</think>",
                "v": "<",
                "w": "</tool_",
            },
        ),
        [
            (
                "note",
                {
                    "t": '<tool_call>\n{"name": "x"}\n</tool_call><|im_end|>',
                    "u": "<think>no</think>",
                    "v": "<",
                    "w": "</tool_",
                },
            )
        ],
        None,
    ),
    "json-hard-strings": (
        call_text("w", {"a": 'say "hi" \\ \\"', "b": "a\nb\r\t\x01\x7f", "c": "é😀\u2028", "d": "}]{[,:", "e": ""}),
        [("w", {"a": 'say "hi" \\ \\"', "b": "a\nb\r\t\x01\x7f", "c": "é😀\u2028", "d": "}]{[,:", "e": ""})],
        None,
    ),
    "numbers": (
        call_text("n", {"big": 10**40, "f": 1.5e-07, "z": -0.0, "i": 3.0, "t": True, "nul": None}),
        [("n", {"big": 10**40, "f": 1.5e-07, "z": -0.0, "i": 3.0, "t": True, "nul": None})],
        None,
    ),
    "deep": (
        call_text("d", {"a": [[{"b": [{"c": {"d": [1, [2, {}]]}}]}]]}),
        [("d", {"a": [[{"b": [{"c": {"d": [1, [2, {}]]}}]}]]})],
        None,
    ),
}


RECOVERED = {
    "no-newlines": (call_text("f", {"a": 1}, before="", after=""), [("f", {"a": 1})]),
    "extra-whitespace": (call_text("f", {"a": 1}, before=" \n\t ", after="\r\n  "), [("f", {"a": 1})]),
    "pretty-printed": (
        '<tool_call>\n{\n  "name": "f",\n  "arguments": {\n    "a": [1, 2]\n  }\n}\n</tool_call>',
        [("f", {"a": [1, 2]})],
    ),
    "parameters-key": (call_text("f", {"a": 1}, key="parameters"), [("f", {"a": 1})]),
    "arguments-as-string": (
        call_text("f", json.dumps({"a": "</tool_call>", "b": [1]})),
        [("f", {"a": "</tool_call>", "b": [1]})],
    ),
    "arguments-missing": ('<tool_call>\n{"name": "get_time"}\n</tool_call>', [("get_time", {})]),
    "arguments-null": (call_text("get_time", None), [("get_time", {})]),
    "openai-envelope": (
        '<tool_call>{"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}</tool_call>',
        [("f", {"a": 1})],
    ),
    "two-in-one-block": (
        '<tool_call>\n{"name": "a", "arguments": {}}\n{"name": "b", "arguments": {}}\n</tool_call>',
        [("a", {}), ("b", {})],
    ),
    "array-of-calls": (
        '<tool_call>[{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"x": 2}}]</tool_call>',
        [("a", {}), ("b", {"x": 2})],
    ),
    "missing-close-at-end": ('<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n', [("f", {"a": 1})]),
    "missing-close-then-stop": ('<tool_call>\n{"name": "f", "arguments": {"a": 1}}<|im_end|>', [("f", {"a": 1})]),
    "closer-cut-off": ('<tool_call>{"name": "f", "arguments": {}}</tool_', [("f", {})]),
    "next-opener-cut-off": (call_text("f", {}, after="") + "\n<tool_c", [("f", {})]),
    "missing-close-before-next": (
        '<tool_call>{"name": "f", "arguments": {}}\n' + call_text("g", {}),
        [("f", {}), ("g", {})],
    ),
}


SURFACED = {
    "not-json": "<tool_call>get_weather(city='Paris')</tool_call>",
    "single-quotes": "<tool_call>{'name': 'f', 'arguments': {}}</tool_call>",
    "unbalanced": '<tool_call>\n{"name": "f", "arguments": {"a": 1}\n</tool_call>',
    "json-not-a-call": '<tool_call>{"tool": "f", "args": {}}</tool_call>',
    "name-not-string": '<tool_call>{"name": 3, "arguments": {}}</tool_call>',
    "arguments-not-object": '<tool_call>{"name": "f", "arguments": [1, 2]}</tool_call>',
    "arguments-string-not-json": '<tool_call>{"name": "f", "arguments": "city=Paris"}</tool_call>',
    "nan": '<tool_call>{"name": "f", "arguments": {"x": NaN}}</tool_call>',
    "overflowing-float": '<tool_call>{"name": "f", "arguments": {"x": 1e400}}</tool_call>',
    "raw-newline-in-string": '<tool_call>{"name": "f", "arguments": {"x": "a\nb"}}</tool_call>',
    "text-after-json": '<tool_call>{"name": "f", "arguments": {}} trailing</tool_call>',
    "empty-block": "<tool_call></tool_call>",
}

# The last call is cut off by the end of the text (max_tokens): dropped, the prose and earlier calls kept.
CUT_OFF = {
    "unterminated-json": ('<tool_call>\n{"name": "f", "arguments": {"a": ', [], None),
    "unterminated-string": ('Looking.\n<tool_call>{"name": "f", "arguments": {"a": "open', [], "Looking."),
    "opener-alone": ("<tool_call>", [], None),
    "second-of-two": (
        call_text("a", {"x": 1}) + '\n<tool_call>\n{"name": "b", "arguments": {"q": "caf',
        [("a", {"x": 1})],
        None,
    ),
    "second-object-in-the-block": (
        '<tool_call>\n{"name": "a", "arguments": {}}\n{"name": "b", "arguments": {"q": ',
        [("a", {})],
        None,
    ),
    "after-reasoning": ("<think>\nplan\n</think>\n\nOk.\n<tool_call>\n{", [], "Ok.", "plan"),
}


def test_surfaced_block_between_good_calls_keeps_them():
    text = "Plan.\n" + call_text("a", {"x": 1}) + "\n<tool_call>{broken}</tool_call>\n" + call_text("b", {}) + "\nDone."
    message = stream_matches(text, leak_check=False)
    assert view(message) == expected_view(
        [("a", {"x": 1}), ("b", {})], "Plan.\n\n<tool_call>{broken}</tool_call>\n\nDone."
    )


def test_unterminated_string_does_not_swallow_the_next_call():
    text = '<tool_call>{"name": "f", "arguments": {"a": "oops}</tool_call>\n' + call_text("g", {"b": 1})
    message = stream_matches(text, leak_check=False)
    assert view(message) == expected_view(
        [("g", {"b": 1})], '<tool_call>{"name": "f", "arguments": {"a": "oops}</tool_call>'
    )


def test_prose_with_json_and_angle_brackets_is_content():
    text = 'Use {"name": "x"} or a<b, c>d, <tool>, </tool_calls> and <|im_start|>x.'
    message = stream_matches(text, leak_check=False)  # a stray marker stays content
    assert view(message) == (text, None, [])


def test_trailing_stop_markers_stripped_inner_kept():
    assert PARSER.parse("hi<|im_end|>\n<|endoftext|>").content == "hi"
    assert PARSER.parse("a<|im_end|>b").content == "a<|im_end|>b"
    assert PARSER.parse("hi<|im_").content == "hi<|im_"


# ---- reasoning (Qwen3) -----------------------------------------------------------------------------


def test_think_block_at_start_is_reasoning():
    text = "<think>\nUser wants weather.\nCall it.\n</think>\n\nOn it.\n" + call_text("w", {"c": "P"})
    message = stream_matches(text)
    assert view(message) == expected_view([("w", {"c": "P"})], "On it.", "User wants weather.\nCall it.")


def test_think_prefix_and_placement():
    # a prompt that pre-fills an open <think> starts the text in reasoning
    message = stream_matches("plan\n</think>\n\n" + call_text("f", {}), prefix="<|im_start|>assistant\n<think>\n")
    assert view(message) == expected_view([("f", {})], None, "plan")
    # thinking off: the prompt pre-fills a closed block; the text is content
    assert view(PARSER.parse("hello", prefix="<think>\n\n</think>\n\n")) == ("hello", None, [])
    # <think> after content is content; an unclosed block at the end is all reasoning
    assert view(stream_matches("Hi <think>x</think>", leak_check=False)) == ("Hi <think>x</think>", None, [])
    assert view(stream_matches("<think>\nstill thinking")) == (None, "still thinking", [])
    # only </think> ends reasoning: a call written while thinking stays reasoning text
    inner = call_text("f", {})
    assert view(stream_matches(f"<think>{inner}</think>ok", leak_check=False)) == ("ok", inner, [])


# ---- streaming ----------------------------------------------------------------------------------------

HOLD_BACK_TEXTS = [
    'Sure <tool_call>\n{"name": "f", "arguments": {"a": "</tool_call>"}}\n</tool_call> ok<|im_end|>',
    "<think>\nr < s\n</think>\n\nok <tool_ok " + call_text("f", {}) + "<|endoftext|>",
    "a <tool b </tool_call c <|im_e d <thin e",
    "x\n<tool_call>{bad}</tool_call>\ny",
]


def test_stream_is_incremental_and_calls_arrive_whole_at_close():
    session = PARSER.stream()
    assert session.feed("Checking the ")[0].content == "Checking the"
    assert [d.content for d in session.feed("weather.\n<tool_")] == [" weather."]
    assert session.feed('call>\n{"name": "w", "arguments": {"city": "Pa') == []
    assert session.feed('ris"}}\n</tool_call') == []
    deltas = session.feed(">\n")
    assert len(deltas) == 1 and deltas[0].content is None
    (piece,) = deltas[0].tool_calls
    assert (piece.index, piece.name, json.loads(piece.arguments)) == (0, "w", {"city": "Paris"})
    assert session.finish() == [] and session.diagnostics == []


def test_missing_closer_is_decided_at_finish():
    session = PARSER.stream()
    assert session.feed('<tool_call>{"name": "f", "arguments": {}}') == []
    (delta,) = session.finish()
    assert delta.tool_calls[0].name == "f"


# ---- property tests ----------------------------------------------------------------------------------

NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,15}", fullmatch=True)
TRICKY = st.sampled_from(
    ['"', "\\", "</tool_call>", "<tool_call>", "<|im_end|>", "}", "]", "\n", "\x00", "é😀", "<think>", "<", ""]
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
    """Calls written as Qwen 2.5 writes them (content first) parse back exactly, whatever the chunking."""
    text = content + "".join("\n" + call_text(n, a) for n, a in calls)
    message = PARSER.parse(text)
    assert view(message) == expected_view(calls, content.strip() or None)
    splits = data.draw(st.lists(st.integers(0, len(text)), max_size=20).map(sorted))
    for chunks in (split_at(text, splits), list(text)):
        assert view(run_stream(PARSER, chunks, on_delta=CHECK_DELTA)) == view(message)


FRAGMENTS = st.sampled_from(
    [
        "<tool_call>",
        "</tool_call>",
        "\n",
        " ",
        '{"name": "f"',
        ', "arguments": ',
        "{",
        "}",
        "[",
        "]",
        '"',
        '"a"',
        ":",
        ",",
        "1",
        "null",
        "\\",
        "<|im_end|>",
        "<think>",
        "</think>",
        "<",
        "x y",
        '{"name": "g", "arguments": {}}',
        "<tool_",
        "<|endoftext|>",
    ]
)


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(FRAGMENTS, max_size=30), data=st.data())
def test_property_arbitrary_text_never_raises_or_drops(pieces, data):
    text = "".join(pieces)
    message = PARSER.parse(text)
    if not message.tool_calls and THINK_OPEN not in text:  # all is content, bar trailing stop markers
        body = text.rstrip()
        while body.endswith(FMT.stop_markers):
            body = next(body[: -len(m)] for m in FMT.stop_markers if body.endswith(m)).rstrip()
        if any("cut off" in d for d in message.diagnostics):  # the last block, cut off by the end, is dropped
            body = body[: body.rfind("<tool_call>")]
        assert message.content == (body.strip() or None)
    splits = data.draw(st.lists(st.integers(0, len(text)), max_size=10).map(sorted))
    for chunks in (split_at(text, splits), list(text)):
        assert view(run_stream(PARSER, chunks)) == view(message)


# ---- rendering through the real templates --------------------------------------------------------------


WEATHER = tool("get_weather", {"city": {"type": "string", "description": "City."}})


def test_catalog_rows_and_offline_templates():
    expected = {
        "smollm2-135m": "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
        "hermes-3-8b": "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
        "qwen2.5-7b": "Qwen-Qwen2.5-7B-Instruct.jinja",
        "qwen3-0.6b": "Qwen-Qwen3-0.6B.jinja",
        "granite-4.0-h-tiny": "ibm-granite-granite-4.0.jinja",
        "granite-4.1-8b": "ibm-granite-granite-4.1.jinja",
        "reka-edge": "Reka-Edge.jinja",
    }
    for model, file in expected.items():
        tmpl = template(model)
        assert (tmpl.format, tmpl.source, tmpl.file) == ("hermes", "sdist", file)
    assert "stands in for smollm2-135m" in template("smollm2-135m").provenance["fallback_note"]


def test_rendered_shapes_per_template():
    call = ToolCall("get_weather", {"city": "Paris"})
    scenario = Scenario("s1", [WEATHER], [call], content_after="Checking.")
    want = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    for model, prefix in (("qwen2.5-7b", ""), ("qwen3-0.6b", "<think>\n\n</think>\n\n")):  # content, then calls
        case = render_scenario(template(model), scenario, FMT)
        assert (case.text, case.prefix, case.extra["stop"]) == ("Checking.\n" + want, prefix, "<|im_end|>\n")
    with pytest.raises(UnrepresentableError, match="does not write content_after"):  # Hermes 3 drops it
        render_scenario(template("hermes-3-8b"), scenario, FMT)
    case = render_scenario(template("hermes-3-8b"), Scenario("s2", [WEATHER], [call]), FMT)
    assert case.text == want and view(PARSER.parse(case.text)) == view(case.expected)


@pytest.mark.parametrize("model", ["granite-4.0-h-tiny", "granite-4.1-8b"])
def test_granite_writes_hermes_calls_in_granite_turns(model):
    """Granite 4.x: content, then each call after a newline; the turn ends ``<|end_of_text|>``; no reasoning."""
    calls = [ToolCall("get_weather", {"city": "Paris"}), ToolCall("get_weather", {"city": "Oslo"})]
    case = render_scenario(template(model), Scenario("g1", [WEATHER], calls, content_after="Checking."), FMT)
    one = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "%s"}}\n</tool_call>'
    assert (case.text, case.prefix) == ("Checking.\n" + one % "Paris" + "\n" + one % "Oslo", "")
    assert case.extra["stop"] == "<|end_of_text|>\n"
    assert view(PARSER.parse(case.text)) == view(case.expected)
    bare = render_scenario(template(model), Scenario("g2", [WEATHER], calls[:1]), FMT)
    assert bare.text == one % "Paris"  # no newline before a first call without content
    with pytest.raises(UnrepresentableError, match="reasoning"):
        render_scenario(template(model), Scenario("g3", [WEATHER], calls[:1], reasoning="Think."), FMT)


def test_reka_edge_writes_hermes_calls_in_sep_turns():
    """Reka Edge: content, a newline, calls back to back (non-ASCII as ``\\uXXXX``); the turn ends ``\\n\\n<sep>``;
    thinking pre-fills ``<think>\\n``; its llama.cpp cases pass."""
    calls = [ToolCall("get_weather", {"city": "Paris"}), ToolCall("get_weather", {"city": "Zürich"})]
    tmpl = template("reka-edge")
    case = render_scenario(tmpl, Scenario("r1", [WEATHER], calls, content_after="Checking."), FMT)
    one = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "%s"}}\n</tool_call>'
    assert (case.text, case.prefix) == (" Checking.\n" + one % "Paris" + one % "Z\\u00fcrich" + "\n\n", "")
    assert case.extra["stop"] == "<sep>"
    think = render_scenario(tmpl, Scenario("r2", [WEATHER], calls[:1], reasoning="Think."), FMT)
    assert (think.prefix, think.text) == ("<think>\n", "Think.\n</think>\n\n" + one % "Paris" + "\n\n")
    for c in (case, think):
        assert view(PARSER.parse(c.text, c.tools, c.prefix)) == view(c.expected)
    reka = [c for c in llama_cpp.load_cases().for_format("hermes") if c.id.startswith("llama.cpp/Reka-Edge/")]
    assert len(reka) == 19
    results = [(c.id, r) for c in reka for r in evaluate_case(c, PARSER, FMT, ["oneshot", "char"], seed=3)]
    assert [(i, r.mode) for i, r in results if r.verdict != "pass"] == []


def test_content_before_goes_before_content_written_first():
    scenario = Scenario(
        "s3", [WEATHER], [ToolCall("get_weather", {"city": "Oslo"})], content_before="First. ", content_after="Then."
    )
    case = render_scenario(template("qwen2.5-7b"), scenario, FMT)
    assert case.text.startswith("First. Then.\n<tool_call>") and case.expected.content == "First. Then."
    assert case.text_provenance == "composed"


def test_qwen3_reasoning_and_templates_that_drop_it():
    scenario = Scenario(
        "s4",
        [WEATHER],
        [ToolCall("get_weather", {"city": "Oslo"})],
        reasoning="Oslo, so call it.",
        content_after="Oslo",
    )
    case = render_scenario(template("qwen3-0.6b"), scenario, FMT)
    assert case.text.startswith("<think>\nOslo, so call it.\n</think>\n\nOslo\n<tool_call>")
    assert view(PARSER.parse(case.text, None, case.prefix)) == view(case.expected)
    # Qwen 2.5 writes no reasoning: a reasoning text that also occurs as content must not fool the check
    short = Scenario(
        "s5", [WEATHER], [ToolCall("get_weather", {"city": "Oslo"})], reasoning="Oslo", content_after="Oslo"
    )
    with pytest.raises(UnrepresentableError, match="reasoning"):
        render_scenario(template("qwen2.5-7b"), short, FMT)


def test_declarations_the_template_cannot_render_are_unrepresentable():
    """Hermes 3's declaration macro recurses without end on ``{"type": "null"}``: skipped, named."""
    nullable = tool("f", {"x": {"type": "null", "description": "Nothing."}})
    with pytest.raises(UnrepresentableError, match="cannot render this scenario's tool declarations"):
        render_scenario(template("hermes-3-8b"), Scenario("s6", [nullable], [ToolCall("f", {"x": None})]), FMT)
    case = render_scenario(template("qwen2.5-7b"), Scenario("s6", [nullable], [ToolCall("f", {"x": None})]), FMT)
    assert view(PARSER.parse(case.text)) == view(case.expected)


def test_own_alias_needs_a_format_when_several_own_parsers_exist():
    registry.reload()
    try:
        assert registry.resolve("own", format="gemma4") == "toolcall-harness:gemma4"
        with pytest.raises(KeyError, match="ambiguous"):
            registry.resolve("own")
    finally:
        registry.reload()


class TestHermes(ParserConformance):
    CONFIG = Conformance(
        format="hermes",
        parser=HermesParser,
        strict={k: Text(*v) for k, v in STRICT.items()},
        stops=("", "<|im_end|>", "<|im_end|>\n", "<|endoftext|>"),
        recovered={k: Text(*v) for k, v in RECOVERED.items()},
        surfaced=SURFACED,
        cut_off={k: Text(*v) for k, v in CUT_OFF.items()},
        hold_back=tuple(HOLD_BACK_TEXTS),
        models=("qwen2.5-7b", "smollm2-135m"),
        requested_modes=("oneshot", "whole", "char", "random", "tokens", "prefix"),
        modes=("oneshot", "whole", "char", "random", "tokens", "prefix"),
        extra_markers=EXTRA_MARKERS,
    )

    def check_corpus(self, model, run):
        corpus = run.corpus
        assert corpus.count("curated") >= 100 and corpus.count("generated") >= 15 and corpus.count("observed") >= 1

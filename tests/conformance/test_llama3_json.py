"""Conformance of the project's own Llama 3 JSON parser (``parsers/own/llama3_json.py``) and of the
llama3_json family end to end (Llama 3.1, 3.2): the shared suite's config plus the tests specific to the format.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.suite import (
    ALL_MODES,
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
from harness.corpus.build import build_corpus
from harness.formats import format_edge_scenarios, get_format
from harness.parse.modes import modes_for
from harness.score.runner import evaluate_case
from harness.template.render import HISTORY_USER, render_messages, render_scenario
from parsers.own.llama3_json import Llama3JsonParser

FMT = get_format("llama3_json")
PARSER = Llama3JsonParser()


EXTRA_MARKERS = ()
CHECK_DELTA = delta_checker(FMT, EXTRA_MARKERS)


def stream_matches(text: str, tools=None, seed: int = 0, leak_check: bool = True):
    """:func:`conformance.suite.assert_stream_matches` on this file's parser, in its argument order."""
    return assert_stream_matches(PARSER, text, tools, "", seed, leak_check, EXTRA_MARKERS)


MARKERS = tuple(dict.fromkeys(FMT.markers + FMT.stop_markers))
TAG = "<|python_tag|>"
OBSERVED_TEXT = (
    '<|python_tag|>{"name":"get_weather","arguments":{"location":"NYC"}};'
    '{"name":"get_time","arguments":{"timezone":"EST"}}'
)


def call_text(name: str, arguments, *, key: str = "parameters") -> str:
    """A call as the templates write it: ``{"name": "NAME", "parameters": tojson(ARGS)}``."""
    return '{"name": "' + name + '", "' + key + '": ' + json.dumps(arguments, ensure_ascii=False) + "}"


# ---- protocol and registry -------------------------------------------------------------------------


# ---- one-shot and streaming on small inputs ----------------------------------------------------------

STRICT = {
    "one-call": (call_text("get_weather", {"city": "Paris"}), [("get_weather", {"city": "Paris"})], None),
    "zero-args": (call_text("get_time", {}), [("get_time", {})], None),
    "markers-inside-strings": (
        call_text(
            "note", {"t": f"{TAG}{call_text('rm', {})}<|eot_id|>", "u": "<|eom_id|>", "v": "<", "w": "<|python_"}
        ),
        [("note", {"t": f"{TAG}{call_text('rm', {})}<|eot_id|>", "u": "<|eom_id|>", "v": "<", "w": "<|python_"})],
        None,
    ),
    "call-keys-as-arguments": (
        call_text("c", {"name": "n", "parameters": {"a": 1}, "arguments": [1]}),
        [("c", {"name": "n", "parameters": {"a": 1}, "arguments": [1]})],
        None,
    ),
    "json-hard-strings": (
        call_text("w", {"a": 'say "hi" \\ \\"', "b": "a\nb\r\t\x01\x7f", "c": "é😀\u2028", "d": "}]{[,:;", "e": ""}),
        [("w", {"a": 'say "hi" \\ \\"', "b": "a\nb\r\t\x01\x7f", "c": "é😀\u2028", "d": "}]{[,:;", "e": ""})],
        None,
    ),
    "numbers": (
        call_text("n", {"big": 10**40, "f": 1.5e-07, "z": -0.0, "i": 3.0, "t": True, "nul": None}),
        [("n", {"big": 10**40, "f": 1.5e-07, "z": -0.0, "i": 3.0, "t": True, "nul": None})],
        None,
    ),
    "prose-before": ("Let me check.\n" + call_text("search", {"q": "x"}), [("search", {"q": "x"})], "Let me check."),
}


RECOVERED = {
    "arguments-key": (call_text("f", {"a": 1}, key="arguments"), [("f", {"a": 1})]),
    "python-tag": (TAG + call_text("f", {"a": 1}), [("f", {"a": 1})]),
    "python-tag-space": (TAG + " \n" + call_text("f", {}), [("f", {})]),
    "semicolon-parallel": (call_text("a", {"x": 1}) + ";" + call_text("b", {}), [("a", {"x": 1}), ("b", {})]),
    "semicolon-spaces": (
        call_text("a", {}) + " ;\n " + call_text("b", {}) + "; " + call_text("c", {"y": [2]}),
        [("a", {}), ("b", {}), ("c", {"y": [2]})],
    ),
    "observed-dynamo": (OBSERVED_TEXT, [("get_weather", {"location": "NYC"}), ("get_time", {"timezone": "EST"})]),
    "semicolon-python-tag": (TAG + call_text("a", {}) + "; " + TAG + call_text("b", {}), [("a", {}), ("b", {})]),
    "newline-parallel": (call_text("a", {}) + "\n" + call_text("b", {}), [("a", {}), ("b", {})]),
    "compact-json": ('{"name":"f","parameters":{"a":[1,{"b":null}]}}', [("f", {"a": [1, {"b": None}]})]),
    "pretty-json": ('{\n  "name": "f",\n  "parameters": {\n    "a": 1\n  }\n}', [("f", {"a": 1})]),
    "type-function": ('{"type": "function", "name": "f", "parameters": {"a": 1}}', [("f", {"a": 1})]),
    "arguments-as-string": (call_text("f", json.dumps({"a": "}", "b": [1]})), [("f", {"a": "}", "b": [1]})]),
    "builtin-raw": (
        TAG + 'brave_search.call(query="weather in Paris, today")',
        [("brave_search", {"query": "weather in Paris, today"})],
    ),
    "builtin-raw-two-args": (
        TAG + 'wolfram_alpha.call(query="2+2", mode="x=\\"y\\"")<|eom_id|>',
        [("wolfram_alpha", {"query": "2+2", "mode": 'x=\\"y\\"'})],
    ),
    "builtin-no-args": (TAG + "code_interpreter.call()", [("code_interpreter", {})]),
    "builtin-python-literals": (
        TAG + "brave_search.call(query='x', n=3, safe=True)",
        [("brave_search", {"query": "x", "n": 3, "safe": True})],
    ),
}


def test_builtin_raw_values_typed_only_by_a_declared_non_string_schema():
    tools = [
        {
            "type": "function",
            "function": {
                "name": "lookup",
                "parameters": {"type": "object", "properties": {"n": {"type": "integer"}, "q": {"type": "string"}}},
            },
        }
    ]
    text = TAG + 'lookup.call(n="42", q="42", other="7")'
    message = stream_matches(text, tools)
    assert view(message) == expected_view([("lookup", {"n": 42, "q": "42", "other": "7"})])


NOT_CALLS = {
    "prose": "The weather is nice; {see} a < b.",
    "json-not-call": 'Here is JSON: {"name": "Bob", "age": 3}',
    "name-only": '{"name": "get_time"}',
    "both-keys": '{"name": "f", "parameters": {}, "arguments": {}}',
    "extra-key": '{"name": "f", "parameters": {}, "id": "x"}',
    "type-not-function": '{"type": "tool", "name": "f", "parameters": {}}',
    "arguments-not-object": '{"name": "f", "parameters": [1, 2]}',
    "arguments-string-not-json": '{"name": "f", "parameters": "city=Paris"}',
    "name-not-string": '{"name": 3, "parameters": {}}',
    "single-quotes": "{'name': 'f', 'parameters': {}}",
    "nan": '{"name": "f", "parameters": {"x": NaN}}',
    "overflowing-float": '{"name": "f", "parameters": {"x": 1e400}}',
    "raw-newline-in-string": '{"name": "f", "parameters": {"x": "a\nb"}}',
    "unterminated": '{"name": "f", "parameters": {"a": 1}',
    "unterminated-string": '{"name": "f", "parameters": {"a": "open',
    "nested-call-in-non-call": '{"wrapper": {"name": "f", "parameters": {}}}',
    "semicolon-first": '; {"name": "Bob"}',
}


@pytest.mark.parametrize("case", sorted(NOT_CALLS))
def test_text_that_is_not_a_call_stays_content(case):
    text = NOT_CALLS[case]
    message = stream_matches(text)
    assert message.tool_calls == [] and message.content == text.strip()


SURFACED = {
    "tag-then-code": TAG + "import math\nprint(math.sqrt(2))",
    "tag-then-prose": TAG + "I will call the tool",
    "tag-then-non-call-json": TAG + '{"name": "Bob"}',
    "tag-then-bad-json": TAG + '{"name": "f", "parameters": {x}}',
    "tag-builtin-bad-args": TAG + "brave_search.call(q=open('x'))",
}

# A call after the tag or a ``;`` separator, cut off by the end of the text: dropped, what came before kept.
CUT_OFF = {
    "tag-alone": ("Using a tool." + TAG, [], "Using a tool."),
    "tag-then-unterminated-json": (TAG + '{"name": "f", "parameters": {"q": "ca', [], None),
    "second-after-separator": (call_text("a", {"x": 1}) + '; {"name": "b", "parameters": {', [("a", {"x": 1})], None),
}


def test_unterminated_brace_in_prose_stays_content():
    text = "The set {1, 2, and so on"
    assert view(stream_matches(text)) == (text, None, [])


def test_calls_between_prose_keep_every_piece():
    text = (
        "Plan {x}: "
        + call_text("a", {"x": 1})
        + "; then "
        + call_text("b", {})
        + ' and {"name": "Bob"}; '
        + call_text("c", {})
        + " done;"
    )
    message = stream_matches(text)
    assert view(message) == expected_view(
        [("a", {"x": 1}), ("b", {}), ("c", {})], 'Plan {x}: ; then  and {"name": "Bob"};  done;'
    )


def test_semicolon_after_a_call_before_prose_is_content():
    message = stream_matches(call_text("a", {}) + "; ok")
    assert view(message) == expected_view([("a", {})], "; ok")


def test_trailing_stop_markers_stripped_inner_kept():
    assert PARSER.parse("hi<|eot_id|>\n<|end_of_text|>").content == "hi"
    assert PARSER.parse("a<|eot_id|>b").content == "a<|eot_id|>b"
    assert PARSER.parse("hi<|eot_").content == "hi<|eot_"


# ---- streaming ----------------------------------------------------------------------------------------

HOLD_BACK_TEXTS = [
    "Sure <|pyth " + call_text("f", {"a": "<|eot_id|>"}) + " ; " + call_text("g", {}) + "<|eot_id|>",
    TAG + call_text("f", {}) + ";" + TAG + call_text("g", {"b": "}"}) + "<|eom_id|>",
    'a <|py b <|eot c { d {} e {"name": 1} ;',
    TAG + 'brave_search.call(query="x")<|eom_id|>',
]


def test_stream_is_incremental_and_calls_arrive_whole_at_close():
    session = PARSER.stream()
    assert session.feed("Checking the ")[0].content == "Checking the"
    assert [d.content for d in session.feed("weather.\n<|python")] == [" weather."]
    assert session.feed('_tag|>{"name": "w", "parameters": {"city": "Pa') == []
    deltas = session.feed('ris"}}')
    assert len(deltas) == 1 and deltas[0].content is None
    (piece,) = deltas[0].tool_calls
    assert (piece.index, piece.name, json.loads(piece.arguments)) == (0, "w", {"city": "Paris"})
    assert session.feed("; ") == []  # a separator is held until the next object is decided
    (delta,) = session.feed('{"name": "x", "parameters": {}}')
    assert delta.tool_calls[0].index == 1 and delta.tool_calls[0].name == "x"
    assert session.finish() == [] and session.diagnostics == []


def test_brace_in_prose_is_released_once_decided():
    session = PARSER.stream()
    assert [d.content for d in session.feed("a {")] == ["a"]  # the { (and the space before it) are held
    assert session.feed('"k"') == []  # still possibly JSON
    assert [d.content for d in session.feed("x} b")] == [' {"k"x} b']  # 'x' cannot follow a key: decided
    assert session.finish() == []


# ---- property tests ----------------------------------------------------------------------------------

NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,15}", fullmatch=True)
TRICKY = st.sampled_from(
    [
        '"',
        "\\",
        TAG,
        "<|eot_id|>",
        "<|eom_id|>",
        "}",
        "]",
        "{",
        ";",
        "\n",
        "\x00",
        "é😀",
        '{"name": "x", "parameters": {}}',
        "<",
        "",
    ]
)
STRINGS = st.one_of(TRICKY, st.text(max_size=20), st.lists(TRICKY, max_size=4).map("".join))
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), STRINGS)
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(STRINGS, inner, max_size=4), max_leaves=10
)
CALLS = st.lists(st.tuples(NAMES, st.dictionaries(STRINGS, VALUES, max_size=5)), min_size=1, max_size=3)
PROSE = st.text(st.characters(blacklist_characters="<{;", blacklist_categories=("Cs",)), max_size=30)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=CALLS, content=PROSE, tag=st.booleans(), key=st.sampled_from(["parameters", "arguments"]), data=st.data())
def test_property_written_calls_roundtrip(calls, content, tag, key, data):
    """Prose, then calls separated by ``;`` (optionally after ``<|python_tag|>``) parse back exactly, whatever
    the chunking."""
    text = content + (TAG if tag else "") + "; ".join(call_text(n, a, key=key) for n, a in calls)
    message = PARSER.parse(text)
    assert view(message) == expected_view(calls, content.strip() or None)
    splits = data.draw(st.lists(st.integers(0, len(text)), max_size=20).map(sorted))
    for chunks in (split_at(text, splits), list(text)):
        assert view(run_stream(PARSER, chunks, on_delta=CHECK_DELTA)) == view(message)


FRAGMENTS = st.sampled_from(
    [
        TAG,
        "\n",
        " ",
        '{"name": "f"',
        ', "parameters": ',
        ', "arguments": ',
        "{",
        "}",
        "[",
        "]",
        '"',
        '"a"',
        ":",
        ",",
        ";",
        "1",
        "null",
        "\\",
        "<|eot_id|>",
        "<|eom_id|>",
        "<",
        "x y",
        '{"name": "g", "parameters": {}}',
        "<|pyth",
        "f.call(",
        'q="v"',
        ")",
    ]
)


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(FRAGMENTS, max_size=30), data=st.data())
def test_property_arbitrary_text_never_raises_or_drops(pieces, data):
    text = "".join(pieces)
    message = PARSER.parse(text)
    if not message.tool_calls:  # all is content, bar trailing stop markers
        body = text.rstrip()
        while body.endswith(FMT.stop_markers):
            body = next(body[: -len(m)] for m in FMT.stop_markers if body.endswith(m)).rstrip()
        if any("cut off" in d for d in message.diagnostics):  # dropped from a <|python_tag|> on
            cuts = [k for k in range(len(body)) if body.startswith(TAG, k)]
            assert any(message.content == (body[:k].strip() or None) for k in cuts)
        else:
            assert message.content == (body.strip() or None)
    splits = data.draw(st.lists(st.integers(0, len(text)), max_size=10).map(sorted))
    for chunks in (split_at(text, splits), list(text)):
        assert view(run_stream(PARSER, chunks)) == view(message)


# ---- rendering through the real templates --------------------------------------------------------------


WEATHER = tool("get_weather", {"city": {"type": "string", "description": "City."}})
MODELS = ("llama-3.1-8b", "llama-3.2-3b")


def test_catalog_rows_and_offline_templates():
    expected = {
        "llama-3.1-8b": "meta-llama-Llama-3.1-8B-Instruct.jinja",
        "llama-3.2-3b": "meta-llama-Llama-3.2-3B-Instruct.jinja",
    }
    for model, file in expected.items():
        tmpl = template(model)
        assert (tmpl.format, tmpl.source, tmpl.file) == ("llama3_json", "sdist", file)


@pytest.mark.parametrize("model", MODELS)
def test_rendered_shape_prefix_and_stop(model):
    call = ToolCall("get_weather", {"city": "Paris é <|eot_id|>"})
    case = render_scenario(template(model), Scenario("s1", [WEATHER], [call]), FMT)
    assert case.text == '{"name": "get_weather", "parameters": {"city": "Paris é <|eot_id|>"}}'
    assert (case.prefix, case.extra["stop"]) == ("", "<|eot_id|>")
    assert view(PARSER.parse(case.text, case.tools, case.prefix)) == view(case.expected)


@pytest.mark.parametrize("model", MODELS)
def test_template_drops_content_and_refuses_parallel_calls(model):
    one = ToolCall("get_weather", {"city": "Paris"})
    with pytest.raises(UnrepresentableError, match="does not write content_after"):
        render_scenario(template(model), Scenario("s2", [WEATHER], [one], content_after="Checking."), FMT)
    with pytest.raises(UnrepresentableError, match="single tool-calls"):
        render_scenario(template(model), Scenario("s3", [WEATHER], [one, one]), FMT)
    case = render_scenario(template(model), Scenario("s4", [WEATHER], [one], content_before="First. "), FMT)
    assert case.text.startswith('First. {"name": "get_weather"') and case.text_provenance == "composed"


def test_prompt_date_is_pinned():
    """3.2 writes ``strftime_now`` (today) unless ``date_string`` is passed: the format pins it to 3.1's default."""
    history = [{"role": "user", "content": HISTORY_USER}]
    for model in MODELS:
        prompt = render_messages(template(model), history, [WEATHER], add_generation_prompt=True, **FMT.template_vars)
        assert "Today Date: 26 Jul 2024\n" in prompt and not prompt.startswith("<bos>")
        assert prompt.endswith("<|start_header_id|>assistant<|end_header_id|>\n\n")
    unpinned = render_messages(template("llama-3.2-3b"), history, None, add_generation_prompt=True)
    assert "Today Date: " in unpinned


def test_builtin_tool_call_as_the_31_template_writes_it():
    """Llama 3.1 writes a built-in tool's call ``<|python_tag|>NAME.call(k="v")`` ended by ``<|eom_id|>``."""
    history = [{"role": "user", "content": HISTORY_USER}]
    args = {"query": 'weather, "Paris" \\ today', "lang": "fr"}
    turn = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"type": "function", "id": "call00000", "function": {"name": "brave_search", "arguments": args}}
        ],
    }
    tvars = {**FMT.template_vars, "builtin_tools": ["brave_search", "wolfram_alpha"]}
    gen = render_messages(template("llama-3.1-8b"), history, None, add_generation_prompt=True, **tvars)
    full = render_messages(template("llama-3.1-8b"), history + [turn], None, **tvars)
    assert full.startswith(gen)
    text = full[len(gen) :]
    assert text == TAG + 'brave_search.call(query="weather, "Paris" \\ today", lang="fr")<|eom_id|>'
    message = stream_matches(text)
    assert view(message) == expected_view([("brave_search", args)])


def test_format_edge_scenarios_render_and_pass():
    ids = [s.id for s in format_edge_scenarios("llama3_json")]
    assert ids and all(i.startswith("edge-llama3_json-") for i in ids)
    for model in MODELS:
        for scenario in format_edge_scenarios("llama3_json"):
            case = render_scenario(template(model), scenario, FMT)
            assert view(PARSER.parse(case.text, case.tools, case.prefix)) == view(case.expected), case.id


def test_observed_case_is_recovered():
    tmpl = template("llama-3.1-8b")
    corpus = build_corpus(tmpl, FMT, seed=0, n_generated=0, slices=("observed",))
    (case,) = [c for c in corpus.cases if c.id == "llama3_semicolon_parallel_calls_dynamo"]
    assert case.kind == "drift" and case.text == OBSERVED_TEXT
    modes = modes_for(PARSER, ("oneshot", "whole", "char", "random", "prefix"), FMT)
    assert {r.verdict for r in evaluate_case(case, PARSER, FMT, modes, seed=0)} == {"pass"}


class TestLlama3Json(ParserConformance):
    CONFIG = Conformance(
        format="llama3_json",
        parser=Llama3JsonParser,
        strict={k: Text(*v) for k, v in STRICT.items()},
        stops=("", "<|eot_id|>", "<|eom_id|>", "<|eot_id|>\n", "<|end_of_text|>"),
        recovered={k: Text(*v) for k, v in RECOVERED.items()},
        surfaced=SURFACED,  # the python tag without a call
        cut_off={k: Text(*v) for k, v in CUT_OFF.items()},
        surfaced_note="python_tag",
        hold_back=tuple(HOLD_BACK_TEXTS),
        models=MODELS,
        modes=ALL_MODES,
    )

    def check_corpus(self, model, run):
        corpus = run.corpus
        assert corpus.count("curated") >= 100 and corpus.count("generated") >= 10 and corpus.count("observed") >= 1
        assert run.count_mode("roundtrip") >= 100

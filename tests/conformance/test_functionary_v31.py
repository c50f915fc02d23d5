"""Conformance of the project's own Functionary v3.1 parser (``parsers/own/functionary_v31.py``) and of the
functionary_v31 family end to end (``meetkai-functionary-medium-v3.1.jinja`` from the llama-cpp-python 0.3.36
sdist): the shared suite's config plus the tests specific to the format.
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
    assert_roundtrip_chunks,
    assert_stream_matches,
    body_without_stops,
    delta_checker,
    expected_view,
    template,
    tool,
    view,
)
from harness.core.errors import UnrepresentableError
from harness.core.messages import ToolCall
from harness.core.scenarios import Scenario
from harness.corpus.strategies import prose, tools_and_calls
from harness.formats import format_edge_scenarios, get_format
from harness.formats.functionary_v31 import CALL_CLOSE, CALL_OPEN, END_OF_TEXT, EOM, EOT, PYTHON_TAG
from harness.parse import modes as chunking
from harness.template.render import HISTORY_USER, render_messages, render_scenario
from parsers.own.functionary_v31 import FunctionaryV31Parser

FMT = get_format("functionary_v31")
PARSER = FunctionaryV31Parser()
MODEL = "functionary-medium-v3.1"
TOKENS = ("tokens",) if chunking.has_tokenizer(FMT.name) else ()  # the Llama vocabulary is vendored


def fn(name: str, arguments) -> str:
    """One call as the template writes it: ``<function=NAME>`` + ``tojson(ARGS)`` + ``</function>``."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return f"{CALL_OPEN}{name}>{args}{CALL_CLOSE}"


def py(arguments) -> str:
    """The python tool's call: ``<|python_tag|>`` + ``tojson(ARGS)``, no closer."""
    return PYTHON_TAG + json.dumps(arguments, ensure_ascii=False)


STRICT = {
    "one-call": (fn("get_weather", {"city": "Paris"}), [("get_weather", {"city": "Paris"})], None),
    "content-first": ("Let me look." + fn("search", {"q": "x"}), [("search", {"q": "x"})], "Let me look."),
    "parallel": (
        fn("a", {"x": 1}) + fn("b", {}) + fn("a.b-c", {"x": [None]}),
        [("a", {"x": 1}), ("b", {}), ("a.b-c", {"x": [None]})],
        None,
    ),
    "python-tag": (py({"code": "print(1)"}), [("python", {"code": "print(1)"})], None),
    "function-then-python": (
        "Run it." + fn("f", {}) + py({"code": "x = {1: 2}"}),
        [("f", {}), ("python", {"code": "x = {1: 2}"})],
        "Run it.",
    ),
    "markers-inside-strings": (
        fn("note", {"t": fn("rm", {}) + EOM, "u": CALL_CLOSE, "v": "<function", "w": py({}) + "<|eo"}),
        [("note", {"t": fn("rm", {}) + EOM, "u": CALL_CLOSE, "v": "<function", "w": py({}) + "<|eo"})],
        None,
    ),
    "angle-brackets-in-value": (fn("c", {"e": "a>b <x> =>"}), [("c", {"e": "a>b <x> =>"})], None),
    "json-hard-strings": (
        fn("w", {"a": 'say "hi" \\', "b": "a\nb\x01\u2028", "c": "é😀", "d": "}]{[,:"}),
        [("w", {"a": 'say "hi" \\', "b": "a\nb\x01\u2028", "c": "é😀", "d": "}]{[,:"})],
        None,
    ),
    "numbers": (
        fn("n", {"big": 10**40, "f": 1.5e-07, "z": -0.0, "i": 3.0, "t": False, "nul": None}),
        [("n", {"big": 10**40, "f": 1.5e-07, "z": -0.0, "i": 3.0, "t": False, "nul": None})],
        None,
    ),
}


RECOVERED = {
    "whitespace-around-arguments": (f'{CALL_OPEN}f> \n{{"a": 1}}\n {CALL_CLOSE}', [("f", {"a": 1})], None),
    "pretty-json": (fn("f", '{\n  "a": 1,\n  "b": [2]\n}'), [("f", {"a": 1, "b": [2]})], None),
    "no-closer-at-end": (f'{CALL_OPEN}f>{{"a": "x"}}', [("f", {"a": "x"})], None),
    "no-closer-before-next": (f"{CALL_OPEN}f>{{}}" + fn("g", {"b": 2}), [("f", {}), ("g", {"b": 2})], None),
    "no-closer-before-python": (f"{CALL_OPEN}f>{{}}" + py({"code": "1"}), [("f", {}), ("python", {"code": "1"})], None),
    "cut-off-closer": (f"{CALL_OPEN}f>{{}}</func", [("f", {})], None),  # a cut-off marker after calls: dropped
    "arguments-as-string": (fn("f", json.dumps(json.dumps({"a": CALL_CLOSE}))), [("f", {"a": CALL_CLOSE})], None),
    "python-arguments-as-string": (
        PYTHON_TAG + json.dumps(json.dumps({"code": "1"})),
        [("python", {"code": "1"})],
        None,
    ),
    "prose-after-calls": ("Before." + fn("f", {}) + "\n\nAfter.", [("f", {})], "Before.\n\nAfter."),
    "function-named-python": (fn("python", {"code": "1"}), [("python", {"code": "1"})], None),
}


SURFACED = {
    "not-json": fn("f", "city='Paris'"),
    "array-arguments": fn("f", [1, 2]),
    "scalar-arguments": fn("f", "3"),
    "nan": fn("f", '{"x": NaN}'),
    "overflowing-float": fn("f", '{"x": 1e400}'),
    "invalid-json": fn("f", '{"x": 1,}'),
    "text-after-json": fn("f", '{"x": 1} trailing'),
    "empty-name": fn("", {}),
    "space-in-name": fn("get weather", {}),
    "no-name-end": CALL_OPEN + 'f{"a": 1}' + CALL_CLOSE,
    "python-raw-code": PYTHON_TAG + "import math\nprint(math.pi)",
    "python-array": PYTHON_TAG + "[1]",
}

# The last call is cut off by the end of the text: dropped, what came before kept.
CUT_OFF = {
    "unterminated-json": (CALL_OPEN + 'f>{"a": "open', [], None),
    "opener-alone": ("Let me see." + CALL_OPEN, [], "Let me see."),
    "opener-and-name": (CALL_OPEN + "f>", [], None),
    "python-tag-alone": (PYTHON_TAG, [], None),
    "second-call": (fn("a", {"x": 1}) + CALL_OPEN + 'b>{"q": [', [("a", {"x": 1})], None),
}


def test_bad_call_between_good_calls_keeps_them():
    text = "Plan." + fn("a", {"x": 1}) + fn("bad", "{oops}") + fn("b", {}) + " Done."
    message = assert_stream_matches(PARSER, text, leak_check=False)
    assert view(message) == expected_view([("a", {"x": 1}), ("b", {})], "Plan." + fn("bad", "{oops}") + " Done.")
    assert len(message.diagnostics) == 1 and "surfaced" in message.diagnostics[0]


def test_unterminated_string_does_not_swallow_the_next_call():
    text = CALL_OPEN + 'f>{"a": "oops}' + CALL_CLOSE + fn("g", {"b": 1})
    message = assert_stream_matches(PARSER, text, leak_check=False)
    assert view(message) == expected_view([("g", {"b": 1})], CALL_OPEN + 'f>{"a": "oops}' + CALL_CLOSE)


def test_doubled_opener_and_stray_closer_keep_the_call():
    """The generic drift of an opener written twice and of a closer before the first call: the call is read, the
    stray marker stays content (a surfaced fault for the doubled opener)."""
    doubled = assert_stream_matches(PARSER, CALL_OPEN + fn("f", {"a": 1}), leak_check=False)
    assert view(doubled) == expected_view([("f", {"a": 1})], CALL_OPEN) and doubled.diagnostics
    stray = assert_stream_matches(PARSER, CALL_CLOSE + fn("f", {}), leak_check=False)
    assert view(stray) == expected_view([("f", {})], CALL_CLOSE) and stray.diagnostics == []


def test_prose_with_angle_brackets_and_stray_markers_is_content():
    text = "Use a<b, c>d, <func, <|python_ta, <function and " + CALL_CLOSE + " x."
    message = assert_stream_matches(PARSER, text, leak_check=False)
    assert view(message) == (text, None, [])


def test_trailing_stop_markers_stripped_inner_kept():
    assert PARSER.parse("hi" + EOT + "\n" + END_OF_TEXT).content == "hi"
    assert PARSER.parse(fn("f", {}) + EOM).tool_calls == [ToolCall("f", {})]
    assert PARSER.parse("a" + EOM + "b").content == "a" + EOM + "b"
    assert PARSER.parse("hi<|eom_").content == "hi<|eom_"


# ---- streaming ----------------------------------------------------------------------------------------

HOLD_BACK_TEXTS = [
    "Sure " + fn("f", {"a": CALL_CLOSE + "<|eo"}) + py({"code": "<function="}) + " ok" + EOM,
    "a <func b <function c <|python_t d </functio e <|eo",
    "x" + fn("f", "{bad}") + "y",
    CALL_OPEN + 'f>{"a": 1}</func',
]


def _fed(session, piece: str) -> list[tuple]:
    """What one ``feed`` gives: ``("content", text)`` and ``(index, name, arguments)`` per call piece."""
    out: list[tuple] = []
    for delta in session.feed(piece):
        out += [("content", delta.content)] if delta.content else []
        out += [(t.index, t.name, json.loads(t.arguments)) for t in delta.tool_calls]
    return out


def test_stream_releases_content_early_and_each_call_whole():
    session = PARSER.stream()
    script = [
        ("Checking the weather.<func", [("content", "Checking the weather.")]),  # a marker start is held
        ('tion=w>{"city": "Pa', []),
        ('ris"}</funct', []),
        ("ion>", [(0, "w", {"city": "Paris"})]),  # the closer decides
        (py({"code": "1"}), [(1, "python", {"code": "1"})]),  # the tagged call ends with its object
        (EOM, []),
    ]
    assert [_fed(session, piece) for piece, _ in script] == [want for _, want in script]
    assert session.finish() == [] and session.diagnostics == []


# ---- property tests ----------------------------------------------------------------------------------

MARKER_TEXT = st.lists(
    st.sampled_from([CALL_OPEN, CALL_CLOSE, PYTHON_TAG, EOM, EOT, ">", "<", "<|", "<func", '"', "\\", "}", "é😀"]),
    max_size=5,
).map("".join)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drawn=tools_and_calls(), marker=MARKER_TEXT, content=st.none() | prose(), python=st.booleans(), data=st.data())
def test_property_written_calls_roundtrip(drawn, marker, content, python, data):
    """Content, then the calls as the template writes them (each with a string of marker text, the last one possibly
    the python tool's), parse back exactly, whatever the chunking."""
    _, drawn_calls = drawn
    calls = [(c.name, {**c.arguments, "marker text": marker}) for c in drawn_calls]
    if python:
        calls[-1] = ("python", calls[-1][1])
    text = (content or "") + "".join(py(a) if n == "python" else fn(n, a) for n, a in calls)
    message = PARSER.parse(text)
    assert view(message) == expected_view(calls, content)
    splits = data.draw(st.lists(st.integers(0, len(text)), max_size=20).map(sorted))
    assert_roundtrip_chunks(PARSER, text, message, splits, watch=delta_checker(FMT))


PIECES = st.lists(
    st.sampled_from([CALL_OPEN, CALL_CLOSE, PYTHON_TAG, EOM, EOT, "f>", "f", ">", " ", "\n", '{"a": 1}', "{", "}"])
    | st.sampled_from(['"', "<", "<func", "</func", "x y", "\\", "[1]"]),
    max_size=30,
)


@settings(max_examples=300, deadline=None)
@given(pieces=PIECES, data=st.data())
def test_property_any_text_is_kept_and_streams_like_one_shot(pieces, data):
    text = "".join(pieces)
    message = PARSER.parse(text)
    if not message.tool_calls:  # nothing is dropped but trailing stop markers (and a call cut off by the end)
        body = body_without_stops(text, FMT.stop_markers)
        if any("cut off" in d for d in message.diagnostics):
            body = body[: max(body.rfind(CALL_OPEN), body.rfind(PYTHON_TAG))]
        assert "".join((message.content or "").split()) == "".join(body.split())
    assert_roundtrip_chunks(
        PARSER, text, message, data.draw(st.lists(st.integers(0, len(text)), max_size=10).map(sorted))
    )


# ---- rendering through the real template ---------------------------------------------------------------

WEATHER = tool("get_weather", {"city": {"type": "string"}})
PYTHON = tool("python", {"code": {"type": "string"}})


def test_catalog_row_and_offline_template():
    tmpl = template(MODEL)
    assert (tmpl.format, tmpl.source, tmpl.file) == (
        "functionary_v31",
        "sdist",
        "meetkai-functionary-medium-v3.1.jinja",
    )


def test_rendered_shapes():
    calls = [ToolCall("get_weather", {"city": "Paris é </function>"}), ToolCall("python", {"code": "print(1)"})]
    case = render_scenario(template(MODEL), Scenario("s1", [WEATHER, PYTHON], calls, content_after="Checking."), FMT)
    assert (case.prefix, case.extra["stop"]) == ("", EOM)
    assert case.text == "Checking." + fn("get_weather", {"city": "Paris é </function>"}) + py({"code": "print(1)"})
    assert view(PARSER.parse(case.text, case.tools, case.prefix)) == view(case.expected)
    prose = render_scenario(template(MODEL), Scenario("s2", [WEATHER], [], content_after="Hello."), FMT)
    assert (prose.text, prose.extra["stop"]) == ("Hello.", EOT)
    with pytest.raises(UnrepresentableError, match="reasoning"):
        render_scenario(template(MODEL), Scenario("s3", [WEATHER], calls[:1], reasoning="Think."), FMT)


def test_a_lone_python_call_is_skipped_by_the_renderer():
    """The template writes ``<|python_tag|>{...}`` for it, but no ``<function=`` (the spec's call opener), which the
    renderer reads as a template without calls (see the facts module's docstring)."""
    with pytest.raises(UnrepresentableError, match="does not write tool calls"):
        render_scenario(template(MODEL), Scenario("s4", [PYTHON], [ToolCall("python", {"code": "1"})]), FMT)


def test_prompt_shape():
    history = [{"role": "user", "content": HISTORY_USER}]
    prompt = render_messages(template(MODEL), history, [WEATHER], add_generation_prompt=True, **FMT.template_vars)
    assert prompt.startswith("<|start_header_id|>system<|end_header_id|>\n\n")  # the empty bos_token
    assert "<function=example_function_name>" in prompt
    # Markup ("\n"|safe) + a str escapes the str: transformers renders the declarations HTML-escaped
    assert "{&#34;name&#34;: &#34;get_weather&#34;, " in prompt
    assert prompt.endswith(HISTORY_USER + EOT + "<|start_header_id|>assistant<|end_header_id|>\n\n")


def test_format_edge_scenarios_render_and_pass():
    scenarios = format_edge_scenarios("functionary_v31")
    assert scenarios and all(s.id.startswith("edge-functionary_v31-") for s in scenarios)
    for scenario in scenarios:
        case = render_scenario(template(MODEL), scenario, FMT)
        assert view(assert_stream_matches(PARSER, case.text, case.tools, case.prefix)) == view(case.expected), case.id


class TestFunctionaryV31(ParserConformance):
    CONFIG = Conformance(
        format="functionary_v31",
        parser=FunctionaryV31Parser,
        strict={k: Text(*v) for k, v in STRICT.items()},
        stops=("", EOM, EOT, EOM + "\n", END_OF_TEXT),
        recovered={k: Text(text + EOM, calls, content) for k, (text, calls, content) in RECOVERED.items()},
        surfaced=SURFACED,
        cut_off={k: Text(*v) for k, v in CUT_OFF.items()},
        hold_back=tuple(HOLD_BACK_TEXTS),
        models=(MODEL,),
        modes=("oneshot", "roundtrip", "whole", "char", "random", *TOKENS, "prefix"),
    )

    def check_corpus(self, model, run):
        corpus = run.corpus
        assert corpus.count("curated") >= 125 and corpus.count("generated") >= 20 and corpus.count("observed") == 0
        assert all("reasoning" in reason for _, reason in corpus.skipped)  # the template writes no reasoning
        assert any(c.id.startswith("edge-functionary_v31-") for c in corpus.cases)
        assert run.count_mode("roundtrip") >= 120

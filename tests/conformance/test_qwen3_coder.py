"""Conformance of the project's own Qwen3-Coder parser (``parsers/own/qwen3_coder.py``) and of the
qwen3_coder family end to end (Qwen3-Coder, Nemotron 3 Nano): the shared suite's config plus the tests specific to
the format.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, assume, given, settings
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
from harness.core.messages import ToolCall
from harness.core.protocol import run_stream
from harness.core.scenarios import Scenario
from harness.formats import format_edge_scenarios, get_format
from harness.score.roundtrip import roundtrip_check
from harness.template.render import render_scenario
from parsers.own.qwen3_coder import THINK_CLOSE, THINK_OPEN, Qwen3CoderParser

FMT = get_format("qwen3_coder")
PARSER = Qwen3CoderParser()


EXTRA_MARKERS = (THINK_OPEN, THINK_CLOSE)
CHECK_DELTA = delta_checker(FMT, EXTRA_MARKERS)


def stream_matches(text: str, tools=None, prefix: str = "", seed: int = 0, leak_check: bool = True):
    """:func:`conformance.suite.assert_stream_matches` on this file's parser, in its argument order."""
    return assert_stream_matches(PARSER, text, tools, prefix, seed, leak_check, EXTRA_MARKERS)


MARKERS = tuple(dict.fromkeys(FMT.markers + FMT.stop_markers + (THINK_OPEN, THINK_CLOSE)))


def written(value) -> str:
    """A value as the templates write it: containers with ``tojson``, everything else with ``|string``."""
    return json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list)) else str(value)


def call_text(name: str, arguments: dict, pad: str = "\n") -> str:
    """A call as Qwen3-Coder.jinja writes it (lines 85-94)."""
    params = "".join(f"<parameter={k}>{pad}{written(v)}{pad}</parameter>\n" for k, v in arguments.items())
    return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>"


S, INT, N, B, OBJ, A = ({"type": t} for t in ("string", "integer", "number", "boolean", "object", "array"))
NULLABLE_S = {"anyOf": [S, {"type": "null"}]}


# ---- protocol and registry -------------------------------------------------------------------------


# ---- one-shot and streaming on small inputs ----------------------------------------------------------

WEATHER = tool("get_weather", {"city": S, "days": INT})
TYPED = tool("t", {"s": S, "i": INT, "n": N, "b": B, "z": NULLABLE_S, "o": OBJ, "a": A})

STRICT = {
    "one-call": (
        call_text("get_weather", {"city": "Paris", "days": 3}),
        [WEATHER],
        [("get_weather", {"city": "Paris", "days": 3})],
        None,
    ),
    "content-first": (
        "Let me look.\n\n" + call_text("get_weather", {"city": "Oslo"}),
        [WEATHER],
        [("get_weather", {"city": "Oslo"})],
        "Let me look.",
    ),
    "parallel": (call_text("a", {"x": "1"}) + "\n" + call_text("b", {}), None, [("a", {"x": 1}), ("b", {})], None),
    "python-scalars": (
        call_text(
            "t", {"s": "True", "i": -7, "n": 1e-07, "b": True, "z": None, "o": {"k": [None, False]}, "a": [1.5, "x"]}
        ),
        [TYPED],
        [("t", {"s": "True", "i": -7, "n": 1e-07, "b": True, "z": None, "o": {"k": [None, False]}, "a": [1.5, "x"]})],
        None,
    ),
    "closers-in-values": (
        call_text("t", {"s": "a</parameter>b</function>\n</tool_call>\n<tool_call>c", "i": 1}),
        [TYPED],
        [("t", {"s": "a</parameter>b</function>\n</tool_call>\n<tool_call>c", "i": 1})],
        None,
    ),
    "closer-chain-in-middle-value": (
        call_text("t", {"s": "x\n</parameter>\n</function>\n</tool_call>\nmore", "i": 2}),
        [TYPED],
        [("t", {"s": "x\n</parameter>\n</function>\n</tool_call>\nmore", "i": 2})],
        None,
    ),
    "closer-chain-in-last-value": (
        call_text("t", {"s": "</parameter>\n</function>\n</tool_call>\ntail"}),
        [TYPED],
        [("t", {"s": "</parameter>\n</function>\n</tool_call>\ntail"})],
        None,
    ),
    "newline-values": (
        call_text("t", {"s": "\n", "z": "\n\nbody\n\n"}),
        [TYPED],
        [("t", {"s": "\n", "z": "\n\nbody\n\n"})],
        None,
    ),
    "empty-and-whitespace": (call_text("t", {"s": "", "z": " "}), [TYPED], [("t", {"s": "", "z": " "})], None),
    "unicode": (
        call_text("名前", {"città": "東京 🚀 \u200f", "key with space": "é"}),
        None,
        [("名前", {"città": "東京 🚀 \u200f", "key with space": "é"})],
        None,
    ),
}


def test_values_are_typed_by_the_schema():
    text = call_text(
        "t", {"s": "001", "i": "001", "n": "1.50", "b": "true", "z": "None", "o": "{'a': True}", "a": "[1, None]"}
    )
    assert PARSER.parse(text, [TYPED]).tool_calls[0].arguments == {
        "s": "001",
        "i": "001",
        "n": 1.5,
        "b": True,
        "z": None,
        "o": {"a": True},
        "a": [1, None],
    }
    # no declared schema: only JSON-looking text is decoded
    untyped = PARSER.parse(call_text("f", {"a": "001", "b": "True", "c": "None", "d": "[1, 2]", "e": " 5"}))
    assert untyped.tool_calls[0].arguments == {"a": "001", "b": "True", "c": "None", "d": [1, 2], "e": " 5"}


def test_anyof_lookalikes_stay_strings():
    lookup = tool(
        "lookup",
        {
            "code": {"anyOf": [S, INT]},
            "flag": {"anyOf": [S, B]},
            "n": {"type": ["string", "null"]},
            "list": {"anyOf": [S, {"type": "array", "items": INT}]},
        },
    )
    args = {"code": "001", "flag": "yes", "n": "nil", "list": "[1, 2"}
    assert PARSER.parse(call_text("lookup", args), [lookup]).tool_calls[0].arguments == args


def test_python_literal_containers_are_read():
    text = call_text("t", {"o": "{'a': True, 'b': None, 'c': [1.5]}", "a": "[True, 'x', None]"})
    got = PARSER.parse(text, [TYPED]).tool_calls[0].arguments
    assert got == {"o": {"a": True, "b": None, "c": [1.5]}, "a": [True, "x", None]}
    # a literal JSON cannot hold (bytes) stays its text
    assert PARSER.parse(call_text("t", {"o": "{'a': b'x'}"}), [TYPED]).tool_calls[0].arguments == {"o": "{'a': b'x'}"}


RECOVERED = {
    "no-padding-no-newlines": (
        "<tool_call><function=f><parameter=a>1</parameter><parameter=b>x</parameter></function></tool_call>",
        [("f", {"a": 1, "b": "x"})],
    ),
    "extra-whitespace": (
        "<tool_call> \n<function=f>\n\n<parameter=a>\n1\n</parameter>\t\n</function>\n\n</tool_call>",
        [("f", {"a": 1})],
    ),
    "missing-parameter-close": (
        "<tool_call>\n<function=f>\n<parameter=a>\nx\n</parameter>\n<parameter=b>\n"
        '{"k": true}\n</function>\n</tool_call>',
        [("f", {"a": "x", "b": {"k": True}})],
    ),
    "missing-call-close-at-end": (
        "<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n",
        [("f", {"a": 1})],
    ),
    "missing-call-close-before-next": (
        "<tool_call>\n<function=f>\n</function>\n" + call_text("g", {"x": "y"}),
        [("f", {}), ("g", {"x": "y"})],
    ),
    "two-functions-in-one-block": (
        "<tool_call>\n<function=f>\n</function>\n<function=g>\n<parameter=x>\n2\n"
        "</parameter>\n</function>\n</tool_call>",
        [("f", {}), ("g", {"x": 2})],
    ),
}


def test_observed_vllm_missing_parameter_close():
    """vLLM issue 57699: the model omitted ``</parameter>`` before ``</function>``."""
    text = (
        '<tool_call>\n<function=ThinQ_Connect>\n<parameter=body>\n{"airConJobMode": "AIR_CLEAN", '
        '"windStrength": "HIGH", "monitoringEnabled": true}\n</function>\n</tool_call>'
    )
    message = stream_matches(text)
    assert view(message) == expected_view(
        [("ThinQ_Connect", {"body": {"airConJobMode": "AIR_CLEAN", "windStrength": "HIGH", "monitoringEnabled": True}})]
    )


def test_missing_parameter_close_in_the_first_of_two_calls():
    """drift mutator missing-parameter-closer on edge-parallel-2-same: the first call's value ends at its own
    ``</function>``; a later ``</parameter>`` no longer makes it swallow the second call."""
    text = (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</function>\n</tool_call>\n"
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nTokyo\n</parameter>\n<parameter=unit>\nc\n"
        "</parameter>\n</function>\n</tool_call>"
    )
    message = stream_matches(text)
    assert view(message) == expected_view(
        [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Tokyo", "unit": "c"})]
    )
    # two calls in one block, and a call without parameters in between
    text = (
        "<tool_call>\n<function=search>\n<parameter=q>\nflights\n</function>\n<function=get_time>\n</function>\n"
        "<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>"
    )
    assert view(stream_matches(text)) == expected_view(
        [("search", {"q": "flights"}), ("get_time", {}), ("f", {"a": 1})]
    )


def test_missing_parameter_close_keeps_the_values_own_newline():
    """drift mutator missing-parameter-closer on edge-qwen3_coder-value-trailing-newline: the one newline before
    ``</function>`` is the value's padding, so a value ending in a newline keeps it."""
    text = "<tool_call>\n<function=set_pattern>\n<parameter=pattern>\nlast line\n\n</function>\n</tool_call>"
    assert view(stream_matches(text)) == expected_view([("set_pattern", {"pattern": "last line\n"})])


@pytest.mark.parametrize(
    "raw, schema, expected",
    [
        ('{\\"name\\": \\"Ada\\", \\"age\\": 36}', OBJ, {"name": "Ada", "age": 36}),
        ('[\\"a.txt\\", \\"b c.txt\\"]', A, ["a.txt", "b c.txt"]),
        ('{\\"q\\": \\"say \\\\\\"hi\\\\\\"\\"}', OBJ, {"q": 'say "hi"'}),  # fully double-encoded: one reading decodes
        ('{\\"p\\": \\"C:\\\\x\\"}', OBJ, {"p": "C:\\x"}),  # quotes escaped, backslash not: the other one
        ('{\\"a\\": \\"x\\\\ny\\"}', OBJ, '{\\"a\\": \\"x\\\\ny\\"}'),  # both decode, differently: kept as text
        ('{\\"a\\": 1}', {"anyOf": [OBJ, S]}, '{\\"a\\": 1}'),  # a string is allowed: the text is it
    ],
)
def test_double_encoded_json_value(raw, schema, expected):
    """drift mutator escaped-json-value: escaped JSON inside a value whose schema wants a container."""
    message = stream_matches(call_text("t", {"v": raw}), [tool("t", {"v": schema})])
    assert message.tool_calls[0].arguments == {"v": expected}


SURFACED = {
    "no-function": "<tool_call>\nget_weather(city='Paris')\n</tool_call>",
    "empty-block": "<tool_call></tool_call>",
    "text-between-parameters": (
        "<tool_call>\n<function=f>\nhello\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>"
    ),
    "newline-in-name": "<tool_call>\n<function=f\ng>\n</function>\n</tool_call>",
    "empty-name": "<tool_call>\n<function=>\n</function>\n</tool_call>",
}

# The last call is cut off by the end of the text: dropped, what came before kept.
CUT_OFF = {
    "unterminated-value": ("<tool_call>\n<function=f>\n<parameter=a>\n1", [], None),
    "unterminated-header": ("Looking.\n<tool_call>\n<function=f", [], "Looking."),
    "opener-alone": ("<tool_call>", [], None),
    "second-function-in-the-block": (
        "<tool_call>\n<function=a>\n<parameter=x>\n1\n</parameter>\n</function>\n<function=b>\n<parameter=q",
        [("a", {"x": 1})],
        None,
    ),
    "second-call": (
        "<tool_call>\n<function=a>\n<parameter=x>\n1\n</parameter>\n</function>\n</tool_call>\n"
        "<tool_call>\n<function=write_file>\n<parameter=content>\nrm -rf /",
        [("a", {"x": 1})],
        None,
    ),
}


@pytest.mark.parametrize(
    "text, content",
    [
        ("<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>", None),
        ("Calling it.\n<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>", "Calling it."),
        ("<function=f>\n<parameter=a>\n1\n</parameter>\n</function>", None),
    ],
)
def test_bare_function_without_tool_call_is_read(text, content):
    """``<function=...>`` with no ``<tool_call>`` before it (llama.cpp's Qwen3-Coder tests, canitoolcall's
    ``bare-function`` fixtures) is a call when it parses whole up to the end."""
    message = stream_matches(text)
    assert view(message) == expected_view([("f", {"a": 1})], content)
    two = text + "\n" + call_text("g", {"b": 2})
    assert view(stream_matches(two)) == expected_view([("f", {"a": 1}), ("g", {"b": 2})], content)


def test_bare_function_that_does_not_parse_whole_is_prose():
    for text in ("Write <function=NAME> then the parameters.", "<function=f>\n<parameter=a>\n1\n</parameter>\nand"):
        assert view(stream_matches(text, leak_check=False)) == (text, None, [])


def test_closer_cut_off_by_the_end_keeps_the_call():
    for tail in ("</tool_", "</tool_call>\n<tool_c"):
        text = "<tool_call>\n<function=f>\n</function>\n" + tail
        assert view(stream_matches(text)) == expected_view([("f", {})])


def test_unclosed_value_before_a_declared_parameter():
    """vLLM's missing-close-parameter shape: a value runs into a whole tag of a parameter the tool declares and
    the call does not set; it ends there. Undeclared or already set keys stay data (no injection)."""
    tools = [tool("weather", {"city": {"type": "string"}, "state": {"type": "string"}, "path": {"type": "string"}})]
    text = (
        "<tool_call>\n<function=weather>\n<parameter=city>\nDallas\n<parameter=state>\nTX\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    assert view(stream_matches(text, tools=tools)) == expected_view([("weather", {"city": "Dallas", "state": "TX"})])
    assert view(PARSER.parse(text)) == expected_view([("weather", {"city": "Dallas\n<parameter=state>\nTX"})])
    quoted = text.replace("state>", "zip>")  # undeclared: data
    assert view(PARSER.parse(quoted, tools)) == expected_view([("weather", {"city": "Dallas\n<parameter=zip>\nTX"})])
    again = text.replace("<parameter=city>", "<parameter=state>\nOK\n</parameter>\n<parameter=city>")
    want = {"state": "OK", "city": "Dallas\n<parameter=state>\nTX"}  # state is set: the tag is data
    assert view(PARSER.parse(again, tools)) == expected_view([("weather", want)])


@pytest.mark.parametrize(
    "text, reasoning, calls",
    [
        ("Need the listing.\n<tool_call>\n<function=ls>\n</function>\n</tool_call>", "Need the listing.", [("ls", {})]),
        ("The user wants the weather, so I will", "The user wants the weather, so I will", []),
        ("<think>\n\n</think>\n\n<tool_call>\n<function=ls>\n</function>\n</tool_call>", None, [("ls", {})]),
    ],
)
def test_prefilled_think_starts_the_text_in_reasoning(text, reasoning, calls):
    """With the prompt's ``<think>`` open, the text is reasoning up to ``</think>`` or a call (llama.cpp: "a tool
    call ends the prefilled thinking block"); cut off there, all of it is reasoning; a ``<think>`` written again
    at the start is the same opener."""
    message = stream_matches(text, prefix="<|im_start|>assistant\n<think>\n")
    assert view(message) == expected_view(calls, None, reasoning)


def test_surfaced_block_between_good_calls_keeps_them():
    text = "Plan.\n" + call_text("a", {"x": 1}) + "\n<tool_call>\nbroken\n</tool_call>\n" + call_text("b", {})
    message = stream_matches(text, leak_check=False)
    assert view(message) == expected_view([("a", {"x": 1}), ("b", {})], "Plan.\n\n<tool_call>\nbroken\n</tool_call>")


def test_text_after_a_call_is_content():
    text = call_text("a", {"x": 1}) + "\nI called it. See <b>x</b>."
    message = stream_matches(text)
    assert view(message) == expected_view([("a", {"x": 1})], "I called it. See <b>x</b>.")


def test_prose_with_angle_brackets_is_content():
    text = "Use <function=x> or a<b, c>d, <tool>, </tool_calls> and <parameter=y>."
    assert view(stream_matches(text)) == (text, None, [])


def test_trailing_stop_markers_stripped_inner_kept():
    assert PARSER.parse("hi<|im_end|>\n<|endoftext|>").content == "hi"
    assert PARSER.parse("a<|im_end|>b").content == "a<|im_end|>b"
    assert PARSER.parse("hi<|im_").content == "hi<|im_"


# ---- reasoning (Nemotron) ----------------------------------------------------------------------------


def test_text_before_think_close_is_reasoning():
    """Nemotron with thinking on pre-fills ``<think>\\n``; the rendered text starts inside the reasoning."""
    text = "Two cities.\nCall it twice.\n</think>\nOn it.\n" + call_text("get_weather", {"city": "Paris"}) + "\n"
    message = stream_matches(text, [WEATHER])
    assert view(message) == expected_view([("get_weather", {"city": "Paris"})], "On it.", "Two cities.\nCall it twice.")
    assert view(PARSER.parse(text, [WEATHER], "<think>\n")) == view(message)


def test_reasoning_rules():
    # thinking off: the rendered text is content and calls
    assert view(stream_matches("\n" + call_text("f", {}) + "\n")) == expected_view([("f", {})])
    # an explicit block at the start; an unclosed one is all reasoning
    assert view(stream_matches("<think>\nr\n</think>\nok")) == ("ok", "r", [])
    assert view(stream_matches("<think>\nstill thinking")) == (None, "still thinking", [])
    # without </think> the text is content; a call decides it before any </think>
    assert view(stream_matches("plain answer")) == ("plain answer", None, [])
    text = "Plan.\n" + call_text("f", {}) + "\n</think> after"
    assert view(stream_matches(text, leak_check=False)) == expected_view([("f", {})], "Plan.\n\n</think> after")
    # <think> after text is content; a prefix that closes its block makes everything content
    assert view(stream_matches("Hi <think>x</think>", leak_check=False)) == ("Hi <think>x</think>", None, [])
    assert view(PARSER.parse("r\n</think>\nok", prefix="<think></think>")) == ("r\n</think>\nok", None, [])


# ---- streaming ----------------------------------------------------------------------------------------

HOLD_BACK_TEXTS = [
    "Sure <tool_call>\n<function=f>\n<parameter=a>\n</tool_call>\n</parameter>\n</function>\n</tool_call> ok<|im_end|>",
    "r < s\n</think>\nok <tool_ok " + call_text("f", {"a": "x"}) + "<|endoftext|>",
    "a <tool b </tool_call c <|im_e d <thin e </thi f",
    "x\n<tool_call>\nbad\n</tool_call>\ny",
    call_text("f", {"a": "</parameter>\n</function>\n</tool_call>\nz"}) + "\n" + call_text("g", {}),
]


def test_stream_is_incremental_and_calls_arrive_whole_when_decided():
    session = PARSER.stream([WEATHER])
    assert session.feed("<think>\nChecking the ")[0].reasoning == "Checking the"
    assert [d.reasoning for d in session.feed("weather.\n</th")] == [" weather."]
    assert session.feed("ink>\nOn it.\n<tool_")[0].content == "On it."
    assert session.feed("call>\n<function=get_weather>\n<parameter=city>\nPa") == []
    assert session.feed("ris\n</parameter>\n</function>\n</tool_call") == []
    (delta,) = session.feed(">\n<tool_call>")  # the next block shows the first one's end is clean
    (piece,) = delta.tool_calls
    assert (piece.index, piece.name, json.loads(piece.arguments)) == (0, "get_weather", {"city": "Paris"})
    assert session.feed("\n<function=get_weather>\n</function>\n</tool_call>\n") == []
    (delta,) = session.finish()
    assert delta.tool_calls[0].index == 1 and session.diagnostics == []


def test_undecided_start_is_held_until_decided():
    session = PARSER.stream()
    assert session.feed("Let me check") == []
    assert session.feed(" the weather.") == []
    (delta,) = session.feed("\n<tool_call>")
    assert delta.content == "Let me check the weather."
    session = PARSER.stream(prefix="<think></think>")  # thinking off: content streams at once
    assert session.feed("Hello")[0].content == "Hello"


def test_deep_and_long_values_parse():
    deep = (
        "<tool_call>\n<function=f>\n<parameter=a>\n" + "</parameter>\n<parameter=a>\n" * 3000 + "x\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    assert PARSER.parse(deep).tool_calls[0].arguments == {"a": "x"}  # no recursion limit
    long_value = "line, with </parameter> and </function>\n" * 2000
    assert PARSER.parse(call_text("f", {"a": long_value, "b": "y"})).tool_calls[0].arguments == {
        "a": long_value,
        "b": "y",
    }


# ---- property tests ----------------------------------------------------------------------------------

NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,15}", fullmatch=True)
KEYS = st.from_regex(r"[A-Za-z_][A-Za-z0-9_. \-]{0,10}", fullmatch=True)
TRICKY = st.sampled_from(
    [
        "</parameter>",
        "</function>",
        "</tool_call>",
        "<tool_call>",
        "<parameter=x>",
        "<function=f>",
        "<|im_end|>",
        "<think>",
        "</think>",
        "\n",
        " ",
        "<",
        ">",
        "é😀",
        '"',
        "True",
        "None",
        "001",
        "{'a': 1}",
        "",
    ]
)
STRINGS = st.one_of(TRICKY, st.text(max_size=20), st.lists(TRICKY, max_size=4).map("".join))
AMBIGUOUS = re.compile(
    r"</parameter>\s*(<parameter=|</function>\s*<function=)|</tool_call>\s*<tool_call>"
    r"|</function>\s*(</tool_call>\s*)?(<tool_call>|<function=)"
)
# ^ documented limitations (the last: a call boundary, or a call end before a new block, inside a value)
TYPED_VALUES = st.one_of(
    st.tuples(st.just(S), STRINGS),
    st.tuples(st.just(INT), st.integers()),
    st.tuples(st.just(N), st.floats(allow_nan=False, allow_infinity=False)),
    st.tuples(st.just(B), st.booleans()),
    st.tuples(st.just(NULLABLE_S), st.none()),
    st.tuples(st.just(OBJ), st.dictionaries(STRINGS, st.one_of(st.none(), st.integers(), STRINGS), max_size=3)),
    st.tuples(st.just(A), st.lists(st.one_of(st.booleans(), st.floats(allow_nan=False), STRINGS), max_size=3)),
)
CALLS = st.lists(
    st.tuples(NAMES, st.dictionaries(KEYS, TYPED_VALUES, max_size=4)),
    min_size=1,
    max_size=3,
    unique_by=lambda call: call[0],
)
PROSE = st.text(st.characters(blacklist_characters="<", blacklist_categories=("Cs",)), max_size=30)


def _strings(value):
    """Every string in ``value``, dict keys included: the limitation applies to text written anywhere in a value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=CALLS, content=PROSE, data=st.data())
def test_property_written_calls_roundtrip(calls, content, data):
    """Calls written as Qwen3-Coder.jinja writes them (content first) parse back exactly under their schemas,
    whatever the chunking."""
    assume(not any(AMBIGUOUS.search(text) for _, args in calls for _, v in args.values() for text in _strings(v)))
    tools = [tool(n, {k: schema for k, (schema, _) in args.items()}) for n, args in calls]
    plain = [(n, {k: v for k, (_, v) in args.items()}) for n, args in calls]
    text = (content.strip() + "\n" if content.strip() else "") + "".join("\n" + call_text(n, a) for n, a in plain)
    message = PARSER.parse(text, tools)
    assert view(message) == expected_view(plain, content.strip() or None)
    splits = data.draw(st.lists(st.integers(0, len(text)), max_size=20).map(sorted))
    for chunks in (split_at(text, splits), list(text)):
        assert view(run_stream(PARSER, chunks, tools)) == view(message)


FRAGMENTS = st.sampled_from(
    [
        "<tool_call>",
        "</tool_call>",
        "<function=f>",
        "</function>",
        "<parameter=a>",
        "</parameter>",
        "\n",
        " ",
        "1",
        "None",
        "{'a': 1}",
        "x y",
        "<|im_end|>",
        "<think>",
        "</think>",
        "<",
        ">",
        "<tool_",
        "</param",
        "<function=",
        "<|endoftext|>",
    ]
)


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(FRAGMENTS, max_size=30), data=st.data())
def test_property_arbitrary_text_never_raises_or_drops(pieces, data):
    text = "".join(pieces)
    message = PARSER.parse(text)
    if not message.tool_calls and THINK_OPEN not in text and THINK_CLOSE not in text:
        body = text.rstrip()  # all is content, bar trailing stop markers
        while body.endswith(FMT.stop_markers):
            body = next(body[: -len(m)] for m in FMT.stop_markers if body.endswith(m)).rstrip()
        if any("cut off" in d for d in message.diagnostics):  # the last block, cut off by the end, is dropped
            body = body[: body.rfind("<tool_call>")]
        assert message.content == (body.strip() or None)
    splits = data.draw(st.lists(st.integers(0, len(text)), max_size=10).map(sorted))
    for chunks in (split_at(text, splits), list(text)):
        assert view(run_stream(PARSER, chunks)) == view(message)


# ---- rendering through the real templates --------------------------------------------------------------


def test_catalog_rows_and_offline_templates():
    expected = {
        "qwen3-coder-30b-a3b": "Qwen3-Coder.jinja",
        "nemotron-3-nano": "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja",
    }
    for model, file in expected.items():
        tmpl = template(model)
        assert (tmpl.format, tmpl.source, tmpl.file) == ("qwen3_coder", "sdist", file)


def test_rendered_shapes_per_template():
    scenario = Scenario(
        "s1", [WEATHER], [ToolCall("get_weather", {"city": "Paris", "days": 2})], content_after="Checking."
    )
    body = (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n2\n"
        "</parameter>\n</function>\n</tool_call>"
    )
    case = render_scenario(template("qwen3-coder-30b-a3b"), scenario, FMT)
    assert (case.text, case.prefix, case.extra["stop"]) == ("Checking.\n\n" + body, "", "<|im_end|>\n")
    case = render_scenario(template("nemotron-3-nano"), scenario, FMT)
    assert (case.text, case.prefix, case.extra["stop"]) == (
        "Checking.\n" + body + "\n",
        "<think></think>",
        "<|im_end|>\n",
    )
    thinking = Scenario("s2", [WEATHER], [ToolCall("get_weather", {"city": "Oslo"})], reasoning="Oslo it is.")
    case = render_scenario(template("nemotron-3-nano"), thinking, FMT)
    assert case.text.startswith("Oslo it is.\n</think>\n<tool_call>") and case.prefix == "<think>\n"
    assert view(PARSER.parse(case.text, case.tools, case.prefix)) == view(case.expected)


def test_format_edge_scenarios_render_and_pass():
    scenarios = format_edge_scenarios("qwen3_coder")
    assert len(scenarios) >= 15 and all(s.id.startswith("edge-qwen3_coder-") for s in scenarios)
    tmpl = template("nemotron-3-nano")
    check = roundtrip_check(tmpl, FMT)
    for scenario in scenarios:
        case = render_scenario(tmpl, scenario, FMT)
        got = stream_matches(case.text, case.tools, case.prefix, leak_check=False)
        assert view(got) == view(case.expected), case.id
        assert check(case, got).passed, case.id


class TestQwen3Coder(ParserConformance):
    CONFIG = Conformance(
        format="qwen3_coder",
        parser=Qwen3CoderParser,
        strict={k: Text(text, calls, content, tools=tools) for k, (text, tools, calls, content) in STRICT.items()},
        stops=("", "\n", "<|im_end|>", "\n<|im_end|>\n", "<|endoftext|>"),
        recovered={k: Text(*v) for k, v in RECOVERED.items()},
        surfaced=SURFACED,
        cut_off={k: Text(*v) for k, v in CUT_OFF.items()},
        hold_back=tuple(HOLD_BACK_TEXTS),
        models=("qwen3-coder-30b-a3b", "nemotron-3-nano"),
        modes=ALL_MODES,
        extra_markers=EXTRA_MARKERS,
    )

    def check_corpus(self, model, run):
        corpus = run.corpus
        assert corpus.count("curated") >= 130 and corpus.count("generated") >= 15 and corpus.count("observed") >= 3
        assert run.failures(kinds=None, skip_observed=True) == []
        observed = {c.id: {r.verdict for r in run.records[c.id]} for c in corpus.cases if c.slice == "observed"}
        # observed: the integral float 140.0 under an integer schema is the integer 140 (JSON Schema's reading)
        assert observed == {
            "qwen3coder_last_param_unclosed_vllm": {"pass"},
            "qwen3coder_parallel_calls_llamacpp_autoparser": {"pass"},
            "qwen3coder_float_formatted_integer_mlx_lm": {"pass"},
        }

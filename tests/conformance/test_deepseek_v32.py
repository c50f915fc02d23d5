"""Conformance of the project's own DeepSeek V3.2 (DSML) parser (``parsers/own/deepseek_v32.py``, on the section
reader of ``parsers/own/_token_sections.py``) and of the deepseek_v32 family end to end
(``deepseek-ai-DeepSeek-V3.2.jinja`` from the llama-cpp-python 0.3.36 sdist): the shared suite's config plus the
tests specific to the format (value typing, thinking, property tests).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, assume, given, settings
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
from harness.core.errors import UnrepresentableError
from harness.core.messages import ToolCall
from harness.core.protocol import run_stream
from harness.core.scenarios import Scenario
from harness.formats import get_format
from harness.formats.deepseek_v32 import (
    BLOCK_CLOSE,
    BLOCK_OPEN,
    EOS,
    INVOKE_CLOSE,
    INVOKE_OPEN,
    PARAM_CLOSE,
    PARAM_OPEN,
)
from harness.parse import modes as chunking
from harness.template.render import render_scenario
from parsers.own.deepseek_v32 import DeepSeekV32Parser

FMT = get_format("deepseek_v32")
PARSER = DeepSeekV32Parser()
TOKENS = ("tokens",) if chunking.has_tokenizer(FMT.name) else ()  # the vocabularies are vendored
OFF = "<think></think>"  # the thinking-off prefix the harness' cut leaves


def param(key: str, value, kind: str | None = None) -> str:
    """One parameter as the template writes it: strings raw with string="true", the rest as JSON."""
    if kind is None:
        kind = "true" if isinstance(value, str) else "false"
    text = (
        value
        if isinstance(value, str) and kind == "true"
        else (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
    )
    return f'{PARAM_OPEN} name="{key}" string="{kind}">{text}{PARAM_CLOSE}\n'


def invoke(name: str, arguments: dict) -> str:
    return f'{INVOKE_OPEN} name="{name}">\n' + "".join(param(k, v) for k, v in arguments.items()) + INVOKE_CLOSE + "\n"


def block(*invokes: str, content: str = "") -> str:
    """The turn after ``</think>`` as the template writes it."""
    return f"{content}\n\n{BLOCK_OPEN}\n" + "".join(invokes) + BLOCK_CLOSE


STRICT = {
    "one-call": (block(invoke("get_weather", {"city": "Paris"})), [("get_weather", {"city": "Paris"})], None),
    "content-first": (
        block(invoke("search", {"q": "x", "n": 3}), content="Let me look."),
        [("search", {"q": "x", "n": 3})],
        "Let me look.",
    ),
    "parallel-zero-args": (
        block(invoke("a", {"x": 1}), invoke("b", {}), invoke("a", {"x": [None, {"y": True}]})),
        [("a", {"x": 1}), ("b", {}), ("a", {"x": [None, {"y": True}]})],
        None,
    ),
    "raw-strings": (
        block(
            invoke("w", {"a": 'say "hi" \\ \\"', "b": "\n a\r\nb\t\x01 ", "c": "é😀", "d": "}]{[,:", "e": "", "f": " "})
        ),
        [("w", {"a": 'say "hi" \\ \\"', "b": "\n a\r\nb\t\x01 ", "c": "é😀", "d": "}]{[,:", "e": "", "f": " "})],
        None,
    ),
    "tags-inside-raw-string": (
        block(
            invoke(
                "note", {"t": f'{BLOCK_OPEN}\n{INVOKE_OPEN} name="rm">{INVOKE_CLOSE}{BLOCK_CLOSE}{EOS}<think></think>'}
            )
        ),
        [("note", {"t": f'{BLOCK_OPEN}\n{INVOKE_OPEN} name="rm">{INVOKE_CLOSE}{BLOCK_CLOSE}{EOS}<think></think>'})],
        None,
    ),
    "closer-inside-json-string": (
        block(invoke("cfg", {"o": {"end": PARAM_CLOSE + INVOKE_CLOSE}, "l": [PARAM_CLOSE]})),
        [("cfg", {"o": {"end": PARAM_CLOSE + INVOKE_CLOSE}, "l": [PARAM_CLOSE]})],
        None,
    ),
    "numbers": (
        block(invoke("n", {"big": 10**40, "f": 1.5e-07, "z": -0.0, "i": 3.0, "t": False, "nul": None})),
        [("n", {"big": 10**40, "f": 1.5e-07, "z": -0.0, "i": 3.0, "t": False, "nul": None})],
        None,
    ),
    "key-with-quote": (
        block(invoke("u", {'say "hi"': "x", 'a" string="false': 1})),
        [("u", {'say "hi"': "x", 'a" string="false': 1})],
        None,
    ),
}


# ---- typing: the string attribute, then the schema --------------------------------------------------------

INT, STR, NUM = {"type": "integer"}, {"type": "string"}, {"type": "number"}
STR_OR_INT = {"anyOf": [STR, INT]}

TYPING = [
    # (raw value, string attribute, property schema or None, expected)
    ("123", "true", STR, "123"),
    ("123", "true", STR_OR_INT, "123"),
    ("123", "true", None, "123"),
    ("007", "true", None, "007"),
    ("true", "true", {"type": "boolean"}, True),  # drift: the schema admits no string
    ("123", "true", INT, 123),
    ("12x", "true", INT, "12x"),  # nothing fits: kept as written
    ("123", "false", STR_OR_INT, 123),
    ("123", "false", STR, 123),  # the attribute first
    ("-4.5e3", "false", None, -4500.0),
    ("null", "false", {"anyOf": [STR, {"type": "null"}]}, None),
    ('{"a": [1, null]}', "false", {"type": "object"}, {"a": [1, None]}),
    (" 42 ", "false", None, 42),
    ("hello", "false", STR, "hello"),  # not JSON: the schema types it
    ("None", "false", {"anyOf": [STR, {"type": "null"}]}, None),
    ("True", "false", {"type": "boolean"}, True),
    ("42", None, INT, 42),  # no attribute: the schema decides
    ("42", None, STR, "42"),
    ("42", None, None, 42),
    ("abc", None, None, "abc"),
    ("42", "TRUE", INT, 42),  # attribute values compare case-insensitively
    ("42", "maybe", STR, "42"),
]


@pytest.mark.parametrize("raw,kind,schema,expected", TYPING)
def test_value_typing(raw, kind, schema, expected):
    attr = f' string="{kind}"' if kind is not None else ""
    text = (
        f'</think>{BLOCK_OPEN}\n{INVOKE_OPEN} name="f">\n{PARAM_OPEN} name="v"{attr}>{raw}{PARAM_CLOSE}\n'
        f"{INVOKE_CLOSE}\n{BLOCK_CLOSE}"
    )
    tools = [tool("f", {"v": schema})] if schema is not None else None
    message = assert_stream_matches(PARSER, text, tools, OFF)
    assert view(message) == expected_view([("f", {"v": expected})])


def test_string_true_value_that_looks_like_a_number_stays_a_string():
    tools = [tool("lookup", {"code": STR, "n": INT})]
    text = "</think>" + block(invoke("lookup", {"code": "123", "n": 123}))
    assert 'string="true">123<' in text and 'string="false">123<' in text
    message = assert_stream_matches(PARSER, text, tools, OFF)
    assert view(message) == expected_view([("lookup", {"code": "123", "n": 123})])


# ---- drift recovered and faults surfaced ---------------------------------------------------------------

RECOVERED = {
    "compact-no-newlines": (
        f'{BLOCK_OPEN}{INVOKE_OPEN} name="f">{PARAM_OPEN} name="a" string="false">1{PARAM_CLOSE}'
        f"{INVOKE_CLOSE}{BLOCK_CLOSE}",
        [("f", {"a": 1})],
    ),
    "indented": (
        f'\n{BLOCK_OPEN}\n    {INVOKE_OPEN}  name="f" >\n    {PARAM_OPEN}  name="a"  string="true" >x'
        f"{PARAM_CLOSE}\n  {INVOKE_CLOSE}\n{BLOCK_CLOSE}",
        [("f", {"a": "x"})],
    ),
    "direct-json-body": (
        f'{BLOCK_OPEN}\n{INVOKE_OPEN} name="f">\n{{ "city": "San Francisco", "n": 2 }}\n{INVOKE_CLOSE}\n{BLOCK_CLOSE}',
        [("f", {"city": "San Francisco", "n": 2})],
    ),
    "self-closing-invoke": (f'{BLOCK_OPEN}\n{INVOKE_OPEN} name="now"/>\n{BLOCK_CLOSE}', [("now", {})]),
    "no-invoke-closer-before-next": (
        f'{BLOCK_OPEN}\n{INVOKE_OPEN} name="f">\n{param("a", "x")}' + invoke("g", {}) + BLOCK_CLOSE,
        [("f", {"a": "x"}), ("g", {})],
    ),
    "no-closers-at-end": (f'{BLOCK_OPEN}\n{INVOKE_OPEN} name="f">\n{param("a", 1)}', [("f", {"a": 1})]),
    "no-block-opener": (invoke("f", {"a": 1}) + BLOCK_CLOSE, [("f", {"a": 1})]),
    "official-encoder-layout": (
        f'\n\n{BLOCK_OPEN}\n{INVOKE_OPEN} name="f">\n{param("a", "x")}{param("b", 2)}'
        f'{INVOKE_CLOSE}\n{INVOKE_OPEN} name="g">\n\n{INVOKE_CLOSE}\n{BLOCK_CLOSE}',
        [("f", {"a": "x", "b": 2}), ("g", {})],
    ),
    "repeated-key-last-wins": (
        block(f'{INVOKE_OPEN} name="f">\n{param("a", 1)}{param("a", 2)}{INVOKE_CLOSE}'),
        [("f", {"a": 2})],
    ),
    # drift mutator missing-parameter-closer on edge-parallel-2-same: the value ends at its own invoke closer
    "no-parameter-closer-before-next-invoke": (
        f'{BLOCK_OPEN}\n{INVOKE_OPEN} name="get_weather">\n{PARAM_OPEN} name="city" string="true">Paris\n'
        f"{INVOKE_CLOSE}\n" + invoke("get_weather", {"city": "Tokyo", "unit": "c"}) + BLOCK_CLOSE,
        [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Tokyo", "unit": "c"})],
    ),
    "no-json-parameter-closer-before-next-invoke": (
        f'{BLOCK_OPEN}\n{INVOKE_OPEN} name="f">\n{PARAM_OPEN} name="a" string="false">{{"k": [1]}}\n'
        f'{INVOKE_CLOSE}{INVOKE_OPEN} name="g"/>\n{BLOCK_CLOSE}',
        [("f", {"a": {"k": [1]}}), ("g", {})],
    ),
}


def test_invoke_closer_in_a_raw_string_is_data_without_a_next_invoke():
    """A raw value may hold ``</｜DSML｜invoke>`` and the block closer (edge deepseek_v32-dsml-in-raw-string); only a
    whole next ``<｜DSML｜invoke name="...">`` tag after it reads as the missing-closer drift."""
    value = f"/{INVOKE_CLOSE}\n{BLOCK_CLOSE} and {INVOKE_CLOSE} {INVOKE_OPEN} name"
    message = assert_stream_matches(PARSER, block(invoke("f", {"a": value})) + EOS, prefix=OFF, leak_check=False)
    assert view(message) == expected_view([("f", {"a": value})])


def test_double_encoded_json_value_under_a_container_schema():
    """drift mutator escaped-json-value on edge-nested-object (string="false", quotes escaped)."""
    raw = '{\\"name\\": \\"Ada\\", \\"age\\": 36}'
    text = block(invoke("create_user", {}).replace(INVOKE_CLOSE, param("user", raw, "false") + INVOKE_CLOSE))
    message = assert_stream_matches(PARSER, text + EOS, [tool("create_user", {"user": {"type": "object"}})], OFF)
    assert view(message) == expected_view([("create_user", {"user": {"name": "Ada", "age": 36}})])


SURFACED = {
    "invoke-without-name": f"{BLOCK_OPEN}\n{INVOKE_OPEN}>\n{INVOKE_CLOSE}\n{BLOCK_CLOSE}",
    "invoke-empty-name": f'{BLOCK_OPEN}\n{INVOKE_OPEN} name="">\n{INVOKE_CLOSE}\n{BLOCK_CLOSE}',
    "parameter-without-name": f'{BLOCK_OPEN}\n{INVOKE_OPEN} name="f">\n{PARAM_OPEN}>1{PARAM_CLOSE}\n{INVOKE_CLOSE}'
    f"\n{BLOCK_CLOSE}",
    "prose-in-invoke": f'{BLOCK_OPEN}\n{INVOKE_OPEN} name="f">\nsome words\n{INVOKE_CLOSE}\n{BLOCK_CLOSE}',
    "json-body-not-object": f'{BLOCK_OPEN}\n{INVOKE_OPEN} name="f">\n{{"a": 1,}}\n{INVOKE_CLOSE}\n{BLOCK_CLOSE}',
    "prose-in-block": f"{BLOCK_OPEN}\nI will call f.\n{BLOCK_CLOSE}",
}

# The last invoke is cut off by the end of the text: dropped, what came before kept.
CUT_OFF = {
    "unterminated-value": (
        f'{BLOCK_OPEN}\n{INVOKE_OPEN} name="f">\n{PARAM_OPEN} name="a" string="true">open',
        [],
        None,
    ),
    "unterminated-head": (f'Calling.\n\n{BLOCK_OPEN}\n{INVOKE_OPEN} name="f', [], "Calling."),
    "second-invoke": (
        f'{BLOCK_OPEN}\n{INVOKE_OPEN} name="a">\n{PARAM_OPEN} name="x" string="false">1{PARAM_CLOSE}\n'
        f'{INVOKE_CLOSE}\n{INVOKE_OPEN} name="b">\n{PARAM_OPEN} name="q"',
        [("a", {"x": 1})],
        None,
    ),
    # after a whole parameter, "<｜DSML" may open another parameter: the call may be incomplete
    "maybe-another-parameter": (
        f'{BLOCK_OPEN}\n{INVOKE_OPEN} name="f">\n{PARAM_OPEN} name="a" string="true">x{PARAM_CLOSE}\n<｜DSML',
        [],
        None,
    ),
}


def test_closer_cut_off_by_the_end_keeps_the_call():
    """``</｜DSML`` after a whole parameter can only begin a closer: the call is complete (drift
    truncate-in-closer)."""
    head = f'Checking.\n\n{BLOCK_OPEN}\n{INVOKE_OPEN} name="f">\n{PARAM_OPEN} name="a" string="true">x{PARAM_CLOSE}\n'
    for tail in ("</｜DSML", INVOKE_CLOSE + "\n</｜DSML｜func", INVOKE_CLOSE + "\n<｜DSML｜inv"):
        message = assert_stream_matches(PARSER, head + tail, prefix=OFF)
        assert view(message) == expected_view([("f", {"a": "x"})], "Checking."), tail


def test_empty_block_is_dropped():
    message = assert_stream_matches(PARSER, f"Done.\n\n{BLOCK_OPEN}\n{BLOCK_CLOSE}", prefix=OFF)
    assert view(message) == ("Done.", None, []) and message.diagnostics == ["empty tool-call section dropped"]


def test_bad_invoke_between_good_ones_keeps_them():
    bad = f'{INVOKE_OPEN} name="bad">\noops\n{INVOKE_CLOSE}\n'
    text = "</think>" + block(invoke("a", {"x": 1}), bad, invoke("b", {}), content="Plan.")
    message = assert_stream_matches(PARSER, text, prefix=OFF, leak_check=False)
    assert view(message) == expected_view([("a", {"x": 1}), ("b", {})], "Plan.\n\n" + bad.rstrip())


# ---- thinking ------------------------------------------------------------------------------------------

CALL = block(invoke("get_weather", {"city": "Paris"}))


@pytest.mark.parametrize(
    "prefix,text,content,reasoning",
    [
        ("", "Paris, so call it.</think>On it." + CALL, "On it.", "Paris, so call it."),  # thinking on, as cut
        ("<｜Assistant｜><think>", "Plan.</think>" + CALL, None, "Plan."),
        ("", "Straight to the call." + CALL, None, "Straight to the call."),  # no </think>
        ("<think></think>", "</think>On it." + CALL, "On it.", None),  # thinking off, as cut
        ("<think></think>", "On it." + CALL, "On it.", None),  # DeepSeek's own encoder
        ("</think>", "On it. </think>" + CALL, "On it. </think>", None),  # only a leading one closes
        ("<think></think>", "<think>plan</think>On it." + CALL, "On it.", "plan"),
    ],
)
def test_thinking_prefixes(prefix, text, content, reasoning):
    message = assert_stream_matches(PARSER, text, prefix=prefix)
    assert view(message) == expected_view([("get_weather", {"city": "Paris"})], content, reasoning)


def test_without_a_prefix_text_is_reasoning_until_think_ends():
    """Known limitation: an empty prefix means thinking on (what the harness' cut leaves)."""
    assert view(PARSER.parse("hello")) == (None, "hello", [])
    assert view(PARSER.parse("hello", prefix=OFF)) == ("hello", None, [])


# ---- streaming and properties --------------------------------------------------------------------------

HOLD_BACK_TEXTS = [
    "Sure " + block(invoke("f", {"a": BLOCK_CLOSE + "<｜end", "b": [INVOKE_CLOSE]})) + " ok" + EOS,
    "a <｜DSML b <｜DSML｜function c </｜DSML｜invo d <｜end▁of e </thi f",
    "x" + block(f'{INVOKE_OPEN} name="f">\noops\n{INVOKE_CLOSE}\n') + "y",
    "r < s</think>ok " + invoke("f", {"a": "1"}),
]


def test_stream_is_incremental_and_calls_arrive_whole_at_their_end():
    session = PARSER.stream(None, "")
    assert [d.reasoning for d in session.feed("I should call f. </thi")] == ["I should call f."]
    assert [d.content for d in session.feed("nk>Calling.\n\n<｜DSML｜func")] == ["Calling."]
    assert session.feed('tion_calls>\n<｜DSML｜invoke name="f">\n<｜DSML｜parameter name="a" string="true">x') == []
    assert session.feed(f"{PARAM_CLOSE}\n{INVOKE_CLOSE[:-1]}") == []
    (delta,) = session.feed(">\n")
    assert (delta.tool_calls[0].name, json.loads(delta.tool_calls[0].arguments)) == ("f", {"a": "x"})
    assert session.feed(BLOCK_CLOSE) == [] and session.finish() == [] and session.diagnostics == []


NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.:\-]{0,15}", fullmatch=True)
TRICKY = st.sampled_from(
    [
        '"',
        "\\",
        BLOCK_OPEN,
        INVOKE_OPEN,
        INVOKE_CLOSE,
        BLOCK_CLOSE,
        PARAM_OPEN,
        EOS,
        "}",
        "]",
        "\n",
        "é😀",
        "<think>",
        "</think>",
        "<",
        "<｜DSML｜",
        " ",
        "123",
        "true",
        "null",
        "",
    ]
)
STRINGS = st.one_of(TRICKY, st.text(max_size=20), st.lists(TRICKY, max_size=4).map("".join))
KEYS = st.text(st.characters(blacklist_characters='<>"', blacklist_categories=("Cs",)), min_size=1, max_size=10)
JSON_STRINGS = st.one_of(STRINGS, st.just(PARAM_CLOSE))
VALUES = st.one_of(
    STRINGS,
    st.recursive(
        st.one_of(
            st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), JSON_STRINGS
        ),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(JSON_STRINGS, inner, max_size=4),
        max_leaves=10,
    ),
)
CALLS = st.lists(st.tuples(NAMES, st.dictionaries(KEYS, VALUES, max_size=5)), min_size=1, max_size=3)
PROSE = st.text(st.characters(blacklist_characters="<", blacklist_categories=("Cs",)), max_size=30)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=CALLS, content=PROSE, data=st.data())
def test_property_written_calls_roundtrip(calls, content, data):
    """Calls written as the template writes them (top-level strings raw, never holding the parameter closer)
    parse back exactly with no schema, whatever the chunking."""
    assume(not any(isinstance(v, str) and PARAM_CLOSE in v for _, args in calls for v in args.values()))
    text = "</think>" + block(*(invoke(n, a) for n, a in calls), content=content)
    message = PARSER.parse(text, None, OFF)
    assert view(message) == expected_view(calls, content.strip() or None)
    splits = data.draw(st.lists(st.integers(0, len(text)), max_size=20).map(sorted))
    for chunks in (split_at(text, splits), list(text)):
        assert view(run_stream(PARSER, chunks, None, OFF, on_delta=delta_checker(FMT))) == view(message)


FRAGMENTS = st.sampled_from(
    [
        BLOCK_OPEN,
        BLOCK_CLOSE,
        f'{INVOKE_OPEN} name="f">',
        INVOKE_OPEN,
        ' name="g"',
        ">",
        "/>",
        INVOKE_CLOSE,
        f'{PARAM_OPEN} name="k" string="true">',
        f'{PARAM_OPEN} name="n" string="false">',
        f'{PARAM_OPEN} name="m">',
        PARAM_CLOSE,
        EOS,
        "1",
        "x",
        '{"a": "</｜DSML｜parameter>"}',
        "{",
        "}",
        '"',
        "\n",
        " ",
        "<think>",
        "</think>",
        "<｜DSML｜",
        "<",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(FRAGMENTS, max_size=30),
    prefix=st.sampled_from(["", "<think>", OFF]),
    typed=st.booleans(),
    data=st.data(),
)
def test_property_arbitrary_text_never_raises_or_drops(pieces, prefix, typed, data):
    text = "".join(pieces)
    tools = [tool("f", {"k": {"type": "string"}, "n": {"type": "integer"}, "m": {"type": "number"}})] if typed else None
    message = PARSER.parse(text, tools, prefix)
    dropped = any("dropped" in d for d in message.diagnostics)  # a cut-off call or an empty section
    if not message.tool_calls and "think>" not in text and not dropped:
        kept = (message.reasoning or "") + (message.content or "")
        assert "".join(kept.split()) == "".join(body_without_stops(text, FMT.stop_markers).split())
    splits = data.draw(st.lists(st.integers(0, len(text)), max_size=10).map(sorted))
    for chunks in (split_at(text, splits), list(text)):
        assert view(run_stream(PARSER, chunks, tools, prefix)) == view(message)


# ---- rendering through the real template ---------------------------------------------------------------

WEATHER = tool("get_weather", {"city": {"type": "string"}})


def test_rendered_shapes_thinking_off_and_on():
    tmpl = template("deepseek-v3.2")
    assert (tmpl.format, tmpl.source, tmpl.file) == ("deepseek_v32", "sdist", "deepseek-ai-DeepSeek-V3.2.jinja")
    calls = [ToolCall("get_weather", {"city": "Paris"})]
    case = render_scenario(tmpl, Scenario("s1", [WEATHER], calls, content_after="Checking."), FMT)
    assert (case.prefix, case.extra["stop"]) == (OFF, EOS)
    # the history render repeats the pre-filled closer (</think></think>); the model writes no second one
    assert case.text == block(invoke("get_weather", {"city": "Paris"}), content="Checking.")
    assert view(PARSER.parse(case.text, case.tools, case.prefix)) == view(case.expected)
    case = render_scenario(tmpl, Scenario("s2", [WEATHER], calls, reasoning="Paris."), FMT)
    assert (case.prefix, case.extra["stop"]) == ("<think>", EOS)
    assert case.text == "Paris.</think>" + block(invoke("get_weather", {"city": "Paris"}))
    assert view(PARSER.parse(case.text, case.tools, case.prefix)) == view(case.expected)


def test_parameter_closer_in_a_raw_string_is_unrepresentable():
    scenario = Scenario("s3", [tool("f", {"a": {"type": "string"}})], [ToolCall("f", {"a": "x" + PARAM_CLOSE})])
    with pytest.raises(UnrepresentableError, match="cannot express"):
        render_scenario(template("deepseek-v3.2"), scenario, FMT)


class TestDeepSeekV32(ParserConformance):
    CONFIG = Conformance(
        format="deepseek_v32",
        parser=DeepSeekV32Parser,
        strict={k: Text("</think>" + text, calls, content) for k, (text, calls, content) in STRICT.items()},
        stops=("", EOS, EOS + "\n"),
        prefix=OFF,
        recovered={k: Text(text + EOS, calls) for k, (text, calls) in RECOVERED.items()},
        surfaced=SURFACED,
        cut_off={k: Text(*v) for k, v in CUT_OFF.items()},
        hold_back=tuple(HOLD_BACK_TEXTS),
        hold_back_prefixes=("", OFF),
        models=("deepseek-v3.2",),
        modes=("oneshot", "roundtrip", "whole", "char", "random", *TOKENS, "prefix"),
    )

    def check_corpus(self, model, run):
        corpus = run.corpus
        assert corpus.count("curated") >= 130 and corpus.count("generated") >= 55 and corpus.count("observed") == 0
        assert corpus.skipped == []
        assert any(c.id.startswith("edge-deepseek_v32-") for c in corpus.cases)

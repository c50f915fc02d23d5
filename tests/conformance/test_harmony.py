"""Conformance of the project's own Harmony parser (``parsers/own/harmony.py``) and of the harmony family end
to end (gpt-oss-20b, gpt-oss-120b): the shared suite's config plus the tests specific to the format.
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
from harness.core.cases import load_cases
from harness.core.errors import UnrepresentableError
from harness.core.messages import ToolCall
from harness.core.protocol import Delta, run_stream
from harness.core.scenarios import Scenario
from harness.corpus.build import OBSERVED_FILE
from harness.formats import get_format
from harness.formats.harmony import compose_content_before
from harness.template.render import render_scenario
from parsers.own.harmony import HarmonyParser

FMT = get_format("harmony")
PARSER = HarmonyParser()


EXTRA_MARKERS = ()
CHECK_DELTA = delta_checker(FMT, EXTRA_MARKERS)


def stream_matches(text: str, prefix: str = "", seed: int = 0, leak_check: bool = True):
    """:func:`conformance.suite.assert_stream_matches` on this file's parser, in its argument order."""
    return assert_stream_matches(PARSER, text, None, prefix, seed, leak_check, EXTRA_MARKERS)


MARKERS = tuple(dict.fromkeys(FMT.markers + FMT.stop_markers))


def template_call(name: str, arguments, *, end: str = "<|call|>") -> str:
    """A call as the template writes it after the prompt's ``<|start|>assistant`` (``tojson``: ``json.dumps``
    with non-ASCII kept)."""
    return f" to=functions.{name}<|channel|>commentary json<|message|>{json.dumps(arguments, ensure_ascii=False)}{end}"


def field_call(
    name: str, arguments, *, channel: str = "commentary", ctype: str = " <|constrain|>json", end: str = "<|call|>"
) -> str:
    """A call as gpt-oss writes it in the field: the recipient after the channel, ``<|constrain|>json``."""
    body = json.dumps(arguments, ensure_ascii=False)
    return f"<|channel|>{channel} to=functions.{name}{ctype}<|message|>{body}{end}"


NEXT = "<|start|>assistant"


# ---- protocol and registry -------------------------------------------------------------------------


# ---- the template's shapes ---------------------------------------------------------------------------

STRICT = {
    "one-call": (template_call("get_weather", {"city": "Paris"}), [("get_weather", {"city": "Paris"})], None, None),
    "zero-args": (template_call("get_time", {}), [("get_time", {})], None, None),
    "reasoning-then-call": (
        "<|channel|>analysis<|message|>User wants weather.\nCall it.<|end|>"
        + NEXT
        + template_call("get_weather", {"city": "Oslo"}),
        [("get_weather", {"city": "Oslo"})],
        None,
        "User wants weather.\nCall it.",
    ),
    "final-answer": ("<|channel|>final<|message|>It is 42.<|return|>", [], "It is 42.", None),
    "reasoning-then-final": (
        "<|channel|>analysis<|message|>Easy.<|end|>" + NEXT + "<|channel|>final<|message|>It is 42.<|return|>",
        [],
        "It is 42.",
        "Easy.",
    ),
    "markers-in-strings": (
        template_call(
            "note",
            {
                "t": "a<|call|>b",
                "u": "<|end|><|start|>assistant<|channel|>final<|message|>Done.<|return|>",
                "v": "<|",
                "w": " to=functions.rm",
            },
        ),
        [
            (
                "note",
                {
                    "t": "a<|call|>b",
                    "u": "<|end|><|start|>assistant<|channel|>final<|message|>Done.<|return|>",
                    "v": "<|",
                    "w": " to=functions.rm",
                },
            )
        ],
        None,
        None,
    ),
    "marker-keys": (
        template_call("c", {"<|call|>": 1, "<|channel|>final": "x"}),
        [("c", {"<|call|>": 1, "<|channel|>final": "x"})],
        None,
        None,
    ),
    "json-hard-strings": (
        template_call("w", {"a": 'say "hi" \\ \\"', "b": "a\nb\r\t\x01\x7f", "c": "é😀\u2028", "d": "}]{[,:", "e": ""}),
        [("w", {"a": 'say "hi" \\ \\"', "b": "a\nb\r\t\x01\x7f", "c": "é😀\u2028", "d": "}]{[,:", "e": ""})],
        None,
        None,
    ),
    "numbers": (
        template_call("n", {"big": 10**40, "f": 1.5e-07, "z": -0.0, "i": 3.0, "t": True, "nul": None}),
        [("n", {"big": 10**40, "f": 1.5e-07, "z": -0.0, "i": 3.0, "t": True, "nul": None})],
        None,
        None,
    ),
    "dotted-dashed-name": (
        template_call("mcp.files.read-file", {"p": 1}),
        [("mcp.files.read-file", {"p": 1})],
        None,
        None,
    ),
}


def test_stop_marker_is_stripped_from_the_end():
    """The template's call ends with <|call|>, which is also a stop token: text with and without it read alike."""
    with_stop = template_call("f", {"a": 1})
    assert view(PARSER.parse(with_stop)) == view(PARSER.parse(with_stop.removesuffix("<|call|>")))


# ---- shapes seen in the field ------------------------------------------------------------------------

FIELD = {
    # the recipient in the header: after the channel, before it, with or without <|constrain|>
    "recipient-after-channel": (field_call("f", {"a": 1}), [("f", {"a": 1})], None, None),
    "recipient-before-channel-constrain": (
        " to=functions.f<|channel|>commentary <|constrain|>json<|message|>{}",
        [("f", {})],
        None,
        None,
    ),
    "bare-json-type": (field_call("f", {"a": 1}, ctype=" json"), [("f", {"a": 1})], None, None),
    "no-content-type": (field_call("f", {"a": 1}, ctype=""), [("f", {"a": 1})], None, None),
    "code-type-next-line": (
        '<|channel|>analysis to=functions.ffgrep code<|message|>\n{"p":"x"}<|call|>',
        [("ffgrep", {"p": "x"})],
        None,
        None,
    ),
    "start-role-in-text": (NEXT + field_call("f", {"a": 1}), [("f", {"a": 1})], None, None),
    "bare-recipient": (
        '<|channel|>commentary to=get_weather <|constrain|>json<|message|>{"city": "Rome"}',
        [("get_weather", {"city": "Rome"})],
        None,
        None,
    ),
    # channel variants
    "call-on-analysis": (field_call("f", {"a": 1}, channel="analysis"), [("f", {"a": 1})], None, None),
    "preamble-then-call": (
        "<|channel|>commentary<|message|>Checking now.<|end|>" + NEXT + field_call("f", {}),
        [("f", {})],
        "Checking now.",
        None,
    ),
    "message-without-channel": ("<|message|>hello", [], "hello", None),
    # endings
    "end-instead-of-call": (field_call("f", {"a": 1}, end="<|end|>"), [("f", {"a": 1})], None, None),
    "return-after-call": (field_call("f", {"a": 1}, end="<|return|>"), [("f", {"a": 1})], None, None),
    "no-end": (field_call("f", {"a": 1}, end=""), [("f", {"a": 1})], None, None),
    "whitespace-before-end": (field_call("f", {"a": 1}, end="\n <|call|>"), [("f", {"a": 1})], None, None),
    "missing-end-before-next": (
        field_call("f", {}, end="") + NEXT + field_call("g", {}),
        [("f", {}), ("g", {})],
        None,
        None,
    ),
    "empty-arguments": (field_call("f", {}).replace("{}", ""), [("f", {})], None, None),
    # several messages
    "two-calls": (
        field_call("f", {"a": 1}) + NEXT + field_call("g", {"b": [2]}),
        [("f", {"a": 1}), ("g", {"b": [2]})],
        None,
        None,
    ),
    "analysis-call-analysis-final": (
        "<|channel|>analysis<|message|>one<|end|>"
        + NEXT
        + field_call("f", {})
        + NEXT
        + "<|channel|>analysis<|message|>two<|end|>"
        + NEXT
        + "<|channel|>final<|message|>done",
        [("f", {})],
        "done",
        "one\ntwo",
    ),
    "body-missing-end": ("<|channel|>analysis<|message|>think" + field_call("f", {}), [("f", {})], None, "think"),
    "recipient-text-in-reasoning": (
        '<|channel|>analysis<|message|>say to=functions.x json {"a": 1}<|end|>',
        [],
        None,
        'say to=functions.x json {"a": 1}',
    ),
}


@pytest.mark.parametrize("case", sorted(FIELD))
def test_field_shapes(case):
    text, calls, content, reasoning = FIELD[case]
    message = stream_matches(text, seed=len(case))
    assert view(message) == expected_view(calls, content, reasoning)
    assert message.diagnostics == []


def test_observed_case_recovered():
    (case,) = load_cases(OBSERVED_FILE, fmt="harmony", default_slice="observed")
    assert case.kind == "drift" and case.tools is None
    message = stream_matches(case.text, case.prefix)
    assert view(message) == view(case.expected)


# ---- faults are surfaced, never dropped ---------------------------------------------------------------

SURFACED = {
    "not-json": field_call("f", {}).replace("{}", "get_weather(city='Paris')"),
    "array-arguments": field_call("f", [1, 2]),
    "string-arguments": field_call("f", "x"),
    "text-after-json": field_call("f", {}).replace("{}", "{} trailing"),
    "nan": field_call("f", {}).replace("{}", '{"x": NaN}'),
    "overflowing-float": field_call("f", {}).replace("{}", '{"x": 1e400}'),
    "raw-newline-in-string": field_call("f", {}).replace("{}", '{"x": "a\nb"}'),
    "recipient-assistant": "<|channel|>commentary to=assistant<|message|>{}<|end|>",
    "empty-function-name": "<|channel|>commentary to=functions. json<|message|>{}<|call|>",
    "tool-role": '<|start|>functions.f to=assistant<|channel|>commentary<|message|>{"r": 1}<|end|>',
    "two-bare-words": "<|channel|>commentary to=functions.f json extra<|message|>{}<|call|>",
    "unknown-marker-in-header": "<|channel|>commentary to=functions.f <|weird|>json<|message|>{}<|call|>",
    "end-inside-header": "<|channel|>commentary to=functions.f<|end|>",
    "end-inside-json-string": field_call("f", {}, end="").replace("{}", '{"a": "x<|end|>y'),
}

THOUGHT = "<|channel|>analysis<|message|>Look it up.<|end|>"

# The last message is cut off by the end of the text: dropped, the messages before it kept.
CUT_OFF = {
    "unterminated-json": (field_call("f", {}, end="").replace("{}", '{"a": '), [], None),
    "unterminated-string": (THOUGHT + NEXT + field_call("f", {}, end="").replace("{}", '{"a": "open'), [], None),
    "header-never-ends": ("<|channel|>commentary to=functions.f <|constrain|>json", [], None),
    "header-after-a-call": (
        field_call("a", {"x": 1}) + NEXT + " to=functions.b<|channel|>commentary",
        [("a", {"x": 1})],
        None,
    ),
}


def _cut_off_text(case):
    text, calls, content = CUT_OFF[case]
    return Text(text, calls, content, "Look it up." if text.startswith(THOUGHT) else None)


@pytest.mark.parametrize(
    "text",
    [
        "<|channel|>analysis to=python code<|message|>print(1)<|call|>",
        '<|channel|>analysis to=browser.search <|constrain|>json<|message|>{"query": "x"}<|call|>',
        THOUGHT + NEXT + " to=container.exec<|channel|>commentary<|message|>ls -la",  # recipient in the role
        THOUGHT + NEXT + "<|channel|>commentary to=python <|constrain|>code<|message|>print(2)",
    ],
)
def test_message_to_a_builtin_tool_is_dropped(text):
    """A message to a built-in tool (python, browser.*, container.*) is neither a client call nor text for
    the user: none of it is kept, with a diagnostic (llama.cpp's gpt-oss tests expect the same)."""
    message = stream_matches(text)
    want = "Look it up." if text.startswith(THOUGHT) else None
    assert view(message) == (None, want, []) and "built-in tool" in message.diagnostics[0]
    after = stream_matches(
        text + ("" if text.endswith("<|call|>") else "<|call|>") + NEXT + "<|channel|>final<|message|>ok"
    )
    assert view(after) == ("ok", want, [])


@pytest.mark.parametrize(
    "text, content, reasoning",
    [
        (
            "<|channel|>commentary to=assistant<|channel|>analysis<|message|>Hm.<|end|>"
            + NEXT
            + "<|channel|>final<|message|>Hi.",
            "Hi.",
            "Hm.",
        ),
        (THOUGHT + NEXT + "<|channel|>commentary to=assistant<|channel|>final<|message|>Hi.", "Hi.", "Look it up."),
        ("<|channel|>analysis<|channel|>final<|message|>Hi.", "Hi.", None),
    ],
)
def test_second_channel_restarts_a_header_that_called_nothing(text, content, reasoning):
    message = stream_matches(text)
    assert view(message) == (content, reasoning, []) and "restarted" in message.diagnostics[0]


def test_surfaced_message_between_good_calls_keeps_them():
    text = (
        field_call("a", {"x": 1})
        + NEXT
        + "<|channel|>commentary to=functions.b json<|message|>{broken}<|call|>"
        + NEXT
        + field_call("c", {})
        + NEXT
        + "<|channel|>final<|message|>Done."
    )
    message = stream_matches(text, leak_check=False)
    assert view(message) == expected_view(
        [("a", {"x": 1}), ("c", {})],
        "<|start|>assistant<|channel|>commentary to=functions.b json<|message|>{broken}<|call|>\nDone.",
    )


def test_plain_text_without_structure_is_content():
    for text in ["Hello there.", "a < b and c <| d", "just <|weird|> text"]:
        message = stream_matches(text, leak_check=False)
        assert view(message) == (text, None, [])


def test_prefix_with_prefilled_header():
    text = "The user wants X.<|end|>" + NEXT + field_call("f", {"a": 1})
    message = stream_matches(
        text, prefix="<|start|>user<|message|>hi<|end|><|start|>assistant<|channel|>analysis<|message|>"
    )
    assert view(message) == expected_view([("f", {"a": 1})], None, "The user wants X.")
    # the generation prompt itself pre-fills only the role: the text starts inside the header
    assert view(PARSER.parse(template_call("f", {}), None, "<|start|>assistant")) == expected_view([("f", {})])


# ---- streaming ----------------------------------------------------------------------------------------

HOLD_BACK_TEXTS = [
    "<|channel|>analysis<|message|>a < b <|en<|end|>" + NEXT + template_call("f", {"s": "<|call|>"}),
    "<|channel|>commentary<|message|>Sure <|sta x<|end|>"
    + NEXT
    + field_call("g", {})
    + NEXT
    + "<|channel|>final<|message|>ok <|ret",
    template_call("f", {"a": 1}, end="") + "<|endoftext|>",
    "<|channel|>commentary to=functions.b json<|message|>{bad}<|call|>" + NEXT + "<|channel|>final<|message|>y",
]


def test_stream_is_incremental_and_calls_arrive_whole():
    session = PARSER.stream()
    assert session.feed("<|channel|>analysis<|mes") == []
    assert [d.reasoning for d in session.feed("sage|>Thinking about ")] == ["Thinking about"]
    assert [d.reasoning for d in session.feed("it.<|e")] == [" it."]
    assert session.feed("nd|><|start|>assistant<|channel|>commentary to=functions.w <|constrain|>json<|message|>") == []
    assert session.feed('{"city": "Pa') == []
    assert session.feed('ris"}') == []  # decided only at an end marker or the end of the text
    assert session.feed("<|call|>") == []  # it may be the final stop marker: held until text follows
    (delta,) = session.feed("<|start|>")
    (piece,) = delta.tool_calls
    assert (piece.index, piece.name, json.loads(piece.arguments)) == (0, "w", {"city": "Paris"})
    assert session.feed("assistant<|channel|>final<|message|>Done") == [Delta(content="Done")]
    assert session.finish() == [] and session.diagnostics == []


def test_call_without_end_is_decided_at_finish():
    session = PARSER.stream()
    assert session.feed(template_call("f", {}, end="")) == []
    (delta,) = session.finish()
    assert delta.tool_calls[0].name == "f"


# ---- property tests ----------------------------------------------------------------------------------

NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,15}", fullmatch=True)
TRICKY = st.sampled_from(
    [
        '"',
        "\\",
        "<|call|>",
        "<|message|>",
        "<|end|>",
        "<|start|>assistant",
        "<|channel|>final",
        " to=functions.x",
        "}",
        "]",
        "\n",
        "\x00",
        "é😀",
        "<|",
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
PROSE = st.text(st.characters(blacklist_characters="<", blacklist_categories=("Cs",)), max_size=30)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=CALLS, reasoning=PROSE, field=st.booleans(), data=st.data())
def test_property_written_calls_roundtrip(calls, reasoning, field, data):
    """Calls after an analysis message, written in the template's or the field's header form, parse back exactly,
    whatever the chunking."""
    write = field_call if field else (lambda n, a: NEXT + template_call(n, a))
    text = f"<|channel|>analysis<|message|>{reasoning}<|end|>" + "".join(write(n, a) for n, a in calls)
    message = PARSER.parse(text)
    assert view(message) == expected_view(calls, None, reasoning.strip() or None)
    splits = data.draw(st.lists(st.integers(0, len(text)), max_size=20).map(sorted))
    for chunks in (split_at(text, splits), list(text)):
        assert view(run_stream(PARSER, chunks, on_delta=CHECK_DELTA)) == view(message)


FRAGMENTS = st.sampled_from(
    [
        "<|start|>",
        "assistant",
        "<|channel|>",
        "analysis",
        "commentary",
        "final",
        " to=",
        "functions.f",
        " json",
        "<|constrain|>",
        "<|message|>",
        "<|end|>",
        "<|call|>",
        "<|return|>",
        "<|endoftext|>",
        "{",
        "}",
        '"a"',
        ":",
        "1",
        "\n",
        " ",
        "x y",
        "<|",
        "<",
        '{"k": "<|call|>"}',
        "python",
    ]
)


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(FRAGMENTS, max_size=30), data=st.data())
def test_property_arbitrary_text_never_raises_and_streams_alike(pieces, data):
    text = "".join(pieces)
    message = PARSER.parse(text)
    if not message.tool_calls and not any(m in text for m in FMT.markers):
        assert message.content == (text.strip() or None)
    splits = data.draw(st.lists(st.integers(0, len(text)), max_size=10).map(sorted))
    for chunks in (split_at(text, splits), list(text)):
        assert view(run_stream(PARSER, chunks)) == view(message)


# ---- rendering through the real template --------------------------------------------------------------


WEATHER = tool("get_weather", {"city": {"type": "string", "description": "City."}})
TIME = tool("get_time", {})


def test_catalog_rows_and_offline_templates():
    for model in ("gpt-oss-20b", "gpt-oss-120b"):
        tmpl = template(model)
        assert (tmpl.format, tmpl.source, tmpl.file) == ("harmony", "sdist", "openai-gpt-oss-120b.jinja")
    assert "stands in for gpt-oss-20b" in template("gpt-oss-20b").provenance["fallback_note"]
    assert "stands in" not in template("gpt-oss-120b").provenance["fallback_note"]


def test_rendered_shapes():
    """The cut falls right after the prompt's <|start|>assistant: the text starts inside the header."""
    tmpl = template("gpt-oss-20b")
    call = ToolCall("get_weather", {"city": "Paris"})
    case = render_scenario(tmpl, Scenario("s1", [WEATHER], [call]), FMT)
    assert (case.text, case.prefix, case.extra["stop"]) == (
        ' to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris"}',
        "",
        "<|call|>",
    )
    case = render_scenario(tmpl, Scenario("s2", [WEATHER], [call], reasoning="Paris, so call."), FMT)
    assert case.text == (
        "<|channel|>analysis<|message|>Paris, so call.<|end|><|start|>assistant"
        ' to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris"}'
    )
    case = render_scenario(tmpl, Scenario("s3", [], [], content_after="Hi.", reasoning="Greet."), FMT)
    assert case.text == "<|channel|>analysis<|message|>Greet.<|end|><|start|>assistant<|channel|>final<|message|>Hi."
    assert case.extra["stop"] == "<|return|>"


def test_edge_scenarios_are_well_formed():
    from jsonschema import Draft202012Validator

    from harness.formats import format_edge_scenarios

    scenarios = format_edge_scenarios("harmony")
    assert len({s.id for s in scenarios}) == len(scenarios) >= 10
    assert all(s.id.startswith("edge-harmony-") and "harmony" in s.tags for s in scenarios)
    for s in scenarios:
        declared = {t["function"]["name"]: t["function"]["parameters"] for t in s.tools}
        for c in s.calls:
            assert list(Draft202012Validator(declared[c.name]).iter_errors(c.arguments)) == [], s.id


def test_template_quirks_are_unrepresentable():
    tmpl = template("gpt-oss-20b")
    a, b = ToolCall("get_weather", {"city": "Paris"}), ToolCall("get_time", {})
    with pytest.raises(UnrepresentableError, match="does not write every tool call"):  # only tool_calls[0]
        render_scenario(tmpl, Scenario("p", [WEATHER, TIME], [a, b]), FMT)
    with pytest.raises(UnrepresentableError, match="content of a turn with tool calls as its reasoning"):
        render_scenario(tmpl, Scenario("c", [WEATHER], [a], content_after="Checking."), FMT)
    with pytest.raises(
        UnrepresentableError, match="refuses this assistant turn .*Cannot pass both content and thinking"
    ):
        render_scenario(tmpl, Scenario("r", [WEATHER], [a], content_after="Checking.", reasoning="Plan."), FMT)


def test_content_before_becomes_a_preamble_or_final_text():
    tmpl = template("gpt-oss-20b")
    call = ToolCall("get_weather", {"city": "Lima"})
    case = render_scenario(
        tmpl, Scenario("b1", [WEATHER], [call], content_before="Let me look.", reasoning="Need weather."), FMT
    )
    assert case.text_provenance == "composed"
    assert case.text.startswith(
        "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>"
        "commentary<|message|>Let me look.<|end|><|start|>assistant to=functions.get_weather"
    )
    assert view(PARSER.parse(case.text, case.tools, case.prefix)) == view(case.expected)
    case = render_scenario(tmpl, Scenario("b2", [], [], content_before="First. ", content_after="Then."), FMT)
    assert case.text == "<|channel|>final<|message|>First. Then." and case.expected.content == "First. Then."
    assert (
        compose_content_before(" to=functions.f<|channel|>commentary json<|message|>{}", "P")
        == "<|channel|>commentary<|message|>P<|end|><|start|>assistant"
        " to=functions.f<|channel|>commentary json<|message|>{}"
    )


class TestHarmony(ParserConformance):
    CONFIG = Conformance(
        format="harmony",
        parser=HarmonyParser,
        strict={k: Text(*v) for k, v in STRICT.items()},
        stops=("", "<|call|>", "<|return|>", "<|endoftext|>"),
        surfaced=SURFACED,
        surfaced_suffix="<|call|>",
        cut_off={k: _cut_off_text(k) for k in CUT_OFF},
        hold_back=tuple(HOLD_BACK_TEXTS),
        models=("gpt-oss-20b", "gpt-oss-120b"),  # no drift-recovered table: drift cases are in the corpus
        modes=("oneshot", "roundtrip", "whole", "char", "random", "prefix"),
    )

    test_drift_recovered = None

    def check_corpus(self, model, run):
        corpus = run.corpus
        assert corpus.count("curated") >= 100 and corpus.count("generated") >= 15 and corpus.count("observed") >= 1
        assert sum(c.id.startswith("edge-harmony-") for c in corpus.cases) >= 10
        assert run.failures(kinds=None) == []

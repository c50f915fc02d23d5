"""Tests of the project's own Harmony parser (``parsers/own/harmony.py``) and of the gpt-oss presets end to end.

Text rendered by the real template comes from the llama-cpp-python 0.3.36 sdist copy ``openai-gpt-oss-120b.jinja``
through the harness' own pipeline (catalog, ``load_template`` offline, ``render_scenario``, ``build_corpus``).
Shapes the template cannot write (the recipient after the channel, ``<|constrain|>json``, calls on ``analysis``,
``<|end|>`` endings, several calls) are checked on hand-written text in the form gpt-oss writes them.
"""

from __future__ import annotations

import functools
import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.core.cases import load_cases
from harness.core.errors import UnrepresentableError
from harness.core.messages import Message, ToolCall
from harness.core.protocol import Delta, Parser, run_stream
from harness.core.scenarios import Scenario
from harness.corpus.build import OBSERVED_FILE, build_corpus
from harness.formats import get_format
from harness.formats.harmony import compose_content_before
from harness.parse import registry
from harness.parse.modes import modes_for
from harness.score.runner import evaluate_case
from harness.template.render import render_scenario
from harness.template.sources import load_template
from parsers.own.harmony import HarmonyParser

FMT = get_format("harmony")
PARSER = HarmonyParser()
MARKERS = tuple(dict.fromkeys(FMT.markers + FMT.stop_markers))


# ---- helpers ---------------------------------------------------------------------------------------


def view(message: Message):
    """Comparable form: content, reasoning, calls with type-exact JSON arguments (True != 1)."""
    calls = [(c.name, json.dumps(c.arguments, sort_keys=True)) for c in message.tool_calls]
    return message.content, message.reasoning, calls


def expected_view(calls, content=None, reasoning=None):
    return view(Message(content, reasoning, [ToolCall(n, a) for n, a in calls]))


def check_delta(delta) -> None:
    for piece in (delta.content, delta.reasoning):
        if piece:
            assert not any(m in piece for m in MARKERS), piece


def chunkings(text: str, seed: int = 0) -> list[list[str]]:
    rng = random.Random(seed)
    out = [[text], list(text)]
    for _ in range(4):
        cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(1, 12)))) if len(text) > 1 else []
        out.append([text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=False)])
    return out


def assert_stream_matches(text: str, prefix: str = "", seed: int = 0, leak_check: bool = True) -> Message:
    """One-shot parse; streaming under several chunkings must give the same message and (``leak_check``)
    no marker in any delta."""
    one_shot = PARSER.parse(text, None, prefix)
    for chunks in chunkings(text, seed):
        got = run_stream(PARSER, chunks, None, prefix, on_delta=check_delta if leak_check else None)
        assert view(got) == view(one_shot), chunks
    return one_shot


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


def test_protocol_attributes():
    from importlib.metadata import version

    assert isinstance(PARSER, Parser)
    assert PARSER.name == "toolcall-harness:harmony" and PARSER.formats == ("harmony",)
    assert PARSER.library == "toolcall-harness" and PARSER.version == version("toolcall-harness")
    assert PARSER.incremental is True


def test_registry_resolves_own_alias_by_format():
    registry.reload()
    try:
        assert "toolcall-harness:harmony" in registry.available_parsers("harmony")
        for alias in ("own", "toolcall-harness", "toolcall-harness:harmony", "own:harmony"):
            assert registry.resolve(alias, format="harmony") == "toolcall-harness:harmony"
            assert isinstance(registry.get_parser(alias, format="harmony"), HarmonyParser)
        got, _ = registry.create_parsers(["own"], "harmony")
        assert [p.name for p in got] == ["toolcall-harness:harmony"]
    finally:
        registry.reload()


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


@pytest.mark.parametrize("case", sorted(STRICT))
@pytest.mark.parametrize("stop", ["", "<|call|>", "<|return|>", "<|endoftext|>"])
def test_strict_text(case, stop):
    text, calls, content, reasoning = STRICT[case]
    message = assert_stream_matches(text + stop, seed=len(case))
    assert view(message) == expected_view(calls, content, reasoning)
    assert message.diagnostics == []


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
    message = assert_stream_matches(text, seed=len(case))
    assert view(message) == expected_view(calls, content, reasoning)
    assert message.diagnostics == []


def test_observed_case_recovered():
    (case,) = load_cases(OBSERVED_FILE, fmt="harmony", default_slice="observed")
    assert case.kind == "drift" and case.tools is None
    message = assert_stream_matches(case.text, case.prefix)
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
    "unterminated-json": field_call("f", {}, end="").replace("{}", '{"a": '),
    "unterminated-string": field_call("f", {}, end="").replace("{}", '{"a": "open'),
    "builtin-python": "<|channel|>analysis to=python code<|message|>print(1)<|call|>",
    "builtin-browser": '<|channel|>analysis to=browser.search <|constrain|>json<|message|>{"query": "x"}<|call|>',
    "recipient-assistant": "<|channel|>commentary to=assistant<|message|>{}<|end|>",
    "empty-function-name": "<|channel|>commentary to=functions. json<|message|>{}<|call|>",
    "tool-role": '<|start|>functions.f to=assistant<|channel|>commentary<|message|>{"r": 1}<|end|>',
    "two-bare-words": "<|channel|>commentary to=functions.f json extra<|message|>{}<|call|>",
    "unknown-marker-in-header": "<|channel|>commentary to=functions.f <|weird|>json<|message|>{}<|call|>",
    "end-inside-header": "<|channel|>commentary to=functions.f<|end|>",
    "header-never-ends": "<|channel|>commentary to=functions.f <|constrain|>json",
}


@pytest.mark.parametrize("case", sorted(SURFACED))
def test_malformed_message_stays_in_content(case):
    text = SURFACED[case]
    message = assert_stream_matches(text, leak_check=False)  # the surfaced raw text holds the markers
    assert message.tool_calls == []
    body = text.removesuffix("<|call|>").strip()
    assert message.content == body
    assert message.diagnostics and "surfaced" in message.diagnostics[0]


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
    message = assert_stream_matches(text, leak_check=False)
    assert view(message) == expected_view(
        [("a", {"x": 1}), ("c", {})],
        "<|start|>assistant<|channel|>commentary to=functions.b json<|message|>{broken}<|call|>\nDone.",
    )


def test_plain_text_without_structure_is_content():
    for text in ["Hello there.", "a < b and c <| d", "just <|weird|> text"]:
        message = assert_stream_matches(text, leak_check=False)
        assert view(message) == (text, None, [])


def test_prefix_with_prefilled_header():
    text = "The user wants X.<|end|>" + NEXT + field_call("f", {"a": 1})
    message = assert_stream_matches(
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


@pytest.mark.parametrize("text", HOLD_BACK_TEXTS)
def test_marker_hold_back_at_every_split_point(text):
    """Fed in two parts split anywhere, what is streamed after the first part is a prefix of the final
    content (and reasoning): a marker start is never released early; no delta holds a marker."""
    final = PARSER.parse(text)
    watch = None if any(m in (final.content or "") for m in MARKERS) else check_delta  # surfaced text holds them
    for k in range(len(text) + 1):
        session = PARSER.stream()
        first = session.feed(text[:k])
        for delta in first:
            if watch:
                watch(delta)
        content = "".join(d.content or "" for d in first)
        reasoning = "".join(d.reasoning or "" for d in first)
        assert (final.content or "").startswith(content), (k, content)
        assert (final.reasoning or "").startswith(reasoning), (k, reasoning)
        got = run_stream(PARSER, [text[:k], text[k:]], on_delta=watch)
        assert view(got) == view(final), k


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
    for chunks in ([text[a:b] for a, b in zip([0, *splits], [*splits, len(text)], strict=False)], list(text)):
        assert view(run_stream(PARSER, chunks, on_delta=check_delta)) == view(message)


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
    for chunks in ([text[a:b] for a, b in zip([0, *splits], [*splits, len(text)], strict=False)], list(text)):
        assert view(run_stream(PARSER, chunks)) == view(message)


# ---- rendering through the real template --------------------------------------------------------------


@functools.cache
def template(model: str):
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("HF_HOME", "/nonexistent/hf-home-for-tests")
    mp.delenv("HF_HUB_CACHE", raising=False)
    try:
        return load_template(model)
    finally:
        mp.undo()


def tool(name: str, properties: dict) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} tool.",
            "parameters": {"type": "object", "properties": properties},
        },
    }


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
        == "<|channel|>commentary<|message|>P<|end|><|start|>assistant to=functions.f<|channel|>commentary json<|message|>{}"
    )


@pytest.mark.parametrize("model", ["gpt-oss-20b", "gpt-oss-120b"])
def test_own_parser_passes_every_strict_rendered_case(model):
    """The rendered corpus (curated + generated + observed) through every mode the runner applies to this
    parser: one-shot, round trip, whole, char, random and every two-part split (prefix)."""
    from harness.score.roundtrip import roundtrip_check

    tmpl = template(model)
    corpus = build_corpus(tmpl, FMT, seed=3, n_generated=60)
    assert corpus.count("curated") >= 100 and corpus.count("generated") >= 15 and corpus.count("observed") >= 1
    assert sum(c.id.startswith("edge-harmony-") for c in corpus.cases) >= 10
    modes = modes_for(PARSER, ("oneshot", "roundtrip", "whole", "char", "random", "tokens", "prefix"), FMT)
    assert modes == ["oneshot", "roundtrip", "whole", "char", "random", "prefix"]
    check = roundtrip_check(tmpl, FMT)
    failures = []
    for case in corpus.cases:
        records = list(evaluate_case(case, PARSER, FMT, modes, seed=3, roundtrip=check))
        for record in records:
            if record.verdict != "pass":
                failures.append((case.id, record.mode, record.error_type, record.detail))
    assert failures == []

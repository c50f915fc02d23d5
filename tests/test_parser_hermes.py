"""Tests of the project's own Hermes JSON parser (``parsers/own/hermes.py``) and of the Hermes family end to end.

Text rendered by the real templates comes from the llama-cpp-python 0.3.36 sdist copies
(``Qwen-Qwen2.5-7B-Instruct.jinja``, ``NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja``,
``Qwen-Qwen3-0.6B.jinja``) through the harness' own pipeline (catalog, ``load_template`` offline,
``render_scenario``, ``build_corpus``).
"""

from __future__ import annotations

import functools
import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.core.errors import UnrepresentableError
from harness.core.messages import Message, ToolCall
from harness.core.protocol import Parser, run_stream
from harness.core.scenarios import Scenario
from harness.corpus.build import build_corpus
from harness.formats import get_format
from harness.parse import registry
from harness.parse.modes import modes_for
from harness.score.runner import evaluate_case
from harness.template.render import render_scenario
from harness.template.sources import load_template
from parsers.own.hermes import THINK_CLOSE, THINK_OPEN, HermesParser

FMT = get_format("hermes")
PARSER = HermesParser()
MARKERS = tuple(dict.fromkeys(FMT.markers + FMT.stop_markers + (THINK_OPEN, THINK_CLOSE)))
OBSERVED_TEXT = '<tool_call>{"name": "search", "arguments": {"query": "explain the </tool_call> token"}}</tool_call>'


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
    """One-shot parse; streaming under several chunkings must give the same message and (``leak_check``:
    text whose content holds no marker) no marker in any delta."""
    one_shot = PARSER.parse(text, None, prefix)
    for chunks in chunkings(text, seed):
        got = run_stream(PARSER, chunks, None, prefix, on_delta=check_delta if leak_check else None)
        assert view(got) == view(one_shot), chunks
    return one_shot


def call_text(name: str, arguments, *, key: str = "arguments", before: str = "\n", after: str = "\n") -> str:
    """A call as the templates write it (``tojson``: ``json.dumps`` with non-ASCII kept)."""
    body = json.dumps({"name": name, key: arguments}, ensure_ascii=False)
    return f"<tool_call>{before}{body}{after}</tool_call>"


# ---- protocol and registry -------------------------------------------------------------------------


def test_protocol_attributes():
    from importlib.metadata import version

    assert isinstance(PARSER, Parser)
    assert PARSER.name == "toolcall-harness:hermes" and PARSER.formats == ("hermes",)
    assert PARSER.library == "toolcall-harness" and PARSER.version == version("toolcall-harness")
    assert PARSER.incremental is True


def test_registry_resolves_own_aliases_by_format():
    registry.reload()
    try:
        assert "toolcall-harness:hermes" in registry.available_parsers("hermes")
        for alias in ("own", "toolcall-harness", "toolcall-harness:hermes", "own:hermes"):
            assert registry.resolve(alias, format="hermes") == "toolcall-harness:hermes"
            assert isinstance(registry.get_parser(alias, format="hermes"), HermesParser)
        assert registry.resolve("own", format="gemma4") == "toolcall-harness:gemma4"
        with pytest.raises(KeyError, match="ambiguous"):
            registry.resolve("own")
        got, _ = registry.create_parsers(["own"], "hermes")
        assert [p.name for p in got] == ["toolcall-harness:hermes"]
    finally:
        registry.reload()


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


@pytest.mark.parametrize("case", sorted(STRICT))
@pytest.mark.parametrize("stop", ["", "<|im_end|>", "<|im_end|>\n", "<|endoftext|>"])
def test_strict_text(case, stop):
    text, calls, content = STRICT[case]
    message = assert_stream_matches(text + stop, seed=len(case))
    assert view(message) == expected_view(calls, content)
    assert message.diagnostics == []


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
    "missing-close-before-next": (
        '<tool_call>{"name": "f", "arguments": {}}\n' + call_text("g", {}),
        [("f", {}), ("g", {})],
    ),
}


@pytest.mark.parametrize("case", sorted(RECOVERED))
def test_drift_recovered(case):
    text, calls = RECOVERED[case]
    message = assert_stream_matches(text)
    assert view(message) == expected_view(calls)
    assert message.diagnostics == []


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
    "unterminated-json": '<tool_call>\n{"name": "f", "arguments": {"a": ',
    "unterminated-string": '<tool_call>{"name": "f", "arguments": {"a": "open',
    "partial-closer-at-end": '<tool_call>{"name": "f", "arguments": {}}</tool_',
    "opener-alone": "<tool_call>",
}


@pytest.mark.parametrize("case", sorted(SURFACED))
def test_malformed_call_stays_in_content(case):
    text = SURFACED[case]
    message = assert_stream_matches(text, leak_check=False)  # the surfaced raw text holds the markers
    assert message.tool_calls == []
    assert message.content == text.strip()
    assert message.diagnostics and "surfaced" in message.diagnostics[0]


def test_surfaced_block_between_good_calls_keeps_them():
    text = "Plan.\n" + call_text("a", {"x": 1}) + "\n<tool_call>{broken}</tool_call>\n" + call_text("b", {}) + "\nDone."
    message = assert_stream_matches(text, leak_check=False)
    assert view(message) == expected_view(
        [("a", {"x": 1}), ("b", {})], "Plan.\n\n<tool_call>{broken}</tool_call>\n\nDone."
    )


def test_unterminated_string_does_not_swallow_the_next_call():
    text = '<tool_call>{"name": "f", "arguments": {"a": "oops}</tool_call>\n' + call_text("g", {"b": 1})
    message = assert_stream_matches(text, leak_check=False)
    assert view(message) == expected_view(
        [("g", {"b": 1})], '<tool_call>{"name": "f", "arguments": {"a": "oops}</tool_call>'
    )


def test_prose_with_json_and_angle_brackets_is_content():
    text = 'Use {"name": "x"} or a<b, c>d, <tool>, </tool_calls> and <|im_start|>x.'
    message = assert_stream_matches(text, leak_check=False)  # a stray marker stays content
    assert view(message) == (text, None, [])


def test_trailing_stop_markers_stripped_inner_kept():
    assert PARSER.parse("hi<|im_end|>\n<|endoftext|>").content == "hi"
    assert PARSER.parse("a<|im_end|>b").content == "a<|im_end|>b"
    assert PARSER.parse("hi<|im_").content == "hi<|im_"


# ---- reasoning (Qwen3) -----------------------------------------------------------------------------


def test_think_block_at_start_is_reasoning():
    text = "<think>\nUser wants weather.\nCall it.\n</think>\n\nOn it.\n" + call_text("w", {"c": "P"})
    message = assert_stream_matches(text)
    assert view(message) == expected_view([("w", {"c": "P"})], "On it.", "User wants weather.\nCall it.")


def test_think_prefix_and_placement():
    # a prompt that pre-fills an open <think> starts the text in reasoning
    message = assert_stream_matches(
        "plan\n</think>\n\n" + call_text("f", {}), prefix="<|im_start|>assistant\n<think>\n"
    )
    assert view(message) == expected_view([("f", {})], None, "plan")
    # thinking off: the prompt pre-fills a closed block; the text is content
    assert view(PARSER.parse("hello", prefix="<think>\n\n</think>\n\n")) == ("hello", None, [])
    # <think> after content is content; an unclosed block at the end is all reasoning
    assert view(assert_stream_matches("Hi <think>x</think>", leak_check=False)) == ("Hi <think>x</think>", None, [])
    assert view(assert_stream_matches("<think>\nstill thinking")) == (None, "still thinking", [])
    # only </think> ends reasoning: a call written while thinking stays reasoning text
    inner = call_text("f", {})
    assert view(assert_stream_matches(f"<think>{inner}</think>ok", leak_check=False)) == ("ok", inner, [])


# ---- streaming ----------------------------------------------------------------------------------------

HOLD_BACK_TEXTS = [
    'Sure <tool_call>\n{"name": "f", "arguments": {"a": "</tool_call>"}}\n</tool_call> ok<|im_end|>',
    "<think>\nr < s\n</think>\n\nok <tool_ok " + call_text("f", {}) + "<|endoftext|>",
    "a <tool b </tool_call c <|im_e d <thin e",
    "x\n<tool_call>{bad}</tool_call>\ny",
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
    for chunks in ([text[a:b] for a, b in zip([0, *splits], [*splits, len(text)], strict=False)], list(text)):
        assert view(run_stream(PARSER, chunks, on_delta=check_delta)) == view(message)


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
        assert message.content == (body.strip() or None)
    splits = data.draw(st.lists(st.integers(0, len(text)), max_size=10).map(sorted))
    for chunks in ([text[a:b] for a, b in zip([0, *splits], [*splits, len(text)], strict=False)], list(text)):
        assert view(run_stream(PARSER, chunks)) == view(message)


# ---- rendering through the real templates --------------------------------------------------------------


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


def test_catalog_rows_and_offline_templates():
    expected = {
        "smollm2-135m": "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
        "hermes-3-8b": "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
        "qwen2.5-7b": "Qwen-Qwen2.5-7B-Instruct.jinja",
        "qwen3-0.6b": "Qwen-Qwen3-0.6B.jinja",
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


@pytest.mark.parametrize("model", ["qwen2.5-7b", "smollm2-135m"])
def test_own_parser_passes_every_strict_rendered_case(model):
    """The rendered corpus (curated + generated + observed) through every mode the runner applies to this
    parser: one-shot, whole, char, random and every two-part split (prefix)."""
    tmpl = template(model)
    corpus = build_corpus(tmpl, FMT, seed=3, n_generated=60)
    assert corpus.count("curated") >= 100 and corpus.count("generated") >= 15 and corpus.count("observed") >= 1
    modes = modes_for(PARSER, ("oneshot", "whole", "char", "random", "tokens", "prefix"), FMT)
    assert modes == ["oneshot", "whole", "char", "random", "tokens", "prefix"]
    failures = []
    for case in corpus.cases:
        if case.kind != "strict":
            continue
        for record in evaluate_case(case, PARSER, FMT, modes, seed=3):
            if record.verdict != "pass":
                failures.append((case.id, record.mode, record.error_type, record.detail))
    assert failures == []

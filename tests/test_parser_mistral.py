"""Tests of the project's own Mistral ``[TOOL_CALLS]`` parser (``parsers/own/mistral.py``) and of the mistral family end
to end.

Text rendered by the real templates comes from the llama-cpp-python 0.3.36 sdist copies
(``Mistral-Small-3.2-24B-Instruct-2506.jinja``, ``unsloth-mistral-Devstral-Small-2507.jinja``) through the harness'
own pipeline (catalog, ``load_template`` offline, ``render_scenario``, ``build_corpus``).
"""

from __future__ import annotations

import functools
import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.core.errors import TemplateRenderError, UnrepresentableError
from harness.core.messages import Message, ToolCall
from harness.core.protocol import Parser, run_stream
from harness.core.scenarios import Scenario
from harness.corpus.build import build_corpus
from harness.formats import format_edge_scenarios, get_format
from harness.parse import registry
from harness.parse.modes import modes_for
from harness.score.roundtrip import roundtrip_check
from harness.score.runner import evaluate_case
from harness.template.render import HISTORY_USER, render_messages, render_scenario
from harness.template.sources import load_template
from parsers.own.mistral import MistralParser

FMT = get_format("mistral")
PARSER = MistralParser()
MARKERS = tuple(dict.fromkeys(FMT.markers + FMT.stop_markers))
TC = "[TOOL_CALLS]"
OBSERVED_TEXT = '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_weather[ARGS]{"city": "Tokyo"}'


# ---- helpers ---------------------------------------------------------------------------------------


def view(message: Message):
    """Comparable form: content, reasoning, calls with type-exact JSON arguments (True != 1)."""
    calls = [(c.name, json.dumps(c.arguments, sort_keys=True)) for c in message.tool_calls]
    return message.content, message.reasoning, calls


def expected_view(calls, content=None):
    return view(Message(content, None, [ToolCall(n, a) for n, a in calls]))


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


def assert_stream_matches(text: str, seed: int = 0, leak_check: bool = True) -> Message:
    """One-shot parse; streaming under several chunkings must give the same message and (``leak_check``)
    no marker in any delta."""
    one_shot = PARSER.parse(text)
    for chunks in chunkings(text, seed):
        got = run_stream(PARSER, chunks, on_delta=check_delta if leak_check else None)
        assert view(got) == view(one_shot), chunks
    return one_shot


def call_text(name: str, arguments, call_id: str | None = None) -> str:
    """A call as the templates write it: ``[TOOL_CALLS]NAME[CALL_ID]ID[ARGS]tojson(ARGS)`` (Small 3.2) or
    without ``[CALL_ID]`` (Devstral)."""
    middle = f"[CALL_ID]{call_id}" if call_id is not None else ""
    return f"{TC}{name}{middle}[ARGS]{json.dumps(arguments, ensure_ascii=False)}"


def stream_ids(text: str) -> list:
    session = PARSER.stream()
    deltas = [d for chunk in text for d in session.feed(chunk)] + session.finish()
    return [(p.index, p.name, p.id) for d in deltas for p in d.tool_calls]


# ---- protocol and registry -------------------------------------------------------------------------


def test_protocol_attributes():
    from importlib.metadata import version

    assert isinstance(PARSER, Parser)
    assert PARSER.name == "toolcall-harness:mistral" and PARSER.formats == ("mistral",)
    assert PARSER.library == "toolcall-harness" and PARSER.version == version("toolcall-harness")
    assert PARSER.incremental is True


def test_registry_resolves_own_alias_by_format():
    registry.reload()
    try:
        assert "toolcall-harness:mistral" in registry.available_parsers("mistral")
        for alias in ("own", "toolcall-harness", "own:mistral"):
            assert registry.resolve(alias, format="mistral") == "toolcall-harness:mistral"
            assert isinstance(registry.get_parser(alias, format="mistral"), MistralParser)
    finally:
        registry.reload()


# ---- one-shot and streaming on small inputs ----------------------------------------------------------

STRICT = {
    "small-3.2-one-call": (
        call_text("get_weather", {"city": "Paris"}, "call00000"),
        [("get_weather", {"city": "Paris"})],
        None,
    ),
    "devstral-one-call": (call_text("get_weather", {"city": "Paris"}), [("get_weather", {"city": "Paris"})], None),
    "devstral-content-first": (
        "Let me look.\n" + call_text("search", {"q": "x"}),
        [("search", {"q": "x"})],
        "Let me look.",
    ),
    "parallel-ids": (
        call_text("a", {"x": 1}, "call00000") + call_text("b", {}, "call00001"),
        [("a", {"x": 1}), ("b", {})],
        None,
    ),
    "observed-mlx-lm": (OBSERVED_TEXT, [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Tokyo"})], None),
    "markers-inside-strings": (
        call_text(
            "note",
            {"t": call_text("rm", {"f": True}, "abcdefghi") + "</s>", "u": "[ARGS] [CALL_ID]", "v": "[", "w": "[TOOL_"},
        ),
        [
            (
                "note",
                {
                    "t": call_text("rm", {"f": True}, "abcdefghi") + "</s>",
                    "u": "[ARGS] [CALL_ID]",
                    "v": "[",
                    "w": "[TOOL_",
                },
            )
        ],
        None,
    ),
    "name-like-marker": (call_text("ARGS", {"x": 1}, "call00000"), [("ARGS", {"x": 1})], None),
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
    "trailing-prose": (
        call_text("grep", {"pattern": "TODO"}) + "\n\nLet me search for that.",
        [("grep", {"pattern": "TODO"})],
        "Let me search for that.",
    ),
}


@pytest.mark.parametrize("case", sorted(STRICT))
@pytest.mark.parametrize("stop", ["", "</s>", "</s>\n"])
def test_strict_text(case, stop):
    text, calls, content = STRICT[case]
    message = assert_stream_matches(text + stop, seed=len(case))
    assert view(message) == expected_view(calls, content)
    assert message.diagnostics == []


def test_call_ids_are_streamed():
    text = call_text("a", {}, "call00000") + call_text("b", {"x": [1]}, "Zx9kQ2mP1") + call_text("c", {})
    assert stream_ids(text) == [(0, "a", "call00000"), (1, "b", "Zx9kQ2mP1"), (2, "c", None)]
    old = TC + '[{"name": "a", "arguments": {}, "id": "abcdefghi"}, {"name": "b", "arguments": {}}]'
    assert stream_ids(old) == [(0, "a", "abcdefghi"), (1, "b", None)]


RECOVERED = {
    "old-array": (
        TC + ' [{"name": "f", "arguments": {"a": 1}, "id": "abcdefghi"}, {"name": "g", "arguments": {}}]',
        [("f", {"a": 1}), ("g", {})],
    ),
    "old-single-object": (TC + '{"name": "f", "arguments": {"a": 1}}', [("f", {"a": 1})]),
    "old-parameters-key": (TC + '[{"name": "f", "parameters": {"a": 1}}]', [("f", {"a": 1})]),
    "old-arguments-as-string": (
        TC + '[{"name": "f", "arguments": "{\\"a\\": \\"[ARGS]\\"}"}]',
        [("f", {"a": "[ARGS]"})],
    ),
    "old-arguments-missing": (TC + '[{"name": "get_time"}]', [("get_time", {})]),
    "args-marker-missing": (TC + 'f{"a": 1}', [("f", {"a": 1})]),
    "space-after-args": (TC + 'f[ARGS] {"a": 1}', [("f", {"a": 1})]),
    "space-after-tool-calls": (TC + ' f[ARGS]{"a": 1}', [("f", {"a": 1})]),
    "pretty-args": (TC + 'f[ARGS]{\n  "a": [\n    1\n  ]\n}', [("f", {"a": [1]})]),
    "empty-id": (TC + "f[CALL_ID][ARGS]{}", [("f", {})]),
}


@pytest.mark.parametrize("case", sorted(RECOVERED))
def test_drift_recovered(case):
    text, calls = RECOVERED[case]
    message = assert_stream_matches(text)
    assert view(message) == expected_view(calls)
    assert message.diagnostics == []


SURFACED = {
    "no-name": TC + "[ARGS]{}",
    "name-then-end": TC + "get_weather",
    "name-then-partial-marker": TC + "f[CALL_",
    "name-then-prose": TC + "f is what I would call",
    "id-then-no-args": TC + "f[CALL_ID]abcdefghi then",
    "not-json": TC + "f[ARGS]{city: Paris}",
    "args-not-object": TC + "f[ARGS][1, 2]",
    "nan": TC + 'f[ARGS]{"x": NaN}',
    "overflowing-float": TC + 'f[ARGS]{"x": 1e400}',
    "raw-newline-in-string": TC + 'f[ARGS]{"x": "a\nb"}',
    "unterminated-json": TC + 'f[ARGS]{"a": ',
    "unterminated-string": TC + 'f[ARGS]{"a": "open',
    "old-not-calls": TC + '[{"tool": "f"}]',
    "old-bad-id": TC + '[{"name": "f", "arguments": {}, "id": 7}]',
    "marker-alone": TC,
    "marker-then-space": TC + "  ",
}


@pytest.mark.parametrize("case", sorted(SURFACED))
def test_malformed_call_stays_in_content(case):
    text = SURFACED[case]
    message = assert_stream_matches(text, leak_check=False)  # the surfaced raw text holds the markers
    assert message.tool_calls == []
    assert message.content == text.strip()
    assert message.diagnostics and "surfaced" in message.diagnostics[0]


def test_unterminated_string_does_not_swallow_the_next_call():
    text = TC + 'f[ARGS]{"a": "oops}' + call_text("g", {"b": 1})
    message = assert_stream_matches(text, leak_check=False)
    assert view(message) == expected_view([("g", {"b": 1})], TC + 'f[ARGS]{"a": "oops}')


def test_surfaced_call_between_good_calls_keeps_them():
    text = "Plan.\n" + call_text("a", {"x": 1}) + TC + "broken[ARGS]{x}" + call_text("b", {}) + "\nDone."
    message = assert_stream_matches(text, leak_check=False)
    assert view(message) == expected_view([("a", {"x": 1}), ("b", {})], f"Plan.\n{TC}broken[ARGS]{{x}}\nDone.")


def test_prose_with_brackets_and_json_is_content():
    text = 'See [docs], [1, 2], {"name": "x", "arguments": {}} and [INSTead] [TOOL_CALL] </t> <s'
    message = assert_stream_matches(text, leak_check=False)
    assert view(message) == (text, None, [])


def test_trailing_stop_markers_stripped_inner_kept():
    assert PARSER.parse("hi</s>\n</s>").content == "hi"
    assert PARSER.parse("a</s>b").content == "a</s>b"
    assert PARSER.parse("hi</").content == "hi</"


# ---- streaming ----------------------------------------------------------------------------------------

HOLD_BACK_TEXTS = [
    "Sure [TOOL " + call_text("f", {"a": "[TOOL_CALLS]</s>"}, "call00000") + " ok</s>",
    "a [TO b [ARG c </ d [CALL_I e [",
    "x\n" + TC + "bad[ARGS]{x}\ny",
    TC + '[{"name": "f", "arguments": {"a": "]"}}]' + call_text("g", {}),
]


@pytest.mark.parametrize("text", HOLD_BACK_TEXTS)
def test_marker_hold_back_at_every_split_point(text):
    """Fed in two parts split anywhere, what is streamed after the first part is a prefix of the final
    content: a marker start is never released early; no delta holds a marker."""
    final = PARSER.parse(text)
    watch = None if any(m in (final.content or "") for m in MARKERS) else check_delta
    for k in range(len(text) + 1):
        session = PARSER.stream()
        first = session.feed(text[:k])
        for delta in first:
            if watch:
                watch(delta)
        content = "".join(d.content or "" for d in first)
        assert (final.content or "").startswith(content), (k, content)
        got = run_stream(PARSER, [text[:k], text[k:]], on_delta=watch)
        assert view(got) == view(final), k


def test_stream_is_incremental_and_calls_arrive_whole_at_close():
    session = PARSER.stream()
    assert session.feed("Checking the ")[0].content == "Checking the"
    assert [d.content for d in session.feed("weather.\n[TOOL_")] == [" weather."]
    assert session.feed('CALLS]w[CALL_ID]abcdefghi[ARGS]{"city": "Pa') == []
    deltas = session.feed('ris"}')
    assert len(deltas) == 1 and deltas[0].content is None
    (piece,) = deltas[0].tool_calls
    assert (piece.index, piece.name, piece.id, json.loads(piece.arguments)) == (0, "w", "abcdefghi", {"city": "Paris"})
    assert [d.content for d in session.feed(" Done")] == ["\n Done"]  # content before and after the call joins
    assert session.finish() == [] and session.diagnostics == []


# ---- property tests ----------------------------------------------------------------------------------

NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,15}", fullmatch=True)
IDS = st.one_of(st.none(), st.from_regex(r"[A-Za-z0-9]{9}", fullmatch=True))
TRICKY = st.sampled_from(
    ['"', "\\", TC, "[ARGS]", "[CALL_ID]", "</s>", "}", "]", "[", "{", "\n", "\x00", "é😀", "[TOOL_", ""]
)
STRINGS = st.one_of(TRICKY, st.text(max_size=20), st.lists(TRICKY, max_size=4).map("".join))
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), STRINGS)
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(STRINGS, inner, max_size=4), max_leaves=10
)
CALLS = st.lists(st.tuples(NAMES, st.dictionaries(STRINGS, VALUES, max_size=5), IDS), min_size=1, max_size=3)
PROSE = st.text(st.characters(blacklist_characters="[<", blacklist_categories=("Cs",)), max_size=30)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=CALLS, before=PROSE, after=PROSE, data=st.data())
def test_property_written_calls_roundtrip(calls, before, after, data):
    """Prose, calls (with or without ids), prose: parse back exactly, whatever the chunking."""
    text = before + "".join(call_text(n, a, i) for n, a, i in calls) + after
    message = PARSER.parse(text)
    assert view(message) == expected_view([(n, a) for n, a, _ in calls], (before + after).strip() or None)
    splits = data.draw(st.lists(st.integers(0, len(text)), max_size=20).map(sorted))
    for chunks in ([text[a:b] for a, b in zip([0, *splits], [*splits, len(text)], strict=False)], list(text)):
        assert view(run_stream(PARSER, chunks, on_delta=check_delta)) == view(message)


FRAGMENTS = st.sampled_from(
    [
        TC,
        "[ARGS]",
        "[CALL_ID]",
        "abcdefghi",
        "f",
        "\n",
        " ",
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
        "</s>",
        "<",
        "x y",
        '{"name": "g", "arguments": {}}',
        "[TOOL_",
        "[AR",
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
MODELS = ("mistral-small-3.2", "devstral-small")


def test_catalog_rows_and_offline_templates():
    expected = {
        "mistral-small-3.2": "Mistral-Small-3.2-24B-Instruct-2506.jinja",
        "devstral-small": "unsloth-mistral-Devstral-Small-2507.jinja",
    }
    for model, file in expected.items():
        tmpl = template(model)
        assert (tmpl.format, tmpl.source, tmpl.file) == ("mistral", "sdist", file)


def test_rendered_shapes_per_template():
    calls = [ToolCall("get_weather", {"city": "Paris"}), ToolCall("get_weather", {"city": "Oslo"})]
    scenario = Scenario("s1", [WEATHER], calls)
    small = render_scenario(template("mistral-small-3.2"), scenario, FMT)
    assert small.text == (
        '[TOOL_CALLS]get_weather[CALL_ID]call00000[ARGS]{"city": "Paris"}'
        '[TOOL_CALLS]get_weather[CALL_ID]call00001[ARGS]{"city": "Oslo"}'
    )
    dev = render_scenario(template("devstral-small"), scenario, FMT)
    assert dev.text == '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_weather[ARGS]{"city": "Oslo"}'
    for case in (small, dev):
        assert (case.prefix, case.extra["stop"]) == ("", "</s>")
        assert view(PARSER.parse(case.text, case.tools, case.prefix)) == view(case.expected)


def test_content_small_drops_it_devstral_writes_it_first():
    scenario = Scenario("s2", [WEATHER], [ToolCall("get_weather", {"city": "Oslo"})], content_after="Checking.")
    with pytest.raises(UnrepresentableError, match="does not write content_after"):
        render_scenario(template("mistral-small-3.2"), scenario, FMT)
    case = render_scenario(template("devstral-small"), scenario, FMT)
    assert case.text == 'Checking.[TOOL_CALLS]get_weather[ARGS]{"city": "Oslo"}'
    assert view(PARSER.parse(case.text)) == view(case.expected)


def test_small_32_template_raises_on_call_ids_not_9_characters_long():
    """A template fact: Mistral-Small-3.2's template raises unless the id has exactly 9 characters (it checks
    the length only), so the harness renders ids call00000, call00001, ..."""
    history = [{"role": "user", "content": HISTORY_USER}]

    def turn(call_id):
        return history + [
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"type": "function", "id": call_id, "function": {"name": "f", "arguments": {}}}],
            }
        ]

    for bad in ("call_1", "call_0123456789", "abcdefgh"):
        with pytest.raises(TemplateRenderError, match="length 9"):
            render_messages(template("mistral-small-3.2"), turn(bad), None, **FMT.template_vars)
    text = render_messages(template("mistral-small-3.2"), turn("a-b_c.d!e"), None, **FMT.template_vars)
    assert text.endswith("[TOOL_CALLS]f[CALL_ID]a-b_c.d!e[ARGS]{}</s>")  # not alphanumeric, yet accepted
    assert stream_ids("[TOOL_CALLS]f[CALL_ID]a-b_c.d!e[ARGS]{}") == [(0, "f", "a-b_c.d!e")]
    # Devstral writes no id at all, whatever the id is
    text = render_messages(template("devstral-small"), turn("x"), None, **FMT.template_vars)
    assert text.endswith("[TOOL_CALLS]f[ARGS]{}</s>")


def test_prompts_have_no_bos_text_and_no_generation_prompt():
    history = [{"role": "user", "content": HISTORY_USER}]
    for model in MODELS:
        gen = render_messages(template(model), history, [WEATHER], add_generation_prompt=True, **FMT.template_vars)
        plain = render_messages(template(model), history, [WEATHER], **FMT.template_vars)
        assert gen == plain and gen.startswith("[SYSTEM_PROMPT]") and gen.endswith("[/INST]")
        assert "[AVAILABLE_TOOLS]" in gen


def test_format_edge_scenarios_render_and_pass():
    ids = [s.id for s in format_edge_scenarios("mistral")]
    assert ids and all(i.startswith("edge-mistral-") for i in ids)
    for model in MODELS:
        for scenario in format_edge_scenarios("mistral"):
            case = render_scenario(template(model), scenario, FMT)
            assert view(PARSER.parse(case.text, case.tools, case.prefix)) == view(case.expected), case.id


@pytest.mark.parametrize("model", MODELS)
def test_own_parser_passes_every_strict_rendered_case(model):
    """The rendered corpus (curated + generated + observed) through every mode the runner applies to this
    parser: one-shot, round trip, whole, char, random and every two-part split (prefix)."""
    tmpl = template(model)
    corpus = build_corpus(tmpl, FMT, seed=3, n_generated=60)
    assert corpus.count("curated") >= 100 and corpus.count("generated") >= 15 and corpus.count("observed") >= 1
    modes = modes_for(PARSER, ("oneshot", "roundtrip", "whole", "char", "random", "tokens", "prefix"), FMT)
    assert modes == ["oneshot", "roundtrip", "whole", "char", "random", "prefix"]
    check = roundtrip_check(tmpl, FMT)
    failures, roundtrips = [], 0
    for case in corpus.cases:
        if case.kind != "strict":
            continue
        for record in evaluate_case(case, PARSER, FMT, modes, seed=3, roundtrip=check):
            roundtrips += record.mode == "roundtrip"
            if record.verdict != "pass":
                failures.append((case.id, record.mode, record.error_type, record.detail))
    assert failures == [] and roundtrips >= 100

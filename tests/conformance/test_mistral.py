"""Conformance of the project's own Mistral parser (``parsers/own/mistral.py``) and of the mistral family end
to end (Mistral Small 3.2, Devstral Small; Magistral Small 2506's text ``<think>`` reasoning, which no template of
the sdist writes, through its canitoolcall fixture): the shared suite's config plus the tests specific to the
format.
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
from harness.core.errors import TemplateRenderError, UnrepresentableError
from harness.core.messages import Message, ToolCall
from harness.core.protocol import run_stream
from harness.core.scenarios import Scenario
from harness.corpus.peers import canitoolcall, llama_cpp
from harness.formats import format_edge_scenarios, get_format
from harness.formats.mistral import THINK_CLOSE, THINK_OPEN
from harness.score.policy import Policy
from harness.score.runner import evaluate_case
from harness.score.verdicts import score
from harness.template.render import HISTORY_USER, render_messages, render_scenario
from parsers.own.mistral import MistralParser

FMT = get_format("mistral")
PARSER = MistralParser()


EXTRA_MARKERS = ()
CHECK_DELTA = delta_checker(FMT, EXTRA_MARKERS)


def stream_matches(text: str, seed: int = 0, leak_check: bool = True):
    """:func:`conformance.suite.assert_stream_matches` on this file's parser, in its argument order."""
    return assert_stream_matches(PARSER, text, None, "", seed, leak_check, EXTRA_MARKERS)


MARKERS = tuple(dict.fromkeys(FMT.markers + FMT.stop_markers))
TC = "[TOOL_CALLS]"
OBSERVED_TEXT = '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_weather[ARGS]{"city": "Tokyo"}'


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
    # Magistral Small 2506: <think>\nthoughts\n</think>\n\nanswer (its model card's system prompt), then calls
    "magistral-think-then-call": (
        f"{THINK_OPEN}\nThe user wants the weather.\n{THINK_CLOSE}\n\n" + call_text("get_weather", {"city": "Paris"}),
        [("get_weather", {"city": "Paris"})],
        None,
        "The user wants the weather.",
    ),
    "magistral-think-content-call": (
        f"{THINK_OPEN}\nTwo.\n{THINK_CLOSE}\n\nChecking." + call_text("a", {}, "call00000"),
        [("a", {})],
        "Checking.",
        "Two.",
    ),
    "magistral-no-call": (f"{THINK_OPEN}\nA greeting.\n{THINK_CLOSE}\n\nHello!", [], "Hello!", "A greeting."),
}


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
    "old-not-calls": TC + '[{"tool": "f"}]',
    "old-bad-id": TC + '[{"name": "f", "arguments": {}, "id": 7}]',
}

# The last call is cut off by the end of the text: dropped, what came before kept.
CUT_OFF = {
    "unterminated-json": (TC + 'f[ARGS]{"a": ', [], None),
    "unterminated-string": ("One moment." + TC + 'f[ARGS]{"a": "open', [], "One moment."),
    "marker-alone": (TC, [], None),
    "marker-then-space": (TC + "  ", [], None),
    "second-call": (TC + 'a[ARGS]{"x": 1}' + TC + 'b[ARGS]{"q": [1, ', [("a", {"x": 1})], None),
}


def test_unterminated_string_does_not_swallow_the_next_call():
    text = TC + 'f[ARGS]{"a": "oops}' + call_text("g", {"b": 1})
    message = stream_matches(text, leak_check=False)
    assert view(message) == expected_view([("g", {"b": 1})], TC + 'f[ARGS]{"a": "oops}')


def test_surfaced_call_between_good_calls_keeps_them():
    text = "Plan.\n" + call_text("a", {"x": 1}) + TC + "broken[ARGS]{x}" + call_text("b", {}) + "\nDone."
    message = stream_matches(text, leak_check=False)
    assert view(message) == expected_view([("a", {"x": 1}), ("b", {})], f"Plan.\n{TC}broken[ARGS]{{x}}\nDone.")


def test_prose_with_brackets_and_json_is_content():
    text = 'See [docs], [1, 2], {"name": "x", "arguments": {}} and [INSTead] [TOOL_CALL] </t> <s'
    message = stream_matches(text, leak_check=False)
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
    f"{THINK_OPEN}a <thi b </think c [TOOL{THINK_CLOSE}<th" + call_text("f", {"a": THINK_CLOSE}) + "</s>",
]


def test_think_text_block_rules():
    """Magistral Small 2506's plain-text block: only one at the start of the text is reasoning."""
    assert view(PARSER.parse(f" {THINK_OPEN}r{THINK_CLOSE}c")) == ("c", "r", [])
    weather = call_text("get_weather", {"city": "Paris"})
    later = PARSER.parse(f"Hi {THINK_OPEN}x{THINK_CLOSE}" + weather)
    assert (later.content, later.reasoning, len(later.tool_calls)) == (f"Hi {THINK_OPEN}x{THINK_CLOSE}", None, 1)
    after_call = PARSER.parse(weather + f"{THINK_OPEN}x{THINK_CLOSE}")
    assert (after_call.content, after_call.reasoning) == (f"{THINK_OPEN}x{THINK_CLOSE}", None)
    # cut off inside the block: reasoning up to the end; a [TOOL_CALLS] there is reasoning text
    assert view(PARSER.parse(f"{THINK_OPEN}The user wants " + weather)) == (None, "The user wants " + weather, [])
    # a continued turn whose prompt left <think> open
    assert view(PARSER.parse(f" more{THINK_CLOSE}Hello", None, f"[/INST]{THINK_OPEN}I'm")) == ("Hello", "more", [])
    # the [THINK] control tokens of later Magistral models are the mistral_reasoning format's: content here
    assert PARSER.parse("[THINK]r[/THINK]c").content == "[THINK]r[/THINK]c"


def test_peer_cases_pass():
    """canitoolcall's mistral fixtures (Magistral Small 2506's ``<think>r</think>c`` among them) and llama.cpp's
    Mistral Small 3.2 / Devstral / Nemo cases, one-shot and streamed."""
    cit = canitoolcall.load_suite().cases["mistral"]
    lcp = llama_cpp.load_cases().for_format("mistral")
    magistral = [c for c in cit if c.extra["peer"]["models"][0] == "mistralai/Magistral-Small-2506"]
    assert (len(cit), len(lcp), [c.id for c in magistral]) == (33, 10, ["canitoolcall/mistral/vllm-v11-think-text"])
    failures = [
        (case.id, r.mode)
        for case in cit + lcp
        for r in evaluate_case(case, PARSER, FMT, ["oneshot", "whole", "char"], seed=3)
        if r.verdict != "pass"
    ]
    assert failures == []


def test_reasoning_policy_decides_where_the_think_text_goes():
    """The own parser extracts the block (the default ``deepseek`` form, as canitoolcall expects); the model
    card's vLLM command (no ``--reasoning-parser``) and the reference engines' mistral entries leave it in content:
    that answer passes under ``reasoning=none`` and ``any`` only."""
    (case,) = [c for c in canitoolcall.load_suite().cases["mistral"] if c.id.endswith("/vllm-v11-think-text")]
    extracted, left = PARSER.parse(case.text), Message(content=case.text)
    verdicts = {
        form: tuple(score(case, got, FMT, policy=Policy(reasoning=form)).verdict for got in (extracted, left))
        for form in ("deepseek", "none", "any")
    }
    assert verdicts == {"deepseek": ("pass", "fail"), "none": ("fail", "pass"), "any": ("pass", "pass")}


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
    for chunks in (split_at(text, splits), list(text)):
        assert view(run_stream(PARSER, chunks, on_delta=CHECK_DELTA)) == view(message)


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
        if any("cut off" in d for d in message.diagnostics):  # the last call, cut off by the end, is dropped
            body = body[: body.rfind(TC)]
        assert message.content == (body.strip() or None)
    splits = data.draw(st.lists(st.integers(0, len(text)), max_size=10).map(sorted))
    for chunks in (split_at(text, splits), list(text)):
        assert view(run_stream(PARSER, chunks)) == view(message)


# ---- rendering through the real templates --------------------------------------------------------------


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


class TestMistral(ParserConformance):
    CONFIG = Conformance(
        format="mistral",
        parser=MistralParser,
        strict={k: Text(*v) for k, v in STRICT.items()},
        stops=("", "</s>", "</s>\n"),
        recovered={k: Text(*v) for k, v in RECOVERED.items()},
        surfaced=SURFACED,
        cut_off={k: Text(*v) for k, v in CUT_OFF.items()},
        hold_back=tuple(HOLD_BACK_TEXTS),
        models=MODELS,
        modes=("oneshot", "roundtrip", "whole", "char", "random", "prefix"),
    )

    def check_corpus(self, model, run):
        corpus = run.corpus
        assert corpus.count("curated") >= 100 and corpus.count("generated") >= 15 and corpus.count("observed") >= 1
        assert run.count_mode("roundtrip") >= 100

"""Conformance of the project's own Muse Glimmer parser (``parsers/own/muse_glimmer.py``: recipient messages, each
ATEM block on the XML reader of ``parsers/own/qwen3_coder.py``) and of the muse_glimmer family end to end
(``muse-glimmer.jinja`` from the llama-cpp-python 0.3.36 sdist; llama.cpp's Muse Glimmer cases).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.suite import Conformance, ParserConformance, Text, split_at, template, tool, view
from harness.core.errors import UnrepresentableError
from harness.core.messages import Message, ToolCall
from harness.core.protocol import run_stream
from harness.core.scenarios import Scenario
from harness.corpus.peers import llama_cpp
from harness.formats import get_format
from harness.formats.muse_glimmer import (
    CALL_CLOSE,
    CALL_OPEN,
    EOM,
    EOT,
    INVOKE_CLOSE,
    PARAMETER_CLOSE,
    ROLE,
    compose_content_before,
)
from harness.score.runner import evaluate_case
from harness.template.render import render_scenario
from parsers.own.muse_glimmer import MuseGlimmerParser

FMT = get_format("muse_glimmer")
PARSER = MuseGlimmerParser()


def atem(name: str, args: dict) -> str:
    """One call's block as the template writes it (lines 31-49)."""
    params = "".join(
        f'<atem:parameter name="{k}">{v if isinstance(v, str) else json.dumps(v)}{PARAMETER_CLOSE}\n'
        for k, v in args.items()
    )
    return f'{CALL_OPEN}\n<atem:invoke name="{name}">\n{params}{INVOKE_CLOSE}\n{CALL_CLOSE}'


def message(recipient: str, body: str, first: bool = False) -> str:
    return ("" if first else ROLE) + f" to={recipient}<|message|>{body}"


def calls(*named: tuple[str, dict]) -> str:
    """The calls' messages after the generation prompt, joined by <|eom|> (lines 184-191)."""
    return EOM.join(message(n, atem(n, a), i == 0) for i, (n, a) in enumerate(named))


TYPED = [tool("f", {"n": {"type": "integer"}, "s": {"type": "string"}, "b": {"type": "boolean"}})]
STRICT = {
    "one-call": Text(calls(("f", {"a": "x"})), [("f", {"a": "x"})]),
    "reasoning-then-calls": Text(
        message("self", "Two.", True) + EOM + EOM.join(message(n, atem(n, {})) for n in ("f", "g")),
        [("f", {}), ("g", {})],
        None,
        "Two.",
    ),
    "inform-then-act": Text(message("user", "On it.", True) + EOM + message("f", atem("f", {})), [("f", {})], "On it."),
    "answer": Text(message("user", "Hello, world!\nWhat's up?", True), [], "Hello, world!\nWhat's up?"),
    "bare-message": Text("<|message|>Hi.", [], "Hi."),
    "no-header": Text("Just text.", [], "Just text."),
    "typed-values": Text(
        calls(("f", {"n": 5, "s": "5", "b": True})), [("f", {"n": 5, "s": "5", "b": True})], tools=TYPED
    ),
    "markers-in-values": Text(
        calls(("f", {"t": f"a{EOM}{ROLE} to=rm<|message|>{CALL_OPEN}", "u": f"x{PARAMETER_CLOSE}\n{INVOKE_CLOSE}"})),
        [("f", {"t": f"a{EOM}{ROLE} to=rm<|message|>{CALL_OPEN}", "u": f"x{PARAMETER_CLOSE}\n{INVOKE_CLOSE}"})],
    ),
    "markup-in-answer": Text(message("user", "Call it so: " + atem("f", {}), True), [], "Call it so: " + atem("f", {})),
    "markup-in-reasoning": Text(
        message("self", "Maybe " + atem("f", {}), True) + EOM + message("user", "No."),
        [],
        "No.",
        "Maybe " + atem("f", {}),
    ),
    "dotted-name": Text(calls(("files.read", {"p": "/a b"})), [("files.read", {"p": "/a b"})]),
}
RECOVERED = {
    "eom-missing-before-next": Text(
        message("self", "Hm.", True) + message("f", atem("f", {})), [("f", {})], None, "Hm."
    ),
    "block-closer-missing": Text(
        calls(("f", {"a": "x"}))[: -len(CALL_CLOSE)] + EOM + message("user", "Ok."), [("f", {"a": "x"})], "Ok."
    ),
    "bare-invoke": Text(message("f", '<atem:invoke name="f">\n</atem:invoke>', True), [("f", {})]),
    "newlines-between-messages": Text(
        message("user", "A.", True) + EOM + "\n" + message("f", atem("f", {})), [("f", {})], "A."
    ),
}
SURFACED = {
    "no-block": message("f", "call f please", True),
    "malformed-block": message("f", f"{CALL_OPEN}\n<atem:oops/>\n{CALL_CLOSE}", True),
}
CUT_OFF = {
    "mid-value": Text(calls(("f", {"a": "long text"}))[:-60], []),
    "header-only": Text(message("user", "Sure.", True) + EOM + ROLE + " to=f", [], "Sure."),
    "after-header": Text(message("user", "Sure.", True) + EOM + message("f", ""), [], "Sure."),
    "second-call": Text(calls(("a", {"x": "one"}), ("b", {"y": "two"}))[:-30], [("a", {"x": "one"})]),
}
HOLD_BACK_TEXTS = (
    message("self", "a <|eo b", True) + EOM + message("user", "c <|sta d") + EOT,
    message("f", atem("f", {"s": EOM}), True) + EOT,
)


def test_llama_cpp_cases_pass():
    """4 judged cases (a plain answer, a call, inform-then-act, markup in the reasoning); 3 the judge skips: the
    answer quoting ATEM markup (expected content holds the format's markers) and two json_schema cases."""
    suite = llama_cpp.load_cases()
    cases = suite.for_format("muse_glimmer")
    assert [c.extra["peer"]["where"] for c in cases] == [
        "test-chat.cpp:6365",
        "test-chat.cpp:6372",
        "test-chat.cpp:6380",
        "test-chat.cpp:6414",
    ]
    assert len(suite.unsupported_by_format["muse_glimmer"]) == 3
    results = [(c.id, r) for c in cases for r in evaluate_case(c, PARSER, FMT, ["oneshot", "whole", "char"], seed=3)]
    assert [(i, r.mode) for i, r in results if r.verdict != "pass"] == []


def test_rendered_shapes_through_the_real_template():
    weather = tool("get_weather", {"city": {"type": "string"}})
    two = [ToolCall("get_weather", {"city": "Paris"}), ToolCall("get_weather", {"city": "Zürich"})]
    muse = template("muse-glimmer-30b")
    case = render_scenario(muse, Scenario("m1", [weather], two, reasoning="Plan."), FMT)
    body = EOM.join(message("get_weather", atem("get_weather", c.arguments)) for c in two)
    assert (case.prefix, case.text, case.extra["stop"]) == ("", message("self", "Plan.", True) + EOM + body, EOT)
    answer = render_scenario(muse, Scenario("m2", [weather], [], content_after="Hi."), FMT)
    assert answer.text == message("user", "Hi.", True)
    before = render_scenario(muse, Scenario("m3", [weather], two[:1], content_before="Let me see."), FMT)
    assert before.text == compose_content_before(calls(("get_weather", {"city": "Paris"})), "Let me see.")
    for c in (case, answer, before):
        assert view(PARSER.parse(c.text, c.tools, c.prefix)) == view(c.expected)
    with pytest.raises(UnrepresentableError, match="content_after"):  # a turn with calls has no content (line 183)
        render_scenario(muse, Scenario("m4", [weather], two[:1], content_after="Done."), FMT)


def test_a_prefix_that_opens_the_reasoning_starts_the_text_in_it():
    got = PARSER.parse("I'm thinking" + EOM + message("user", "Hi."), None, ROLE + " to=self<|message|>")
    assert view(got) == view(Message("Hi.", "I'm thinking", []))


NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.-]{0,12}", fullmatch=True)
STRINGS = st.text(max_size=12) | st.sampled_from([EOM, EOT, ROLE, CALL_CLOSE, PARAMETER_CLOSE, " to=x<|message|>"])
CALLS = st.lists(st.tuples(NAMES, st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True), STRINGS, max_size=3)))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    named=CALLS.filter(bool), reasoning=st.text(st.characters(blacklist_characters="<"), max_size=20), data=st.data()
)
def test_property_written_calls_roundtrip(named, reasoning, data):
    """String arguments (declared strings, so no typing question) holding the format's markers, after reasoning."""
    tools = [tool(n, dict.fromkeys(a, {"type": "string"})) for n, a in named]
    text = message("self", reasoning, True) + EOM + EOM.join(message(n, atem(n, a)) for n, a in named)
    got = PARSER.parse(text, tools)
    assert view(got) == view(Message(None, reasoning.strip() or None, [ToolCall(n, a) for n, a in named]))
    splits = data.draw(st.lists(st.integers(0, len(text)), max_size=20).map(sorted))
    for chunks in (split_at(text, splits), list(text)):
        assert view(run_stream(PARSER, chunks, tools)) == view(got)


PIECES = [ROLE, " to=", "self", "user", "f", "<|message|>", EOM, EOT, CALL_OPEN, CALL_CLOSE, '<atem:invoke name="f">']
PIECES += [INVOKE_CLOSE, '<atem:parameter name="a">', PARAMETER_CLOSE, "<|start|>", "<|st", "<", "\n", " ", "x", "{"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(st.sampled_from(PIECES), max_size=14), data=st.data())
def test_property_any_mix_of_the_markup_parses_alike_streamed(pieces, data):
    """Any text made of the format's pieces (headers, roles, closers out of place): the parse ends, never raises,
    and streaming equals one-shot (a stray ``<|start|>`` once looped the header reader)."""
    text = "".join(pieces)
    got = PARSER.parse(text)
    splits = data.draw(st.lists(st.integers(0, len(text)), max_size=6).map(sorted))
    for chunks in (split_at(text, splits), list(text)):
        assert view(run_stream(PARSER, chunks)) == view(got)


class TestMuseGlimmer(ParserConformance):
    CONFIG = Conformance(
        format="muse_glimmer",
        parser=MuseGlimmerParser,
        strict=STRICT,
        stops=("", EOT),
        recovered=RECOVERED,
        surfaced=SURFACED,
        cut_off=CUT_OFF,
        hold_back=HOLD_BACK_TEXTS,
        models=("muse-glimmer-30b",),
        modes=("oneshot", "roundtrip", "whole", "char", "random", "prefix"),
        leak_check_exempt=frozenset({"markup-in-answer", "markup-in-reasoning"}),
    )

    def check_corpus(self, model, run):
        corpus = run.corpus
        assert corpus.count("curated") >= 120 and corpus.count("generated") >= 20
        assert any(c.id.startswith("edge-muse_glimmer-") for c in corpus.cases)
        assert all("content_after" in reason for _, reason in corpus.skipped)

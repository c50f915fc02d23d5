"""Conformance of the project's own Apriel parser (``parsers/own/apriel.py``, the Hermes JSON reader with Apriel's
``<tool_calls>`` block and Apriel 1.6's reasoning markers) and of the apriel family end to end
(``unsloth-Apriel-1.5.jinja``, ``Apriel-1.6-15b-Thinker-fixed.jinja`` from the llama-cpp-python 0.3.36 sdist;
llama.cpp's Apriel cases).
"""

from __future__ import annotations

import json

from conformance.suite import Conformance, ParserConformance, Text, template, tool, view
from harness.core.messages import Message, ToolCall
from harness.core.scenarios import Scenario
from harness.corpus.peers import llama_cpp
from harness.formats import get_format
from harness.formats.apriel import CALL_CLOSE, CALL_OPEN, END, REASONING_CLOSE, REASONING_OPEN
from harness.score.runner import evaluate_case
from harness.template.render import render_scenario
from parsers.own.apriel import AprielParser

FMT = get_format("apriel")
PARSER = AprielParser()


def block(*calls: tuple[str, dict]) -> str:
    """The calls as the templates write them (1.5 lines 102-111, 1.6 lines 129-138)."""
    body = ", ".join(f'{{"name": "{n}", "arguments": {json.dumps(a, ensure_ascii=False)}}}' for n, a in calls)
    return f"\n{CALL_OPEN}[{body}]{CALL_CLOSE}"


STRICT = {
    "one-call": Text(block(("get_weather", {"city": "Paris"})), [("get_weather", {"city": "Paris"})]),
    "content-and-two": Text("On it." + block(("f", {"a": 1}), ("g", {})), [("f", {"a": 1}), ("g", {})], "On it."),
    "closer-in-string": Text(block(("f", {"s": f"]{CALL_CLOSE} x"})), [("f", {"s": f"]{CALL_CLOSE} x"})]),
}
RECOVERED = {
    "with-ids": Text(f'{CALL_OPEN}[{{"name": "f", "arguments": {{}}, "id": "c1"}}]{CALL_CLOSE}', [("f", {})]),
    "no-closer": Text(f'{CALL_OPEN}[{{"name": "f", "arguments": {{"a": 1}}}}]', [("f", {"a": 1})]),
}
SURFACED = {"not-json": f"{CALL_OPEN}call f{CALL_CLOSE}"}
CUT_OFF = {"mid-json": Text("Sure." + block(("f", {}))[:-20], [], "Sure.")}


def test_reasoning_after_the_prefilled_opener():
    text = f"Check.\n{REASONING_CLOSE}\nDone." + block(("f", {}))
    got = PARSER.parse(text, None, REASONING_OPEN)
    assert view(got) == view(Message("Done.", "Check.", [ToolCall("f", {})]))


def test_peer_cases():
    cases = llama_cpp.load_cases().for_format("apriel")
    assert len(cases) == 7  # Apriel 1.5: 3, Apriel 1.6: 4
    results = [(c.id, r) for c in cases for r in evaluate_case(c, PARSER, FMT, ["oneshot", "whole", "char"], seed=3)]
    failing = sorted({i for i, r in results if r.verdict != "pass"})
    # llama.cpp's parser puts the prompt's pre-filled "Here are my reasoning steps:\n" into the reasoning of its
    # two forced-open Apriel 1.6 cases (test-chat.cpp:6211, 6219); the prefix is the prompt's, not the model's.
    assert failing == ["llama.cpp/Apriel-1.6-15b-Thinker-fixed/1", "llama.cpp/Apriel-1.6-15b-Thinker-fixed/2"]


def test_rendered_shapes():
    weather = tool("get_weather", {"city": {"type": "string"}})
    calls = [ToolCall("get_weather", {"city": "Paris"}), ToolCall("get_weather", {"city": "Oslo"})]
    tmpl = template("apriel-1.6-15b-thinker")
    v16 = render_scenario(tmpl, Scenario("s1", [weather], calls, reasoning="Check twice."), FMT)
    assert v16.prefix == REASONING_OPEN
    two = block(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"}))
    assert v16.text == f"Check twice.\n{REASONING_CLOSE}\n" + two
    v15 = render_scenario(template("apriel-1.5-15b-thinker"), Scenario("s2", [weather], calls[:1]), FMT)
    assert (v15.prefix, v15.extra["stop"]) == ("", END + "\n")
    assert v15.text == block(("get_weather", {"city": "Paris"})) + "\n"
    for c in (v16, v15):
        assert view(PARSER.parse(c.text, c.tools, c.prefix)) == view(c.expected)


class TestApriel(ParserConformance):
    CONFIG = Conformance(
        format="apriel",
        parser=AprielParser,
        strict=STRICT,
        stops=("", END, END + "\n"),
        recovered=RECOVERED,
        surfaced=SURFACED,
        cut_off=CUT_OFF,
        hold_back=(block(("f", {"a": "x <tool y"})) + END,),
        hold_back_prefixes=("", REASONING_OPEN),
        models=("apriel-1.6-15b-thinker", "apriel-1.5-15b-thinker"),
        modes=("oneshot", "roundtrip", "whole", "char", "random", "prefix"),
    )

    def check_corpus(self, model, run):
        corpus = run.corpus
        assert corpus.count("curated") >= 120 and corpus.count("generated") >= 20
        assert any(c.id.startswith("edge-apriel-") for c in corpus.cases)

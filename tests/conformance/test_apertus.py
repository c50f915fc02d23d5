"""Conformance of the project's own Apertus parser (``parsers/own/apertus.py``, the Hermes JSON reader with
name-as-key call objects) and of the apertus family end to end (``Apertus-8B-Instruct.jinja`` from the
llama-cpp-python 0.3.36 sdist; llama.cpp's Apertus cases).
"""

from __future__ import annotations

import json

import pytest

from conformance.suite import Conformance, ParserConformance, Text, template, tool, view
from harness.core.errors import UnrepresentableError
from harness.core.messages import Message, ToolCall
from harness.core.scenarios import Scenario
from harness.corpus.peers import llama_cpp
from harness.formats import get_format
from harness.formats.apertus import ASSISTANT_END, CALL_CLOSE, CALL_OPEN, INNER_CLOSE, INNER_OPEN
from harness.score.runner import evaluate_case
from harness.template.render import render_scenario
from parsers.own.apertus import ApertusParser

FMT = get_format("apertus")
PARSER = ApertusParser()


def block(*calls: tuple[str, dict]) -> str:
    """The calls as the template writes them (lines 292-306)."""
    body = ", ".join(f'{{"{n}": {json.dumps(a, ensure_ascii=False)}}}' for n, a in calls)
    return f"{CALL_OPEN}[{body}]{CALL_CLOSE}"


STRICT = {
    "one-call": Text(block(("f", {"a": 1})), [("f", {"a": 1})]),
    "parallel": Text(block(("f", {}), ("g", {"n": [1, None]})), [("f", {}), ("g", {"n": [1, None]})]),
    "content-then-call": Text("Checking.\n" + block(("f", {"a": "ü"})), [("f", {"a": "ü"})], "Checking."),
    "thoughts-then-response": Text(f"{INNER_OPEN}Hm.{INNER_CLOSE}Hi.", [], "Hi.", "Hm."),
    "call-inside-thoughts": Text(
        f"{INNER_OPEN}Look it up.{block(('f', {}))}Then answer.{INNER_CLOSE}Done.",
        [("f", {})],
        "Done.",
        "Look it up.Then answer.",
    ),
    "markers-in-strings": Text(
        block(("note", {"t": f"{CALL_CLOSE}]{CALL_OPEN}[ {INNER_CLOSE} {ASSISTANT_END}"})),
        [("note", {"t": f"{CALL_CLOSE}]{CALL_OPEN}[ {INNER_CLOSE} {ASSISTANT_END}"})],
    ),
    "arguments-spell-a-call": Text(
        block(("schedule", {"name": "x", "arguments": {}})), [("schedule", {"name": "x", "arguments": {}})]
    ),
    "plain-content": Text("Just text.", [], "Just text."),
}
RECOVERED = {
    "closer-missing-at-end": Text(block(("f", {"a": 1}))[: -len(CALL_CLOSE)], [("f", {"a": 1})]),
    "closer-missing-before-next": Text(block(("f", {}))[: -len(CALL_CLOSE)] + block(("g", {})), [("f", {}), ("g", {})]),
    "string-arguments": Text(f'{CALL_OPEN}[{{"f": "{{\\"a\\": 1}}"}}]{CALL_CLOSE}', [("f", {"a": 1})]),
    "null-arguments": Text(f'{CALL_OPEN}[{{"f": null}}]{CALL_CLOSE}', [("f", {})]),
    "bare-object": Text(f'{CALL_OPEN}{{"f": {{"a": 2}}}}{CALL_CLOSE}', [("f", {"a": 2})]),
    "closer-cut-at-end": Text(block(("f", {}))[:-4], [("f", {})]),
}
SURFACED = {
    "hermes-object": f'{CALL_OPEN}[{{"name": "f", "arguments": {{}}}}]{CALL_CLOSE}',
    "arguments-not-object": f'{CALL_OPEN}[{{"f": [1]}}]{CALL_CLOSE}',
    "text-after-list": f'{CALL_OPEN}[{{"f": {{}}}}] and more{CALL_CLOSE}',
    "not-json": f"{CALL_OPEN}call f{CALL_CLOSE}",
}
CUT_OFF = {
    "mid-arguments": Text(f'{CALL_OPEN}[{{"f": {{"a": "lo', []),
    "opener-alone": Text("One moment." + CALL_OPEN, [], "One moment."),
    "second-block": Text(block(("a", {"x": 1})) + CALL_OPEN + '[{"b', [("a", {"x": 1})]),
}
HOLD_BACK_TEXTS = (
    f"{INNER_OPEN}a <|inner_suf b{INNER_CLOSE}c <|tools_pre d{ASSISTANT_END}",
    "x <|tools_" + block(("f", {"s": CALL_CLOSE})) + ASSISTANT_END,
)


def test_llama_cpp_cases_pass():
    """test-chat.cpp lines 5424 (a call) and 5431 (a continued content)."""
    cases = llama_cpp.load_cases().for_format("apertus")
    assert [c.extra["peer"]["where"] for c in cases] == ["test-chat.cpp:5424", "test-chat.cpp:5431"]
    results = [(c.id, r) for c in cases for r in evaluate_case(c, PARSER, FMT, ["oneshot", "whole", "char"], seed=3)]
    assert [(i, r.mode) for i, r in results if r.verdict != "pass"] == []


def test_rendered_shapes_through_the_real_template():
    weather = tool("get_weather", {"city": {"type": "string"}})
    calls = [ToolCall("get_weather", {"city": "Paris"}), ToolCall("get_weather", {"city": "Zürich"})]
    apertus = template("apertus-8b")
    case = render_scenario(apertus, Scenario("a1", [weather], calls, content_after="Sure."), FMT)
    body = block(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Zürich"}))
    assert (case.prefix, case.text, case.extra["stop"]) == ("", "Sure." + body, "")
    assert view(PARSER.parse(case.text, case.tools, case.prefix)) == view(Message("Sure.", None, calls))
    with pytest.raises(UnrepresentableError, match="does not write the reasoning"):
        render_scenario(apertus, Scenario("a2", [weather], calls[:1], reasoning="Plan."), FMT)


class TestApertus(ParserConformance):
    CONFIG = Conformance(
        format="apertus",
        parser=ApertusParser,
        strict=STRICT,
        stops=("", ASSISTANT_END),
        recovered=RECOVERED,
        surfaced=SURFACED,
        cut_off=CUT_OFF,
        hold_back=HOLD_BACK_TEXTS,
        models=("apertus-8b",),
        modes=("oneshot", "roundtrip", "whole", "char", "random", "prefix"),
    )

    def check_corpus(self, model, run):
        corpus = run.corpus
        assert corpus.count("curated") >= 120 and corpus.count("generated") >= 10
        assert any(c.id.startswith("edge-apertus-") for c in corpus.cases)
        assert all("does not write the reasoning" in reason for _, reason in corpus.skipped)

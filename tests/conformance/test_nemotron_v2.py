"""Conformance of the project's own Nemotron-Nano-v2 parser (``parsers/own/nemotron_v2.py``, the Hermes JSON reader
with ``<TOOLCALL>`` markers) and of the nemotron_v2 family end to end (``NVIDIA-Nemotron-Nano-v2.jinja`` from the
llama-cpp-python 0.3.36 sdist; llama.cpp's Nemotron-Nano-v2 cases).
"""

from __future__ import annotations

import json

from conformance.suite import Conformance, ParserConformance, Text, template, tool, view
from harness.core.messages import Message, ToolCall
from harness.core.scenarios import Scenario
from harness.corpus.peers import llama_cpp
from harness.formats import get_format
from harness.formats.nemotron_v2 import CALL_CLOSE, CALL_OPEN, END, THINK_CLOSE, TURN_BREAK
from harness.score.runner import evaluate_case
from harness.template.render import render_scenario
from parsers.own.nemotron_v2 import NemotronV2Parser

FMT = get_format("nemotron_v2")
PARSER = NemotronV2Parser()
PREFIX = "<think>\n"  # the generation prompt's pre-filled reasoning opener (line 127)


def block(*calls: tuple[str, dict]) -> str:
    """The calls as the template writes them (lines 89-100)."""
    body = ", ".join(f'{{"name": "{n}", "arguments": {json.dumps(a)}}}' for n, a in calls)
    return f"{CALL_OPEN}[{body}]{CALL_CLOSE}"


STRICT = {
    "one-call": Text(THINK_CLOSE + block(("f", {"a": 1})), [("f", {"a": 1})]),
    "reasoning-content-two": Text(
        f"Two.\n{THINK_CLOSE}\nOn it.\n" + block(("f", {}), ("g", {"s": CALL_CLOSE})),
        [("f", {}), ("g", {"s": CALL_CLOSE})],
        "On it.",
        "Two.",
    ),
    "turn-break": Text(f"{THINK_CLOSE}Hi.\n{TURN_BREAK}" + block(("f", {})), [("f", {})], "Hi."),
}
RECOVERED = {
    "no-think-close": Text(block(("f", {"a": "x"})), [("f", {"a": "x"})]),
    "no-closer": Text(f'{THINK_CLOSE}{CALL_OPEN}[{{"name": "f", "arguments": {{}}}}]', [("f", {})]),
}
SURFACED = {"not-json": f"{CALL_OPEN}call f{CALL_CLOSE}"}
CUT_OFF = {"mid-json": Text(f"{THINK_CLOSE}Sure." + block(("f", {"a": "long"}))[:-20], [], "Sure.")}


def test_peer_cases_pass():
    cases = llama_cpp.load_cases().for_format("nemotron_v2")
    assert len(cases) == 3
    results = [(c.id, r) for c in cases for r in evaluate_case(c, PARSER, FMT, ["oneshot", "whole", "char"], seed=3)]
    assert [(i, r.mode) for i, r in results if r.verdict != "pass"] == []


def test_rendered_shapes():
    weather = tool("get_weather", {"city": {"type": "string"}})
    call = ToolCall("get_weather", {"city": "Paris"})
    case = render_scenario(template("nemotron-nano-9b-v2"), Scenario("s1", [weather], [call], content_after="Hi."), FMT)
    assert (case.prefix, case.extra["stop"]) == (PREFIX, END + "\n\n")
    assert case.text == f"{THINK_CLOSE}Hi.\n{TURN_BREAK}" + block(("get_weather", {"city": "Paris"}))
    assert view(PARSER.parse(case.text, case.tools, case.prefix)) == view(Message("Hi.", None, [call]))


class TestNemotronV2(ParserConformance):
    CONFIG = Conformance(
        format="nemotron_v2",
        parser=NemotronV2Parser,
        prefix=PREFIX,
        strict=STRICT,
        stops=("", END, END + "\n\n"),
        recovered=RECOVERED,
        surfaced=SURFACED,
        cut_off=CUT_OFF,
        hold_back=(THINK_CLOSE + block(("f", {"a": "x <SPECIAL y"})) + END,),
        hold_back_prefixes=(PREFIX, ""),
        models=("nemotron-nano-9b-v2",),
        modes=("oneshot", "roundtrip", "whole", "char", "random", "prefix"),
    )

    def check_corpus(self, model, run):
        corpus = run.corpus
        assert corpus.count("curated") >= 120 and corpus.count("generated") >= 20

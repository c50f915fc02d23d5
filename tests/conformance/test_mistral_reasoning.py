"""Conformance of the project's own Mistral reasoning parser (``parsers/own/mistral_reasoning.py``: the Mistral
reader with a ``[THINK]`` block) and of the mistral_reasoning family end to end
(``mistralai-Ministral-3-14B-Reasoning-2512.jinja`` from the llama-cpp-python 0.3.36 sdist; canitoolcall's
Magistral-Small-2509 and Ministral-3-14B-Reasoning fixtures, llama.cpp's Ministral 3 Reasoning cases).
"""

from __future__ import annotations

import json

import pytest

from conformance.suite import Conformance, ParserConformance, Text, template, tool, view
from harness.core.errors import UnrepresentableError
from harness.core.messages import ToolCall
from harness.core.scenarios import Scenario
from harness.corpus.peers import canitoolcall, llama_cpp
from harness.formats import get_format
from harness.formats.mistral import ARGS, EOS, TOOL_CALLS
from harness.formats.mistral_reasoning import THINK_CLOSE, THINK_OPEN
from harness.score.runner import evaluate_case
from harness.template.render import HISTORY_USER, render_messages, render_scenario
from parsers.own.mistral_reasoning import MistralReasoningParser

FMT = get_format("mistral_reasoning")
PARSER = MistralReasoningParser()
MODEL = "ministral-3-reasoning"


def call_text(name: str, arguments) -> str:
    """A call as the template writes it (lines 104-112): ``[TOOL_CALLS]NAME[ARGS]tojson(ARGS)``."""
    return f"{TOOL_CALLS}{name}{ARGS}{json.dumps(arguments, ensure_ascii=False)}"


def think(text: str) -> str:
    return f"{THINK_OPEN}{text}{THINK_CLOSE}"


WEATHER = call_text("get_weather", {"city": "Paris"})
STRICT = {
    "one-call": (WEATHER, [("get_weather", {"city": "Paris"})]),
    "think-then-call": (
        think("Need the weather.") + WEATHER,
        [("get_weather", {"city": "Paris"})],
        None,
        "Need the weather.",
    ),
    "think-content-parallel": (
        think("Two.") + "Checking." + WEATHER + call_text("get_time", {}),
        [("get_weather", {"city": "Paris"}), ("get_time", {})],
        "Checking.",
        "Two.",
    ),
    "call-in-reasoning": (
        think(f"maybe {WEATHER} later") + WEATHER,
        [("get_weather", {"city": "Paris"})],
        None,
        f"maybe {WEATHER} later",
    ),
    "markers-in-string": (
        call_text("note", {"t": think("x") + WEATHER, "u": "[THINK", "v": "[/THINK"}),
        [("note", {"t": think("x") + WEATHER, "u": "[THINK", "v": "[/THINK"})],
    ),
    "no-call": (think("A greeting.") + "Hello!", [], "Hello!", "A greeting."),
}
RECOVERED = {
    "no-args-marker": (f'{TOOL_CALLS}f{{"a": 1}}', [("f", {"a": 1})]),
    "old-json-array": (think("r") + f'{TOOL_CALLS}[{{"name": "f", "arguments": {{}}}}]', [("f", {})], None, "r"),
}
SURFACED = {"no-name": f"{TOOL_CALLS}{ARGS}{{}}", "bad-json": f"{TOOL_CALLS}f{ARGS}{{nope}}"}
CUT_OFF = {
    "mid-args": (think("r") + "Let me see." + f'{TOOL_CALLS}f{ARGS}{{"a": "Zür', [], "Let me see.", "r"),
    "second-call": (WEATHER + f"{TOOL_CALLS}g{ARGS}{{", [("get_weather", {"city": "Paris"})]),
}


def test_think_block_rules():
    # only a block at the start is reasoning; an unclosed one is reasoning up to the end
    assert view(PARSER.parse("[THINK]The user wants", None, "")) == view(PARSER.parse(think("The user wants"), None))
    later = PARSER.parse("Hi " + think("x") + WEATHER, None, "")
    assert (later.content, later.reasoning, len(later.tool_calls)) == ("Hi " + think("x"), None, 1)
    after_call = PARSER.parse(WEATHER + think("x"), None, "")
    assert after_call.content == think("x") and after_call.reasoning is None
    # a continued turn whose prompt left [THINK] open
    cont = PARSER.parse(" thinking[/THINK]Hello", None, "[THINK]I'm")
    assert (cont.reasoning, cont.content) == ("thinking", "Hello")
    # Magistral Small 2506's text <think> is not this format's (the mistral format reads it): content
    assert PARSER.parse("<think>r</think>c", None, "").content == "<think>r</think>c"


def _failures(cases) -> list:
    out = []
    for case in cases:
        out += [
            (case.id, r.mode)
            for r in evaluate_case(case, PARSER, FMT, ["oneshot", "whole", "char"], seed=3)
            if r.verdict != "pass"
        ]
    return out


def test_peer_cases_pass():
    cit = canitoolcall.load_suite().cases["mistral_reasoning"]
    lcp = llama_cpp.load_cases().for_format("mistral_reasoning")
    assert (len(cit), len(lcp)) == (14, 9)  # canitoolcall: Magistral-Small-2509 11, Ministral 3 Reasoning 3
    assert _failures(cit) == [] and _failures(lcp) == []


def test_rendered_shapes():
    tmpl = template(MODEL)
    weather, clock = tool("get_weather", {"city": {"type": "string"}}), tool("get_time", {})
    calls = [ToolCall("get_weather", {"city": "Paris"}), ToolCall("get_time", {})]
    case = render_scenario(tmpl, Scenario("s1", [weather, clock], calls, content_before="Checking."), FMT)
    assert (case.prefix, case.extra["stop"]) == ("", EOS)
    assert case.text == "Checking." + WEATHER + call_text("get_time", {})
    assert view(PARSER.parse(case.text, case.tools, case.prefix)) == view(case.expected)
    with pytest.raises(UnrepresentableError):  # reasoning_content is never read (lines 88-99)
        render_scenario(tmpl, Scenario("s2", [weather], calls[:1], reasoning="Think."), FMT)
    # a thinking chunk of the content (line 95) is written [THINK]...[/THINK], before the calls
    turn = {
        "role": "assistant",
        "content": [{"type": "thinking", "thinking": "Need it."}, {"type": "text", "text": "Sure."}],
        "tool_calls": [{"type": "function", "function": {"name": "get_time", "arguments": {}}}],
    }
    history = [{"role": "user", "content": HISTORY_USER}]
    gen = render_messages(tmpl, history, [clock], add_generation_prompt=True, **FMT.template_vars)
    full = render_messages(tmpl, [*history, turn], [clock], **FMT.template_vars)
    assert gen.endswith("[/INST]") and full.startswith(gen)
    completion = full[len(gen) :]
    assert completion == think("Need it.") + "Sure." + call_text("get_time", {}) + EOS
    got = PARSER.parse(completion.removesuffix(EOS), None, "")
    assert (got.reasoning, got.content, got.tool_calls) == ("Need it.", "Sure.", [ToolCall("get_time", {})])


class TestMistralReasoning(ParserConformance):
    CONFIG = Conformance(
        format="mistral_reasoning",
        parser=MistralReasoningParser,
        strict={k: Text(*v) for k, v in STRICT.items()},
        stops=("", EOS),
        recovered={k: Text(*v) for k, v in RECOVERED.items()},
        surfaced=SURFACED,
        cut_off={k: Text(*v) for k, v in CUT_OFF.items()},
        hold_back=(think("a [/THIN b [THINK c") + "[TH" + call_text("f", {"a": "[/THINK]"}) + EOS,),
        hold_back_prefixes=("", "[THINK]"),
        models=(MODEL,),
        modes=("oneshot", "roundtrip", "whole", "char", "random", "prefix"),
        leak_check_exempt=frozenset({"call-in-reasoning"}),  # the markers are reasoning text by design
    )

    def check_corpus(self, model, run):
        corpus = run.corpus
        assert corpus.count("curated") >= 100 and corpus.count("generated") >= 15
        assert any(c.id.startswith("edge-mistral_reasoning-") for c in corpus.cases)

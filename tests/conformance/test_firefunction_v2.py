"""Conformance of the project's own FireFunction v2 parser (``parsers/own/firefunction_v2.py``) and of the
firefunction_v2 family end to end (``fireworks-ai-llama-3-firefunction-v2.jinja`` from the llama-cpp-python 0.3.36
sdist; llama.cpp's FireFunction cases): the shared suite's config plus the tests specific to the format.
"""

from __future__ import annotations

import json

from conformance.suite import Conformance, ParserConformance, Text, assert_stream_matches, expected_view, template, view
from harness.core.messages import ToolCall
from harness.core.scenarios import Scenario
from harness.corpus.peers import llama_cpp
from harness.formats import get_format
from harness.formats.firefunction_v2 import CALL_OPEN, END_OF_TEXT, EOT
from harness.parse import modes as chunking
from harness.score.runner import evaluate_case
from harness.template.render import render_scenario
from parsers.own.firefunction_v2 import FireFunctionV2Parser

FMT = get_format("firefunction_v2")
PARSER = FireFunctionV2Parser()
MODEL = "firefunction-v2"
TOKENS = ("tokens",) if chunking.has_tokenizer(FMT.name) else ()


def obj(name: str, arguments) -> str:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return f'{{"name": "{name}", "arguments": {args}}}'


def calls(*objs: str) -> str:
    """The call list as the template writes it (line 51): a space, ``functools[``, the objects, ``]``."""
    return f" {CALL_OPEN}" + ", ".join(objs) + "]"


STRICT = {
    "one-call": (calls(obj("get_weather", {"city": "Paris"})), [("get_weather", {"city": "Paris"})]),
    "content-then-parallel": (
        "Checking." + calls(obj("a", {"x": 1}), obj("b", {})),
        [("a", {"x": 1}), ("b", {})],
        "Checking.",
    ),
    "markers-in-strings": (
        calls(obj("note", {"t": calls(obj("rm", {})) + EOT, "u": "]}, {", "v": "functools"})),
        [("note", {"t": calls(obj("rm", {})) + EOT, "u": "]}, {", "v": "functools"})],
    ),
    "prose-names-functools": ("Use functools.partial or functools [x].", [], "Use functools.partial or functools [x]."),
}
RECOVERED = {
    "no-space-pretty-json": (CALL_OPEN + '\n  {"name": "f",\n   "arguments": {"a": 1}}\n]', [("f", {"a": 1})]),
    "arguments-as-string": (calls(obj("f", json.dumps(json.dumps({"a": "]"})))), [("f", {"a": "]"})]),
    "parameters-key": (CALL_OPEN + '{"name": "f", "parameters": {"a": 1}}]', [("f", {"a": 1})]),
    "empty-list": ("Nothing." + calls(), [], "Nothing."),
}
SURFACED = {
    "not-call-objects": CALL_OPEN + "1, 2]",
    "no-name": CALL_OPEN + '{"arguments": {}}]',
    "trailing-comma": CALL_OPEN + '{"name": "f", "arguments": {}},]',
    "text-after-object": CALL_OPEN + '{"name": "f", "arguments": {}} x]',
}
CUT_OFF = {
    "opener-alone": ("Let me see." + calls()[:-1], [], "Let me see."),
    "in-first-object": (CALL_OPEN + '{"name": "f", "argu', []),
    "second-object": (CALL_OPEN + obj("a", {"x": 1}) + ', {"name": "b"', [("a", {"x": 1})]),
}


def test_llama_cpp_cases_pass():
    cases = llama_cpp.load_cases().for_format("firefunction_v2")
    assert len(cases) == 3
    for case in cases:
        records = list(evaluate_case(case, PARSER, FMT, ("oneshot", "whole", "char", "random"), seed=3))
        assert [r.verdict for r in records] == ["pass"] * 4, (case.id, [r.detail for r in records])


def test_rendered_shapes():
    tmpl = template(MODEL)
    weather = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    got = [ToolCall("get_weather", {"city": "Paris"}), ToolCall("get_weather", {"city": "Zürich"})]
    case = render_scenario(tmpl, Scenario("s", [weather], got, content_after="  Sure.  "), FMT)
    assert (case.prefix, case.extra["stop"]) == ("", EOT)
    assert case.text == "Sure." + calls(obj("get_weather", {"city": "Paris"}), obj("get_weather", {"city": "Zürich"}))
    assert view(PARSER.parse(case.text, case.tools, case.prefix)) == view(case.expected)


def test_bad_list_between_prose_keeps_the_prose():
    text = "Before." + CALL_OPEN + '{"name": 1}]' + " After." + calls(obj("g", {}))
    message = assert_stream_matches(PARSER, text, leak_check=False)
    assert view(message) == expected_view([("g", {})], "Before." + CALL_OPEN + '{"name": 1}] After.')
    assert len(message.diagnostics) == 1 and "surfaced" in message.diagnostics[0]


class TestFireFunctionV2(ParserConformance):
    CONFIG = Conformance(
        format="firefunction_v2",
        parser=FireFunctionV2Parser,
        strict={k: Text(*v) for k, v in STRICT.items()},
        stops=("", EOT, EOT + "\n", END_OF_TEXT),
        recovered={k: Text(*v) for k, v in RECOVERED.items()},
        surfaced=SURFACED,
        cut_off={k: Text(*v) for k, v in CUT_OFF.items()},
        hold_back=("a f fu functools funct " + calls(obj("f", {"a": "functools[<|eot"})) + " ok" + EOT,),
        models=(MODEL,),
        modes=("oneshot", "roundtrip", "whole", "char", "random", *TOKENS, "prefix"),
    )

    def check_corpus(self, model, run):
        corpus = run.corpus
        assert corpus.count("curated") >= 125 and corpus.count("generated") >= 20 and corpus.count("observed") == 0
        assert all("reasoning" in reason for _, reason in corpus.skipped)  # the template writes no reasoning
        assert any(c.id.startswith("edge-firefunction_v2-") for c in corpus.cases)

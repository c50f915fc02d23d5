"""Conformance of the project's own MiniCPM5 parser (``parsers/own/minicpm5.py``, the Qwen3-Coder XML reader with
MiniCPM5's bare ``<function name=...>`` calls and CDATA values) and of the minicpm5 family end to end
(``openbmb-MiniCPM5-1B.jinja`` from the llama-cpp-python 0.3.36 sdist; llama.cpp's MiniCPM5 cases).
"""

from __future__ import annotations

from conformance.suite import Conformance, ParserConformance, Text, template, tool, view
from harness.core.messages import Message, ToolCall
from harness.core.scenarios import Scenario
from harness.corpus.peers import llama_cpp
from harness.formats import get_format
from harness.score.runner import evaluate_case
from harness.template.render import render_scenario
from parsers.own.minicpm5 import MiniCpm5Parser

FMT = get_format("minicpm5")
PARSER = MiniCpm5Parser()
OFF = "<think>\n\n</think>\n\n"  # the thinking-off generation prompt's tail (line 174)


def fn(name: str, **params: str) -> str:
    """One call as the template writes it (lines 137-150): values as given (wrap CDATA yourself)."""
    return (
        f'<function name="{name}">'
        + "".join(f'<param name="{k}">{v}</param>' for k, v in params.items())
        + "</function>"
    )


S, INT, OBJ = {"type": "string"}, {"type": "integer"}, {"type": "object"}
TYPED = tool("t", {"s": S, "i": INT, "o": OBJ})
STRICT = {
    "one-call": Text(fn("get_weather", city="Paris"), [("get_weather", {"city": "Paris"})]),
    "content-and-two": Text("On it.\n" + fn("f", a="1") + "\n" + fn("g"), [("f", {"a": 1}), ("g", {})], "On it."),
    "cdata-and-literals": Text(
        fn("t", s="<![CDATA[a </param> & b\n]]>", i="7", o="{'k': [None, True]}"),
        [("t", {"s": "a </param> & b\n", "i": 7, "o": {"k": [None, True]}})],
        tools=[TYPED],
    ),
}
RECOVERED = {"spaced": Text('<function name="f">\n<param name="a">x</param>\n</function>', [("f", {"a": "x"})])}
#: no block opener: a function that does not parse whole (or is followed by prose) is content, with no diagnostic.
PROSE = ['<function name="f">oops</function>', fn("f", a="x") + " and more"]
CUT_OFF = {"mid-value": Text("Sure.\n" + fn("f") + '\n<function name="g"><param name="a">Zür', [("f", {})], "Sure.")}


def test_peer_cases_pass():
    cases = llama_cpp.load_cases().for_format("minicpm5")
    assert len(cases) == 8
    results = [(c.id, r) for c in cases for r in evaluate_case(c, PARSER, FMT, ["oneshot", "whole", "char"], seed=3)]
    assert [(i, r.mode) for i, r in results if r.verdict != "pass"] == []


def test_function_text_that_is_no_whole_call_is_content():
    for text in PROSE:
        got = PARSER.parse(text, None, OFF)
        assert (got.content, got.tool_calls) == (text, [])


def test_rendered_shapes():
    weather = tool("get_weather", {"city": S, "days": INT})
    calls = [ToolCall("get_weather", {"city": "a<b", "days": 2}), ToolCall("get_weather", {"city": "Oslo"})]
    case = render_scenario(template("minicpm5-1b"), Scenario("s1", [weather], calls, content_after="Hi."), FMT)
    assert case.text == "Hi.\n" + fn("get_weather", city="<![CDATA[a<b]]>", days="2") + "\n" + fn(
        "get_weather", city="Oslo"
    )
    assert view(PARSER.parse(case.text, case.tools, case.prefix)) == view(Message("Hi.", None, calls))


class TestMiniCpm5(ParserConformance):
    CONFIG = Conformance(
        format="minicpm5",
        parser=MiniCpm5Parser,
        prefix=OFF,
        strict=STRICT,
        stops=("", "<|im_end|>", "<|im_end|>\n"),
        recovered=RECOVERED,
        cut_off=CUT_OFF,
        hold_back=(fn("f", a="x <func y") + "<|im_end|>",),
        hold_back_prefixes=(OFF, "<think>\n", ""),
        models=("minicpm5-1b",),
        modes=("oneshot", "roundtrip", "whole", "char", "random", "prefix"),
    )

    def check_corpus(self, model, run):
        assert run.corpus.count("curated") >= 120 and run.corpus.count("generated") >= 20

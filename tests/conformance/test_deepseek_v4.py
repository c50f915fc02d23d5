"""Conformance of the project's own DeepSeek V4 parser (``parsers/own/deepseek_v4.py``, DeepSeek V3.2's DSML reader
with V4's ``<｜DSML｜tool_calls>`` block) and of the deepseek_v4 family end to end (``deepseek-ai-DeepSeek-V4.jinja``
from the llama-cpp-python 0.3.36 sdist; canitoolcall's DeepSeek-V4-Flash fixtures, llama.cpp's V4 cases).
"""

from __future__ import annotations

from conformance.suite import Conformance, ParserConformance, Text, template, tool, view
from harness.core.messages import ToolCall
from harness.core.scenarios import Scenario
from harness.corpus.peers import canitoolcall, llama_cpp
from harness.formats import get_format
from harness.formats.deepseek_v4 import BLOCK_CLOSE, BLOCK_OPEN
from harness.formats.deepseek_v31 import EOS
from harness.formats.deepseek_v32 import INVOKE_CLOSE, INVOKE_OPEN, PARAM_CLOSE, PARAM_OPEN
from harness.parse import modes as chunking
from harness.score.runner import evaluate_case
from harness.template.render import render_scenario
from parsers.own.deepseek_v4 import DeepSeekV4Parser

FMT = get_format("deepseek_v4")
PARSER = DeepSeekV4Parser()
TOKENS = ("tokens",) if chunking.has_tokenizer(FMT.name) else ()


def invoke(name: str, *params: str) -> str:
    return f'{INVOKE_OPEN} name="{name}">\n' + "".join(params) + ("" if params else "\n") + f"{INVOKE_CLOSE}\n"


def param(key: str, value: str, string: bool = True) -> str:
    return f'{PARAM_OPEN} name="{key}" string="{"true" if string else "false"}">{value}{PARAM_CLOSE}\n'


def block(*calls: str) -> str:
    return f"\n\n{BLOCK_OPEN}\n" + "".join(calls) + BLOCK_CLOSE


STRICT = {
    "one-call": (block(invoke("get_weather", param("city", "Paris"))), [("get_weather", {"city": "Paris"})]),
    "typed-and-empty": (
        "Both." + block(invoke("f", param("n", "42", False), param("s", "42")), invoke("g")),
        [("f", {"n": 42, "s": "42"}), ("g", {})],
        "Both.",
    ),
    "v32-block-in-string": (
        block(invoke("echo", param("t", f"<｜DSML｜function_calls>{BLOCK_OPEN}"))),
        [("echo", {"t": f"<｜DSML｜function_calls>{BLOCK_OPEN}"})],
    ),
}
RECOVERED = {
    "self-closing-invoke": (f'{BLOCK_OPEN}\n{INVOKE_OPEN} name="submit"/>\n{BLOCK_CLOSE}', [("submit", {})]),
    "no-invoke-closer": (
        f"{BLOCK_OPEN}\n" + invoke("f", param("a", "1"))[: -len(INVOKE_CLOSE) - 1] + BLOCK_CLOSE,
        [("f", {"a": "1"})],
    ),
}
SURFACED = {"bad-invoke-tag": f"{BLOCK_OPEN}\n{INVOKE_OPEN} nam=x>\n{INVOKE_CLOSE}\n{BLOCK_CLOSE}"}
CUT_OFF = {"mid-value": (f'{BLOCK_OPEN}\n{INVOKE_OPEN} name="f">\n{PARAM_OPEN} name="a" string="true">Zür', [])}


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
    cit = canitoolcall.load_suite().cases["deepseek_v4"]
    lcp = llama_cpp.load_cases().for_format("deepseek_v4")
    assert (len(cit), len(lcp)) == (18, 11)  # llama.cpp: V4 10, V4-Flash-0731 1
    assert _failures(cit) == [] and _failures(lcp) == []


def test_rendered_shapes():
    tmpl = template("deepseek-v4-flash")
    calls = [ToolCall("get_weather", {"city": "Paris"}), ToolCall("get_time", {})]
    weather, clock = tool("get_weather", {"city": {"type": "string"}}), tool("get_time", {})
    case = render_scenario(tmpl, Scenario("s1", [weather, clock], calls), FMT)
    assert (case.prefix, case.extra["stop"]) == ("</think>", EOS)
    assert case.text == block(invoke("get_weather", param("city", "Paris")), invoke("get_time"))
    on = render_scenario(tmpl, Scenario("s2", [weather], calls[:1], reasoning="Think."), FMT)
    assert on.prefix == "<think>" and on.text.startswith("Think.</think>\n\n" + BLOCK_OPEN)
    for c in (case, on):
        assert view(PARSER.parse(c.text, c.tools, c.prefix)) == view(c.expected)


class TestDeepSeekV4(ParserConformance):
    CONFIG = Conformance(
        format="deepseek_v4",
        parser=DeepSeekV4Parser,
        prefix="</think>",
        strict={k: Text(*v) for k, v in STRICT.items()},
        stops=("", EOS),
        recovered={k: Text(*v) for k, v in RECOVERED.items()},
        surfaced=SURFACED,
        cut_off={k: Text(*v) for k, v in CUT_OFF.items()},
        hold_back=(block(invoke("f", param("a", "x <｜DSML｜ y"))) + EOS,),
        hold_back_prefixes=("</think>", "<think>"),
        models=("deepseek-v4-flash",),
        modes=("oneshot", "roundtrip", "whole", "char", "random", *TOKENS, "prefix"),
    )

    def check_corpus(self, model, run):
        corpus = run.corpus
        assert corpus.count("curated") >= 125 and corpus.count("generated") >= 20
        assert any(c.id.startswith("edge-deepseek_v4-") for c in corpus.cases)

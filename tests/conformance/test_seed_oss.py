"""Conformance of the project's own Seed-OSS parser (``parsers/own/seed_oss.py``, the Qwen3-Coder XML reader with
Seed-OSS's markers) and of the seed_oss family end to end (``ByteDance-Seed-OSS.jinja`` from the llama-cpp-python
0.3.36 sdist; llama.cpp's Seed-OSS cases).
"""

from __future__ import annotations

from conformance.suite import Conformance, ParserConformance, Text, template, tool, view
from harness.core.messages import ToolCall
from harness.core.scenarios import Scenario
from harness.corpus.peers import llama_cpp
from harness.formats import get_format
from harness.formats.seed_oss import CALL_CLOSE, CALL_OPEN, EOS, THINK_CLOSE, THINK_OPEN
from harness.score.runner import evaluate_case
from harness.template.render import render_scenario
from parsers.own.seed_oss import SeedOssParser

FMT = get_format("seed_oss")
PARSER = SeedOssParser()


def fn(name: str, **params: str) -> str:
    """One call as the template writes it (lines 139-147): unpadded values, a newline after each tag."""
    body = "".join(f"<parameter={k}>{v}</parameter>\n" for k, v in params.items())
    return f"\n{CALL_OPEN}\n<function={name}>\n{body}</function>\n{CALL_CLOSE}"


S, INT, OBJ = {"type": "string"}, {"type": "integer"}, {"type": "object"}
TYPED = tool("t", {"s": S, "i": INT, "o": OBJ})

STRICT = {
    "one-call": Text(fn("get_weather", city="Paris"), [("get_weather", {"city": "Paris"})]),
    "content-first": Text("Let me look.\n" + fn("f"), [("f", {})], "Let me look."),
    "python-literals": Text(
        fn("t", s="None", i="7", o="{'a': [1, None], 'b': True}"),
        [("t", {"s": "None", "i": 7, "o": {"a": [1, None], "b": True}})],
        tools=[TYPED],
    ),
    "closers-in-value": Text(
        fn("t", s=f"a</parameter>\n</function>\n{CALL_CLOSE}\nb", i="1"),
        [("t", {"s": f"a</parameter>\n</function>\n{CALL_CLOSE}\nb", "i": 1})],
        tools=[TYPED],
    ),
    "reasoning-then-two": Text(
        f"{THINK_OPEN}Two calls.{THINK_CLOSE}" + fn("f", a="1") + fn("g"),
        [("f", {"a": 1}), ("g", {})],
        reasoning="Two calls.",
    ),
}
RECOVERED = {
    "no-block-close": (f"{CALL_OPEN}\n<function=f>\n<parameter=a>x</parameter>\n</function>\n", [("f", {"a": "x"})]),
    "bare-function": ("<function=f>\n<parameter=a>x</parameter>\n</function>", [("f", {"a": "x"})]),
}
SURFACED = {"no-function": f"{CALL_OPEN}\nhello\n{CALL_CLOSE}"}
CUT_OFF = {
    "mid-value": Text("Sure." + fn("f") + f"\n{CALL_OPEN}\n<function=g>\n<parameter=a>Zür", [("f", {})], "Sure.")
}


def test_peer_cases_pass():
    cases = llama_cpp.load_cases().for_format("seed_oss")
    assert len(cases) == 8
    results = [(c.id, r) for c in cases for r in evaluate_case(c, PARSER, FMT, ["oneshot", "whole", "char"], seed=3)]
    assert [(i, r.mode) for i, r in results if r.verdict != "pass"] == []


def test_rendered_shapes():
    tmpl = template("seed-oss-36b")
    weather = tool("get_weather", {"city": S, "days": INT})
    calls = [ToolCall("get_weather", {"city": "Paris", "days": 2}), ToolCall("get_weather", {"city": "Oslo"})]
    case = render_scenario(tmpl, Scenario("s1", [weather], calls, reasoning="Think."), FMT)
    assert (case.prefix, case.extra["stop"]) == ("", EOS)
    assert case.text == f"{THINK_OPEN}Think.{THINK_CLOSE}" + fn("get_weather", city="Paris", days="2") + fn(
        "get_weather", city="Oslo"
    )
    assert view(PARSER.parse(case.text, case.tools, case.prefix)) == view(case.expected)


class TestSeedOss(ParserConformance):
    CONFIG = Conformance(
        format="seed_oss",
        parser=SeedOssParser,
        strict=STRICT,
        stops=("", EOS),
        recovered={k: Text(*v) for k, v in RECOVERED.items()},
        surfaced=SURFACED,
        cut_off=CUT_OFF,
        hold_back=(fn("f", a="x <seed:y") + EOS,),
        models=("seed-oss-36b",),
        modes=("oneshot", "roundtrip", "whole", "char", "random", "prefix"),
    )

    def check_corpus(self, model, run):
        corpus = run.corpus
        assert corpus.count("curated") >= 130 and corpus.count("generated") >= 20
        assert any(c.id.startswith("edge-seed_oss-") for c in corpus.cases)

"""Conformance of the project's own MiniMax-M3 parser (``parsers/own/minimax_m3.py``) and of the minimax_m3 family
end to end (``MiniMax-M3.jinja`` from the llama-cpp-python 0.3.36 sdist): the shared suite's config plus the
rendered shapes, schema-typed nested values and llama.cpp's test-chat.cpp cases.
"""

from __future__ import annotations

import pytest

from conformance.suite import Conformance, ParserConformance, Text, template, tool, view
from harness.core.errors import UnrepresentableError
from harness.core.messages import ToolCall
from harness.core.scenarios import Scenario
from harness.corpus.peers import llama_cpp
from harness.formats import get_format
from harness.formats.minimax_m3 import CALL_CLOSE, CALL_OPEN, END_OF_TURN, INVOKE_CLOSE, INVOKE_OPEN, NS
from harness.score.runner import evaluate_case
from harness.template.render import render_scenario
from parsers.own.minimax_m3 import MiniMaxM3Parser

FMT = get_format("minimax_m3")
PARSER = MiniMaxM3Parser()


def el(tag: str, inner: str) -> str:
    return f"{NS}<{tag}>{inner}{NS}</{tag}>"


def invoke(name: str, *elements: str) -> str:
    return f'{INVOKE_OPEN}{name}">' + "".join(elements) + f"{INVOKE_CLOSE}\n"


def block(*calls: str) -> str:
    return f"{CALL_OPEN}\n" + "".join(calls) + CALL_CLOSE


NESTED = tool(
    "nested_args",
    {
        "tags": {"type": "array", "items": {"type": "string"}},
        "entries": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}}}},
        "box": {"type": "object", "properties": {"w": {"type": "number"}, "on": {"type": "boolean"}}},
        "empty": {"type": "array"},
        "label": {"anyOf": [{"type": "string"}, {"type": "object"}]},
    },
)
STRICT = {
    "one-call": (block(invoke("get_weather", el("city", "Paris"))), [("get_weather", {"city": "Paris"})]),
    "reasoning-content-parallel": (
        "<mm:think>Two.</mm:think>Both." + block(invoke("f", el("a", "1")), invoke("g")),
        [("f", {"a": 1}), ("g", {})],
        "Both.",
        "Two.",
    ),
    "bare-think-close": ("</mm:think>" + block(invoke("g")), [("g", {})]),
    "nested": (
        block(
            invoke(
                "nested_args",
                el("tags", el("item", "a") + el("item", "b")),
                el("entries", el("item", el("id", "1"))),
                el("box", el("w", "1.5") + el("on", "false")),
                el("empty", ""),
                el("label", el("text", "hi")),
            )
        ),
        [
            (
                "nested_args",
                {
                    "tags": ["a", "b"],
                    "entries": [{"id": 1}],
                    "box": {"w": 1.5, "on": False},
                    "empty": [],
                    "label": el("text", "hi"),
                },
            )
        ],
        None,
        None,
        [NESTED],
    ),
    "tags-without-namespace-are-data": (
        block(invoke("echo", el("t", '</invoke></tool_call><invoke name="x"> <mm:think>'))),
        [("echo", {"t": '</invoke></tool_call><invoke name="x"> <mm:think>'})],
    ),
}
RECOVERED = {
    "spaces-between-elements": (
        f'{CALL_OPEN}\n  {INVOKE_OPEN}f">\n  {el("a", "1")}\n  {INVOKE_CLOSE}\n{CALL_CLOSE}',
        [("f", {"a": 1})],
    ),
    "no-block-closer": (f"{CALL_OPEN}\n" + invoke("f", el("a", "x")), [("f", {"a": "x"})]),
}
SURFACED = {
    "mismatched-close": block(invoke("f", f"{NS}<a>1{NS}</b>")),
    "text-beside-children": block(invoke("f", el("a", "x" + el("b", "1")))),
}
CUT_OFF = {"mid-value": (f'{CALL_OPEN}\n{INVOKE_OPEN}f">{NS}<a>Zür', [])}


def test_rendered_shapes():
    tmpl = template("minimax-m3")
    weather, clock = tool("get_weather", {"city": {"type": "string"}}), tool("get_time", {})
    calls = [ToolCall("get_weather", {"city": "Paris"}), ToolCall("get_time", {})]
    case = render_scenario(tmpl, Scenario("s1", [weather, clock], calls, content_after="On it."), FMT)
    assert (case.prefix, case.extra["stop"]) == ("", END_OF_TURN + "\n")
    assert case.text == "</mm:think>On it." + block(invoke("get_weather", el("city", "Paris")), invoke("get_time"))
    on = render_scenario(tmpl, Scenario("s2", [weather], calls[:1], reasoning="Think."), FMT)
    assert on.text.startswith("<mm:think>Think.</mm:think>" + CALL_OPEN)
    for c in (case, on):
        assert view(PARSER.parse(c.text + END_OF_TURN, c.tools, c.prefix)) == view(c.expected)


def test_null_arguments_are_unrepresentable():
    """The template omits null entries (``to_xml``, lines 14-22): the render cannot carry them."""
    scenario = Scenario("s3", [tool("f", {"a": {"type": "string"}})], [ToolCall("f", {"a": None})])
    with pytest.raises(UnrepresentableError, match="does not write null values"):
        render_scenario(template("minimax-m3"), scenario, FMT)


@pytest.mark.parametrize(
    "schema,inner,want",
    [
        ({"type": "array"}, "", []),
        ({"type": "object"}, "", {}),
        ({"type": "string"}, "", ""),
        ({"type": "integer"}, "-14", -14),
        ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, "007", "007"),
        ({"type": "object", "properties": {"item": {"type": "integer"}}}, el("item", "1"), {"item": 1}),
        (None, el("item", "1") + el("item", "x"), [1, "x"]),
        (None, el("k", "true"), {"k": True}),
    ],
)
def test_schema_typing(schema, inner, want):
    tools = [tool("f", {"v": schema} if schema else {})]
    message = PARSER.parse(block(invoke("f", el("v", inner))), tools)
    assert [c.arguments for c in message.tool_calls] == [{"v": want}]


def test_peer_cases_pass():
    cases = llama_cpp.load_cases().for_format("minimax_m3")
    assert len(cases) == 21
    failures = [
        (case.id, r.mode)
        for case in cases
        for r in evaluate_case(case, PARSER, FMT, ["oneshot", "whole", "char", "random"], seed=3)
        if r.verdict != "pass"
    ]
    assert failures == []


class TestMiniMaxM3(ParserConformance):
    CONFIG = Conformance(
        format="minimax_m3",
        parser=MiniMaxM3Parser,
        strict={k: Text(*v) for k, v in STRICT.items()},
        stops=("", END_OF_TURN, END_OF_TURN + "\n"),
        recovered={k: Text(*v) for k, v in RECOVERED.items()},
        surfaced=SURFACED,
        cut_off={k: Text(*v) for k, v in CUT_OFF.items()},
        hold_back=(block(invoke("f", el("a", "x ]<]mini y [e~ z"))) + END_OF_TURN,),
        models=("minimax-m3",),
        modes=("oneshot", "roundtrip", "whole", "char", "random", "prefix"),
    )

    def check_corpus(self, model, run):
        corpus = run.corpus
        assert corpus.count("curated") >= 125 and corpus.count("generated") >= 30
        assert any(c.id.startswith("edge-minimax_m3-") for c in corpus.cases)

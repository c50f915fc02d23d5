"""Conformance of the project's own GigaChat 3 parser (``parsers/own/gigachat3.py``, the Hermes JSON reader with the
``function call`` role message as the opener) and of the gigachat3 family end to end (``GigaChat3-10B-A1.8B.jinja``
from the llama-cpp-python 0.3.36 sdist; llama.cpp's GigaChat V3 cases). The GigaChat 3.1 file reuses
:func:`gigachat_texts`.
"""

from __future__ import annotations

import json

from conformance.suite import Conformance, ParserConformance, Text, template, tool, view
from harness.core.messages import Message, ToolCall
from harness.core.scenarios import Scenario
from harness.corpus.peers import llama_cpp
from harness.formats import get_format
from harness.formats.gigachat3 import CALL_OPEN, MESSAGE_SEP
from harness.score.runner import evaluate_case
from harness.template.render import render_scenario
from parsers.own.gigachat3 import GigaChat3Parser

FMT = get_format("gigachat3")
PARSER = GigaChat3Parser()


def gigachat_texts(opener: str, lead: str) -> dict:
    """The shared config texts of a GigaChat format whose call is ``opener`` + ``lead`` + one JSON object."""

    def one(name: str, arguments: dict) -> str:
        return f"{opener}{lead}" + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)

    return {
        "strict": {
            "one-call": Text(one("f", {"a": 1}), [("f", {"a": 1})]),
            "content-first": Text("Looking." + one("get", {"q": "Zürich"}), [("get", {"q": "Zürich"})], "Looking."),
            "markers-in-string": Text(
                one("f", {"s": f"{opener} {MESSAGE_SEP}"}), [("f", {"s": f"{opener} {MESSAGE_SEP}"})]
            ),
        },
        "stops": ("", MESSAGE_SEP, MESSAGE_SEP + "\n\n"),
        "recovered": {
            "parameters": Text(f'{opener}{lead}{{"name": "f", "parameters": {{"a": 1}}}}', [("f", {"a": 1})]),
            "string-args": Text(f'{opener}{lead}{{"name": "f", "arguments": "{{\\"a\\": 1}}"}}', [("f", {"a": 1})]),
        },
        "surfaced": {"not-json": f"{opener}{lead}call f"},
        "cut_off": {"mid-json": Text("Sure." + one("f", {"a": "long text"})[:-8], [], "Sure.")},
        "hold_back": (one("f", {"a": "x <|mess y"}) + MESSAGE_SEP,),
        "modes": ("oneshot", "roundtrip", "whole", "char", "random", "prefix"),
    }


def peer_failures(fmt_name: str, parser, fmt) -> list:
    cases = llama_cpp.load_cases().for_format(fmt_name)
    assert len(cases) == 4
    results = [(c.id, r) for c in cases for r in evaluate_case(c, parser, fmt, ["oneshot", "whole", "char"], seed=3)]
    return [(i, r.mode) for i, r in results if r.verdict != "pass"]


def test_peer_cases_pass():
    assert peer_failures("gigachat3", PARSER, FMT) == []


def test_rendered_shapes():
    weather = tool("get_weather", {"city": {"type": "string"}})
    call = ToolCall("get_weather", {"city": "Paris"})
    case = render_scenario(template("gigachat3-10b-a1.8b"), Scenario("s1", [weather], [call], content_after="Hi."), FMT)
    assert (case.prefix, case.extra["stop"]) == ("", MESSAGE_SEP + "\n\n")
    assert case.text == f'Hi.{CALL_OPEN}\n{{"name": "get_weather", "arguments": {{"city": "Paris"}}}}'
    assert view(PARSER.parse(case.text, case.tools, case.prefix)) == view(Message("Hi.", None, [call]))


class TestGigaChat3(ParserConformance):
    CONFIG = Conformance(
        format="gigachat3", parser=GigaChat3Parser, models=("gigachat3-10b-a1.8b",), **gigachat_texts(CALL_OPEN, "\n")
    )

    def check_corpus(self, model, run):
        assert run.corpus.count("curated") >= 110 and run.corpus.count("generated") >= 20

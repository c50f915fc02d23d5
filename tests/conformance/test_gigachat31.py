"""Conformance of the project's own GigaChat 3.1 parser (``parsers/own/gigachat31.py``, the Hermes JSON reader with
``<|function_call|>`` as the opener) and of the gigachat31 family end to end (``GigaChat3.1-10B-A1.8B.jinja`` from
the llama-cpp-python 0.3.36 sdist; llama.cpp's GigaChat V3.1 cases).
"""

from __future__ import annotations

from conformance.suite import Conformance, ParserConformance, template, tool, view
from conformance.test_gigachat3 import gigachat_texts, peer_failures
from harness.core.messages import Message, ToolCall
from harness.core.scenarios import Scenario
from harness.formats import get_format
from harness.formats.gigachat31 import CALL_OPEN, MESSAGE_SEP
from harness.template.render import render_scenario
from parsers.own.gigachat31 import GigaChat31Parser

FMT = get_format("gigachat31")
PARSER = GigaChat31Parser()


def test_peer_cases_pass():
    assert peer_failures("gigachat31", PARSER, FMT) == []


def test_rendered_shapes():
    weather = tool("get_weather", {"city": {"type": "string"}})
    call = ToolCall("get_weather", {"city": "Paris"})
    tmpl = template("gigachat3.1-10b-a1.8b")
    case = render_scenario(tmpl, Scenario("s1", [weather], [call], content_after="Hi."), FMT)
    assert (case.prefix, case.extra["stop"]) == ("", MESSAGE_SEP + "\n\n")
    assert case.text == f'Hi.{CALL_OPEN}{{"name": "get_weather", "arguments": {{"city": "Paris"}}}}'
    assert view(PARSER.parse(case.text, case.tools, case.prefix)) == view(Message("Hi.", None, [call]))


class TestGigaChat31(ParserConformance):
    CONFIG = Conformance(
        format="gigachat31", parser=GigaChat31Parser, models=("gigachat3.1-10b-a1.8b",), **gigachat_texts(CALL_OPEN, "")
    )

    def check_corpus(self, model, run):
        assert run.corpus.count("curated") >= 110 and run.corpus.count("generated") >= 20

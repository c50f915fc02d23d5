"""Conformance of the project's own GLM-4.7 parser (``parsers/own/glm47.py``: the GLM reader of
``parsers/own/glm45.py`` whose text may start inside reasoning) and of the glm47 family end to end (GLM-4.7-Flash,
``GLM-4.7-Flash.jinja`` from the llama-cpp-python 0.3.36 sdist): the shared suite's config (the GLM texts of
``tests/conformance/test_glm45.py``) plus the tests specific to GLM-4.7. Layout-independent behaviour of the shared
reader is tested in ``tests/conformance/test_glm45.py`` and ``tests/conformance/test_glm45_properties.py`` for both
parsers.
"""

from __future__ import annotations

import pytest

from conformance.glm45_helpers import CHECK_DELTA, call45, call47
from conformance.glm45_helpers import stream_matches as assert_stream_matches
from conformance.suite import Conformance, ParserConformance, expected_view, template, tool, view
from conformance.test_glm45 import GLM_TEXTS, check_glm_corpus
from harness.core.messages import ToolCall
from harness.core.protocol import run_stream
from harness.core.scenarios import Scenario
from harness.formats import get_format
from harness.template.render import render_scenario
from parsers.own.glm47 import Glm47Parser

FMT = get_format("glm47")
PARSER = Glm47Parser()
WEATHER = tool("get_weather", {"city": {"type": "string"}, "days": {"type": "integer"}})


def test_inline_layout_and_newline_layout_both_read():
    calls = [("get_weather", {"city": "Paris", "days": 3}), ("get_time", {})]
    for write in (call47, call45):
        text = "".join(write(n, a) for n, a in calls)
        message = assert_stream_matches(text, tools=[WEATHER], parser=PARSER)
        assert view(message) == expected_view(calls)


def test_rendered_shapes():
    call = ToolCall("get_weather", {"city": "Paris", "days": 3})
    case = render_scenario(
        template("glm-4.7-flash"),
        Scenario("s1", [WEATHER], [call, ToolCall("get_time", {})], content_after="Checking."),
        FMT,
    )
    assert (case.prefix, case.extra["stop"]) == ("</think>", "")  # thinking off: the prompt pre-fills </think>
    assert case.text == (
        "Checking.<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>"
        "<arg_key>days</arg_key><arg_value>3</arg_value></tool_call><tool_call>get_time</tool_call>"
    )
    assert view(PARSER.parse(case.text, case.tools, case.prefix)) == view(case.expected)


def test_spark_x25_rendered_shapes():
    """Spark2.5.jinja writes GLM-4.7's inline calls; its prompt pre-fills <think> and its turn ends with EOS."""
    from harness.corpus.peers import llama_cpp
    from harness.formats.glm47 import SPARK_EOS

    call = ToolCall("get_weather", {"city": "Paris", "days": 3})
    case = render_scenario(template("spark-x2.5-4b"), Scenario("s1", [WEATHER], [call], reasoning="Hmm."), FMT)
    assert (case.prefix, case.extra["stop"]) == ("<think>", SPARK_EOS)
    assert case.text == (
        "Hmm.</think><tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>"
        "<arg_key>days</arg_key><arg_value>3</arg_value></tool_call>"
    )
    assert view(PARSER.parse(case.text + SPARK_EOS, case.tools, case.prefix)) == view(case.expected)
    spark = [c for c in llama_cpp.load_cases().for_format("glm47") if c.id.startswith("llama.cpp/Spark2.5/")]
    assert len(spark) == 6
    assert [c.id for c in spark if view(PARSER.parse(c.text, c.tools, c.prefix)) != view(c.expected)] == []


def test_reasoning_starts_the_text_when_the_prompt_prefilled_think():
    """The generation prompt ends ``<think>`` and the full render repeats it: the case's prefix is ``<think>`` and
    the completion starts inside reasoning: ``REASONING</think>CONTENT<tool_call>...``."""
    scenario = Scenario(
        "s2",
        [WEATHER],
        [ToolCall("get_weather", {"city": "Oslo", "days": 1})],
        reasoning="Oslo, so call it.",
        content_after="On it.",
    )
    case = render_scenario(template("glm-4.7-flash"), scenario, FMT)
    assert case.prefix == "<think>" and case.text.startswith("Oslo, so call it.</think>On it.<tool_call>get_weather")
    message = assert_stream_matches(case.text, case.prefix, case.tools, parser=PARSER)
    assert view(message) == view(case.expected)
    no_call = render_scenario(
        template("glm-4.7-flash"), Scenario("s3", [WEATHER], [], reasoning="Hmm.", content_after="Hello."), FMT
    )
    assert no_call.text == "Hmm.</think>Hello."
    assert view(assert_stream_matches(no_call.text, parser=PARSER)) == ("Hello.", "Hmm.", [])


@pytest.mark.parametrize(
    "prefix,text,want",
    [
        ("", "plain answer", ("plain answer", None, [])),
        ("", "r1\nr2</think>answer", ("answer", "r1\nr2", [])),
        ("", "<think>r</think>answer", ("answer", "r", [])),  # an explicit block after all
        ("", "Hi <think>x</think>", (None, "Hi <think>x", [])),  # limitation: a </think> before any call ends reasoning
        ("<|assistant|><think>", "r</think>answer", ("answer", "r", [])),
        ("<|assistant|><think>", "still thinking", (None, "still thinking", [])),
        ("<|assistant|></think>", "a</think>b", ("a</think>b", None, [])),  # thinking off: content throughout
    ],
)
def test_think_prefixes(prefix, text, want):
    assert view(assert_stream_matches(text, prefix, parser=PARSER, leak_check=False)) == want


def test_call_before_think_close_decides_content():
    text = "Sure." + call47("note", {"t": "</think> inside"}) + "done"
    message = assert_stream_matches(text, parser=PARSER, leak_check=False)
    assert view(message) == expected_view([("note", {"t": "</think> inside"})], "Sure.done")


def test_undecided_text_is_held_until_decided_then_streams():
    session = PARSER.stream()
    assert session.feed("Let me think") == []
    assert session.feed(" more.") == []
    deltas = session.feed("</think>Ans")
    assert [(d.reasoning, d.content) for d in deltas] == [("Let me think more.", None), (None, "Ans")]
    assert [d.content for d in session.feed("wer")] == ["wer"]
    session = PARSER.stream()
    assert session.feed("Plain answer") == []
    assert [d.content for d in session.finish()] == ["Plain answer"]
    session = PARSER.stream(None, "<|assistant|></think>")  # thinking off: streams at once
    assert [d.content for d in session.feed("Plain answer")] == ["Plain answer"]


@pytest.mark.parametrize(
    "text", ["r < s</think>ok " + call47("f", {"a": "</think>"}) + "<|user|>", "a <tool b </think c"]
)
def test_hold_back_at_every_split_point_without_prefix(text):
    final = PARSER.parse(text)
    for k in range(len(text) + 1):
        session = PARSER.stream()
        first = session.feed(text[:k])
        assert (final.content or "").startswith("".join(d.content or "" for d in first)), k
        assert (final.reasoning or "").startswith("".join(d.reasoning or "" for d in first)), k
        assert view(run_stream(PARSER, [text[:k], text[k:]], on_delta=CHECK_DELTA)) == view(final), k


def test_observed_cases_pass():
    from harness.core.cases import load_cases
    from harness.corpus.build import OBSERVED_FILE
    from harness.score.verdicts import score

    cases = load_cases(OBSERVED_FILE, fmt="glm47", default_slice="observed")
    assert len(cases) == 2
    for case in cases:
        message = assert_stream_matches(case.text, case.prefix, case.tools, parser=PARSER)
        assert score(case, message, FMT).verdict == "pass", case.id


class TestGlm47(ParserConformance):
    CONFIG = Conformance(format="glm47", parser=Glm47Parser, models=("glm-4.7-flash", "spark-x2.5-4b"), **GLM_TEXTS)

    def check_corpus(self, model, run):
        check_glm_corpus(run, 2)

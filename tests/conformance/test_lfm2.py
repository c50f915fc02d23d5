"""Conformance of the project's own LFM2 / LFM2.5 parser (``parsers/own/lfm2.py``) and of the lfm2 family end to
end (``LFM2.5-8B-A1B.jinja`` writes calls; its two siblings write content only): the shared suite's config plus the
tests specific to the format.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.pythonic_helpers import KEYS, NAMES, call_list, values
from conformance.suite import (
    Conformance,
    ParserConformance,
    Text,
    delta_checker,
    expected_view,
    split_at,
    template,
    tool,
    view,
)
from harness.core.messages import ToolCall
from harness.core.protocol import run_stream
from harness.core.scenarios import Scenario
from harness.corpus.peers.llama_cpp import load_cases
from harness.formats import get_format
from harness.score.runner import evaluate_case
from harness.template.render import render_scenario
from parsers.own.lfm2 import Lfm2Parser

FMT = get_format("lfm2")
PARSER = Lfm2Parser()
CHECK_DELTA = delta_checker(FMT)
OPEN, CLOSE = "<|tool_call_start|>", "<|tool_call_end|>"


def block(body: str) -> str:
    return OPEN + body + CLOSE


STRICT = {
    "one-call": (block("[get_time(city='Paris')]"), [("get_time", {"city": "Paris"})]),
    "parallel": (block("[f(arg1=1), g(arg1=1, arg2=2)]"), [("f", {"arg1": 1}), ("g", {"arg1": 1, "arg2": 2})]),
    "template-literals": (
        block('[set(config={"enabled": true, "note": null}, on=True, off=None, l=[\'a\', 1, 1.5e-07])]'),
        [("set", {"config": {"enabled": True, "note": None}, "on": True, "off": None, "l": ["a", 1, 1.5e-07]})],
    ),
    "raw-keys": (
        block("[update(first name='Ada', a.b=1, 2fa=True)]"),
        [("update", {"first name": "Ada", "a.b": 1, "2fa": True})],
    ),
    "dotted-name": (block('[Calendar.create_event(title="demo")]'), [("Calendar.create_event", {"title": "demo"})]),
    "escapes": (
        block("[python(code=\"def hello():\\n    print('hey')\")]"),
        [("python", {"code": "def hello():\n    print('hey')"})],
    ),
    "markers-in-strings": (
        block(f"[note(t='{CLOSE} {OPEN}[x(a=1)] <|im_end|> </think>')]"),
        [("note", {"t": f"{CLOSE} {OPEN}[x(a=1)] <|im_end|> </think>"})],
    ),
    "content-before": (
        "Let me check the time." + block("[get_time(city='Paris')]"),
        [("get_time", {"city": "Paris"})],
        "Let me check the time.",
    ),
    "reasoning": ("<think>I'm\nthinking</think>" + block("[f(arg1=1)]"), [("f", {"arg1": 1})], None, "I'm\nthinking"),
    "call-inside-reasoning": (
        "<think>about " + block("[f(arg1=1)]") + " hmm</think>" + block("[f(arg1=1)]"),
        [("f", {"arg1": 1})],
        None,
        "about " + block("[f(arg1=1)]") + " hmm",
    ),
    "markdown-links": (
        "Use [link text](url). Example: [Wikipedia](https://www.wikipedia.org).",
        [],
        "Use [link text](url). Example: [Wikipedia](https://www.wikipedia.org).",
    ),
    "empty-args": (block("[empty_args()]"), [("empty_args", {})]),
}

RECOVERED = {
    "closer-missing-at-end": (OPEN + "[f(a=1)]", [("f", {"a": 1})]),
    "closer-missing-before-next": (OPEN + "[f(a=1)]" + block("[g()]"), [("f", {"a": 1}), ("g", {})]),
    "whitespace": (OPEN + "\n [f(a=1)] \n" + CLOSE, [("f", {"a": 1})]),
}

SURFACED = {
    "json-calls": block('[{"name": "f", "arguments": {}}]'),
    "positional": block("[f(1)]"),
    "not-a-list": block("f(a=1)"),
    "text-after-list": block("[f(a=1)] and more"),
}

CUT_OFF = {
    "unterminated-args": (OPEN + "[special_function(arg1=", [], None),
    "head-cut": ("One moment." + OPEN + "[special_fun", [], "One moment."),
    "opener-alone": (OPEN, [], None),
    "second-block": (block("[a(x=1)]") + OPEN + "[b(q=[1, ", [("a", {"x": 1})], None),
}

HOLD_BACK_TEXTS = [
    "Sure <|tool_ " + block("[f(a='<|im_end|>')]") + " ok<|im_end|>",
    "<think>a <|tool_call_st b</think> c <|tool_call_e d <thi",
    "x\n" + block("[bad(1)]") + "\ny",
]


def test_parser_reads_every_llama_cpp_case_one_shot():
    """Every LFM2 case of test-chat.cpp the judge can apply parses as llama.cpp expects, one-shot and streamed (a
    streamed delta holding call markers the expected reasoning holds too is no leak: test-chat.cpp:5259)."""
    cases = load_cases().for_format("lfm2")
    assert len(cases) == 52
    failing = []
    for case in cases:
        records = list(evaluate_case(case, PARSER, FMT, ("oneshot", "whole"), seed=3))
        failing += [(case.id, r.mode) for r in records if r.verdict not in ("pass", "soft_pass")]
    assert failing == []


def test_rendered_shape_through_the_real_template():
    weather = tool("get_weather", {"city": {"type": "string"}})
    calls = [ToolCall("get_weather", {"city": "Paris"}), ToolCall("get_weather", {"city": "Oslo", "n": [1, True]})]
    case = render_scenario(template("lfm2.5-8b-a1b"), Scenario("s1", [weather], calls), FMT)
    assert case.text == block("[get_weather(city='Paris'), get_weather(city='Oslo', n=[1, True])]")
    assert (case.prefix, case.extra["stop"]) == ("", "<|im_end|>\n")
    assert view(PARSER.parse(case.text, case.tools, case.prefix)) == view(case.expected)


CALLS = st.lists(
    st.tuples(
        NAMES, st.dictionaries(KEYS, values(["'", '"', "\\", "\n", "]", ")", OPEN, CLOSE, "<think>", ""]), max_size=4)
    ),
    min_size=1,
    max_size=3,
)
PROSE = st.text(st.characters(blacklist_characters="<", blacklist_categories=("Cs",)), max_size=30)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=CALLS, before=PROSE, after=PROSE, data=st.data())
def test_property_written_calls_roundtrip(calls, before, after, data):
    text = before + block(call_list(calls)) + after
    message = PARSER.parse(text)
    assert view(message) == expected_view(calls, (before + after).strip() or None)
    splits = data.draw(st.lists(st.integers(0, len(text)), max_size=20).map(sorted))
    for chunks in (split_at(text, splits), list(text)):
        assert view(run_stream(PARSER, chunks, on_delta=CHECK_DELTA)) == view(message)


class TestLfm2(ParserConformance):
    CONFIG = Conformance(
        format="lfm2",
        parser=Lfm2Parser,
        strict={k: Text(*v) for k, v in STRICT.items()},
        stops=("", "<|im_end|>", "<|im_end|>\n"),
        recovered={k: Text(*v) for k, v in RECOVERED.items()},
        surfaced=SURFACED,
        cut_off={k: Text(*v) for k, v in CUT_OFF.items()},
        hold_back=tuple(HOLD_BACK_TEXTS),
        models=("lfm2.5-8b-a1b",),
        modes=("oneshot", "roundtrip", "whole", "char", "random", "prefix"),
        leak_check_exempt=frozenset({"call-inside-reasoning"}),
    )

    def check_corpus(self, model, run):
        corpus = run.corpus
        assert corpus.count("curated") >= 100 and corpus.count("generated") >= 15
        assert run.count_mode("roundtrip") >= 100

"""Conformance of the project's own Functionary v3.2 parser (``parsers/own/functionary_v32.py``) and of the
functionary_v32 family end to end (``meetkai-functionary-medium-v3.2.jinja`` from the llama-cpp-python 0.3.36
sdist; llama.cpp's Functionary v3.2 cases): the shared suite's config plus the tests specific to the format.
"""

from __future__ import annotations

import json

from conformance.suite import Conformance, ParserConformance, Text, assert_stream_matches, expected_view, template, view
from harness.core.messages import ToolCall
from harness.core.scenarios import Scenario
from harness.corpus.peers import llama_cpp
from harness.formats import get_format
from harness.formats.functionary_v32 import END_OF_TEXT, EOT, RECIPIENT
from harness.parse import modes as chunking
from harness.score.runner import evaluate_case
from harness.template.render import render_scenario
from parsers.own.functionary_v32 import FunctionaryV32Parser

FMT = get_format("functionary_v32")
PARSER = FunctionaryV32Parser()
MODEL = "functionary-medium-v3.2"
TOKENS = ("tokens",) if chunking.has_tokenizer(FMT.name) else ()


def seg(name: str, arguments) -> str:
    """One call segment after its ``>>>`` (line 281): ``NAME\\n`` + the arguments' JSON."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return f"{name}\n{args}"


def turn(content: str | None, *segments: str) -> str:
    """A completion after the pre-filled ``>>>``: ``all\\nCONTENT`` first when there is content."""
    parts = ([f"all\n{content}"] if content else []) + list(segments)
    return RECIPIENT.join(parts)


STRICT = {
    "one-call": (turn(None, seg("get_weather", {"city": "Paris"})), [("get_weather", {"city": "Paris"})]),
    "content-then-parallel": (
        turn("Checking.", seg("a", {"x": 1}), seg("b", {})),
        [("a", {"x": 1}), ("b", {})],
        "Checking.",
    ),
    "content-only": (turn("Hello,\nworld!"), [], "Hello,\nworld!"),
    "markers-in-strings": (
        turn(None, seg("note", {"t": RECIPIENT + seg("rm", {}) + EOT, "u": ">>>all\nhi"})),
        [("note", {"t": RECIPIENT + seg("rm", {}) + EOT, "u": ">>>all\nhi"})],
    ),
    "names-like-all": (
        turn(None, seg("allocate", {}), seg("all_items", {"n": 2})),
        [("allocate", {}), ("all_items", {"n": 2})],
    ),
}
RECOVERED = {
    "pretty-json": (turn(None, seg("f", '{\n  "a": 1\n}')), [("f", {"a": 1})]),
    "arguments-as-string": (turn(None, seg("f", json.dumps(json.dumps({"a": ">>>"})))), [("f", {"a": ">>>"})]),
    "doubled-opener": (turn("Hi.", RECIPIENT + seg("f", {})), [("f", {})], "Hi."),
    "text-after-call": (turn(None, seg("f", {})) + "\nDone.", [("f", {})], "Done."),
}
SURFACED = {
    "prose-without-recipient": "Hello there, world.",
    "not-json": turn(None, seg("f", "city='Paris'")),
    "array-arguments": turn(None, seg("f", [1, 2])),
    "nan": turn(None, seg("f", '{"x": NaN}')),
    "space-in-name": turn(None, seg("get weather", {})),
}
CUT_OFF = {
    "in-name": ("get_wea", []),
    "in-json": (turn(None, seg("f", '{"a": "op')), []),
    "second-call": (turn("Sure.", seg("a", {"x": 1}), seg("b", '{"q": [')), [("a", {"x": 1})], "Sure."),
}


def test_llama_cpp_cases_pass():
    cases = llama_cpp.load_cases().for_format("functionary_v32")
    assert len(cases) == 3
    for case in cases:
        records = list(evaluate_case(case, PARSER, FMT, ("oneshot", "whole", "char", "random"), seed=3))
        assert [r.verdict for r in records] == ["pass"] * 4, (case.id, [r.detail for r in records])


def test_rendered_shapes():
    """The template pastes the arguments' JSON string and pre-fills ``>>>`` (the case's prefix)."""
    tmpl = template(MODEL)
    weather = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    got = [ToolCall("get_weather", {"city": "Paris"}), ToolCall("get_weather", {"city": "Zürich"})]
    case = render_scenario(tmpl, Scenario("s", [weather], got, content_after="Sure."), FMT)
    assert (case.prefix, case.extra["stop"]) == (RECIPIENT, EOT)
    assert case.text == turn("Sure.", seg("get_weather", {"city": "Paris"}), seg("get_weather", {"city": "Zürich"}))
    only = render_scenario(tmpl, Scenario("o", [weather], got[:1], content_before="First: "), FMT)
    assert only.text == turn("First: ", seg("get_weather", {"city": "Paris"}))
    for c in (case, only):
        assert view(PARSER.parse(c.text, c.tools, c.prefix)) == view(c.expected)


def test_prefix_decides_where_the_text_starts():
    assert PARSER.parse("world!", None, ">>>all\nHello, ").diagnostics == []  # a content segment continued
    assert PARSER.parse(">>>" + seg("f", {}), None, "").tool_calls == [ToolCall("f", {})]  # not pre-filled
    bad = assert_stream_matches(PARSER, turn("a", seg("f", "{x}"), seg("g", {})), None, RECIPIENT, leak_check=False)
    assert view(bad) == expected_view([("g", {})], "a>>>f\n{x}") and len(bad.diagnostics) == 1


class TestFunctionaryV32(ParserConformance):
    CONFIG = Conformance(
        format="functionary_v32",
        parser=FunctionaryV32Parser,
        prefix=RECIPIENT,
        strict={k: Text(*v) for k, v in STRICT.items()},
        stops=("", EOT, EOT + "\n", END_OF_TEXT),
        recovered={k: Text(*v) for k, v in RECOVERED.items()},
        surfaced=SURFACED,
        cut_off={k: Text(*v) for k, v in CUT_OFF.items()},
        hold_back=(turn("a > b >> c", seg("f", {"a": ">>>x<|eot"}), seg("g", {})) + EOT,),
        hold_back_prefixes=(RECIPIENT, ""),
        models=(MODEL,),
        modes=("oneshot", "roundtrip", "whole", "char", "random", *TOKENS, "prefix"),
    )

    def check_corpus(self, model, run):
        corpus = run.corpus
        assert corpus.count("curated") >= 125 and corpus.count("generated") >= 20 and corpus.count("observed") == 0
        assert all("reasoning" in reason or ">>>" in reason for _, reason in corpus.skipped)
        assert any(c.id.startswith("edge-functionary_v32-") for c in corpus.cases)

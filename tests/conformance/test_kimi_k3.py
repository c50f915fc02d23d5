"""Conformance of the project's own Kimi K3 XTML parser (``parsers/own/kimi_k3.py``) and of the kimi_k3 family end
to end (``Kimi-K3.jinja`` from the llama-cpp-python 0.3.36 sdist): the shared suite's config plus the tests specific
to the format (the template's rendered shapes, typed values, attribute escaping, the peer suites' cases).
"""

from __future__ import annotations

import json

import pytest

from conformance.suite import Conformance, ParserConformance, Text, assert_stream_matches, template, view
from harness.core.scenarios import call, edge
from harness.corpus.build import build_corpus
from harness.formats import get_format
from harness.formats.kimi_k3 import (
    ARGUMENT_CLOSE,
    CALL_CLOSE,
    END_OF_MSG,
    MESSAGE_CLOSE,
    RESPONSE_CLOSE,
    RESPONSE_OPEN,
    THINK_CLOSE,
    THINK_OPEN,
    TOOLS_CLOSE,
    TOOLS_OPEN,
)
from harness.score.runner import evaluate_case
from harness.template.render import render_scenario
from parsers.own.kimi_k3 import KimiK3Parser, unescape

FMT = get_format("kimi_k3")
PARSER = KimiK3Parser()


def _attr(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;")


def _type(value) -> str:
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", dict: "object"}.get(type(value), "array")


def argument(key: str, value) -> str:
    """One argument as the template writes it (lines 146-151)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return f'<|open|>argument key="{_attr(key)}" type="{_type(value)}"<|sep|>{text}{ARGUMENT_CLOSE}'


def k3_call(name: str, arguments: dict, index: int = 1) -> str:
    body = "".join(argument(k, v) for k, v in arguments.items())
    return f'<|open|>call tool="{_attr(name)}" index="{index}"<|sep|>{body}{CALL_CLOSE}'


def block(*calls: str) -> str:
    return TOOLS_OPEN + "".join(calls) + TOOLS_CLOSE


def turn(content: str = "", *calls: str) -> str:
    """The completion after the thinking-off prompt (``<|open|>response<|sep|>`` pre-filled)."""
    return content + RESPONSE_CLOSE + (block(*calls) if calls else "") + MESSAGE_CLOSE


STRICT = {
    "one-call": (turn("", k3_call("get_weather", {"city": "Paris"})), [("get_weather", {"city": "Paris"})], None),
    "content-first": (turn("Let me look.", k3_call("search", {"q": "x"})), [("search", {"q": "x"})], "Let me look."),
    "no-call": (turn("Paris is the capital."), [], "Paris is the capital."),
    "parallel": (
        turn("", k3_call("a", {"x": 1}), k3_call("b", {}, 2), k3_call("a", {"x": 2}, 3)),
        [("a", {"x": 1}), ("b", {}), ("a", {"x": 2})],
        None,
    ),
    "typed-values": (
        turn("", k3_call("t", {"s": "true", "b": False, "n": None, "i": -3, "f": 1e-07, "o": {"k": [1]}, "a": []})),
        [("t", {"s": "true", "b": False, "n": None, "i": -3, "f": 1e-07, "o": {"k": [1]}, "a": []})],
        None,
    ),
    "markers-inside-strings": (
        turn("", k3_call("note", {"t": ARGUMENT_CLOSE + CALL_CLOSE + TOOLS_CLOSE + MESSAGE_CLOSE + "x", "u": "<|"})),
        [("note", {"t": ARGUMENT_CLOSE + CALL_CLOSE + TOOLS_CLOSE + MESSAGE_CLOSE + "x", "u": "<|"})],
        None,
    ),
    "attribute-escaping": (
        turn("", k3_call('say "hi"', {"q&a": "&amp;", 'k"': '"'})),
        [('say "hi"', {"q&a": "&amp;", 'k"': '"'})],
        None,
    ),
    "json-block": (
        turn(
            "",
            '<|open|>call tool="f" index="1"<|sep|><|open|>json type="object"<|sep|>{"a": [1, "x"]}'
            "<|close|>json<|sep|>" + CALL_CLOSE,
        ),
        [("f", {"a": [1, "x"]})],
        None,
    ),
    "hard-strings": (
        turn("", k3_call("w", {"a": 'say "hi" \\ \\"', "b": "a\nb\r\t", "c": "é😀\u2028", "e": "", "f": " pad "})),
        [("w", {"a": 'say "hi" \\ \\"', "b": "a\nb\r\t", "c": "é😀\u2028", "e": "", "f": " pad "})],
        None,
    ),
}

RECOVERED = {
    "whitespace-between-tags": (
        "Ok." + RESPONSE_CLOSE + "\n" + TOOLS_OPEN + "\n " + k3_call("f", {"a": 1}) + "\n" + TOOLS_CLOSE + "\n",
        [("f", {"a": 1})],
        "Ok.",
    ),
    "no-tools-closer": (RESPONSE_CLOSE + TOOLS_OPEN + k3_call("f", {}) + MESSAGE_CLOSE, [("f", {})], None),
    "no-tools-closer-at-end": (RESPONSE_CLOSE + TOOLS_OPEN + k3_call("f", {"a": 1}), [("f", {"a": 1})], None),
    "no-call-closer": (
        RESPONSE_CLOSE + TOOLS_OPEN + k3_call("f", {"a": 1})[: -len(CALL_CLOSE)] + k3_call("g", {}, 2) + TOOLS_CLOSE,
        [("f", {"a": 1}), ("g", {})],
        None,
    ),
    "bare-call": (RESPONSE_CLOSE + k3_call("f", {"a": "b"}) + MESSAGE_CLOSE, [("f", {"a": "b"})], None),
    "no-response-closer": (TOOLS_OPEN + k3_call("f", {}) + TOOLS_CLOSE, [("f", {})], None),
}

SURFACED = {
    "text-in-block": TOOLS_OPEN + "hello",
    "call-without-tool": TOOLS_OPEN + '<|open|>call index="1"<|sep|>' + CALL_CLOSE + TOOLS_CLOSE,
    "number-not-json": TOOLS_OPEN
    + '<|open|>call tool="f" index="1"<|sep|><|open|>argument key="x" type="number"<|sep|>abc'
    + ARGUMENT_CLOSE
    + CALL_CLOSE
    + TOOLS_CLOSE,
    "argument-without-type": TOOLS_OPEN
    + '<|open|>call tool="f" index="1"<|sep|><|open|>argument key="x"<|sep|>1'
    + ARGUMENT_CLOSE
    + CALL_CLOSE
    + TOOLS_CLOSE,
}

CUT_OFF = {
    "second-call-in-value": (
        "Sure."
        + RESPONSE_CLOSE
        + TOOLS_OPEN
        + k3_call("a", {"x": 1})
        + '<|open|>call tool="b" index="2"<|sep|><|open|>argument key="q" type="string"<|sep|>caf',
        [("a", {"x": 1})],
        "Sure.",
    ),
    "first-call-in-head": (RESPONSE_CLOSE + TOOLS_OPEN + '<|open|>call tool="ca', [], None),
    "block-opener-only": ("Hm." + RESPONSE_CLOSE + TOOLS_OPEN, [], "Hm."),
}

HOLD_BACK_TEXTS = (
    "Plan." + THINK_CLOSE + RESPONSE_OPEN + turn("On it.", k3_call("f", {"a": "<|sep|>"}), k3_call("g", {}, 2)),
    turn("Answer only."),
)


class TestKimiK3(ParserConformance):
    CONFIG = Conformance(
        format="kimi_k3",
        parser=KimiK3Parser,
        strict={k: Text(*v) for k, v in STRICT.items()},
        stops=("", END_OF_MSG, END_OF_MSG + "\n"),
        recovered={k: Text(*v) for k, v in RECOVERED.items()},
        surfaced=SURFACED,
        cut_off={k: Text(*v) for k, v in CUT_OFF.items()},
        prefix=RESPONSE_OPEN,
        hold_back=HOLD_BACK_TEXTS,
        hold_back_prefixes=(RESPONSE_OPEN, THINK_OPEN),
        models=("kimi-k3",),
        modes=("oneshot", "roundtrip", "whole", "char", "random", "prefix"),
    )

    def check_corpus(self, model, run):
        corpus = run.corpus
        assert corpus.count("curated") >= 130 and corpus.count("generated") >= 40
        assert any(c.id.startswith("edge-kimi_k3-") for c in corpus.cases)
        assert all(c.prefix == THINK_OPEN for c in corpus.cases)  # thinking on: the prompt pre-fills the block
        assert run.failures(kinds=None) == []


# ---- the template's shapes ---------------------------------------------------------------------------


def test_rendered_shape_is_the_documented_one():
    """Reasoning, prose and two typed calls through the real template: the text the format module describes."""
    scenario = edge(
        "kimi_k3-shape",
        [],
        [call("get_weather", {"city": "Paris", "days": 2, "metric": True}), call('a "b"', {"x&y": None})],
        reasoning="Think.",
        content_after="Checking.",
    )
    case = render_scenario(template("kimi-k3"), scenario, FMT)
    assert case.prefix == THINK_OPEN
    expected = (
        "Think."
        + THINK_CLOSE
        + RESPONSE_OPEN
        + turn(
            "Checking.",
            k3_call("get_weather", {"city": "Paris", "days": 2, "metric": True}),
            k3_call('a "b"', {"x&y": None}, 2),
        )
    )
    assert case.text == expected and case.extra["stop"] == END_OF_MSG
    message = assert_stream_matches(PARSER, case.text, case.tools, case.prefix)
    assert view(message) == view(case.expected)


def test_content_before_goes_inside_the_response():
    scenario = edge("kimi_k3-before", [], call("f", {}), content_before="First.", content_after="Then.")
    case = render_scenario(template("kimi-k3"), scenario, FMT)
    assert case.text.startswith(THINK_CLOSE + RESPONSE_OPEN + "First.Then." + RESPONSE_CLOSE)
    assert view(PARSER.parse(case.text, case.tools, case.prefix)) == view(case.expected)


@pytest.mark.parametrize(
    "raw,value", [("a&amp;b", "a&b"), ("&quot;x&quot;", '"x"'), ("&amp;quot;", "&quot;"), ("&lt;", "&lt;")]
)
def test_attribute_unescape_is_one_pass(raw, value):
    assert unescape(raw) == value


def test_a_duplicate_key_tag_inside_a_value_is_data():
    value = "x" + ARGUMENT_CLOSE + '<|open|>argument key="path" type="string"<|sep|>y'
    text = turn("", k3_call("save", {"path": "p", "text": value}))
    message = assert_stream_matches(PARSER, text, None, RESPONSE_OPEN)
    assert [(c.name, c.arguments) for c in message.tool_calls] == [("save", {"path": "p", "text": value})]


def test_prefix_decides_where_the_text_starts():
    text = "Hmm." + THINK_CLOSE + RESPONSE_OPEN + "Hi." + RESPONSE_CLOSE + MESSAGE_CLOSE
    assert (PARSER.parse(text, None, THINK_OPEN).reasoning, PARSER.parse(text, None, THINK_OPEN).content) == (
        "Hmm.",
        "Hi.",
    )
    skipped = RESPONSE_OPEN + "Hi." + RESPONSE_CLOSE + MESSAGE_CLOSE  # the model skipped the think block
    assert (PARSER.parse(skipped, None, THINK_OPEN).reasoning, PARSER.parse(skipped, None, THINK_OPEN).content) == (
        None,
        "Hi.",
    )
    explicit = THINK_OPEN + "Hmm." + THINK_CLOSE + skipped
    assert view(PARSER.parse(explicit)) == (("Hi."), "Hmm.", [])


# ---- the peer suites -----------------------------------------------------------------------------------


def test_every_peer_case_passes():
    """canitoolcall's 23 Kimi K3 fixtures and llama.cpp's 9 Kimi-K3 test-chat.cpp cases, through the judge."""
    corpus = build_corpus(None, FMT, seed=0, n_generated=0, slices=("peer-canitoolcall", "peer-llama.cpp"))
    assert (corpus.count("peer-canitoolcall"), corpus.count("peer-llama.cpp")) == (23, 9)
    modes = ["oneshot", "whole", "char", "random", "prefix"]
    failures = [
        (case.id, r.mode, r.error_type)
        for case in corpus.cases
        for r in evaluate_case(case, PARSER, FMT, modes, seed=0)
        if r.verdict not in ("pass", "soft_pass")
    ]
    assert failures == []

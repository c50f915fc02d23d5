"""Conformance of the project's own Cohere parser (``parsers/own/cohere.py``) and of the cohere family end to end
(``CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja`` and ``Cohere2MoE.jinja`` from the llama-cpp-python 0.3.36
sdist; llama.cpp's cases of both): the shared suite's config plus the tests specific to the format.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
from harness.formats.cohere import (
    ACTION_CLOSE,
    ACTION_OPEN,
    RESPONSE_CLOSE,
    RESPONSE_OPEN,
    TEXT_CLOSE,
    TEXT_OPEN,
    THINK_CLOSE,
    THINK_OPEN,
    TURN_CLOSE,
)
from harness.score.runner import evaluate_case
from harness.template.render import render_scenario
from parsers.own.cohere import CohereParser

FMT = get_format("cohere")
PARSER = CohereParser()
CHECK_DELTA = delta_checker(FMT)
EMPTY_THINK = THINK_OPEN + THINK_CLOSE


def one(name: str, args: dict, i: int = 0) -> str:
    return json.dumps({"tool_call_id": str(i), "tool_name": name, "parameters": args}, ensure_ascii=False)


def action(*calls: str) -> str:
    return ACTION_OPEN + "[\n    " + ",\n    ".join(calls) + "\n]" + ACTION_CLOSE


STRICT = {
    "one-call": (action(one("get_weather", {"city": "Paris"})), [("get_weather", {"city": "Paris"})]),
    "parallel": (
        action(one("f", {"arg1": 1}), one("python", {"code": "print('hey')"}, 1)),
        [("f", {"arg1": 1}), ("python", {"code": "print('hey')"})],
    ),
    "reasoning-then-call": (
        f"{THINK_OPEN}I'm\nthinking{THINK_CLOSE}" + action(one("f", {"a": [1, True, None]})),
        [("f", {"a": [1, True, None]})],
        None,
        "I'm\nthinking",
    ),
    "empty-thinking-then-call": (EMPTY_THINK + action(one("g", {})), [("g", {})]),
    "r7b-response": (f"{RESPONSE_OPEN}Hello, world!\nWhat's up?{RESPONSE_CLOSE}", [], "Hello, world!\nWhat's up?"),
    "2moe-text-after-reasoning": (f"{THINK_OPEN}Hm.{THINK_CLOSE}{TEXT_OPEN}Hi.{TEXT_CLOSE}", [], "Hi.", "Hm."),
    "markers-in-strings": (
        action(one("note", {"t": f"{ACTION_CLOSE}]{ACTION_OPEN}[ {TURN_CLOSE} {THINK_CLOSE}"})),
        [("note", {"t": f"{ACTION_CLOSE}]{ACTION_OPEN}[ {TURN_CLOSE} {THINK_CLOSE}"})],
    ),
    "no-id": (ACTION_OPEN + '[{"tool_name": "f", "parameters": {"x": "ü"}}]' + ACTION_CLOSE, [("f", {"x": "ü"})]),
    "plain-content": ("Just text.", [], "Just text."),
}
RECOVERED = {
    "closer-missing-at-end": (ACTION_OPEN + "[" + one("f", {"a": 1}) + "]", [("f", {"a": 1})]),
    "closer-missing-before-next": (
        ACTION_OPEN + "[" + one("f", {"a": 1}) + "]" + action(one("g", {})),
        [("f", {"a": 1}), ("g", {})],
    ),
    "string-parameters": (
        ACTION_OPEN + '[{"tool_name": "f", "parameters": "{\\"a\\": 1}"}]' + ACTION_CLOSE,
        [("f", {"a": 1})],
    ),
    "closer-cut-at-end": (ACTION_OPEN + "[" + one("f", {}) + "]<|END_", [("f", {})]),
}
SURFACED = {
    "not-a-list": ACTION_OPEN + one("f", {}) + ACTION_CLOSE,
    "no-tool-name": ACTION_OPEN + '[{"name": "f", "parameters": {}}]' + ACTION_CLOSE,
    "parameters-not-object": ACTION_OPEN + '[{"tool_name": "f", "parameters": [1]}]' + ACTION_CLOSE,
    "text-after-list": ACTION_OPEN + "[" + one("f", {}) + "] and more" + ACTION_CLOSE,
}
CUT_OFF = {
    "mid-parameters": (ACTION_OPEN + '[\n    {"tool_call_id": "0", "tool_name": "f", "parameters": {"a": ', []),
    "opener-alone": ("One moment." + ACTION_OPEN, [], "One moment."),
    "second-block": (action(one("a", {"x": 1})) + ACTION_OPEN + "[{", [("a", {"x": 1})]),
}
HOLD_BACK_TEXTS = (
    f"{THINK_OPEN}a <|START_AC b{THINK_CLOSE}{RESPONSE_OPEN}c <|END_RES d{RESPONSE_CLOSE}{TURN_CLOSE}",
    "x <|START_" + action(one("f", {"s": "<|END_ACTION|>"})) + TURN_CLOSE,
)


def _failures(cases) -> list:
    return [
        (case.id, r.mode)
        for case in cases
        for r in evaluate_case(case, PARSER, FMT, ["oneshot", "whole", "char"], seed=3)
        if r.verdict not in ("pass", "soft_pass")
    ]


def test_llama_cpp_cases_pass():
    """R7B 7 and 2MoE 8 judged cases (one partial and one partial + one json_schema case the judge skips)."""
    cases = load_cases().for_format("cohere")
    r7b = [c for c in cases if "command-r7b" in c.id]
    assert (len(r7b), len(cases) - len(r7b)) == (7, 8)
    assert _failures(cases) == []


def test_rendered_shapes_through_the_real_templates():
    weather = tool("get_weather", {"city": {"type": "string"}})
    calls = [ToolCall("get_weather", {"city": "Paris"}), ToolCall("get_weather", {"city": "Zürich"})]
    body = action(one("get_weather", {"city": "Paris"}), one("get_weather", {"city": "Zürich"}, 1))
    r7b, moe = template("command-r7b"), template("north-mini-code")
    case = render_scenario(r7b, Scenario("c1", [weather], calls), FMT)
    assert (case.prefix, case.text, case.extra["stop"]) == (EMPTY_THINK, body, TURN_CLOSE)
    think = render_scenario(r7b, Scenario("c2", [weather], calls, reasoning="Plan."), FMT)
    assert (think.prefix, think.text) == ("", f"{THINK_OPEN}Plan.{THINK_CLOSE}" + body)
    prose = render_scenario(r7b, Scenario("c3", [weather], [], content_after="Hello."), FMT)
    assert prose.text == f"{RESPONSE_OPEN}Hello.{RESPONSE_CLOSE}"
    moe_calls = render_scenario(moe, Scenario("c4", [weather], calls), FMT)
    assert (moe_calls.prefix, moe_calls.text) == (THINK_OPEN, THINK_CLOSE + body)
    moe_text = render_scenario(moe, Scenario("c5", [weather], [], content_after="Hi.", reasoning="Hm."), FMT)
    assert (moe_text.prefix, moe_text.text) == (THINK_OPEN, f"Hm.{THINK_CLOSE}{TEXT_OPEN}Hi.{TEXT_CLOSE}")
    for c in (case, think, prose, moe_calls, moe_text):
        assert view(PARSER.parse(c.text, c.tools, c.prefix)) == view(c.expected)


NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.-]{0,12}", fullmatch=True)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12) | st.sampled_from([ACTION_CLOSE, THINK_OPEN]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
CALLS = st.lists(st.tuples(NAMES, st.dictionaries(st.text(max_size=6), VALUES, max_size=3)), min_size=1, max_size=3)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=CALLS, reasoning=st.text(st.characters(blacklist_characters="<"), max_size=20), data=st.data())
def test_property_written_calls_roundtrip(calls, reasoning, data):
    text = f"{THINK_OPEN}{reasoning}{THINK_CLOSE}" + action(*(one(n, a, i) for i, (n, a) in enumerate(calls)))
    message = PARSER.parse(text)
    assert view(message) == expected_view(calls, None, reasoning.strip() or None)
    splits = data.draw(st.lists(st.integers(0, len(text)), max_size=20).map(sorted))
    for chunks in (split_at(text, splits), list(text)):
        assert view(run_stream(PARSER, chunks, on_delta=CHECK_DELTA)) == view(message)


class TestCohere(ParserConformance):
    CONFIG = Conformance(
        format="cohere",
        parser=CohereParser,
        prefix=EMPTY_THINK,
        strict={k: Text(*v) for k, v in STRICT.items()},
        stops=("", TURN_CLOSE),
        recovered={k: Text(*v) for k, v in RECOVERED.items()},
        surfaced=SURFACED,
        cut_off={k: Text(*v) for k, v in CUT_OFF.items()},
        hold_back=HOLD_BACK_TEXTS,
        hold_back_prefixes=("", EMPTY_THINK, THINK_OPEN),
        models=("command-r7b", "north-mini-code"),
        modes=("oneshot", "roundtrip", "whole", "char", "random", "prefix"),
    )

    def check_corpus(self, model, run):
        corpus = run.corpus
        assert corpus.count("curated") >= 90 and corpus.count("generated") >= 15
        assert any(c.id.startswith("edge-cohere-") for c in corpus.cases)

"""Conformance of the project's own Command R+ parser (``parsers/own/command_r.py``) and of the command_r family end
to end (``CohereForAI-c4ai-command-r-plus-tool_use.jinja`` from the llama-cpp-python 0.3.36 sdist; llama.cpp's
cases of it): the shared suite's config plus the tests specific to the format.
"""

from __future__ import annotations

import json

import pytest
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
from harness.core.errors import UnrepresentableError
from harness.core.messages import ToolCall
from harness.core.protocol import run_stream
from harness.core.scenarios import Scenario
from harness.corpus.peers.llama_cpp import load_cases
from harness.formats import get_format
from harness.formats.command_r import CALL_OPEN, CHATBOT, FENCE, INSTRUCTION_TURN, TURN_CLOSE, TURN_OPEN, declare_tools
from harness.score.runner import evaluate_case
from harness.template.render import render_scenario
from parsers.own.command_r import CommandRParser

FMT = get_format("command_r")
PARSER = CommandRParser()
CHECK_DELTA = delta_checker(FMT)


def one(name: str, args: dict) -> str:
    """One call as the template writes it (lines 169-178)."""
    params = json.dumps(args, ensure_ascii=False, indent=4).replace("\n", "\n        ") if args else "{}"
    return f'    {{\n        "tool_name": "{name}",\n        "parameters": {params}\n    }}'


def action(*calls: str) -> str:
    return CALL_OPEN + "[\n" + ",\n".join(calls) + "\n]" + FENCE + "\n"


def compact(*calls: tuple[str, dict], lead: str = "Action:\n```json\n", tail: str = "\n```") -> str:
    """A block as llama.cpp's cases write it (test-chat.cpp line 5895): the list on one line, ``]\\n```` ``."""
    body = ", ".join(json.dumps({"tool_name": n, "parameters": a}, ensure_ascii=False) for n, a in calls)
    return f"{lead}[{body}]{tail}"


STRICT = {
    "one-call": (action(one("get_weather", {"city": "Paris"})), [("get_weather", {"city": "Paris"})]),
    "parallel": (
        action(one("f", {"arg1": 1}), one("python", {"code": "print('hey')"})),
        [("f", {"arg1": 1}), ("python", {"code": "print('hey')"})],
    ),
    "content-then-call": (
        "Checking the weather." + action(one("get_weather", {"city": "Zürich"})),
        [("get_weather", {"city": "Zürich"})],
        "Checking the weather.",
    ),
    "empty-parameters": (action(one("get_time", {})), [("get_time", {})]),
    "llama-cpp-layout": (compact(("special_function", {"arg1": 1})), [("special_function", {"arg1": 1})]),
    "same-line-fence": (compact(("f", {"a": [1, None]}), lead="Action: ```json\n"), [("f", {"a": [1, None]})]),
    "untagged-fence": (compact(("f", {}), lead="Action:\n```\n"), [("f", {})]),
    "chatbot-wrapped-content": (f"{CHATBOT}Hello, world!\nWhat's up?{TURN_CLOSE}", [], "Hello, world!\nWhat's up?"),
    "markers-in-strings": (
        action(one("note", {"t": f"{CALL_OPEN}[{FENCE} {TURN_CLOSE}{TURN_OPEN} Action: {CHATBOT}"})),
        [("note", {"t": f"{CALL_OPEN}[{FENCE} {TURN_CLOSE}{TURN_OPEN} Action: {CHATBOT}"})],
    ),
    "prose-action-and-code": (
        f"Action: look it up.\n{FENCE}\nstep 1\n{FENCE}" + action(one("g", {"x": "ü"})),
        [("g", {"x": "ü"})],
        f"Action: look it up.\n{FENCE}\nstep 1\n{FENCE}",
    ),
    "plain-content": ("Just text with an A and Act.", [], "Just text with an A and Act."),
}
RECOVERED = {
    "fence-missing-at-end": (compact(("f", {"a": 1}), tail=""), [("f", {"a": 1})]),
    "fence-missing-before-next": (
        compact(("f", {"a": 1}), tail="\n") + action(one("g", {})),
        [("f", {"a": 1}), ("g", {})],
    ),
    "string-parameters": ('Action:\n```json\n[{"tool_name": "f", "parameters": "{\\"a\\": 1}"}]```', [("f", {"a": 1})]),
    "fence-cut-at-end": (compact(("f", {}), tail="\n``"), [("f", {})]),
}
SURFACED = {
    "not-a-list": 'Action:\n```json\n{"tool_name": "f", "parameters": {}}\n```',
    "no-tool-name": 'Action:\n```json\n[{"name": "f", "parameters": {}}]\n```',
    "parameters-not-object": 'Action:\n```json\n[{"tool_name": "f", "parameters": [1]}]\n```',
    "text-after-list": 'Action:\n```json\n[{"tool_name": "f", "parameters": {}}] and more\n```',
}
CUT_OFF = {
    "mid-parameters": (CALL_OPEN + '[\n    {\n        "tool_name": "f",\n        "parameters": {"a": ', []),
    "opener-alone": ("One moment.\nAction:", [], "One moment."),
    "fence-tag-cut": ("One moment.\nAction:\n```js", [], "One moment."),
    "second-block": (compact(("a", {"x": 1})) + "\nAction:\n```json\n[{", [("a", {"x": 1})]),
}
HOLD_BACK_TEXTS = (
    f"{CHATBOT}A <|CHATBOT_TO b Action: c" + action(one("f", {"s": "```"})) + TURN_CLOSE,
    "x Act" + compact(("f", {"s": TURN_CLOSE})) + " y" + TURN_CLOSE,
)


def _failures(cases) -> list:
    return [
        (case.id, r.mode)
        for case in cases
        for r in evaluate_case(case, PARSER, FMT, ["oneshot", "whole", "char"], seed=3)
        if r.verdict not in ("pass", "soft_pass")
    ]


def test_llama_cpp_cases_pass():
    """test-chat.cpp lines 5893-5909: content wrapped in <|CHATBOT_TOKEN|>, one call, a continued message."""
    suite = load_cases()
    cases = suite.for_format("command_r")
    assert [c.extra["peer"]["where"] for c in cases] == [f"test-chat.cpp:{n}" for n in (5893, 5895, 5905)]
    assert suite.unsupported_by_format.get("command_r", []) == []
    assert _failures(cases) == []


def test_rendered_shapes_through_the_real_template():
    weather = tool("get_weather", {"city": {"type": "string"}})
    calls = [ToolCall("get_weather", {"city": "Paris"}), ToolCall("get_time", {})]
    body = action(one("get_weather", {"city": "Paris"}), one("get_time", {}))
    tmpl = template("command-r-plus")
    case = render_scenario(tmpl, Scenario("c1", [weather], calls), FMT)
    assert (case.prefix, case.text, case.extra["stop"]) == ("", body, "")  # the instruction turn is cut off
    before = render_scenario(tmpl, Scenario("c2", [weather], calls, content_after="Looking."), FMT)
    assert (before.text, before.text_provenance) == ("Looking." + body, "full")  # the content goes first
    prose = render_scenario(tmpl, Scenario("c3", [weather], [], content_after="Hello."), FMT)
    assert (prose.text, prose.extra["stop"]) == ("Hello.", TURN_CLOSE)
    assert INSTRUCTION_TURN not in case.text + case.prefix + prose.text
    # the template needs a description for every parameter (line 104): the case declares one, the scenario is kept
    assert case.tools[0]["function"]["parameters"]["properties"]["city"] == {"type": "string", "description": ""}
    assert weather["function"]["parameters"]["properties"]["city"] == {"type": "string"}
    for c in (case, before, prose):
        assert view(PARSER.parse(c.text, c.tools, c.prefix)) == view(c.expected)


def test_declared_tools_type_every_object_and_keep_what_is_given():
    given_tool = tool("f", {"o": {"type": "object"}, "a": {"type": "array", "items": {"type": "object"}}})
    given_tool["function"]["parameters"]["properties"]["s"] = {"type": "string", "description": "kept"}
    (out,) = declare_tools([given_tool])
    props = out["function"]["parameters"]["properties"]
    assert props["o"] == {"type": "object", "description": "", "additionalProperties": True}
    assert props["a"] == {"type": "array", "description": "", "items": {"type": "object", "additionalProperties": True}}
    assert props["s"] == {"type": "string", "description": "kept"}
    assert "description" not in given_tool["function"]["parameters"]["properties"]["o"]


@pytest.mark.parametrize("char", ["\x85", "\u2028", "\u2029"])
def test_line_breaks_that_indent_splits_are_unrepresentable(char):
    scenario = Scenario("u", [tool("f", {"s": {"type": "string"}})], [ToolCall("f", {"s": f"a{char}b"})])
    with pytest.raises(UnrepresentableError, match="cannot express"):
        render_scenario(template("command-r-plus"), scenario, FMT)


NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.-]{0,12}", fullmatch=True)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12) | st.sampled_from([FENCE, CALL_OPEN, TURN_CLOSE]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
CALLS = st.lists(st.tuples(NAMES, st.dictionaries(st.text(max_size=6), VALUES, max_size=3)), min_size=1, max_size=3)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=CALLS, content=st.text(st.characters(blacklist_characters="A<"), max_size=20), data=st.data())
def test_property_written_calls_roundtrip(calls, content, data):
    text = content + action(*(one(n, a) for n, a in calls))
    message = PARSER.parse(text)
    assert view(message) == expected_view(calls, content.strip() or None)
    splits = data.draw(st.lists(st.integers(0, len(text)), max_size=20).map(sorted))
    for chunks in (split_at(text, splits), list(text)):
        assert view(run_stream(PARSER, chunks, on_delta=CHECK_DELTA)) == view(message)


class TestCommandR(ParserConformance):
    CONFIG = Conformance(
        format="command_r",
        parser=CommandRParser,
        strict={k: Text(*v) for k, v in STRICT.items()},
        stops=("", TURN_CLOSE),
        recovered={k: Text(*v) for k, v in RECOVERED.items()},
        surfaced=SURFACED,
        cut_off={k: Text(*v) for k, v in CUT_OFF.items()},
        hold_back=HOLD_BACK_TEXTS,
        models=("command-r-plus",),
        modes=("oneshot", "roundtrip", "whole", "char", "random", "prefix"),
    )

    def check_corpus(self, model, run):
        corpus = run.corpus
        assert corpus.count("curated") >= 120 and corpus.count("generated") >= 30
        assert any(c.id.startswith("edge-command_r-") for c in corpus.cases)
        reasons = {reason.split(": ", 1)[1] for _, reason in corpus.skipped}
        assert any("does not write the reasoning" in r for r in reasons)  # no reasoning in the format

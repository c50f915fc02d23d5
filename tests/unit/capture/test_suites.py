"""Prompt suites: the shipped files are consistent, their ideal answers survive the real Gemma 4 template and
the project's parser, and ``judge`` names each way an answer can be wrong."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.capture.suites import SuiteError, load_suite, suite_names
from harness.core.messages import Message, ToolCall
from harness.core.scenarios import Scenario
from harness.formats import get_format
from harness.score.captures import judge
from harness.template.render import render_scenario
from harness.template.sources import load_template
from parsers.own.gemma4 import Gemma4Parser

ROOT = Path(__file__).resolve().parents[3]
FMT = get_format("gemma4")


def ideal_arguments(call) -> dict:
    """The pinned values plus, for each required substring list, a string holding all of them."""
    return {**call.pinned, **{key: "\n".join(needles) for key, needles in call.contains.items()}}


def test_shipped_suites_and_their_sizes():
    sizes = {name: len(load_suite(name)) for name in suite_names()}
    assert sizes["code-with-quotes"] == 20
    assert sizes["nested-args"] >= 10 and sizes["multiline-unicode"] >= 10 and sizes["no-tool"] >= 10
    assert all(p.calls == () for p in load_suite("no-tool"))


@pytest.mark.parametrize("name", suite_names())
def test_ideal_answers_pass_through_the_real_template_and_parser(name):
    """Render each prompt's ideal answer with the real Gemma 4 chat template, parse it with the project's
    parser, and judge it: every prompt must be answerable, i.e. its expectations are self-consistent."""
    template = load_template("gemma-4-31b")
    parser = Gemma4Parser()
    for prompt in load_suite(name):
        calls = [ToolCall(c.name, ideal_arguments(c)) for c in prompt.calls]
        scenario = Scenario(
            id=prompt.id, tools=prompt.tools, calls=calls, content_after="" if calls else "A short prose answer."
        )
        case = render_scenario(template, scenario, FMT, slice="curated")
        got = parser.parse(case.text, case.tools, case.prefix)
        result = judge(prompt, got, FMT)
        assert result.passed, (prompt.id, result.detail, case.text)


def _prompt(suite="code-with-quotes", index=0):
    return load_suite(suite)[index]


@pytest.mark.parametrize(
    "message, error_type, detail",
    [
        (Message(content="Sure."), "wrong_call_count", "expected 1 call(s), got 0"),
        (
            Message(tool_calls=[ToolCall("save_note", {"path": "hello.py", "content": "print("})]),
            "wrong_name",
            "expected 'file_write'",
        ),
        (
            Message(tool_calls=[ToolCall("file_write", {"path": "hello.py"})]),
            "invalid_arguments",
            "'content' is a required property",
        ),
        (Message(tool_calls=[ToolCall("file_write", '{"path": "hello.py"')]), "invalid_arguments", "not an object"),
        (
            Message(tool_calls=[ToolCall("file_write", {"path": "other.py", "content": "print("})]),
            "wrong_argument_value",
            "path: expected 'hello.py'",
        ),
        (
            Message(tool_calls=[ToolCall("file_write", {"path": "hello.py", "content": "x = 1"})]),
            "wrong_argument_value",
            "content lacks 'print('",
        ),
        (
            Message(
                content="<tool_call|>", tool_calls=[ToolCall("file_write", {"path": "hello.py", "content": "print("})]
            ),
            "marker_leak",
            "protocol marker in content",
        ),
    ],
)
def test_judge_names_what_is_wrong(message, error_type, detail):
    result = judge(_prompt(), message, FMT)
    assert (result.verdict, result.error_type) == ("fail", error_type)
    assert detail in result.detail


def test_pinned_nested_values_are_matched_by_containment():
    prompt = next(p for p in load_suite("nested-args") if p.id == "nested-02")
    full = ideal_arguments(prompt.calls[0])
    extra = {**full, "customer": {**full["customer"], "email": "bo@example.com"}}  # extra keys are fine
    assert judge(prompt, Message(tool_calls=[ToolCall("create_order", extra)]), FMT).passed
    wrong_qty = {**full, "items": [{**full["items"][0], "qty": 4}]}
    result = judge(prompt, Message(tool_calls=[ToolCall("create_order", wrong_qty)]), FMT)
    assert result.error_type == "wrong_argument_value" and "items[0].qty" in result.detail
    as_string = {**full, "priority": "true"}
    result = judge(prompt, Message(tool_calls=[ToolCall("create_order", as_string)]), FMT)
    assert result.error_type == "invalid_arguments" and "priority" in result.detail


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", "invalid JSON"),
        (
            '{"id": "a", "suite": "s", "messages": [], "tools": [], "expect": {"calls": [{"name": "f"}]}}',
            "names 'f', which tools do not declare",
        ),
        (
            '{"id": "a", "suite": "s", "messages": [], "tools": [{"type": "function", "function": {"name": "f", '
            '"parameters": {"type": "objekt"}}}], "expect": {"calls": []}}',
            "parameters is not a valid JSON schema",
        ),
        (
            '{"id": "a", "suite": "s", "messages": [{"role": "user"}], "tools": [], "expect": {"calls": []}}',
            "messages[0] must be",
        ),
    ],
)
def test_malformed_suite_lines_are_named_by_file_and_line(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "ok", "suite": "s", "messages": [], "tools": [], "expect": {"calls": []}}\n' + line + "\n")
    with pytest.raises(SuiteError, match=r"bad.jsonl:2: ") as info:
        load_suite(path)
    assert message in str(info.value)


def test_duplicate_ids_and_unknown_suites_are_errors(tmp_path):
    path = tmp_path / "dup.jsonl"
    row = json.dumps({"id": "x", "suite": "s", "messages": [], "tools": [], "expect": {"calls": []}})
    path.write_text(row + "\n" + row + "\n")
    with pytest.raises(SuiteError, match="dup.jsonl:2: duplicate id 'x'"):
        load_suite(path)
    with pytest.raises(SuiteError, match="unknown suite 'nope'; shipped: code-with-quotes"):
        load_suite("nope")


def test_cli_lists_the_suites():
    out = subprocess.run(
        [sys.executable, "-m", "harness.cli", "suites"], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "code-with-quotes          20 prompts, 20 expected calls; tools: file_write" in out.stdout


def test_a_parser_that_returns_nothing_for_a_real_answer_loses_content():
    """SGLang's qwen detector drops a malformed call and returns an empty message (SmolLM2 capture notool-05)."""
    from harness.capture.suites import load_suite
    from harness.core.messages import Message
    from harness.formats import get_format
    from harness.score.captures import judge

    prompt = load_suite("no-tool")[0]
    raw = '<tool_call>\n{"name": "rain", "text": "The rain falls"}'
    assert judge(prompt, Message(), get_format("hermes"), raw).error_type == "content_lost"
    assert judge(prompt, Message(content="The rain falls"), get_format("hermes"), raw).verdict == "pass"
    assert judge(prompt, Message(), get_format("hermes"), "   ").verdict == "pass"


@pytest.mark.parametrize("text", ["", "\n\n", "   \n"])
def test_a_suite_file_without_prompts_is_an_error_naming_it(tmp_path, text):
    """Before: ``capture --suites empty.jsonl`` ran "0 prompts", exit 0."""
    path = tmp_path / "empty.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SuiteError, match=rf"^{re.escape(str(path))}: no prompts in the suite file$"):
        load_suite(path)

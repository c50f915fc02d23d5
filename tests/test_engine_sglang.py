"""The SGLang engine: SGLang 0.5.23 in its own virtualenv (no CUDA stack), driven as its OpenAI server does, with
its Gemma 4 parsers and its Qwen 2.5 (Hermes JSON) detector.

The first run builds the environment into the user cache (about 1-2.5 min, 2.5 GB); later runs reuse it.
"""

import pytest
from engine_common import (
    CALL,
    HERMES_CASES,
    HERMES_MODES,
    HERMES_TOOLS,
    OFF,
    PARIS,
    TOOLS,
    engine_worker,
    hermes_expected,
    hermes_msg,
    hermes_results,
    hermes_worker,
)

from harness.formats import get_format
from harness.model import Case, Message, ToolCall
from harness.protocol import run_stream
from harness.runner import evaluate_case
from harness.tokens import token_pieces

# A cold cache builds the environment inside the first test (minutes): allow for it.
pytestmark = pytest.mark.timeout(1800)

FMT = get_format("gemma4")


@pytest.fixture(scope="module")
def sglang():
    yield from engine_worker("sglang")


def test_hello_names_sglang_and_its_version(sglang):
    assert sglang.name == "sglang==0.5.23:gemma4"


def test_one_shot_and_token_streaming_parse_a_call(sglang):
    assert sglang.parse(CALL, TOOLS, OFF).tool_calls == [ToolCall("get_weather", {"city": "Paris", "days": 3})]
    pieces = token_pieces(CALL, "gemma4")
    streamed = run_stream(sglang, [p for p, _ in pieces], TOOLS, OFF, token_ids=[ids for _, ids in pieces])
    assert streamed.tool_calls == [ToolCall("get_weather", {"city": "Paris", "days": 3})]


def test_bare_null_and_template_none_become_strings(sglang):
    got = sglang.parse('<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,note:None}<tool_call|>', TOOLS, OFF)
    assert got.tool_calls == [ToolCall("get_weather", {"city": "Paris", "note": "None"})]
    got = sglang.parse('<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,note:null}<tool_call|>', TOOLS, OFF)
    assert got.tool_calls == [ToolCall("get_weather", {"city": "Paris", "note": "null"})]


def test_two_calls_to_one_tool_share_a_stream_index_and_merge(sglang):
    """Streaming numbers calls by the tool's position in ``tools``, so a client merges two calls to one tool."""
    text = CALL + CALL.replace("Paris", "Rome")
    case = Case(id="two", format="gemma4", text=text, tools=TOOLS, prefix=OFF, slice="curated",
                expected=Message(tool_calls=[ToolCall("get_weather", {"city": "Paris", "days": 3}),
                                             ToolCall("get_weather", {"city": "Rome", "days": 3})]))
    verdicts = {r.mode: (r.verdict, r.error_type) for r in
                evaluate_case(case, sglang, FMT, ["oneshot", "tokens"], seed=0, timeout_s=30)}
    assert verdicts["oneshot"] == ("pass", None)
    assert verdicts["tokens"] == ("fail", "stream_diverges")


def test_a_looping_library_call_is_a_timeout_and_the_worker_stays(sglang):
    """SGLang 0.5.23 loops forever on ``]`` inside a string in a nested array; the worker interrupts it."""
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
        "k": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}}}}}}]
    case = Case(id="loop", format="gemma4", text='<|tool_call>call:f{k:[[<|"|>]x<|"|>]]}<tool_call|>', tools=tools,
                prefix=OFF, slice="curated", expected=Message(tool_calls=[ToolCall("f", {"k": [["]x"]]})]))
    (record,) = evaluate_case(case, sglang, FMT, ["oneshot"], seed=0, timeout_s=30)
    assert (record.verdict, record.error_type) == ("error", "timeout")
    assert "did not return within" in record.detail
    assert sglang.parse(CALL, TOOLS, OFF).tool_calls and sglang.restarts == 0


# ------------------------------------------------------------------------------------------------- Hermes

@pytest.fixture(scope="module")
def sglang_hermes():
    yield from hermes_worker("sglang")


def test_hermes_parser_is_named_for_the_format(sglang_hermes):
    assert sglang_hermes.name == "sglang==0.5.23:hermes"


def test_hermes_texts_one_shot_and_streaming(sglang_hermes):
    """``--tool-call-parser qwen`` (Qwen25Detector): one-shot strips the content before a call; streamed whole,
    the text before a call and every call after the first are lost; streamed in pieces, content keeps its
    newline. ``</tool_call>`` inside a string is handled (the detector needs ``\\n</tool_call>``)."""
    got = hermes_results(sglang_hermes)
    expected = {case: {mode: hermes_expected(case) for mode in HERMES_MODES} for case in HERMES_CASES}
    expected["two_calls"]["whole"] = hermes_msg(calls=[PARIS])
    expected["content_then_call"].update(whole=hermes_msg(calls=[PARIS]), char=hermes_msg("Let me check.\n", [PARIS]),
                                         pieces=hermes_msg("Let me check.\n", [PARIS]))
    assert got == expected


def test_hermes_call_to_an_undeclared_tool_is_dropped_and_streaming_leaks_its_tail(sglang_hermes):
    text = '<tool_call>\n{"name": "send_mail", "arguments": {"to": "x"}}\n</tool_call>'
    got = sglang_hermes.parse(text, HERMES_TOOLS, "")
    assert (got.content, got.tool_calls) == (None, [])
    assert any("undefined function: send_mail" in d for d in got.diagnostics)
    streamed = run_stream(sglang_hermes, list(text), HERMES_TOOLS, "")
    assert (streamed.content, streamed.tool_calls) == (', "arguments": {"to": "x"}}\n', [])

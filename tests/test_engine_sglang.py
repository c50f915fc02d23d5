"""The SGLang engine: SGLang 0.5.23 in its own virtualenv (no CUDA stack), driven as its OpenAI server does.

The first run builds the environment into the user cache (about 1-2.5 min, 2.5 GB); later runs reuse it.
"""

import pytest

from engine_common import CALL, OFF, TOOLS, engine_worker
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

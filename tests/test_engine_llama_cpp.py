"""The llama.cpp engine: a C++ protocol worker over llama.cpp's chat parser, built from the pinned sdist.

The first run builds it into the user cache (about 3.5 min on 2 cores); later runs reuse it. It is also the
test suite's non-Python worker, run through ``cmd:`` like any executable.
"""

import shlex

import pytest

from engine_common import CALL, OFF, TOOLS, engine_worker
from harness.formats import get_format
from harness.model import ToolCall
from harness.protocol import run_stream
from harness.runner import evaluate_case
from harness.tokens import token_pieces
from harness.worker_client import WorkerParser
from parsers import create_parsers

# A cold cache builds the environment inside the first test (minutes): allow for it.
pytestmark = pytest.mark.timeout(1800)

FMT = get_format("gemma4")


@pytest.fixture(scope="module")
def llama():
    yield from engine_worker("llama.cpp")


def test_hello_names_llama_cpp_and_its_version(llama):
    assert llama.name == "llama.cpp==0.3.36:gemma4"
    assert llama.hello["llama_cpp_commit"].startswith("0c1e57098") and llama.incremental


def test_one_shot_parses_a_declared_call(llama):
    got = llama.parse(CALL, TOOLS, OFF)
    assert got.tool_calls == [ToolCall("get_weather", {"city": "Paris", "days": 3})]
    assert not got.content


def test_template_null_none_drops_the_call_without_an_error(llama):
    """The Gemma 4 template writes JSON null as ``None``; llama.cpp's grammar accepts only ``null`` and its
    lenient parse stops there: the call vanishes, the library says nothing (the worker adds a diagnostic)."""
    got = llama.parse('<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,note:None}<tool_call|>', TOOLS, OFF)
    assert got.tool_calls == []
    assert any("dropped without an error" in d for d in got.diagnostics)
    assert llama.parse('<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,note:null}<tool_call|>', TOOLS,
                       OFF).tool_calls == [ToolCall("get_weather", {"city": "Paris", "note": None})]


def test_calls_need_declared_tools(llama):
    assert llama.parse(CALL, None, OFF).tool_calls == []


def test_streaming_real_token_pieces_matches_one_shot(llama):
    text = "Checking." + CALL
    pieces = token_pieces(text, "gemma4")
    streamed = run_stream(llama, [p for p, _ in pieces], TOOLS, OFF, token_ids=[ids for _, ids in pieces])
    assert streamed.tool_calls == llama.parse(text, TOOLS, OFF).tool_calls == [
        ToolCall("get_weather", {"city": "Paris", "days": 3})]


def test_streaming_error_is_a_parser_error_and_the_worker_survives(llama):
    """A re-parse that finds fewer calls than already streamed raises ``Invalid diff`` inside llama.cpp."""
    text = CALL + '<|tool_call>call:get_weather{city:<|"|>Rome<|"|>,note:None}<tool_call|>'
    records = list(evaluate_case(_case(text), llama, FMT, ["oneshot", "char"], seed=0, timeout_s=10))
    assert {r.error_type for r in records} <= {"wrong_call_count", "exception", "stream_diverges"}
    assert llama.parse(CALL, TOOLS, OFF).tool_calls  # same worker, still answering
    assert llama.restarts == 0


def test_the_binary_runs_as_a_cmd_worker(llama):
    """The non-Python worker through ``cmd:``, as a user would name any executable."""
    parsers, unavailable = create_parsers([f"cmd:{shlex.join(llama.spec.argv)}"], "gemma4")
    assert unavailable == {}
    (worker,) = parsers
    try:
        assert isinstance(worker, WorkerParser) and worker.name == "llama.cpp==0.3.36:gemma4"
        results = worker.parse_many([(CALL, TOOLS, OFF)] * 50)
        assert all(r.tool_calls == [ToolCall("get_weather", {"city": "Paris", "days": 3})] for r in results)
    finally:
        worker.close()


def _case(text):
    from harness.model import Case, Message

    return Case(id="x", format="gemma4", text=text, tools=TOOLS, prefix=OFF, slice="curated",
                expected=Message(tool_calls=[ToolCall("get_weather", {"city": "Paris", "days": 3}),
                                             ToolCall("get_weather", {"city": "Rome", "note": None})]))


def test_the_documented_example_exchange_is_what_the_worker_answers(llama):
    """docs/worker-protocol.md shows a real exchange with this worker: replay it and compare line by line."""
    import json
    import subprocess
    from pathlib import Path

    doc = (Path(__file__).resolve().parent.parent / "docs" / "worker-protocol.md").read_text()
    block = doc.split("## An example exchange", 1)[1].split("```\n", 2)[1]
    sent = [line[2:] for line in block.splitlines() if line.startswith("> ")]
    expected = [json.loads(line[2:]) for line in block.splitlines() if line.startswith("< ")]
    out = subprocess.run(llama.spec.argv, input="\n".join(sent) + "\n", capture_output=True, text=True, timeout=60)
    assert [json.loads(line) for line in out.stdout.splitlines()] == expected

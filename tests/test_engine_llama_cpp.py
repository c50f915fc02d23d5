"""The llama.cpp engine: a C++ protocol worker over llama.cpp's chat parser, built from the pinned sdist, serving
Gemma 4 (the Gemma 4 template) and Hermes (the Qwen 2.5 template).

The first run builds it into the user cache (about 3.5 min on 2 cores); later runs reuse it. It is also the
test suite's non-Python worker, run through ``cmd:`` like any executable.
"""

import json
import shlex

import pytest
from engine_common import (
    CALL,
    HERMES_CASES,
    HERMES_MODES,
    HERMES_TEMPLATE,
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

from harness import engines
from harness.formats import get_format
from harness.model import ToolCall
from harness.protocol import run_stream
from harness.runner import evaluate_case
from harness.sdist import sdist_file
from harness.tokens import token_pieces
from harness.worker_client import WorkerParser, WorkerParserError
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
    # the documented worker serves Gemma 4 only: start it with that one template
    argv = [llama.spec.argv[0], "--template", f"gemma4={sdist_file('models/templates/google-gemma-4-31B-it.jinja')}"]
    out = subprocess.run(argv, input="\n".join(sent) + "\n", capture_output=True, text=True, timeout=60)
    assert [json.loads(line) for line in out.stdout.splitlines()] == expected


# ------------------------------------------------------------------------------------------------- Hermes

@pytest.fixture(scope="module")
def llama_hermes():
    yield from hermes_worker("llama.cpp")


def test_hermes_parser_is_named_for_the_format(llama_hermes):
    assert llama_hermes.name == "llama.cpp==0.3.36:hermes"
    assert any(a.endswith("=" + str(sdist_file(HERMES_TEMPLATE))) for a in llama_hermes.spec.argv)


def test_hermes_texts_one_shot_and_streaming(llama_hermes):
    """The Qwen 2.5 template gives llama.cpp's generated ``peg-native`` parser: every text parses, content before
    a call keeps its newline, ``</tool_call>`` inside a string stays in the value."""
    got = hermes_results(llama_hermes)
    expected = {case: {mode: hermes_expected(case) for mode in HERMES_MODES} for case in HERMES_CASES}
    expected["content_then_call"] = dict.fromkeys(HERMES_MODES, hermes_msg("Let me check.\n", [PARIS]))
    assert got == expected


def test_hermes_text_after_a_call_or_an_undeclared_tool_raises(llama_hermes):
    """Nothing may follow the last call and every tool name is a literal of the grammar: the parse fails."""
    call = HERMES_CASES["one_call"][0]()
    for text in (call + "\nDone.", call.replace("get_weather", "send_mail")):
        with pytest.raises(WorkerParserError, match="does not match the expected peg-native format"):
            llama_hermes.parse(text, HERMES_TOOLS, "")
    assert llama_hermes.parse(call, None, "").content == call  # no tools: a content-only parser


def test_hermes_3_template_gives_the_same_parser_but_fails_on_a_type_list():
    """Started with the Hermes 3 tool-use template instead, the worker answers the Hermes texts alike; but that
    template's own ``basic_type_map[json_spec.type]`` cannot take a JSON-schema type list such as
    ``["string", "null"]``, so a request declaring one fails before parsing."""
    engines.install("llama.cpp")
    installed = engines.find_installed("llama.cpp")
    hermes3 = sdist_file("models/templates/NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja")
    binary = installed.path / "bin" / "llama-cpp-worker"
    parsers, unavailable = create_parsers([f"cmd:{shlex.join([str(binary), '--template', f'hermes={hermes3}'])}"],
                                          "hermes")
    assert unavailable == {}
    (worker,) = parsers
    try:
        call = HERMES_CASES["two_calls"][0]()
        with pytest.raises(WorkerParserError, match="unhashable type: Array"):
            worker.parse(call, HERMES_TOOLS, "")
        tools = json.loads(json.dumps(HERMES_TOOLS))
        tools[0]["function"]["parameters"]["properties"]["note"]["type"] = "string"
        assert worker.parse(call, tools, "").to_json() == hermes_expected("two_calls")
    finally:
        worker.close()

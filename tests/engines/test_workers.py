"""The worker protocol end to end: real worker processes, real pipes (docs/worker-protocol.md).

The project's own Gemma 4 parser served by ``harness.engines.server`` must give exactly the in-process results;
a worker that crashes, hangs, prints garbage or answers the wrong id costs only the case in progress (verdict
``error`` with the reason), is restarted, and the run goes on.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.core.cases import Case
from harness.core.messages import Message, ToolCall
from harness.core.protocol import run_stream
from harness.corpus.build import build_corpus
from harness.engines.client import STDERR_TAIL_BYTES, WorkerError, WorkerParser, WorkerParserError, WorkerSpec
from harness.formats import get_format
from harness.parse.registry import create_parsers
from harness.score.runner import evaluate_case
from harness.template.sources import load_template
from parsers.own.gemma4 import Gemma4Parser

ROOT = Path(__file__).resolve().parents[2]
FMT = get_format("gemma4")
ENV = {"PYTHONPATH": str(ROOT)}
OWN_WORKER = WorkerSpec([sys.executable, "-m", "harness.engines.server", "parsers.own.gemma4"], ENV, "own-worker")
FAULTY = [sys.executable, str(ROOT / "tests" / "engines" / "workers" / "faulty_worker.py")]


def faulty(*extra: str) -> WorkerSpec:
    return WorkerSpec(FAULTY + list(extra), ENV, "faulty")


@pytest.fixture(scope="module")
def cases():
    corpus = build_corpus(load_template("gemma-4-31b"), FMT, seed=0, n_generated=40)
    return corpus.cases


@pytest.fixture(scope="module")
def worker():
    parser = WorkerParser(OWN_WORKER, "gemma4")
    yield parser
    parser.close()


def test_hello_names_the_parser(worker):
    assert worker.name == "toolcall-harness==0.1.0:gemma4"
    assert worker.hello["protocol"] == 1 and worker.incremental is True


def test_worker_one_shot_equals_in_process_on_the_corpus(worker, cases):
    own = Gemma4Parser()
    for case in cases:
        assert worker.parse(case.text, case.tools, case.prefix) == own.parse(case.text, case.tools, case.prefix), (
            case.id
        )


def test_worker_streaming_equals_in_process_char_by_char(worker, cases):
    own = Gemma4Parser()
    for case in cases[:60]:
        chunks = list(case.text)
        got = run_stream(worker, chunks, case.tools, case.prefix)
        want = run_stream(own, chunks, case.tools, case.prefix)
        assert got == want, case.id


def test_single_request_stream_session_matches_pipelined(worker):
    text = 'Sure.<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>'
    session = worker.stream(None, "")
    deltas = [d for ch in text for d in session.feed(ch)] + session.finish()
    acc = run_stream(worker, list(text))
    assert acc.tool_calls == [ToolCall("get_weather", {"city": "Paris"})]
    assert "".join(d.content or "" for d in deltas) == acc.content


def test_pipelined_batch_with_large_texts_does_not_deadlock(worker):
    big = "x" * 200_000 + "<|tool_call>call:f{a:1}<tool_call|>"
    results = worker.parse_many([(big, None, "")] * 20)
    assert all(isinstance(r, Message) and r.tool_calls == [ToolCall("f", {"a": 1})] for r in results)


def _case(case_id: str, value: str) -> Case:
    return Case(
        id=case_id,
        format="gemma4",
        text=f'<|tool_call>call:f{{a:<|"|>{value}<|"|>}}<tool_call|>',
        expected=Message(tool_calls=[ToolCall("f", {"a": value})]),
        slice="curated",
    )


@pytest.mark.parametrize(
    "trigger, error_type, detail",
    [
        ("CRASH", "crash", "exit status 7"),
        ("HANG", "timeout", "no response within 1 s"),
        ("GARBAGE", "protocol", "not a JSON line"),
        ("WRONGID", "protocol", "expected the response to request"),
    ],
)
def test_a_failing_worker_costs_one_case_and_is_restarted(trigger, error_type, detail):
    parser = WorkerParser(faulty(), "gemma4")
    try:
        before = list(evaluate_case(_case("ok-1", "fine"), parser, FMT, ["oneshot", "char"], seed=0, timeout_s=1))
        bad = list(evaluate_case(_case("bad", trigger), parser, FMT, ["oneshot", "char", "whole"], seed=0, timeout_s=1))
        after = list(evaluate_case(_case("ok-2", "still fine"), parser, FMT, ["oneshot", "char"], seed=0, timeout_s=1))
    finally:
        parser.close()
    assert [r.verdict for r in before + after] == ["pass"] * 4
    assert [(r.verdict, r.error_type) for r in bad] == [("error", error_type)] * 3
    assert detail in bad[0].detail
    assert parser.restarts >= 3  # one restart per failed call


def test_a_worker_that_stops_reading_mid_stream_cannot_block_the_harness():
    """30,000 pipelined feeds (megabytes) to a worker that hangs at the 4th: the pipe fills, the harness
    still times out after 1 s and goes on."""
    parser = WorkerParser(faulty(), "gemma4")
    try:
        case = _case("big", "HANG" + "x" * 30000)
        (record,) = evaluate_case(case, parser, FMT, ["char"], seed=0, timeout_s=1)
        assert (record.verdict, record.error_type) == ("error", "timeout")
        assert parser.parse(_case("ok", "fine").text).tool_calls == [ToolCall("f", {"a": "fine"})]
    finally:
        parser.close()


def test_crash_detail_carries_the_workers_stderr():
    parser = WorkerParser(faulty(), "gemma4")
    with pytest.raises(WorkerError) as info:
        parser.parse(_case("x", "CRASH").text)
    parser.close()
    assert info.value.kind == "crash" and "crashing on purpose" in str(info.value)


def test_a_stderr_flood_keeps_only_its_end():
    """64 MiB of stderr on one line, then a crash: the message ends with the line's last characters (the crash's
    own words), and the harness kept 64 KiB of it (before: every byte of the unterminated line)."""
    parser = WorkerParser(faulty("--stderr-flood", str(64 << 20)), "gemma4")
    try:
        assert parser.parse(_case("ok", "fine").text).tool_calls == [ToolCall("f", {"a": "fine"})]
        worker = parser._worker
        assert worker is not None and len(worker._stderr) <= STDERR_TAIL_BYTES
        with pytest.raises(WorkerError) as info:
            parser.parse(_case("x", "CRASH").text)
    finally:
        parser.close()
    message = str(info.value)
    assert message.endswith("stderr: ..." + ("x" * 200 + "faulty worker: crashing on purpose")[-200:]), message[-300:]


def test_parser_errors_inside_the_worker_are_exceptions_and_the_worker_stays():
    parser = WorkerParser(
        WorkerSpec([sys.executable, "-m", "harness.engines.server", "parsers.reference.transformers"], ENV), "gemma4"
    )
    try:
        with pytest.raises(WorkerParserError, match="ValueError"):
            parser.parse("<|tool_call>call:manim-video{a:1}<tool_call|>")
        assert parser.parse("<|tool_call>call:f{a:1}<tool_call|>").tool_calls == [ToolCall("f", {"a": 1})]
        assert parser.restarts == 0
    finally:
        parser.close()


def test_a_worker_that_fails_to_start_is_unavailable_with_its_reason():
    command = " ".join(FAULTY + ["--fail-start"])
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(ROOT)
    try:
        parsers, unavailable = create_parsers(["own", f"cmd:{command}"], "gemma4")
    finally:
        os.environ.pop("PYTHONPATH") if old is None else os.environ.__setitem__("PYTHONPATH", old)
    assert [p.name for p in parsers] == ["toolcall-harness:gemma4"]
    (reason,) = unavailable.values()
    assert "failed to start" in reason and "cannot load the parser library" in reason


def test_missing_executable_is_unavailable_not_a_traceback():
    parsers, unavailable = create_parsers(["cmd:/nonexistent/parser-worker --x"], "gemma4")
    assert parsers == [] and "cannot start worker" in next(iter(unavailable.values()))


def test_eval_with_a_cmd_parser_and_a_faulty_worker_runs_to_the_end(tmp_path):
    """The CLI, end to end: the faulty worker fails the cases holding trigger words (none in the corpus),
    so it must match the in-process parser; the worker runs through `cmd:`."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = " ".join(FAULTY)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "eval",
            "--model",
            "gemma-4-e2b",
            "--cases",
            "10",
            "--parsers",
            f"own,cmd:{command},cmd:{command} --fail-start",
            "--modes",
            "oneshot,char",
            "--no-shrink",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    records = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().split("\n") if line]
    by_parser: dict[str, list] = {}
    for r in records:
        by_parser.setdefault(r["parser"], []).append((r["case_id"], r["mode"], r["verdict"]))
    assert set(by_parser) == {"toolcall-harness:gemma4", "toolcall-harness==0.1.0:gemma4"}
    assert by_parser["toolcall-harness:gemma4"] == by_parser["toolcall-harness==0.1.0:gemma4"]
    report = (tmp_path / "report.md").read_text()
    assert "ran out of process" in report
    assert "--fail-start` could not run" in report and "[/INST]" in report  # reported, not a crash
    assert "unavailable" in out.stdout and "[/INST]" in out.stdout

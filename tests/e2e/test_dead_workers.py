"""Dead workers cost a few cases, not the run: the circuit breaker (:class:`harness.parse.calls.Breaker`) with real
worker processes (``tests/engines/workers/faulty_worker.py``) through the real CLI, and restarts bounded by the
per-call limit (:attr:`harness.engines.client.WorkerParser.restart_timeout_s`).

Measured before the breaker (2026-12-04, 2 cores): a worker hanging on every call, 126 curated cases × 2 modes at
``--timeout 1``, took 588.6 s (252 timeouts, 251 restarts); a worker whose restarts stall took 121 s per case at
``--timeout 1``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.engines.client import WorkerError, WorkerParser, WorkerSpec
from harness.parse.calls import UNAVAILABLE

ROOT = Path(__file__).resolve().parents[2]
FAULTY = [sys.executable, str(ROOT / "tests" / "engines" / "workers" / "faulty_worker.py")]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
WORKER = "toolcall-harness==0.1.0:gemma4"
OWN = "toolcall-harness:gemma4"


def run_cli(*args: str) -> tuple[subprocess.CompletedProcess, float]:
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=600
    )
    return out, time.perf_counter() - started


def records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text(encoding="utf-8").split("\n") if line]


@pytest.mark.parametrize("fault", ["HANG", "CRASH"])
def test_a_dead_worker_is_broken_after_three_cases_and_the_run_goes_on(tmp_path, fault):
    out, seconds = run_cli(
        "eval",
        "--model",
        "gemma-4-e2b",
        "--slices",
        "curated",
        "--modes",
        "oneshot,char",
        "--parsers",
        "own,cmd:" + " ".join([*FAULTY, "--always", fault]),
        "--timeout",
        "1",
        "--no-capture",
        "--out",
        str(tmp_path),
    )
    assert out.returncode == 0, out.stderr
    got = records(tmp_path)
    own = [r for r in got if r["parser"] == OWN]
    worker = [r for r in got if r["parser"] == WORKER]
    assert len(own) == len(worker) == 252 and all(r["verdict"] == "pass" for r in own)  # every case, each once
    kind = "timeout" if fault == "HANG" else "crash"
    # cases 1 and 2: both modes fail; case 3: its one-shot fails and breaks the parser
    assert [r["error_type"] for r in worker[:6]] == [kind] * 5 + [UNAVAILABLE]
    assert all(r["verdict"] == "error" and r["error_type"] == UNAVAILABLE for r in worker[5:])
    run = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    broken = run["broken"][WORKER]
    assert broken["case"] == f"curated/{worker[4]['case_id']}" and broken["unavailable"] == 247
    assert "3 cases in a row" in broken["reason"] and worker[5]["detail"] == broken["reason"]
    assert run["workers"][WORKER]["restarts"] <= 5
    assert all(c["error_type"] != UNAVAILABLE for c in run["fault_classes"])
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert f"`{WORKER}` stopped at `{broken['case']}`" in report and "247 results error/unavailable" in report
    assert "its remaining results are error/unavailable" in " ".join(out.stdout.split())  # wrapped lines
    assert seconds < 120, f"{seconds:.0f} s"  # before the breaker: 588.6 s for the hanging worker


def test_a_restart_that_stalls_costs_the_time_limit_not_two_minutes(tmp_path):
    marker = tmp_path / "started"
    parser = WorkerParser(WorkerSpec([*FAULTY, "--always", "CRASH", "--stall-restart", str(marker)], ENV), timeout_s=1)
    try:
        with pytest.raises(WorkerError, match="closed its output"):
            parser.parse("x")
        started = time.perf_counter()
        with pytest.raises(WorkerError) as raised:
            parser.parse("x")  # the restart never answers hello
        seconds = time.perf_counter() - started
    finally:
        parser.close()
    assert raised.value.kind == "timeout" and "failed to start" in str(raised.value)
    assert seconds < parser.restart_timeout_s + 5 and parser.restart_timeout_s == max(1, 2 * parser.started_s)
    assert seconds < 60  # it waited 120 s before


def test_an_eval_with_stalling_restarts_ends_in_seconds(tmp_path):
    out, seconds = run_cli(
        "eval",
        "--model",
        "gemma-4-e2b",
        "--slices",
        "observed",
        "--modes",
        "oneshot",
        "--parsers",
        "own,cmd:" + " ".join([*FAULTY, "--always", "CRASH", "--stall-restart", str(tmp_path / "started")]),
        "--timeout",
        "1",
        "--no-capture",
        "--out",
        str(tmp_path / "run"),
    )
    assert out.returncode == 0, out.stderr
    worker = [r["error_type"] for r in records(tmp_path / "run") if r["parser"] == WORKER]
    assert worker == ["crash", "timeout", "timeout"] + [UNAVAILABLE] * 7
    assert seconds < 90, f"{seconds:.0f} s"  # before: 121 s per case, 10 cases


def test_break_after_zero_never_breaks(tmp_path):
    out, _ = run_cli(
        "eval",
        "--model",
        "gemma-4-e2b",
        "--slices",
        "observed",
        "--modes",
        "oneshot",
        "--parsers",
        "cmd:" + " ".join([*FAULTY, "--always", "CRASH"]),
        "--break-after",
        "0",
        "--no-capture",
        "--out",
        str(tmp_path),
    )
    assert out.returncode == 0, out.stderr
    assert [r["error_type"] for r in records(tmp_path)] == ["crash"] * 10
    assert json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))["broken"] == {}


def test_one_hanging_case_costs_that_case_only(tmp_path):
    """A parser that hangs on one input is not dead: the cases after it run (the trigger word is in one case)."""
    cases = tmp_path / "cases.jsonl"
    lines = [{"id": f"c{i}", "format": "gemma4", "text": f"<|tool_call>call:f{{a:{i}}}<tool_call|>"} for i in range(6)]
    lines[2]["text"] = "HANG " + lines[2]["text"]
    for line in lines:
        line.update(kind="strict", tools=None, expected={"tool_calls": [{"name": "f", "arguments": {"a": 0}}]})
    cases.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    out, _ = run_cli(
        "check",
        str(cases),
        "--parser",
        "cmd:" + " ".join(FAULTY),
        "--modes",
        "oneshot,char",
        "--timeout",
        "1",
        "--break-after",
        "2",
        "--out",
        str(tmp_path / "out.jsonl"),
    )
    assert out.returncode == 0, out.stderr
    got = [
        (r["case_id"], r["error_type"]) for r in map(json.loads, (tmp_path / "out.jsonl").read_text().split("\n")[:-1])
    ]
    assert got[4:6] == [("c2", "timeout"), ("c2", "timeout")]
    assert UNAVAILABLE not in [t for _, t in got] and len(got) == 12


def test_a_sweep_counts_a_broken_parser_apart(tmp_path):
    out, _ = run_cli(
        "sweep",
        "--model",
        "gemma-4-e2b",
        "--parsers",
        "toolcall-harness,cmd:" + " ".join([*FAULTY, "--always", "CRASH"]),
        "--cases",
        "20",
        "--cuts",
        "2",
        "--jobs",
        "1",
        "--out",
        str(tmp_path),
    )
    assert out.returncode == 0, out.stderr
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    broken = summary["broken"][WORKER]
    assert broken["case"] == 2 and broken["unavailable"] == 17 and "3 cases in a row" in broken["reason"]
    assert summary["wrong"][WORKER]["any"] == 3 and summary["finished"] is True
    assert summary["wrong"]["toolcall-harness:gemma4"]["any"] == 0
    assert f"{WORKER} unavailable 17 cases not checked" in " ".join(out.stdout.split())
    assert "3/3 wrong" in out.stdout  # the rate is over the cases it was asked about

"""Runs that never mix and runs that resume (:mod:`harness.jobs.resume`), with the real CLI in subprocesses.

A run killed with ``SIGKILL`` at seeded random points (while records are written, inside the circuit breaker's
count, while the reports are written), its results file given a torn last line, then resumed each time, must end
with the files of an uninterrupted run: the same bytes but for the timings, run id and start time, and how often a
worker was restarted. A non-empty ``--out`` is refused; two runs started at once get two folders."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FAULTY = [sys.executable, str(ROOT / "tests" / "engines" / "workers" / "faulty_worker.py")]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
SEED = 20261204
EVAL = [
    "eval",
    "--model",
    "gemma-4-e2b",
    "--cases",
    "3",
    "--modes",
    "oneshot,char,random",
    "--parsers",
    "own,cmd:" + " ".join([*FAULTY, "--always", "CRASH"]),  # broken after its first 3 cases
    "--no-capture",
]
SWEEP = [
    "sweep",
    "--model",
    "gemma-4-e2b",
    "--parsers",
    "toolcall-harness,transformers",
    "--cases",
    "600",
    "--jobs",
    "1",
]


def cli(args: list[str], cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, env=ENV, cwd=cwd, timeout=600
    )


def lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def killed(args: list[str], watch: Path, at_lines: int, then_s: float = 0.0) -> bool:
    """Start ``args``; ``SIGKILL`` it once ``watch`` has ``at_lines`` lines and ``then_s`` seconds more have passed.
    False when it ended by itself first."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=ENV,
        cwd=ROOT,
    )
    try:
        while lines(watch) < at_lines:
            if proc.poll() is not None:
                return False
            time.sleep(0.005)
        time.sleep(then_s)
        if proc.poll() is not None:
            return False
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        return True
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def eval_files(run_dir: Path) -> dict[str, object]:
    """The run's files, with what differs between two uninterrupted runs taken out."""
    untimed = {"object_hook": lambda data: {k: v for k, v in data.items() if k != "elapsed_ms"}}
    results = (run_dir / "results.jsonl").read_text(encoding="utf-8").split("\n")
    records = [json.loads(line, **untimed) for line in results if line]
    run = json.loads((run_dir / "run.json").read_text(encoding="utf-8"), **untimed)  # fault class examples too
    for key in ("run_id", "started", "duration_s", "resumed"):
        run.pop(key)
    for worker in run["workers"].values():
        worker.pop("restarts")
    stamp = re.compile(r"Run (`|<code>)[^ ]+(`|</code>), started [^ ]+ [0-9.]+ s[^\n]*|restarted \d+ time\(s\)")
    return {
        "results": records,
        "run": run,
        "corpus": (run_dir / "corpus.jsonl").read_bytes(),
        "summary": (run_dir / "summary.csv").read_bytes(),
        **{name: stamp.sub("", (run_dir / name).read_text(encoding="utf-8")) for name in ("report.md", "report.html")},
    }


def test_eval_killed_at_random_points_resumes_to_the_uninterrupted_files(tmp_path):
    whole, part = tmp_path / "whole", tmp_path / "part"
    done = cli([*EVAL, "--out", str(whole)])
    assert done.returncode == 0, done.stderr
    total = lines(whole / "results.jsonl")
    rng = random.Random(SEED)
    # inside the breaker's count (the worker's first records), then anywhere, then while the reports are written
    points = [(rng.randint(4, 15), 0.0), (rng.randint(16, total - 1), 0.0), (total, rng.uniform(0.0, 2.0))]
    first, finished = True, False
    for at, then in points:
        args = [*EVAL, "--out", str(part)] if first else [*EVAL, "--resume", str(part)]
        if not killed(args, part / "results.jsonl", at, then):
            finished = True  # it ended before the kill
            break
        if first:
            first = False
            wrong = cli([*EVAL, "--cases", "4", "--resume", str(part)])
            assert wrong.returncode == 2 and wrong.stderr.count("\n") == 1, wrong.stderr
            assert "the run was started with other settings: --cases 3 (now 4)" in wrong.stderr
            refused = cli([*EVAL, "--out", str(part)])
            assert refused.returncode == 2 and "not empty" in refused.stderr and f"--resume {part}" in refused.stderr
            report = cli(["report", str(part)])
            assert report.returncode == 2 and "did not finish" in report.stderr and "--resume" in report.stderr
            with (part / "results.jsonl").open("a", encoding="utf-8") as out:
                out.write('{"case_id": "edge-nested-objects", "slice": "cur')  # a line cut short by the kill
    if not finished:
        resumed = cli([*EVAL, "--resume", str(part)])
        assert resumed.returncode == 0, resumed.stderr
        assert "dropped a torn last line" in resumed.stdout or not first
    assert eval_files(part) == eval_files(whole), f"kill points {points} (seed {SEED})"
    run = json.loads((part / "run.json").read_text(encoding="utf-8"))
    assert run["resumed"] and run["broken"] == json.loads((whole / "run.json").read_text(encoding="utf-8"))["broken"]
    again = cli([*EVAL, "--resume", str(part)])
    assert again.returncode == 2 and "the run finished; nothing to resume" in again.stderr


def sweep_files(run_dir: Path) -> dict[str, object]:
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    for key in ("started", "resumed", "elapsed_s", "cases_per_s"):
        summary.pop(key)
    batches = [json.loads(line) for line in (run_dir / "batches.jsonl").read_text(encoding="utf-8").split("\n") if line]
    for batch in batches:
        batch.pop("elapsed_s")
    report = re.sub(r"[0-9.]+ s with", "", (run_dir / "report.md").read_text(encoding="utf-8"))
    return {
        "failures": (run_dir / "failures.jsonl").read_bytes(),
        "summary": summary,
        "batches": batches,
        "report": report,
    }


def test_sweep_killed_at_random_points_resumes_to_the_uninterrupted_files(tmp_path):
    whole, part = tmp_path / "whole", tmp_path / "part"
    done = cli([*SWEEP, "--out", str(whole)])
    assert done.returncode == 0, done.stderr
    rng = random.Random(SEED)
    failures = lines(whole / "failures.jsonl")
    points = sorted(rng.sample(range(1, failures), 2))  # failure lines are written a batch at a time
    for i, at in enumerate(points):
        args = [*SWEEP, "--out", str(part)] if i == 0 else [*SWEEP, "--resume", str(part)]
        assert killed(args, part / "failures.jsonl", at, rng.uniform(0.0, 0.5)), f"ended before {at} lines"
        with (part / "batches.jsonl").open("a", encoding="utf-8") as out:
            out.write('{"end": 750, "counts": {"cas')  # torn
    wrong = cli([*SWEEP, "--cuts", "3", "--resume", str(part)])
    assert wrong.returncode == 2 and wrong.stderr.count("\n") == 1 and "--cuts 8 (now 3)" in wrong.stderr
    resumed = cli([*SWEEP, "--resume", str(part)])
    assert resumed.returncode == 0, resumed.stderr
    assert sweep_files(part) == sweep_files(whole), f"kill points {points} (seed {SEED})"


def test_a_non_empty_out_is_refused_before_any_work_and_force_replaces(tmp_path):
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "todo.txt").write_text("mine\n")
    for args in ([*EVAL[:5], "--parsers", "own", "--no-capture"], SWEEP[:5]):
        out = cli([*args, "--out", str(mine)])
        assert out.returncode == 2 and out.stderr.count("\n") == 1 and "not empty" in out.stderr, out.stderr
        assert out.stdout == "" and sorted(p.name for p in mine.iterdir()) == ["todo.txt"]
    forced = cli([*SWEEP[:5], "--cases", "5", "--out", str(mine), "--force"])
    assert forced.returncode == 0, forced.stderr
    assert (mine / "todo.txt").read_text() == "mine\n" and (mine / "summary.json").is_file()
    both = cli([*SWEEP[:5], "--out", str(mine), "--resume", str(mine), "--force"])
    assert both.returncode == 2 and "--resume continues a run and --force replaces one" in both.stderr


def test_two_evals_started_at_once_write_two_run_folders(tmp_path):
    args = [sys.executable, "-m", "harness.cli", "eval", "--model", "gemma-4-e2b", "--slices", "observed"]
    procs = [
        subprocess.Popen([*args, "--parsers", "own", "--no-capture"], env=ENV, cwd=tmp_path, stdout=subprocess.DEVNULL)
        for _ in range(2)
    ]
    assert [p.wait(timeout=600) for p in procs] == [0, 0]
    runs = sorted((tmp_path / "reports" / "gemma-4-e2b").iterdir())
    assert len(runs) == 2
    ids = [json.loads((run / "run.json").read_text(encoding="utf-8"))["run_id"] for run in runs]
    assert ids == [run.name for run in runs]  # the folder name is the run id, unique
    keys = [[(r["case_id"], r["mode"]) for r in map(json.loads, (run / "results.jsonl").open())] for run in runs]
    assert keys[0] == keys[1] and len(set(keys[0])) == len(keys[0]) > 0  # each run's records, once each

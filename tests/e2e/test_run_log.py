"""The run log end to end: ``eval`` prints only what it renders from the log it returns, and
``toolcall-harness report RUN_DIR`` writes the run folder's report.md, report.html and summary.csv again, byte for
byte, from the folder alone; a bad RUN_DIR is one ``error:`` line naming the file (and line)."""

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.core.errors import HarnessError
from harness.jobs.evaluate import EvalConfig, run_eval
from harness.report.progress import BarAdvance, BarStart, BarStop, Note
from harness.report.runlog import RunLog

BIN = Path(sys.executable).parent / "toolcall-harness"
REPORTS = ("report.md", "report.html", "summary.csv")


def run_cli(*args):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, env=env, timeout=900)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A real small eval through the CLI: gemma-4-e2b, 10 generated cases, every slice, mode and default parser."""
    out = tmp_path_factory.mktemp("run")
    proc = run_cli("eval", "--model", "gemma-4-e2b", "--cases", "10", "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, proc.stdout


def test_report_writes_the_same_bytes_from_the_run_folder(run, tmp_path):
    out, _ = run
    written = {name: (out / name).read_bytes() for name in REPORTS}
    for name in REPORTS:
        (out / name).unlink()
    proc = run_cli("report", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == f"wrote {out / 'report.md'}, {out / 'summary.csv'}, {out / 'report.html'}"
    for name in REPORTS:
        assert (out / name).read_bytes() == written[name], name


def test_report_show_prints_the_tables_eval_printed(run):
    out, eval_stdout = run
    proc = run_cli("report", str(out), "--show")
    assert proc.returncode == 0, proc.stderr[-3000:]
    shown = proc.stdout.rsplit("wrote ", 1)[0]  # the last line names the files written
    assert "passed/total" in shown and "fault classes" in shown
    assert eval_stdout.endswith(shown)


def test_the_log_returned_is_the_log_saved(run):
    out, _ = run
    log = RunLog.load(out)
    data = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert log.parsers == list(data["parsers"]) and log.modes == tuple(data["modes"])
    assert len(log.records) == len((out / "results.jsonl").read_text(encoding="utf-8").strip("\n").split("\n"))
    assert log.fault_classes and all(c.repro for c in log.fault_classes)


@pytest.mark.parametrize(
    "damage, message",
    [
        (None, "error: {dir}/nope: no such run folder"),
        (lambda d: (d / "run.json").unlink(), "error: {dir}: no run.json: the run did not finish"),
        (lambda d: (d / "run.json").write_text("{\n oops"), "error: {dir}/run.json:2: not JSON"),
        (
            lambda d: (d / "results.jsonl").write_text('{"case_id": "x"}\n{]\n'),
            "error: {dir}/results.jsonl:1: field 'slice' missing",
        ),
        (lambda d: (d / "results.jsonl").write_text("\n\n[1]\n"), "error: {dir}/results.jsonl:3: a result must be"),
    ],
)
def test_a_bad_run_dir_is_one_error_line(run, tmp_path, damage, message):
    out, _ = run
    target = tmp_path / "run"
    subprocess.run(["cp", "-r", str(out), str(target)], check=True)
    if damage is not None:
        damage(target)
    proc = run_cli("report", str(target if damage else tmp_path / "nope"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(message.format(dir=target if damage else tmp_path)) and proc.stderr.count("\n") == 1


def test_run_eval_prints_nothing_and_reports_progress_as_events(tmp_path, capsys):
    events = []
    config = EvalConfig(
        model="gemma-4-e2b",
        parsers=["own"],
        modes=("oneshot", "whole"),
        slices=("curated",),
        n_generated=0,
        out_dir=tmp_path,
        shrink=False,
        no_capture=True,
    )
    log = run_eval(config, progress=events.append)
    printed = capsys.readouterr()
    assert printed.out == "" and printed.err == ""
    notes = [e.text for e in events if isinstance(e, Note)]
    assert notes[0].startswith("template: ") and notes[-1].startswith("corpus: curated ")
    starts = [e for e in events if isinstance(e, BarStart)]
    assert starts == [BarStart("parsing", len(log.records), rate=True)] and events[-1] == BarStop("parsing")
    assert sum(isinstance(e, BarAdvance) for e in events) == len(log.records) == 2 * log.provenance.corpus["curated"]
    assert all((tmp_path / name).stat().st_size > 0 for name in (*REPORTS, "run.json", "corpus.jsonl"))


def test_a_second_run_into_the_same_folder_is_refused_unless_forced(tmp_path):
    config = EvalConfig(
        model="gemma-4-e2b",
        parsers=["own"],
        modes=("oneshot",),
        slices=("observed",),
        out_dir=tmp_path,
        shrink=False,
        no_capture=True,
    )
    first = run_eval(config)
    with pytest.raises(HarnessError, match="not empty"):  # before: its records were silently replaced
        run_eval(config)
    assert RunLog.load(tmp_path).records == first.records
    again = run_eval(dataclasses.replace(config, force=True))
    assert RunLog.load(tmp_path).records == again.records and len(again.records) == again.provenance.corpus["observed"]

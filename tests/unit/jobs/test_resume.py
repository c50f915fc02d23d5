"""What a resumed eval keeps of ``results.jsonl`` (:func:`harness.jobs.resume.kept_records`): the whole (case,
parser) units of the run's order, nothing of a unit cut short, an error naming the line for a record of another run;
and the settings check's one line. The runs killed with ``SIGKILL`` are in ``tests/e2e/test_kill_and_resume.py``."""

from __future__ import annotations

import pytest

from harness.core.cases import load_cases
from harness.core.errors import HarnessError
from harness.core.paths import OBSERVED_FILE
from harness.core.results import ResultsWriter
from harness.formats import get_format
from harness.jobs.evaluate import EvalConfig
from harness.jobs.resume import EVAL_FLAGS, check_settings, eval_settings, kept_records
from harness.parse.calls import Breaker
from harness.report.runlog import RunLogError
from harness.score.runner import evaluate_case, record_modes
from parsers.own.gemma4 import Gemma4Parser

FMT = get_format("gemma4")
MODES = ["oneshot", "char", "random"]


@pytest.fixture(scope="module")
def run():
    """Four observed cases through the own parser: the units, in run order, and their records."""
    parser = Gemma4Parser()
    units = [(case, parser, record_modes(case, MODES)) for case in load_cases(OBSERVED_FILE)[:4]]
    records = [r for case, p, modes in units for r in evaluate_case(case, p, FMT, modes, 0)]
    return units, records


def write(path, records):
    path.unlink(missing_ok=True)  # ResultsWriter appends
    with ResultsWriter(path) as writer:
        for record in records:
            writer.write(record)
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def test_every_whole_unit_is_kept_and_a_cut_one_dropped(tmp_path, run):
    units, records = run
    lines = write(tmp_path / "results.jsonl", records[:7])  # two units of 3 records, and 1 of the third
    kept, done = kept_records(tmp_path / "results.jsonl", units, Breaker())
    assert done == 2 and kept == [r.to_json() for r in records[:6]]
    assert (tmp_path / "results.jsonl").read_text(encoding="utf-8") == "".join(line + "\n" for line in lines[:6])


def test_a_complete_file_keeps_everything_and_capture_records_are_produced_again(tmp_path, run):
    units, records = run
    capture = records[0].__class__(**{**records[0].to_json(), "slice": "capture:weather", "case_id": "w1"})
    write(tmp_path / "results.jsonl", [*records, capture])
    kept, done = kept_records(tmp_path / "results.jsonl", units, Breaker())
    assert done == len(units) and len(kept) == len(records)


def test_a_record_of_another_run_is_an_error_naming_the_line(tmp_path, run):
    units, records = run
    write(tmp_path / "results.jsonl", [records[0], records[2], records[1]])
    with pytest.raises(RunLogError, match=r"results.jsonl:2: record .* is not this run's next one"):
        kept_records(tmp_path / "results.jsonl", units, Breaker())
    write(tmp_path / "results.jsonl", [*records, records[0]])
    with pytest.raises(RunLogError, match=rf"results.jsonl:{len(records) + 1}: a record after the run's last one"):
        kept_records(tmp_path / "results.jsonl", units, Breaker())


def test_other_settings_are_one_line_naming_the_flags(tmp_path):
    recorded = eval_settings(EvalConfig(model="gemma-4-e2b", n_generated=5, modes=("oneshot",)))
    now = eval_settings(EvalConfig(model="gemma-4-e2b", n_generated=6, modes=("oneshot", "char")))
    check_settings(tmp_path / "run.json", recorded, recorded, EVAL_FLAGS)
    with pytest.raises(HarnessError) as raised:
        check_settings(tmp_path / "run.json", recorded, now, EVAL_FLAGS)
    message = str(raised.value)
    assert "\n" not in message and str(tmp_path / "run.json") in message
    assert '--modes ["oneshot"] (now ["oneshot", "char"])' in message and "--cases 5 (now 6)" in message

"""The run log: saved into a run folder and read back equal; a folder that is missing, incomplete or corrupt is
one error naming the file (and line or field)."""

import json

import pytest

from harness.core.cases import CaseFileError, load_cases, write_cases
from harness.core.paths import OBSERVED_FILE
from harness.core.results import Record
from harness.report.runlog import FaultClass, Provenance, RunLog, RunLogError, Shrunk


def record(case_id: str, verdict: str, parser: str = "p", slice_name: str = "observed", mode: str = "oneshot"):
    failed = verdict in ("fail", "error")
    return Record(
        case_id=case_id,
        slice=slice_name,
        kind="strict",
        parser=parser,
        mode=mode,
        verdict=verdict,
        error_type="exception" if failed else None,
        detail="boom" if failed else "",
        got=None if failed else {"content": "x", "reasoning": None, "tool_calls": []},
        elapsed_ms=0.5,
        text_len=12,
        tags=["t"],
    ).to_json()


@pytest.fixture
def log(tmp_path) -> RunLog:
    """A run folder written as eval writes it: corpus.jsonl, results.jsonl, then run.json."""
    cases = load_cases(OBSERVED_FILE)[:2]
    records = [record(cases[0].id, "pass"), record(cases[1].id, "fail"), record("p1", "error", slice_name="capture:s")]
    provenance = Provenance(
        model="gemma-4-e2b",
        format="gemma4",
        run_id="20260101-000000-s0",
        started="2026-01-01T00:00:00+00:00",
        duration_s=1.25,
        template={"source": "sdist", "file": "t.jinja", "location": "-", "sha256": "ab", "fallback": False},
        versions={"python": "3.11"},
        seeds={"run_seed": 0},
        corpus={"observed": 2},
        skipped=[["edge-x", "cannot write it"]],
        parsers={"p": {"library": "l", "version": "1"}},
    )
    fault = FaultClass("p", "exception", "observed", 1, 1, ("oneshot",), (("t", 1),), records[1], None)
    log = RunLog(
        tmp_path,
        provenance,
        slices=("observed",),
        modes=("oneshot",),
        records=records,
        cases=cases,
        limitations=("one limit",),
        shrunk=(Shrunk("p", "exception", "text", 0, {"content": None}, None),),
        fault_classes=(fault,),
        capture={"backend": "files", "stats": []},
        capture_texts={"p1": None},
    )
    write_cases(tmp_path / "corpus.jsonl", cases)
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    log.save()
    return log


def test_a_saved_log_loads_back_equal(log):
    loaded = RunLog.load(log.run_dir)
    assert loaded == log
    assert loaded.parsers == ["p"] and len(loaded.corpus_records) == 2 and len(loaded.capture_records) == 1


def test_run_json_keeps_the_provenance_keys_first(log):
    data = json.loads((log.run_dir / "run.json").read_text(encoding="utf-8"))
    assert list(data)[:24] == [
        "model",
        "format",
        "run_id",
        "started",
        "duration_s",
        "template",
        "tokenizer",
        "versions",
        "commit",
        "seeds",
        "corpus",
        "skipped",
        "workers",
        "unavailable",
        "unsupported",
        "policy",
        "peers",
        "grammar",
        "settings",
        "resumed",
        "broken",
        "capture",
        "limitations",
        "parsers",
    ]


def _rewrite(path, transform):
    path.write_text(transform(path.read_text(encoding="utf-8")), encoding="utf-8")


def _drop_field(name):
    def transform(text):
        data = json.loads(text)
        del data[name]
        return json.dumps(data)

    return transform


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda d: (d / "run.json").unlink(), "{dir}: no run.json: the run did not finish (interrupted?)"),
        (lambda d: [(d / n).unlink() for n in ("run.json", "results.jsonl")], "{dir}: not a run folder (no run.json)"),
        (lambda d: _rewrite(d / "run.json", lambda t: "{\n  oops\n}"), "{dir}/run.json:2: not JSON"),
        (lambda d: _rewrite(d / "run.json", _drop_field("modes")), "{dir}/run.json: field 'modes' missing"),
        (lambda d: _rewrite(d / "run.json", _drop_field("template")), "{dir}/run.json: field 'template' missing"),
        (lambda d: _rewrite(d / "results.jsonl", lambda t: t + "{oops\n"), "{dir}/results.jsonl:4: invalid JSON"),
        (
            lambda d: _rewrite(d / "results.jsonl", lambda t: t.replace('"verdict": "fail", ', "")),
            "{dir}/results.jsonl:2: field 'verdict' missing",
        ),
        (
            lambda d: _rewrite(d / "results.jsonl", lambda t: t.replace('"verdict": "fail"', '"verdict": "meh"')),
            "{dir}/results.jsonl:2: field 'verdict' is 'meh'",
        ),
        (lambda d: (d / "results.jsonl").unlink(), "{dir}/results.jsonl: missing (not a complete run folder)"),
    ],
)
def test_a_damaged_run_folder_is_one_error_naming_the_file(log, damage, message):
    damage(log.run_dir)
    with pytest.raises(RunLogError) as error:
        RunLog.load(log.run_dir)
    assert message.format(dir=log.run_dir) in str(error.value) and "\n" not in str(error.value)


def test_a_missing_folder_and_a_bad_corpus_line_are_named(log, tmp_path):
    with pytest.raises(RunLogError, match="no such run folder"):
        RunLog.load(tmp_path / "nope")
    _rewrite(log.run_dir / "corpus.jsonl", lambda t: t + "[]\n")
    with pytest.raises(CaseFileError, match=r"corpus\.jsonl:3:"):
        RunLog.load(log.run_dir)

"""Baseline files and the gate's comparison (harness/jobs/baseline.py, harness/jobs/gate.py): the compact form the
engine pins use, one result per line, and what the strict gate counts as a change."""

import json

from harness.jobs.baseline import result_fields, write_baseline
from harness.jobs.gate import compare
from harness.report.gate import GateResult


def rec(case, mode, verdict="pass", error_type=None, got=None, detail=""):
    return {
        "case_id": case,
        "slice": "curated",
        "mode": mode,
        "verdict": verdict,
        "error_type": error_type,
        "detail": detail,
        "got": got,
    }


def test_compact_result_keeps_failures_whole_and_passes_short():
    passed = result_fields(rec("a", "char", got={"content": "x"}), compact=True)
    assert passed == {"case_id": "a", "slice": "curated", "mode": "char", "verdict": "pass"}
    failed = rec("a", "char", "fail", "wrong_args", {"content": None}, "city differs")
    assert result_fields(failed, compact=True) == failed
    assert result_fields(rec("a", "char", got={"content": "x"}))["got"] == {"content": "x"}


def test_written_baseline_is_json_with_one_result_per_line(tmp_path):
    data = {
        "schema": 1,
        "cases": {"a": {"slice": "curated", "digest": "d"}},
        "results": [rec("a", "oneshot"), rec("a", "char", "fail", "dropped", {"content": None})],
    }
    path = tmp_path / "m" / "p.json"
    write_baseline(path, data)
    assert json.loads(path.read_text(encoding="utf-8")) == data
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line.rstrip(",")) for line in lines if line.startswith('  {"case_id"')] == data["results"]
    write_baseline(path, {**data, "results": []})
    assert json.loads(path.read_text(encoding="utf-8"))["results"] == []


def test_compare_sorts_regressions_fixes_and_changes_of_failures():
    then = [
        rec("a", "oneshot"),
        rec("b", "oneshot", "fail", "dropped", {"tool_calls": []}),
        rec("c", "char", "fail", "dropped", {"tool_calls": []}, detail="old words"),
        rec("d", "char", "fail", "dropped", {"tool_calls": []}),
        rec("e", "char", "fail", "dropped", {"tool_calls": []}),
        rec("f", "tokens"),
        {"case_id": "g", "slice": "curated", "mode": "whole", "verdict": "pass"},  # a compact pass
    ]
    now = [
        rec("a", "oneshot", "fail", "wrong_args", {"tool_calls": [1]}),  # regression
        rec("b", "oneshot", got={"tool_calls": [1]}),  # fix
        rec("c", "char", "fail", "dropped", {"tool_calls": []}, detail="new words"),  # the detail alone: same
        rec("d", "char", "fail", "leaked_markup", {"tool_calls": []}),  # another fault class: a change
        rec("e", "char", "fail", "dropped", {"tool_calls": [], "content": "<x>"}),  # another output: a change
        rec("g", "whole", got={"content": "y"}),  # a pass, whatever it returned
        rec("h", "random"),  # no baseline result
    ]
    found = compare(then, now)
    assert [(f.case_id, f.mode) for f in found.regressions] == [("a", "oneshot")]
    assert [(f.case_id, f.mode) for f in found.fixes] == [("b", "oneshot")]
    assert [(f.case_id, f.now["error_type"]) for f in found.changes] == [("d", "leaked_markup"), ("e", "dropped")]
    assert (found.compared, found.missing, found.extra) == (6, 1, 1)


def test_strict_gate_fails_on_any_difference_the_plain_gate_only_on_regressions(tmp_path):
    (fix,) = compare([rec("b", "oneshot", "fail", "dropped")], [rec("b", "oneshot")]).fixes
    plain = GateResult(tmp_path, {}, "p", tmp_path, fixes=[fix], compared=1)
    strict = GateResult(tmp_path, {}, "p", tmp_path, fixes=[fix], compared=1, strict=True)
    assert not plain.failed and strict.failed
    assert GateResult(tmp_path, {}, "p", tmp_path, compared=1, extra=1, strict=True).failed
    assert not GateResult(tmp_path, {}, "p", tmp_path, compared=1, strict=True).failed

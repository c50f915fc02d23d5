"""Counts the reports share: the top failure types come in the same order in every process (a run folder
re-rendered later gives the same report.md)."""

import os
import subprocess
import sys

from harness.report.summary import top_failures

PROBE = """
from harness.report.summary import top_failures
records = [{"parser": "p", "verdict": "fail", "error_type": f"kind{i % 7}", "case_id": f"c{i}", "mode": "oneshot",
            "text_len": 1, "detail": ""} for i in range(14)]
print([row["error_type"] for row in top_failures(records, {}, limit=7)["p"]])
"""


def test_error_types_failing_as_many_cases_keep_the_order_records_show_them():
    records = [
        {"parser": "p", "verdict": "fail", "error_type": kind, "case_id": case, "mode": "oneshot", "text_len": 3}
        for kind, case in [("b", "1"), ("a", "2"), ("c", "3"), ("a", "4"), ("d", "5"), ("b", "6"), ("b", "7")]
    ]
    rows = top_failures(records, {}, limit=3)["p"]
    assert [(row["error_type"], row["cases"]) for row in rows] == [("b", 3), ("a", 2), ("c", 1)]


def test_the_order_does_not_depend_on_the_hash_seed():
    outputs = {
        subprocess.run(
            [sys.executable, "-c", PROBE],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            check=True,
        ).stdout
        for seed in (1, 2, 3, 4)
    }
    assert outputs == {str([f"kind{i}" for i in range(7)]) + "\n"}

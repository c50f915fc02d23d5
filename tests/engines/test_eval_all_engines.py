"""``make eval MODEL=gemma-4-e2b PARSERS=all``: every parser on one corpus, one-shot and streaming, one table.

Runs the real command through make (engines come from the user cache; a cold cache builds them first, about
8 minutes on 2 cores).
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

# A cold cache builds the environment inside the first test (minutes): allow for it.
pytestmark = pytest.mark.timeout(3000)

ROOT = Path(__file__).resolve().parents[2]
EXPECTED_LIBRARIES = {"toolcall-harness", "transformers", "mlx-lm", "sglang", "vllm", "vllm-mlx", "llama.cpp"}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("all")
    proc = subprocess.run(
        [
            "make",
            "-s",
            "eval",
            "MODEL=gemma-4-e2b",
            "PARSERS=all",
            "CASES=20",
            f"ARGS=--out {out} --no-shrink --timeout 60",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=3000,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().split("\n") if line]
    return proc.stdout, records, out


def test_all_seven_parsers_ran_every_case_in_every_mode(run):
    stdout, records, _ = run
    parsers = {r["parser"] for r in records}
    assert {p.split("==")[0].split(":")[0] for p in parsers} == EXPECTED_LIBRARIES
    cases = {r["case_id"] for r in records}
    for parser in parsers:
        modes = {(r["case_id"], r["mode"]) for r in records if r["parser"] == parser}
        assert {"oneshot", "whole", "char", "random", "tokens"} <= {m for _, m in modes}, parser
        assert {c for c, _ in modes} == cases, parser


def test_no_worker_crashed_or_broke_the_protocol(run):
    """Timeouts only where SGLang 0.5.23 really loops (its worker interrupts the call and says so)."""
    _, records, _ = run
    broken = [
        (r["parser"], r["case_id"], r["mode"], r["detail"])
        for r in records
        if r["error_type"] in ("crash", "protocol")
        or (r["error_type"] == "timeout" and not r["detail"].startswith("LibraryHang: sglang did not return"))
    ]
    assert broken == []


def test_one_table_names_every_parser_with_its_version(run):
    stdout, records, out = run
    for name in (
        "sglang==0.5.23:gemma4",
        "vllm==0.33.0:gemma4",
        "vllm-mlx==0.6.0:gemma4",
        "llama.cpp==0.3.36:gemma4",
        "transformers==5.24.0:gemma4",
        "mlx-lm==0.32.2:gemma4",
        "toolcall-harness:gemma4",
    ):
        assert name in stdout
    report = (out / "report.md").read_text()
    assert report.count("ran out of process") == 4

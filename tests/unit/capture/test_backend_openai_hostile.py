"""The ``openai`` backend against a real HTTP server that misbehaves (``http.server`` on 127.0.0.1, written here):
a stream kept alive by ``: ping`` forever, an endless stream, a 200 MB error body, 500, 429, a truncated stream, a
silent server, a refused connection. Every request ends within its limits (small ones here: the defaults are
600 s and 16 KiB per token) with a capture error naming the reason; none is read whole; the capture run records
each one and goes on to the next prompt (``docs/capture/openai.md``, "Limits"). A ``--base-url`` that is not an
http(s) URL is one error line."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import tracemalloc
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.capture.backends import BackendError, Request, Sampling
from harness.capture.backends._budget import BASE_BYTES, ERROR_BODY_BYTES
from harness.capture.backends.openai import create
from harness.capture.run import CaptureSettings

ROOT = Path(__file__).resolve().parents[3]
HUGE = 200 << 20  # bytes of the huge error body the server announces (and writes until the client leaves)


def event(text: str, finish: str | None = None) -> bytes:
    return f"data: {json.dumps({'choices': [{'index': 0, 'text': text, 'finish_reason': finish}]})}\n\n".encode()


class Hostile(BaseHTTPRequestHandler):
    """``POST /MODE/v1/completions`` behaves as MODE says; ``GET /MODE/v1/models`` lists one model (``ping``:
    pings forever instead). ``/script/...`` answers the n-th request of the server with ``SCRIPT[n]``."""

    protocol_version = "HTTP/1.1"
    requests: list[str] = []  # MODE of each POST, in order
    SCRIPT = ("ping", "endless", "huge-400", "ok")

    def log_message(self, *args) -> None:
        pass

    def _head(self, status: int, kind: str, length: int | None = None) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length" if length is not None else "transfer-encoding", str(length or "chunked"))
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def do_GET(self) -> None:
        if self.path.startswith("/ping/"):
            return self._pings()
        body = json.dumps({"data": [{"id": "hostile"}]}).encode()
        self._head(200, "application/json", len(body))
        self.wfile.write(body)

    def _pings(self) -> None:
        self._head(200, "text/event-stream")
        try:
            while True:
                self._chunk(b": ping\n\n")
                time.sleep(0.05)
        except OSError:  # the client gave up: what the test wants
            pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        mode = self.path.split("/")[1]
        if mode == "script":
            mode = self.SCRIPT[min(len([m for m in self.requests if m.startswith("script:")]), len(self.SCRIPT) - 1)]
            self.requests.append(f"script:{mode}")
        else:
            self.requests.append(mode)
        try:
            self._answer(mode)
        except OSError:
            pass

    def _answer(self, mode: str) -> None:
        if mode == "ping":
            return self._pings()
        if mode == "endless":
            self._head(200, "text/event-stream")
            while True:
                self._chunk(event("a") * 100)
        if mode in ("huge-500", "huge-400"):
            self._head(500 if mode == "huge-500" else 400, "text/plain", HUGE)
            block = b"x" * (1 << 20)
            for _ in range(HUGE >> 20):
                self.wfile.write(block)
            return
        if mode == "huge-json":  # ignores stream: true and answers a JSON body that does not end
            self._head(200, "application/json", HUGE)
            self.wfile.write(b'{"choices": [{"text": "')
            while True:
                self.wfile.write(b"a" * (1 << 16))
        if mode in ("500", "429") or (mode == "429-then-ok" and self.requests.count(mode) == 1):
            body = b"busy"
            self._head(int(mode[:3]), "text/plain", len(body))
            self.wfile.write(body)
            return
        if mode == "truncated":  # announces more than it sends, then closes
            body = event("a")
            self._head(200, "text/event-stream", len(body) + 100)
            self.wfile.write(body)
            self.close_connection = True
            return
        if mode == "silent":
            self._head(200, "text/event-stream")
            time.sleep(5)
            return
        body = event("Hello") + event(" there", "stop") + b"data: [DONE]\n\n"
        self._head(200, "text/event-stream", len(body))
        self.wfile.write(body)


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def generate(base_url: str, max_tokens: int = 16, **options):
    """``(generation, seconds)`` for one request through a fresh backend (model named: no model lookup)."""
    backend = create(None, base_url=base_url, model="m", backoff_s=0.05, **options)
    started = time.monotonic()
    try:
        generation = backend.generate(Request("p", "hi", sampling=Sampling(max_tokens=max_tokens)))
        return generation, time.monotonic() - started
    finally:
        backend.close()


def test_a_stream_kept_alive_by_pings_ends_at_the_deadline(server):
    gen, seconds = generate(f"{server}/ping", deadline_s=0.5)
    assert gen.error == "deadline: the request ran past its 0.5 s (--request-deadline) after 0 pieces"
    assert 0.5 <= seconds < 2  # at the first ping after it (every 0.05 s)


def test_an_endless_stream_ends_at_the_byte_cap_with_its_pieces(server):
    gen, seconds = generate(f"{server}/endless", max_tokens=4, bytes_per_token=100, deadline_s=30)
    cap = BASE_BYTES + 4 * 100
    assert gen.error == (
        f"response too large: more than {cap} bytes (64 KiB + 100 per max_tokens token; --max-bytes-per-token) "
        f"after {len(gen.pieces)} pieces"
    )
    assert 0 < len(gen.pieces) * len(event("a")) <= cap and seconds < 5


@pytest.mark.parametrize("mode, status, attempts", [("huge-500", 500, 3), ("huge-400", 400, 1)])
def test_a_huge_error_body_is_read_only_up_to_its_cap(server, mode, status, attempts):
    tracemalloc.start()
    try:
        gen, seconds = generate(f"{server}/{mode}", retries=2)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert gen.error == (
        f"HTTP {status} from POST /{mode}/v1/completions: {'x' * 300}... (the body is over {ERROR_BODY_BYTES} "
        "bytes; the rest was not read)" + (f" (after {attempts} attempts)" if attempts > 1 else "")
    )
    assert peak < 8 << 20 and seconds < 5  # before: the 200 MB body read whole (435 MB peak for one)


def test_a_body_that_ignores_stream_and_never_ends_is_cut_at_the_cap(server):
    gen, _ = generate(f"{server}/huge-json", max_tokens=1, bytes_per_token=10)
    assert gen.error.startswith(f"response too large: more than {BASE_BYTES + 10} bytes") and gen.pieces == []


def test_retries_stop_at_the_deadline(server):
    # 500 every time: retried with backoff 0.05, 0.1, 0.2, ... until the next wait would pass the 0.5 s deadline
    gen, seconds = generate(f"{server}/500", retries=50, deadline_s=0.5)
    assert gen.error.startswith("HTTP 500 from POST /500/v1/completions: busy (after ")
    assert gen.error.endswith("; not retried: the 0.5 s deadline (--request-deadline) is near") and seconds < 1


def test_429_is_retried_and_then_answered(server):
    gen, _ = generate(f"{server}/429-then-ok")
    assert gen.error is None and gen.text == "Hello there" and gen.finish_reason == "stop"


@pytest.mark.parametrize(
    "path, options, error",
    [
        ("/429", {"retries": 1}, "HTTP 429 from POST /429/v1/completions: busy (after 2 attempts)"),
        (
            "/truncated",
            {},
            "truncated stream after 1 pieces: connection lost (RemoteProtocolError: peer closed connection "
            f"without sending complete message body (received {len(event('a'))} bytes, expected "
            f"{len(event('a')) + 100}))",
        ),
        ("/silent", {"timeout_s": 0.3}, "read timeout: no data for 0.3 s after 0 pieces"),
    ],
)
def test_other_broken_answers_are_errors_with_their_reason(server, path, options, error):
    gen, seconds = generate(server + path, **options)
    assert gen.error == error and seconds < 3


def test_a_refused_connection_is_retried_then_an_error():
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    gen, _ = generate(f"http://127.0.0.1:{port}", retries=1)
    assert gen.error.startswith("connection error (ConnectError: ") and gen.error.endswith("(after 2 attempts)")


def test_a_model_list_that_never_ends_leaves_the_versions_unavailable(server):
    backend = create(None, base_url=f"{server}/ping", model="m", timeout_s=0.5)
    started = time.monotonic()
    versions = backend.versions()
    assert versions["server_models"] == "unavailable: Overrun: deadline: the request ran past its 0.5 s " \
        "(--request-deadline)"  # fmt: skip
    assert time.monotonic() - started < 2


def test_capture_records_each_failure_and_goes_on_to_the_next_prompt(server, tmp_path):
    """The real CLI, one request at a time: pings forever, an endless stream, a 200 MB error body, then answers.
    Each failure is a capture record with its reason; the fourth prompt is captured; the run takes seconds."""
    Hostile.requests.clear()
    out = tmp_path / "captures.jsonl"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    started = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "capture",
            "--model",
            "gemma-4-e2b",
            "--backend",
            "openai",
            "--base-url",
            f"{server}/script",
            "--concurrency",
            "1",
            "--suites",
            "no-tool",
            "--capture-limit",
            "4",
            "--max-tokens",
            "4",
            "--request-deadline",
            "1",
            "--max-bytes-per-token",
            "100",
            "--out",
            str(out),
        ],  # fmt: skip
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    errors = [r["error"] for r in records]
    assert errors[0] == "deadline: the request ran past its 1 s (--request-deadline) after 0 pieces"
    assert errors[1].startswith(f"response too large: more than {BASE_BYTES + 400} bytes")
    assert errors[2].startswith("HTTP 400 from POST /script/v1/completions: xxx") and "rest was not read" in errors[2]
    assert errors[3] is None and records[3]["text"] == "Hello there"
    assert Hostile.requests == ["script:ping", "script:endless", "script:huge-400", "script:ok"]
    assert "capture errors: 3" in proc.stdout and time.monotonic() - started < 60


@pytest.mark.parametrize("command", ["eval", "capture"])
def test_a_base_url_that_is_not_http_is_one_error_line(command, tmp_path):
    """Before: ``eval --base-url ftp://x`` skipped the capture with a warning and exited 0."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    flags = ["--backend", "openai", "--base-url", "ftp://x", "--suites", "no-tool", "--capture-limit", "1"]
    if command == "eval":
        flags += ["--slices", "curated", "--modes", "oneshot", "--out", str(tmp_path / "run")]
    proc = subprocess.run(
        [sys.executable, "-m", "harness.cli", command, "--model", "gemma-4-e2b", *flags],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == "error: openai backend: base_url must be http(s)://host:port, got 'ftp://x'\n"
    assert not (tmp_path / "run").exists()
    with pytest.raises(BackendError, match="ftp://x"):
        CaptureSettings(backend="openai", base_url="ftp://x")

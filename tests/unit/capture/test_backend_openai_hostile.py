"""The ``openai`` backend against a real HTTP server that misbehaves (``http.server`` on 127.0.0.1:
:mod:`hostile_http`):
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
import time
import tracemalloc
from pathlib import Path

import pytest
from hostile_http import Hostile, event, serving

from harness.capture.backends import BackendError, Request, Sampling
from harness.capture.backends._budget import BASE_BYTES, ERROR_BODY_BYTES
from harness.capture.backends.openai import create
from harness.capture.run import CaptureSettings

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def server():
    with serving() as url:
        yield url


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
        f"HTTP {status} from POST /{mode}/v1/completions (the body is over {ERROR_BODY_BYTES} bytes; the rest was "
        f"not read): {'x' * 300}..." + (f" (after {attempts} attempts)" if attempts > 1 else "")
    )
    assert peak < 8 << 20 and seconds < 5  # before: the 200 MB body read whole (435 MB peak for one)


def test_a_body_that_ignores_stream_and_never_ends_is_cut_at_the_cap(server):
    gen, _ = generate(f"{server}/huge-json", max_tokens=1, bytes_per_token=10)
    assert gen.error.startswith(f"response too large: more than {BASE_BYTES + 10} bytes") and gen.pieces == []


def test_retries_stop_at_the_deadline(server):
    # 500 every time: retried with backoff 0.05, 0.1, 0.2, ... until the next wait would pass the 0.5 s deadline
    gen, seconds = generate(f"{server}/500", retries=50, deadline_s=0.5)
    assert gen.error.startswith("HTTP 500 from POST /500/v1/completions: busy (after ")
    assert gen.error.endswith("; not retried: the 0.5 s deadline (--request-deadline) is near")
    assert seconds < 2.5  # 50 retries would take minutes; slack for loaded cores


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


def test_a_model_lookup_that_never_ends_costs_one_deadline_once(server):
    """No ``model`` given, and ``GET /v1/models`` pings forever: the lookup is bounded by the prompt's deadline
    and not asked again, so each prompt ends within its deadline. Before: 10 s per prompt on the lookup, then
    ``no time left`` (the reason lost), and 10 s more for each ``versions()``."""
    backend = create(None, base_url=f"{server}/ping", backoff_s=0.05, deadline_s=0.5)
    try:
        started = time.monotonic()
        first, second = (backend.generate(Request(p, "hi", sampling=Sampling(max_tokens=4))) for p in ("a", "b"))
        versions = backend.versions()
        seconds = time.monotonic() - started
    finally:
        backend.close()
    assert first.error == (
        "deadline: no time left of the 0.5 s (--request-deadline) (GET /v1/models took it: Overrun: deadline: "
        "the request ran past its 0.5 s (--request-deadline))"
    )
    assert second.error == "deadline: the request ran past its 0.5 s (--request-deadline) after 0 pieces"
    assert versions["server_models"].startswith("unavailable: Overrun: deadline") and seconds < 2.5, seconds


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
    assert errors[2].startswith("HTTP 400 from POST /script/v1/completions (the body is over") and "xxx" in errors[2]
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

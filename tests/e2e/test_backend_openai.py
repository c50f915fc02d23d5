"""The OpenAI-compatible capture backend against a real server: ``python -m llama_cpp.server`` (llama-cpp-python
0.3.36) started here on a free port, serving the micro Gemma 4 GGUF (:mod:`harness.extra.micro_model`: random weights,
the real Gemma 4 tokenizer and template, so it writes nonsense made of real tokens), prompted with prompts that
the GGUF's own chat template renders.

What is shown: completions mode streams pieces that join to the non-streaming answer, honours ``grammar``,
``stop`` and ``force_text``; chat mode records content, and the server's own tool-call parse (scored as the
parser ``server:...``); requests run concurrently and each gets its own answer; a server that is killed
mid-stream, interrupts a stream, is gone, or answers 404/500 yields a ``Generation`` with ``error`` set —
never an exception. What a real server here does not send (broken streams, retried statuses, timeouts) is
scripted, without a server, in ``tests/unit/capture/test_backend_openai_scripted.py``.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from harness.capture.backends import Request, Sampling, Weights, create_backend
from harness.capture.backends.openai import create, gbnf_literal
from harness.capture.records import Capture
from harness.capture.server_parse import server_parser
from harness.capture.suites import ExpectedCall, Prompt
from harness.core.messages import Message, ToolCall
from harness.core.protocol import Parser, run_stream
from harness.formats import get_format
from harness.score.captures import score_capture

SERVER_MODULES = ("uvicorn", "fastapi", "sse_starlette", "pydantic_settings", "starlette_context", "llama_cpp")
SERVER_NAME = "llama-cpp-python==0.3.36"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "enum": ["Paris", "Oslo"]}},
                "required": ["city"],
            },
        },
    }
]
# Forces a long answer (at least 1000 letters, i.e. hundreds of tokens) so a test can act while it streams.
LONG = "root ::= [a-z ]{1000} [a-z ]*"


def test_server_packages_are_installed():
    """``make`` installs llama-cpp-python with its server extras (``python -m harness.engines.wheels --install``)."""
    assert [m for m in SERVER_MODULES if importlib.util.find_spec(m) is None] == []


# -- the model and the server ----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def micro():
    """The micro Gemma 4 (built into the user cache on first use, ~25 s; reused after)."""
    from harness.extra.micro_model import micro_gemma4

    return micro_gemma4(log=lambda line: None)


@pytest.fixture(scope="session")
def gguf(micro) -> str:
    return str(micro.gguf)


@pytest.fixture(scope="session")
def prompt_for(micro):
    """``prompt_for(user_text, tools=None)``: the Gemma 4 prompt for one user turn, rendered by the chat template
    embedded in the GGUF with the generation prompt (``<bos>...<|turn>model\n<|channel>thought\n<channel|>``)."""
    from harness.template.render import render_messages
    from harness.template.sources import load_template

    template = load_template("gemma-4-e2b", gguf=str(micro.gguf))
    return lambda user, tools=None: render_messages(
        template, [{"role": "user", "content": user}], tools, add_generation_prompt=True
    )


class Server:
    """A ``python -m llama_cpp.server`` subprocess on 127.0.0.1; ``url`` is its root, ``log`` its output."""

    def __init__(self, model: str, log: Path, *flags: str):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        started = time.monotonic()
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "llama_cpp.server",
                    "--model",
                    model,
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    *flags,
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = started + 60
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited ({self.proc.returncode}):\n{self.tail()}")
            try:
                if httpx.get(f"{self.url}/v1/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"llama_cpp.server not up after 60 s:\n{self.tail()}")
            time.sleep(0.05)
        self.startup_s = time.monotonic() - started

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="module")
def server(gguf, tmp_path_factory):
    """One server for the well-behaved tests, with ``--interrupt_requests False`` so concurrent requests queue
    instead of interrupting each other (llama-cpp-python's default interrupts: see test_interrupted_stream)."""
    srv = Server(gguf, tmp_path_factory.mktemp("srv") / "server.log", "--interrupt_requests", "False")
    yield srv
    srv.stop()


@pytest.fixture
def own_server(gguf, tmp_path):
    """A fresh server with default settings, for tests that interrupt or kill it."""
    srv = Server(gguf, tmp_path / "server.log")
    yield srv
    srv.stop()


# -- completions mode ------------------------------------------------------------------------------------------


def test_completions_stream_matches_the_non_streaming_answer(server, prompt_for):
    backend = create(None, base_url=server.url, mode="completions", server_name=SERVER_NAME, strip_bos="<bos>")
    prompt = prompt_for("Name three colours.")
    assert prompt.startswith("<bos><|turn>user\n") and prompt.endswith("<|turn>model\n<|channel>thought\n<channel|>")
    # The server adds BOS itself: the backend sends the prompt without the rendered "<bos>".
    body = {"prompt": prompt[len("<bos>") :], "max_tokens": 16, "temperature": 0.0, "top_p": 1.0, "seed": 0}
    # llama-cpp-python reuses its KV cache across requests: the first request for a prompt evaluates it in one
    # batch, a repeat re-evaluates only the last token, and the two can pick different greedy tokens. A warm-up
    # puts the streaming and the non-streaming request on the same (repeat) path.
    httpx.post(f"{server.url}/v1/completions", json={**body, "max_tokens": 1}, timeout=60).raise_for_status()
    whole = httpx.post(f"{server.url}/v1/completions", json=body, timeout=60).json()["choices"][0]

    seen = []
    gen = backend.generate(
        Request("colours", prompt, sampling=Sampling(max_tokens=16)), lambda text, ids: seen.append((text, ids))
    )
    assert gen.error is None
    assert len(gen.pieces) > 1 and seen == gen.pieces and all(ids == [] for _, ids in gen.pieces)
    assert gen.text == whole["text"] and gen.text
    assert gen.finish_reason == whole["finish_reason"] and gen.finish_reason in ("stop", "length")
    assert gen.elapsed_s > 0
    assert backend.weights.kind == "server" and backend.weights.path == server.url

    versions = backend.versions()
    assert versions["server"] == "uvicorn" and versions["server_models"] == server_model_id(server)
    assert versions["httpx"] == httpx.__version__ and versions["server_name"] == SERVER_NAME
    backend.close()


def server_model_id(server: Server) -> str:
    return httpx.get(f"{server.url}/v1/models", timeout=5).json()["data"][0]["id"]


def test_completions_grammar_stop_and_force_text(server, prompt_for):
    backend = create_backend(
        "openai", Weights(server.url, "server", "test server", name="micro-gemma4"), mode="completions"
    )
    assert backend.name == "openai" and backend.weights.name == "micro-gemma4"

    yes_no = backend.generate(
        Request("sky", prompt_for("Is the sky blue? Answer yes or no."), grammar='root ::= "yes" | "no"')
    )
    assert yes_no.error is None and yes_no.text in ("yes", "no") and yes_no.finish_reason == "stop"

    stopped = backend.generate(
        Request("stop", prompt_for("Say it."), grammar='root ::= "alpha beta gamma delta"', stop=(" gamma",))
    )
    assert stopped.error is None and stopped.text == "alpha beta" and stopped.finish_reason == "stop"

    answer = 'Call: {"path": "C:\\\\tmp", "q": "say \\"hi\\"\n\tok"}'
    assert gbnf_literal(answer).startswith('"Call: {\\"path\\"')
    forced = backend.generate(
        Request("forced", prompt_for("Anything."), sampling=Sampling(max_tokens=64), force_text=answer)
    )
    assert forced.error is None and forced.text == answer
    backend.close()


# -- chat mode -------------------------------------------------------------------------------------------------


def test_chat_mode_records_content_and_the_servers_tool_calls(server):
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]

    prose = create(None, base_url=f"{server.url}/v1", mode="chat", server_name=SERVER_NAME)
    gen = prose.generate(Request("weather", "", sampling=Sampling(max_tokens=12), messages=messages, tools=TOOLS))
    assert gen.error is None and gen.pieces and gen.finish_reason in ("stop", "length")
    assert gen.server_message == {"content": gen.text, "reasoning": None, "tool_calls": []}
    prose.close()

    # llama-cpp-python parses calls only for a named tool_choice (it then constrains the answer to the tool's
    # schema and streams tool_calls deltas, repeating the name in each); content stays empty.
    forced = create(
        None,
        base_url=server.url,
        mode="chat",
        server_name=SERVER_NAME,
        extra_body={"tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
    )
    gen = forced.generate(Request("weather", "", sampling=Sampling(max_tokens=24), messages=messages, tools=TOOLS))
    assert gen.error is None and gen.finish_reason == "tool_calls" and gen.pieces == []
    message = gen.server_message
    assert message["content"] is None and len(message["tool_calls"]) == 1
    call = message["tool_calls"][0]
    assert call["name"] == "get_weather"
    assert isinstance(call["arguments"], dict) and isinstance(call["arguments"]["city"], str)

    # The server's parse, scored like any parser's.
    parser = forced.server_parser(message)
    assert isinstance(parser, Parser) and parser.name == f"server:{SERVER_NAME}"
    got = parser.parse("ignored")
    assert got == Message(None, None, [ToolCall("get_weather", call["arguments"])])
    assert run_stream(parser, ["a", "b"]) == got
    prompt = Prompt("weather", "test", messages, TOOLS, (ExpectedCall("get_weather"),))
    capture = Capture(
        prompt_id="weather",
        suite="test",
        format="hermes",
        backend="openai",
        model=forced.weights.to_json(),
        text=gen.text,
        pieces=[list(p) for p in gen.pieces],
        server_message=message,
    )
    verdicts = {mode: score.verdict for mode, score, _ in score_capture(capture, prompt, parser, get_format("hermes"))}
    assert verdicts == {"oneshot": "pass"}
    with pytest.raises(ValueError, match="no server_message"):
        server_parser(SERVER_NAME, None).parse("")
    forced.close()


# -- concurrency -----------------------------------------------------------------------------------------------


def test_concurrent_requests_each_get_their_own_answer(server, prompt_for):
    backend = create(None, base_url=server.url, concurrency=3)
    windows: dict[int, list[float]] = {i: [] for i in range(6)}

    def one(i: int):
        # Each answer starts with its own tag (a grammar), so a mixed-up response shows.
        request = Request(
            f"p{i}",
            prompt_for(f"Tell me about the number {i}."),
            sampling=Sampling(max_tokens=8),
            grammar=f'root ::= "[p{i}] " [a-zA-Z ,.]{{3,60}}',
        )
        return backend.generate(request, lambda text, ids: windows[i].append(time.monotonic()))

    started = time.monotonic()
    with ThreadPoolExecutor(backend.max_concurrency) as pool:
        results = list(pool.map(one, range(6)))
    elapsed = time.monotonic() - started
    for i, gen in enumerate(results):
        assert gen.error is None and gen.finish_reason in ("stop", "length"), gen
        assert gen.text.startswith(f"[p{i}] ") and len(gen.text) > len(f"[p{i}] ")
        assert len(windows[i]) == len(gen.pieces)
    stats = backend.stats()
    # Requests really overlapped: up to 3 were sent and unfinished at once, and the server had answered
    # (2xx headers) at least 2 of them at the same time. llama-cpp-python then generates them one by one
    # (a global lock), so their piece windows do not overlap: the concurrency is the server's queue.
    assert stats["peak_in_flight"] == 3 and stats["peak_open_streams"] >= 2, stats
    assert stats["requests"] == stats["attempts"] == 6 and stats["in_flight"] == stats["open_streams"] == 0
    print(
        f"6 requests, concurrency 3: {elapsed:.2f} s; piece windows (s): "
        + ", ".join(f"p{i} {w[0] - started:.2f}-{w[-1] - started:.2f}" for i, w in windows.items())
    )
    backend.close()


# -- failures --------------------------------------------------------------------------------------------------


def test_killed_server_keeps_the_partial_pieces_and_later_requests_fail_fast(own_server, prompt_for):
    backend = create(None, base_url=own_server.url, retries=2, backoff_s=0.05, timeout_s=30)

    def kill_on_first_piece(text, ids):
        if own_server.proc.poll() is None:
            own_server.proc.kill()
            own_server.proc.wait()

    gen = backend.generate(
        Request("long", prompt_for("Write a long story."), sampling=Sampling(max_tokens=1200), grammar=LONG),
        kill_on_first_piece,
    )
    assert gen.pieces, "the pieces streamed before the kill are kept"
    assert gen.error.startswith(f"truncated stream after {len(gen.pieces)} pieces: connection lost"), gen.error
    assert gen.finish_reason is None and len(gen.text) < 1000

    started = time.monotonic()
    dead = backend.generate(Request("after", prompt_for("Hello?"), sampling=Sampling(max_tokens=4)))
    elapsed = time.monotonic() - started
    assert dead.pieces == [] and dead.error.startswith("connection error (ConnectError:"), dead.error
    assert dead.error.endswith("(after 3 attempts)") and elapsed < 5, (dead.error, elapsed)
    assert backend.stats()["attempts"] == 1 + 3
    assert "unavailable" in backend.versions()["server_models"]
    backend.close()


def test_interrupted_stream_is_an_error_not_a_short_answer(own_server, prompt_for):
    """llama-cpp-python's default ``interrupt_requests=True``: a request arriving while another streams ends
    the running stream with ``[DONE]`` and no finish_reason."""
    backend = create(None, base_url=own_server.url, concurrency=2)
    second: list = []
    threads: list[threading.Thread] = []

    def start_second(text, ids):
        if not threads:
            request = Request("second", prompt_for("Hi"), sampling=Sampling(max_tokens=4))
            threads.append(threading.Thread(target=lambda: second.append(backend.generate(request))))
            threads[0].start()

    first = backend.generate(
        Request("long", prompt_for("Write a long story."), sampling=Sampling(max_tokens=1200), grammar=LONG),
        start_second,
    )
    threads[0].join(60)
    assert first.pieces and first.finish_reason is None and len(first.text) < 1000
    assert first.error.startswith(f"stream ended with [DONE] but no finish_reason after {len(first.pieces)} pieces"), (
        first.error
    )
    assert second[0].error is None and second[0].finish_reason == "length"
    backend.close()


def test_http_errors_are_recorded_with_their_status(server):
    missing = create(None, base_url=f"{server.url}/nope", retries=2, backoff_s=0.01)
    gen = missing.generate(Request("p", "Hello", sampling=Sampling(max_tokens=2)))
    assert gen.error == 'HTTP 404 from POST /nope/v1/completions: {"detail":"Not Found"}'
    assert missing.stats()["attempts"] == 1, "a 4xx is not retried"
    missing.close()

    # llama-cpp-python answers a body it cannot validate with 500 (not 422); a 5xx is retried.
    invalid = create(None, base_url=server.url, retries=2, backoff_s=0.01, extra_body={"max_tokens": "many"})
    gen = invalid.generate(Request("p", "Hello"))
    assert gen.error.startswith("HTTP 500 from POST /v1/completions: ") and "int_parsing" in gen.error
    assert gen.error.endswith("(after 3 attempts)") and invalid.stats()["attempts"] == 3
    invalid.close()


# -- the whole eval through a server -----------------------------------------------------------------------------


def _eval(tmp_path, gguf: str, *flags: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    out = tmp_path / "run"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "eval",
            "--model",
            "gemma-4-e2b",
            "--cases",
            "0",
            "--slices",
            "curated",
            "--modes",
            "oneshot",
            "--no-shrink",
            "--gguf",
            gguf,
            "--backend",
            "openai",
            "--suites",
            "nested-args",
            "--capture-limit",
            "3",
            "--out",
            str(out),
            *flags,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = (out / "results.jsonl").read_text(encoding="utf-8").split("\n")
    return proc, [r for r in map(json.loads, filter(None, lines)) if r["slice"].startswith("capture:")]


def test_eval_captures_through_a_server_in_completions_mode(server, gguf, tmp_path):
    """Forced reference answers (a literal-text grammar), three requests in flight: every parser passes them."""
    proc, records = _eval(
        tmp_path, gguf, "--base-url", server.url, "--force-reference", "--concurrency", "3", "--max-tokens", "300"
    )
    assert "parsers on captured output" in proc.stdout
    assert records and all(r["verdict"] == "pass" for r in records if r["mode"] == "oneshot"), [
        r["detail"] for r in records if r["verdict"] != "pass"
    ]


def test_eval_scores_the_servers_own_parse_in_chat_mode(server, gguf, tmp_path):
    proc, records = _eval(
        tmp_path,
        gguf,
        "--base-url",
        server.url,
        "--server-mode",
        "chat",
        "--server-name",
        "llama-cpp-python",
        "--max-tokens",
        "40",
    )
    server_rows = [r for r in records if r["parser"] == "server:llama-cpp-python"]
    assert len(server_rows) == 3 and {r["mode"] for r in server_rows} == {"server"}
    assert "server:llama-cpp-python" in proc.stdout

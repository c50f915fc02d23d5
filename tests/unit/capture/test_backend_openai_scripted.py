"""The OpenAI-compatible capture backend on what a real server here does not send: responses scripted with
``httpx.MockTransport`` (no server, no model). The same backend against a real llama-cpp-python server:
``tests/e2e/test_backend_openai.py``.

What is shown: a broken, truncated or error stream keeps the pieces before it and sets ``error``; chat mode
assembles reasoning and streamed tool-call deltas into the server's message; 429 and 5xx are retried while
nothing arrived, a non-streaming JSON answer is taken as one piece; a read timeout is final, a refused
connection is retried, one lost mid-stream keeps the pieces; ``create`` rejects what cannot work.
"""

from __future__ import annotations

import json

import httpx
import pytest

from harness.capture.backends import BackendError, Request, Sampling, Weights
from harness.capture.backends.openai import create
from harness.capture.server_parse import server_parser
from harness.core.messages import ToolCall

# Sent through as given: only its passing through is checked.
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]


def test_create_rejects_what_cannot_work():
    with pytest.raises(BackendError, match="unknown mode"):
        create(None, base_url="http://127.0.0.1:1", mode="responses")
    with pytest.raises(BackendError, match="base_url is required"):
        create(Weights("m.gguf", "gguf", "test"))
    with pytest.raises(BackendError, match="http"):
        create(None, base_url="127.0.0.1:8080")


# -- scripted responses (httpx.MockTransport) ------------------------------------------------------------------


def sse(*events: str) -> bytes:
    return "".join(f"data: {event}\n\n" for event in events).encode()


def scripted(mode: str, *responses: httpx.Response, **options):
    """A backend whose n-th request gets ``responses[n]``; ``sent`` collects the request bodies."""
    sent: list = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        response = responses[min(len(sent), len(responses)) - 1]
        if isinstance(response, Exception):
            raise response
        return response

    backend = create(
        None,
        base_url="http://server.test",
        mode=mode,
        model="m",
        backoff_s=0,
        retries=2,
        transport=httpx.MockTransport(handler),
        **options,
    )
    return backend, sent


def stream_of(*events: str) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=sse(*events))


def piece(text: str, finish=None) -> str:
    return json.dumps({"choices": [{"index": 0, "text": text, "finish_reason": finish}]})


@pytest.mark.parametrize(
    "events, pieces, error",
    [
        ((piece("a"), "{oops"), ["a"], "invalid JSON in stream event 2: '{oops'"),
        (
            (piece("a"), piece("b")),
            ["a", "b"],
            "truncated stream after 2 pieces: the stream ended without [DONE] or a finish_reason",
        ),
        (
            (piece("a"), '{"error": {"message": "boom", "code": 500}}'),
            ["a"],
            'server error event after 1 pieces: {"message": "boom", "code": 500}',
        ),
        ((piece("a"), piece("", "stop")), ["a"], None),  # a finish_reason without [DONE] is a whole answer
        ((piece("a"), piece("b", "length"), "[DONE]"), ["a", "b"], None),
    ],
)
def test_scripted_streams(events, pieces, error):
    backend, sent = scripted("completions", stream_of(*events))
    gen = backend.generate(
        Request("p", "<bos>hi", sampling=Sampling(max_tokens=5, seed=7), stop=("\n",), grammar='root ::= "a"')
    )
    assert [text for text, _ in gen.pieces] == pieces and gen.error == error
    assert sent == [
        {
            "model": "m",
            "prompt": "<bos>hi",
            "max_tokens": 5,
            "temperature": 0.0,
            "top_p": 1.0,
            "seed": 7,
            "stream": True,
            "stop": ["\n"],
            "grammar": 'root ::= "a"',
        }
    ]


def test_scripted_chat_assembles_reasoning_and_tool_calls():
    def chunk(delta: dict, finish=None, **extra) -> str:
        return json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra})

    backend, sent = scripted(
        "chat",
        stream_of(
            chunk({"role": "assistant"}),
            chunk({"reasoning_content": "think "}),
            chunk({"reasoning": "more"}),
            chunk({"content": "Sure."}),
            chunk({"tool_calls": [{"index": 0, "id": "c0", "function": {"name": "get_", "arguments": ""}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"name": "weather", "arguments": '{"city": '}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]}),
            chunk({"tool_calls": [{"id": "c1", "function": {"name": "noop", "arguments": "{not json"}}]}),
            chunk({}, "tool_calls"),
            json.dumps({"choices": [], "usage": {"completion_tokens": 12}}),
            "[DONE]",
        ),
        strip_bos="<bos>",
    )
    seen = []
    gen = backend.generate(
        Request("p", "<bos>ignored", messages=[{"role": "user", "content": "hi"}], tools=TOOLS),
        lambda text, ids: seen.append(text),
    )
    assert gen.error is None and gen.finish_reason == "tool_calls" and gen.tokens == 12
    assert seen == ["Sure."] and gen.pieces == [("Sure.", [])]
    assert gen.server_message == {
        "content": "Sure.",
        "reasoning": "think more",
        "tool_calls": [
            {"name": "get_weather", "arguments": {"city": "Paris"}},
            {"name": "noop", "arguments": "{not json"},
        ],
    }
    assert sent[0]["messages"] == [{"role": "user", "content": "hi"}] and sent[0]["tools"] == TOOLS
    assert "prompt" not in sent[0]
    got = server_parser("vllm==0.33.0", gen.server_message).parse("")
    assert got.tool_calls == [ToolCall("get_weather", {"city": "Paris"}), ToolCall("noop", "{not json")]


def test_scripted_retries_and_non_streaming_answers():
    # 429 and 503 are retried while nothing arrived; the third attempt answers one JSON body (a server that
    # ignores stream: true), taken as one piece. strip_bos drops the rendered "<bos>".
    backend, sent = scripted(
        "completions",
        httpx.Response(429, text="slow down"),
        httpx.Response(503, text="loading"),
        httpx.Response(200, json={"choices": [{"index": 0, "text": "whole", "finish_reason": "stop"}]}),
        strip_bos="<bos>",
    )
    gen = backend.generate(Request("p", "<bos>hi"))
    assert gen.error is None and gen.pieces == [("whole", [])] and gen.finish_reason == "stop"
    assert len(sent) == 3 and sent[0]["prompt"] == "hi" and backend.stats()["attempts"] == 3

    backend, sent = scripted("completions", httpx.Response(503, text="x" * 500))
    gen = backend.generate(Request("p", "hi"))
    assert gen.error == f"HTTP 503 from POST /v1/completions: {'x' * 300}... (after 3 attempts)" and len(sent) == 3


def test_scripted_timeouts_and_lost_connections():
    # A read timeout is final even before any output (a busy server would time out again); a connection that
    # cannot be made is retried; one lost mid-stream keeps the pieces.
    backend, sent = scripted("completions", httpx.ReadTimeout("timed out"), timeout_s=7)
    gen = backend.generate(Request("p", "hi"))
    assert gen.error == "read timeout: no data for 7 s after 0 pieces" and len(sent) == 1

    backend, sent = scripted("completions", httpx.ConnectError("[Errno 111] Connection refused"))
    gen = backend.generate(Request("p", "hi"))
    assert gen.error == "connection error (ConnectError: [Errno 111] Connection refused) (after 3 attempts)"

    def body():
        yield sse(piece("a"), piece("b"))
        raise httpx.ReadTimeout("timed out")

    backend, sent = scripted(
        "completions", httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body()), timeout_s=7
    )
    gen = backend.generate(Request("p", "hi"))
    assert gen.pieces == [("a", []), ("b", [])] and gen.error == "read timeout: no data for 7 s after 2 pieces"
    assert len(sent) == 1

    def lost():
        yield sse(piece("a"))
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")

    backend, sent = scripted(
        "completions", httpx.Response(200, headers={"content-type": "text/event-stream"}, content=lost())
    )
    gen = backend.generate(Request("p", "hi"))
    assert gen.pieces == [("a", [])] and len(sent) == 1
    assert gen.error == (
        "truncated stream after 1 pieces: connection lost (RemoteProtocolError: peer closed "
        "connection without sending complete message body)"
    )

"""A parsed message crosses the worker protocol unchanged: what a worker's adapter returns (``message_json``) is
what the harness scores (``message_from_result``), including arguments the adapter already decoded to a string."""

import json

import pytest

from harness.core.messages import Message, ToolCall
from harness.engines.client import message_from_result
from harness.engines.server import message_json


@pytest.mark.parametrize(
    "arguments",
    [
        {"city": "Paris"},
        '{"city": "Paris"}',  # a double-encoded payload: the library's arguments were a JSON string holding JSON
        "not json {",  # invalid JSON the library returned as text
        "",
        [1, 2],
        "\ud800",
    ],
)
def test_arguments_arrive_as_the_adapter_returned_them(arguments):
    sent = Message(content="c", reasoning=None, tool_calls=[ToolCall("f", arguments)])
    line = json.dumps(message_json(sent), ensure_ascii=False)  # the worker's reply line
    got = message_from_result(json.loads(line))
    assert got.tool_calls == [ToolCall("f", arguments)]
    assert type(got.tool_calls[0].arguments) is type(arguments)


def test_a_worker_may_still_send_json_text():
    """The protocol's OpenAI-style string (JSON text of an object) is decoded once."""
    got = message_from_result({"tool_calls": [{"name": "f", "arguments": '{"a": 1}'}]})
    assert got.tool_calls == [ToolCall("f", {"a": 1})]

"""Every field of a worker's reply is checked as ``docs/worker-protocol.md`` states (issue 15, item 9): a reply that
breaks the protocol is the worker's ``protocol`` error naming the field, never the parser's answer (``name: null``
was scored ``wrong_name``, ``incremental: "false"`` read as true, diagnostics stringified); and the worker side
(``harness.engines.server``) sends what a parser returned that the protocol cannot carry as the parser's error."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.core.messages import Message, ToolCall
from harness.core.protocol import Delta, ToolCallDelta
from harness.engines.client import (
    WorkerError,
    _check_hello,
    deltas_from_result,
    diagnostics_from_result,
    message_from_result,
)
from harness.engines.server import RequestError, deltas_json, message_json

CALL = {"name": "f", "arguments": {"a": 1}}


@pytest.mark.parametrize(
    "result, message",
    [
        ({"tool_calls": [{"name": None}]}, "field 'tool_calls[0].name': expected a string, got null"),
        ({"tool_calls": [{"arguments": {}}]}, "field 'tool_calls[0].name' is missing (expected a string)"),
        ({"tool_calls": [{"name": 3}]}, "field 'tool_calls[0].name': expected a string, got number"),
        ({}, "field 'tool_calls' is missing (expected a list)"),
        ({"tool_calls": None}, "field 'tool_calls': expected a list, got null"),
        ({"tool_calls": [CALL, "g"]}, "field 'tool_calls[1]': expected an object, got string"),
        (
            {"tool_calls": [{"name": "f", "arguments": [1]}]},
            "field 'tool_calls[0].arguments': expected an object or a string (JSON text), got list",
        ),
        ({"tool_calls": [{"name": "f", "arguments": None}]}, "tool_calls[0].arguments': expected an object or a"),
        ({"tool_calls": [], "content": 5}, "field 'content': expected a string or null, got number"),
        ({"tool_calls": [], "reasoning": ["x"]}, "field 'reasoning': expected a string or null, got list"),
        ({"tool_calls": [], "diagnostics": "x"}, "field 'diagnostics': expected a list of strings or null, got"),
        ({"tool_calls": [], "diagnostics": [{"x": 1}]}, "field 'diagnostics[0]': expected a string, got object"),
    ],
)
def test_a_malformed_parse_result_is_a_protocol_error_naming_the_field(result, message):
    with pytest.raises(WorkerError) as err:
        message_from_result(result)
    assert err.value.kind == "protocol"
    assert str(err.value).startswith("parse result: field '") and message in str(err.value), str(err.value)


def test_a_well_formed_parse_result_is_read_unchanged():
    got = message_from_result(
        {"content": None, "tool_calls": [CALL, {"name": "", "arguments": "[1]"}, {"name": "g"}], "diagnostics": ["d"]}
    )
    # an empty name is a string: the parser's answer (scored wrong_name), not the worker's fault
    assert got == Message(None, None, [ToolCall("f", {"a": 1}), ToolCall("", [1]), ToolCall("g", {})], ["d"])


@pytest.mark.parametrize(
    "result, message",
    [
        ({}, "field 'deltas' is missing (expected a list)"),
        ({"deltas": [None]}, "field 'deltas[0]': expected an object, got null"),
        ({"deltas": [{"content": 1}]}, "field 'deltas[0].content': expected a string or null, got number"),
        ({"deltas": [{"reasoning": {}}]}, "field 'deltas[0].reasoning': expected a string or null, got object"),
        ({"deltas": [{"tool_calls": {}}]}, "field 'deltas[0].tool_calls': expected a list or null, got object"),
        ({"deltas": [{"tool_calls": [{}]}]}, "field 'deltas[0].tool_calls[0].index' is missing (expected an integer"),
        (
            {"deltas": [{}, {"tool_calls": [{"index": "0"}]}]},
            "field 'deltas[1].tool_calls[0].index': expected an integer ≥ 0, got string",
        ),
        ({"deltas": [{"tool_calls": [{"index": True}]}]}, "index': expected an integer ≥ 0, got bool"),
        ({"deltas": [{"tool_calls": [{"index": 0.0}]}]}, "index': expected an integer ≥ 0, got number"),
        ({"deltas": [{"tool_calls": [{"index": -1}]}]}, "index': expected an integer ≥ 0, got -1"),
        ({"deltas": [{"tool_calls": [{"index": 0, "name": None, "arguments": {}}]}]}, "arguments': expected a string"),
        ({"deltas": [{"tool_calls": [{"index": 0, "id": 7}]}]}, "tool_calls[0].id': expected a string or null"),
    ],
)
def test_malformed_deltas_are_a_protocol_error_naming_the_field(result, message):
    with pytest.raises(WorkerError) as err:
        deltas_from_result(result, "finish")
    assert err.value.kind == "protocol"
    assert str(err.value).startswith("finish result: field '") and message in str(err.value), str(err.value)


def test_well_formed_deltas_and_diagnostics_are_read_unchanged():
    result = {"deltas": [{"content": "a"}, {"tool_calls": [{"index": 1, "name": "f", "arguments": "{"}]}]}
    assert deltas_from_result(result) == [Delta(content="a"), Delta(tool_calls=[ToolCallDelta(1, "f", "{")])]
    assert diagnostics_from_result({"diagnostics": None}) == [] and diagnostics_from_result({}) == []
    with pytest.raises(WorkerError, match=r"finish result: field 'diagnostics\[0\]': expected a string, got number"):
        diagnostics_from_result({"deltas": [], "diagnostics": [1]})


HELLO = {"protocol": 1, "name": "lib", "version": "1.0", "formats": ["gemma4"]}


@pytest.mark.parametrize(
    "change, message",
    [
        ({"incremental": "false"}, "hello: field 'incremental': expected true or false, got string"),
        ({"formats": ["gemma4", 3]}, "hello: field 'formats[1]': expected a string, got number"),
        ({"formats": []}, "hello: field 'formats': expected a non-empty list of format names"),
        ({"name": ""}, "hello: field 'name': expected a non-empty string, got an empty one"),
        ({"version": 1}, "hello: field 'version': expected a non-empty string, got number"),
    ],
)
def test_a_malformed_hello_is_a_protocol_error_naming_the_field(change, message):
    with pytest.raises(WorkerError) as err:
        _check_hello({**HELLO, **change})
    assert err.value.kind == "protocol" and str(err.value) == message


def test_the_worker_side_sends_what_the_protocol_cannot_carry_as_the_parsers_error():
    with pytest.raises(RequestError) as err:
        message_json(Message(tool_calls=[ToolCall(None, {})]))  # type: ignore[arg-type]
    assert err.value.kind == "parser_error" and "call 0 with name None, not a string" in str(err.value)
    with pytest.raises(RequestError) as err:
        deltas_json([Delta(tool_calls=[ToolCallDelta(0, "f", {"a": 1})])])  # type: ignore[arg-type]
    assert err.value.kind == "parser_error" and "arguments is not a string" in str(err.value)
    # arguments that are not an object travel as JSON text, so the harness scores what the parser returned
    sent = message_json(Message(tool_calls=[ToolCall("f", [1, 2]), ToolCall("g", None)]))
    assert [c["arguments"] for c in sent["tool_calls"]] == ["[1, 2]", "null"]
    assert message_from_result(sent).tool_calls == [ToolCall("f", [1, 2]), ToolCall("g", None)]


KEYS = ["tool_calls", "content", "reasoning", "diagnostics", "deltas", "name", "arguments", "index", "id"]
SCALAR = st.none() | st.booleans() | st.integers(-1, 2) | st.text(max_size=3)
SHAPED = st.recursive(
    SCALAR,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(result=st.dictionaries(st.sampled_from(KEYS), SHAPED, max_size=4))
def test_any_result_is_read_or_is_a_protocol_error_in_one_line_never_another_exception(result):
    for decode in (message_from_result, deltas_from_result, diagnostics_from_result):
        try:
            decode(result)
        except WorkerError as exc:
            assert exc.kind == "protocol" and " result: field '" in str(exc) and "\n" not in str(exc)

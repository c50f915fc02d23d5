"""Scoring: verdicts, the error-type taxonomy and the numeric policy, on small hand-made outputs."""

from harness.core.cases import Case
from harness.core.messages import Message, ToolCall
from harness.formats import get_format
from harness.score.compare import json_difference, messages_equal
from harness.score.verdicts import ERROR_TYPES, score

FMT = get_format("gemma4")
TEXT = '<|tool_call>call:get_weather{location:{city:<|"|>Paris<|"|>}}<tool_call|>'


def case(kind="strict", content=None, reasoning=None, text=TEXT):
    expected = Message(content, reasoning, [ToolCall("get_weather", {"location": {"city": "Paris"}})])
    return Case(id="c", format="gemma4", text=text, expected=expected, kind=kind)


def got(args=None, name="get_weather", content=None, reasoning=None, calls=None):
    if calls is None:
        calls = [ToolCall(name, {"location": {"city": "Paris"}} if args is None else args)]
    return Message(content, reasoning, calls)


def test_pass_and_none_equals_empty_content():
    assert score(case(), got(), FMT).verdict == "pass"
    assert score(case(content=None), got(content=""), FMT).verdict == "pass"
    assert score(case(content=None), got(content="  \n"), FMT).verdict == "soft_pass"  # whitespace=soft-v1


def test_error_types_are_named_by_the_fault():
    assert score(case(), got(calls=[]), FMT).error_type == "wrong_call_count"
    assert score(case(), got(name="get-weather"), FMT).error_type == "wrong_name"
    nested_as_string = got({"location": '{"city": "Paris"}'})
    result = score(case(), nested_as_string, FMT)
    assert (result.error_type, result.verdict) == ("wrong_argument_type", "fail")
    assert "location" in result.detail
    assert score(case(), got({"location": {"city": "Lyon"}}), FMT).error_type == "wrong_argument_value"
    assert score(case(), got({"location": {"city": "Paris"}, "x": 1}), FMT).error_type == "wrong_argument_value"
    assert score(case(), got(args="not json"), FMT).error_type == "wrong_argument_type"
    assert score(case(), got(args=[1]), FMT).error_type == "invalid_arguments"
    assert score(case(), got(content="<tool_call|>"), FMT).error_type == "marker_leak"
    assert score(case(), got(content='ok <|"'), FMT).error_type == "marker_leak"
    assert score(case(content="Done."), got(), FMT).error_type == "content_lost"
    assert score(case(content="Done."), got(content="Done!"), FMT).error_type == "wrong_content"
    assert score(case(reasoning="think"), got(), FMT).error_type == "wrong_reasoning"
    assert set(ERROR_TYPES) >= {"stream_diverges", "exception", "timeout"}


def test_leak_found_in_a_streamed_delta_even_when_final_content_is_clean():
    result = score(case(), got(), FMT, leaked_delta="<|tool_call>")
    assert result.error_type == "marker_leak"


def test_drift_surfaced_is_its_own_verdict_and_strict_is_a_failure():
    raw = Message(content=TEXT, tool_calls=[])
    assert score(case(kind="drift"), raw, FMT).verdict == "surfaced"
    assert score(case(kind="strict"), raw, FMT).error_type == "wrong_call_count"
    # dropping the text is a failure even for drift
    assert score(case(kind="drift"), Message(), FMT).error_type == "wrong_call_count"


def test_stream_diverges_only_when_stream_differs_from_oneshot():
    wrong = got({"location": "Paris"})
    assert score(case(), wrong, FMT, oneshot=got()).error_type == "stream_diverges"
    assert score(case(), wrong, FMT, oneshot=wrong).error_type == "wrong_argument_type"
    assert score(case(), got(), FMT, oneshot=wrong).verdict == "pass"


def test_numeric_policy():
    assert json_difference({"n": 1}, {"n": 1.0}) is None
    assert json_difference({"n": 10**30}, {"n": 1e30})[0] == "wrong_argument_value"
    assert json_difference({"n": 42}, {"n": "42"})[0] == "wrong_argument_type"
    assert json_difference({"b": True}, {"b": 1})[0] == "wrong_argument_type"
    assert json_difference({"v": None}, {"v": "None"})[0] == "wrong_argument_type"
    assert json_difference({"a": [1, 2]}, {"a": [2, 1]})[1] == "a[0]"


def test_messages_equal_ignores_key_order_and_whitespace():
    a = Message(" hi ", None, [ToolCall("f", {"a": 1, "b": 2})])
    b = Message("hi", "", [ToolCall("f", {"b": 2, "a": 1.0})])
    assert messages_equal(a, b)
    assert not messages_equal(a, Message("hi", None, []))

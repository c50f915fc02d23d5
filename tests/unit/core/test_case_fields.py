"""Every field of the external case format is checked when a case file is read (issue 15, item 9): a mistyped or
out-of-range field refuses the file with one line naming the file, the line and the field, before any parser sees
the case; nothing is coerced (``tags: "abc"`` was read as ``["a", "b", "c"]``, ``slice: 7`` kept, ``prefix: 5``
and ``parameters: [1, 2]`` reached the parser and were recorded as its exception)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.core.cases import CaseFileError, case_from_json, load_cases
from harness.formats import case_formats

GOOD = {
    "id": "c1",
    "format": "hermes",
    "text": '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>',
    "expected": {"content": None, "reasoning": None, "tool_calls": [{"name": "f", "arguments": {}}]},
}
CYCLE = {"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}}


def tool(**function) -> list:
    return [{"type": "function", "function": {"name": "f", **function}}]


def read(tmp_path, **change):
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps({**GOOD, "id": "c2", **change}) + "\n", encoding="utf-8")
    return path, load_cases(path, formats=case_formats())


@pytest.mark.parametrize(
    "change, message",
    [
        # the shapes of the issue
        ({"prefix": 5}, "field 'prefix': expected a string or null, got number"),
        ({"tags": "abc"}, "field 'tags': expected a list of strings or null, got string"),
        (
            {"slice": 7},
            "field 'slice': expected one of curated, generated, observed, drift, peer-canitoolcall, "
            "peer-llama.cpp, got number",
        ),
        (
            {"tools": tool(parameters=[1, 2])},
            "field 'tools[0].function.parameters': expected a JSON-schema object, got list",
        ),
        (
            {"tools": tool(parameters=CYCLE)},
            "field 'tools[0].function.parameters': not a valid JSON schema: $ref cycle #/$defs/a -> #/$defs/a "
            "(validation would never end)",
        ),
        # the rest of the format, field by field
        ({"id": 7}, "field 'id': expected a non-empty string, got number"),
        ({"id": ""}, "field 'id': expected a non-empty string, got an empty one"),
        ({"format": ["hermes"]}, "field 'format': expected a string, got list"),
        ({"text": None}, "field 'text': expected a string, got null"),
        ({"kind": 1}, "field 'kind': expected one of strict, drift, got number"),
        ({"kind": "drfit"}, "field 'kind': expected one of strict, drift, got 'drfit' (did you mean 'drift'?)"),
        ({"tags": ["a", 5]}, "field 'tags[1]': expected a string, got number"),
        ({"slice": "currated"}, "got 'currated' (did you mean 'curated'?)"),
        ({"seed": "1"}, "field 'seed': expected an integer or null, got string"),
        ({"seed": True}, "field 'seed': expected an integer or null, got bool"),
        ({"seed": 1.5}, "field 'seed': expected an integer or null, got number"),
        ({"source": 5}, "field 'source': expected a string or null, got number"),
        ({"note": ["x"]}, "field 'note': expected a string or null, got list"),
        ({"template": "gemma.jinja"}, "field 'template': expected an object or null, got string"),
        ({"text_provenance": []}, "field 'text_provenance': expected one of full, partial, reconstructed, composed"),
        ({"stream_specific": 0}, "field 'stream_specific': expected true or false, got number"),
        ({"tools": {"f": {}}}, "field 'tools': expected a list or null, got object"),
        ({"tools": ["f"]}, "field 'tools[0]': expected an object, got string"),
        ({"tools": [{"type": "function"}]}, "field 'tools[0].function' is missing (expected an object)"),
        ({"tools": [{"type": "tool", "function": {"name": "f"}}]}, "field 'tools[0].type': expected 'function'"),
        ({"tools": tool(name=None)}, "field 'tools[0].function.name': expected a non-empty string, got null"),
        ({"tools": tool(description=5)}, "field 'tools[0].function.description': expected a string or null"),
        (
            {"tools": tool(parameters={"type": "object", "properties": {"a": {"type": "strin"}}})},
            "field 'tools[0].function.parameters': not a valid JSON schema: 'strin' is not valid under any of the "
            "given schemas (at #/properties/a/type)",
        ),
        ({"tools": tool(parameters={"$ref": "#/$defs/x"})}, "$ref '#/$defs/x' names no part of this schema"),
        ({"expected": []}, "field 'expected': expected an object, got list"),
        ({"expected": {"content": 5}}, "field 'expected.content': expected a string or null, got number"),
        ({"expected": {"reasoning": {}}}, "field 'expected.reasoning': expected a string or null, got object"),
        ({"expected": {"tool_calls": {}}}, "field 'expected.tool_calls': expected a list or null, got object"),
        ({"expected": {"tool_calls": [None]}}, "field 'expected.tool_calls[0]': expected an object, got null"),
        ({"expected": {"tool_calls": [{}]}}, "field 'expected.tool_calls[0].name' is missing (expected a non-empty"),
        (
            {"expected": {"tool_calls": [{"name": None}]}},
            "field 'expected.tool_calls[0].name': expected a non-empty string, got null",
        ),
        (
            {"expected": {"tool_calls": [{"name": "f", "arguments": "{}"}]}},
            "field 'expected.tool_calls[0].arguments': expected an object, got string",
        ),
        # the fields the harness writes into corpus.jsonl and reads back (drift facts, peer facts, token ids)
        ({"token_ids": "abc"}, "field 'token_ids': expected a list or null, got string"),  # was a TypeError traceback
        ({"token_ids": [1, "a"]}, "field 'token_ids[1]': expected an integer ≥ 0, got string"),
        ({"kind": "drift", "drift": {"outcomes": 5}}, "field 'drift.outcomes': expected a list of strings, got number"),
        ({"kind": "drift", "drift": {"outcomes": [], "recoverable": "no"}}, "field 'drift.recoverable': expected true"),
        ({"kind": "drift", "drift": {"outcomes": [], "raw": None}}, "field 'drift.raw': expected a string, got null"),
        ({"drift": []}, "field 'drift': expected an object or null, got list"),
        ({"expected_error": {"accept": "x"}}, "field 'expected_error.accept': expected a list of strings, got string"),
        ({"peer": "llama.cpp"}, "field 'peer': expected an object or null, got string"),
        ({"stop": 5}, "field 'stop': expected a string or null, got number"),
        ({"reasoning_format": ["none"]}, "field 'reasoning_format': expected a string or null, got list"),
    ],
)
def test_a_bad_field_refuses_the_file_naming_file_line_and_field(tmp_path, change, message):
    path = tmp_path / "cases.jsonl"
    with pytest.raises(CaseFileError) as err:
        read(tmp_path, **change)
    text = str(err.value)
    assert text.startswith(f"{path}:2: field '") and message in text, text
    assert "\n" not in text


@pytest.mark.parametrize(
    "change",
    [
        {"prefix": None, "tags": None, "slice": None, "seed": None, "source": None, "note": None, "template": None},
        {"tools": None, "text_provenance": None, "expected": {"tool_calls": None}},
        {"tools": [{"function": {"name": "f"}}]},  # no "type", no "parameters": OpenAI's defaults
        {
            "tools": tool(
                description=None, parameters={"type": "object", "properties": {"kids": {"items": {"$ref": "#"}}}}
            )
        },
        {"expected": {"tool_calls": [{"name": "f"}]}},  # arguments left out: {}
    ],
    ids=["nulls", "null-lists", "bare-function", "recursive-schema", "no-arguments"],
)
def test_what_the_format_allows_is_read_unchanged(tmp_path, change):
    _, (_, case) = read(tmp_path, **change)
    assert case.id == "c2" and case.prefix == "" and case.tags == [] and case.slice == "observed"
    assert case.tools == change.get("tools")


def test_values_are_kept_as_written_not_coerced(tmp_path):
    tools = tool(parameters={"type": "object", "properties": {"a": {"type": "string"}}})
    _, (_, case) = read(tmp_path, tags=["abc"], slice="drift", seed=0, prefix="<think>", tools=tools)
    assert (case.tags, case.slice, case.seed, case.prefix, case.tools) == (["abc"], "drift", 0, "<think>", tools)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
FIELDS = sorted({*GOOD, "kind", "tools", "prefix", "slice", "tags", "seed", "template", "source", "note", "drift",
                 "text_provenance", "stream_specific", "token_ids", "expected_error", "peer", "stop"})  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(changes=st.dictionaries(st.sampled_from(FIELDS), JSON, min_size=1, max_size=3))
def test_any_json_in_any_field_is_read_or_refused_in_one_line_never_a_traceback(changes):
    try:
        case = case_from_json({**GOOD, **changes}, "f.jsonl:1", formats=case_formats())
    except CaseFileError as exc:
        assert str(exc).startswith("f.jsonl:1: ") and "\n" not in str(exc)
    else:
        assert isinstance(case.prefix, str) and all(isinstance(t, str) for t in case.tags)
        assert case.seed is None or type(case.seed) is int


KEYWORDS = ["type", "properties", "items", "$ref", "$defs", "$anchor", "required", "anyOf", "allOf", "not", "enum"]
SCHEMA = st.recursive(
    JSON | st.sampled_from(["#", "#/$defs/a", "#a", "object", "string"]),
    lambda inner: st.dictionaries(st.sampled_from([*KEYWORDS, "a"]), inner, max_size=4),
    max_leaves=12,
)
FUNCTION = st.fixed_dictionaries({"name": st.sampled_from(["f", ""]) | JSON}, optional={"parameters": SCHEMA})
TOOLS = st.lists(st.fixed_dictionaries({"function": FUNCTION}, optional={"type": JSON}), max_size=2)


@settings(max_examples=300, deadline=None)
@given(tools=TOOLS)
def test_any_tool_declaration_is_read_or_refused_in_one_line_never_a_traceback(tools):
    try:
        case = case_from_json({**GOOD, "tools": tools}, "f.jsonl:1")
    except CaseFileError as exc:
        assert str(exc).startswith("f.jsonl:1: field 'tools[") and "\n" not in str(exc)
    else:
        assert case.tools == tools and all(t["function"]["name"] for t in tools)

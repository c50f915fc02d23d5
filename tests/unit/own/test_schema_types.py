"""The schema-typing policy for formats whose text carries no types (GLM, Qwen3-Coder, MiniMax)."""

import pytest

from parsers.own._schema_types import allowed_types, property_schema, typed_value

STRING = {"type": "string"}
NULLABLE_INT = {"anyOf": [{"type": "integer"}, {"type": "null"}]}


@pytest.mark.parametrize(
    "text, schema, expected",
    [
        ("001", STRING, "001"),  # a string schema keeps the text as written
        ("true", STRING, "true"),
        ("  padded ", STRING, "  padded "),
        ("42", {"type": "integer"}, 42),
        ("140.0", {"type": "integer"}, 140),  # a model's integral float (mlx-lm qwen3_coder case)
        ("140.5", {"type": "integer"}, "140.5"),
        ("1e3", {"type": "integer"}, 1000),
        ("-7", {"type": "number"}, -7),
        ("1.5e3", {"type": "number"}, 1500.0),
        ("True", {"type": "boolean"}, True),  # templates printing Python values
        ("None", NULLABLE_INT, None),
        ("null", NULLABLE_INT, None),
        ("12", NULLABLE_INT, 12),
        ("12", {"type": ["string", "null"]}, "12"),
        ("null", {"type": ["string", "null"]}, None),
        ('{"a": 1}', {"type": "object"}, {"a": 1}),
        ("{'a': True, 'b': None}", {"type": "object"}, {"a": True, "b": None}),  # Qwen3-Coder prints dicts
        ("[1, 2]", {"type": "array"}, [1, 2]),
        ("[1, 2]", STRING, "[1, 2]"),
        ("abc", {"type": "integer"}, "abc"),  # nothing fits: kept, the scorer reports the type
        ("2", {"enum": [1, 2, 3]}, 2),
        ("b", {"enum": ["a", "b"]}, "b"),
        ("x", {}, "x"),
    ],
)
def test_schema_decides(text, schema, expected):
    value = typed_value(text, schema)
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("001", "001"),
        ("123", 123),
        ("1.10", 1.1),
        ("true", True),
        ("null", None),
        ('{"a": [1]}', {"a": [1]}),
        ("hello", "hello"),
        (" 5", " 5"),
        ("{broken", "{broken"),
        ("", ""),
    ],
)
def test_without_a_schema_only_json_values_are_decoded(text, expected):
    value = typed_value(text)
    assert value == expected and type(value) is type(expected)


def test_allowed_types_and_property_lookup():
    assert allowed_types({"oneOf": [{"type": "string"}, {"anyOf": [{"type": "null"}]}]}) == {"string", "null"}
    assert len(allowed_types(None)) == 7
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"properties": {"n": {"type": "integer"}}}}}]
    assert property_schema(tools, "f", "n") == {"type": "integer"}
    assert property_schema(tools, "f", "m") is None and property_schema(tools, "g", "n") is None


OBJ = {"type": "object", "properties": {"age": {"type": "integer"}}}


@pytest.mark.parametrize(
    "text, schema, expected",
    [
        ('{\\"name\\": \\"Ada\\", \\"age\\": 36}', OBJ, {"name": "Ada", "age": 36}),  # quotes escaped (drift slice)
        ('[1, \\"a\\"]', {"anyOf": [{"type": "array"}, {"type": "null"}]}, [1, "a"]),
        ('{\\"q\\": \\"say \\\\\\"hi\\\\\\"\\"}', {"type": "object"}, {"q": 'say "hi"'}),  # fully double-encoded
        ('{\\"age\\": \\"36\\"}', OBJ, '{\\"age\\": \\"36\\"}'),  # decodes, but the schema rejects it
        ('{\\"a\\": \\"x\\\\ny\\"}', {"type": "object"}, '{\\"a\\": \\"x\\\\ny\\"}'),  # two readings differ: kept
        ('{\\"a\\": 1}', {"anyOf": [{"type": "object"}, STRING]}, '{\\"a\\": 1}'),  # a string is allowed: the text
        ('{\\"a\\": 1}', None, '{\\"a\\": 1}'),  # no schema: no evidence
    ],
)
def test_double_encoded_json_is_decoded_only_under_a_container_schema(text, schema, expected):
    """Rule 4 (drift mutator escaped-json-value): escaped JSON inside a value whose schema wants a container."""
    assert typed_value(text, schema) == expected

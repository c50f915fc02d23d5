"""Tests of the corpus sources: the curated edge catalog, the hypothesis strategies, generation, shrinking.

Arguments are validated against their tool schemas with ``jsonschema``. The Gemma 4 rendering tests use the real
template from the pinned sdist.
"""

from __future__ import annotations

import copy
import hashlib
import math
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.core.scenarios import MARKER_TEXTS, Scenario, contains_any, infer_schema, scenario_strings, shape_tags
from harness.corpus.curated import REQUIRED_TAGS, curated_scenarios
from harness.corpus.generated import generate_scenarios, minimal_failing, scenario_key
from harness.corpus.strategies import (
    arguments_for_schema,
    floats,
    json_schemas,
    scenarios,
    schema_errors,
    text_values,
    tools_and_calls,
)
from harness.formats.gemma4 import SPEC as GEMMA4

REPO = Path(__file__).resolve().parents[3]
GEMMA_DELIM = '<|"|>'

# The shapes the brief asks the curated catalog for, by tag name.
BRIEF_TAGS = (
    "nested-object",
    "array-of-objects",
    "array-of-scalars",
    "empty-object",
    "empty-array",
    "empty-string",
    "trailing-backslash",
    "double-quote-in-string",
    "single-quote-in-string",
    "backslash-in-string",
    "comma-in-string",
    "colon-in-string",
    "brace-in-string",
    "bracket-in-string",
    "newline-in-string",
    "cr-in-string",
    "tab-in-string",
    "control-char-in-string",
    "unicode",
    "cjk",
    "emoji",
    "emoji-zwj",
    "rtl",
    "code",
    "multiline",
    "marker-in-string",
    "integer",
    "negative",
    "zero",
    "float",
    "exponent",
    "big-int",
    "boolean",
    "null",
    "key-dash",
    "key-dot",
    "key-space",
    "key-digit",
    "name-dash",
    "name-dot",
    "name-digit",
    "zero-args",
    "parallel-2",
    "parallel-3",
    "same-tool-twice",
    "content-before",
    "content-after",
    "reasoning",
    "string-looks-like-type",
    "whitespace-string",
    "leading-trailing-space",
)


def validation_errors(value, schema) -> list[str]:
    return schema_errors(value, schema)


def call_errors(sc: Scenario) -> list[str]:
    """Schema violations of every call in ``sc`` (plus calls to undeclared tools)."""
    declared = {t["function"]["name"]: t["function"]["parameters"] for t in sc.tools}
    errors = []
    for i, c in enumerate(sc.calls):
        if c.name not in declared:
            errors.append(f"{sc.id} call {i}: undeclared tool {c.name!r}")
            continue
        errors += [f"{sc.id} call {i}: {e}" for e in validation_errors(c.arguments, declared[c.name])]
    return errors


def fingerprint(items: list[Scenario]) -> str:
    text = "\n".join(f"{s.id}|{s.seed}|{','.join(s.tags)}|{scenario_key(s)}" for s in items)
    return hashlib.sha256(text.encode()).hexdigest()


# --------------------------------------------------------------------------------------------------------
# Curated catalog
# --------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def curated() -> list[Scenario]:
    return curated_scenarios()


def test_curated_ids_unique_and_stable(curated):
    ids = [s.id for s in curated]
    assert len(ids) == len(set(ids))
    assert all(i.startswith("edge-") for i in ids)
    assert 60 <= len(curated) <= 140
    assert [s.id for s in curated_scenarios()] == ids  # stable order


def test_curated_required_tags_covered(curated):
    present = {t for s in curated for t in s.tags}
    assert set(BRIEF_TAGS) <= set(REQUIRED_TAGS)
    assert sorted(set(REQUIRED_TAGS) - present) == []


def test_curated_tags_include_detected_shapes(curated):
    for s in curated:
        assert set(shape_tags(s)) <= set(s.tags), s.id


def test_curated_arguments_validate_against_own_schema(curated):
    errors = [e for s in curated for e in call_errors(s)]
    assert errors == []


def test_curated_tools_are_openai_style(curated):
    for s in curated:
        names = [t["function"]["name"] for t in s.tools]
        assert len(names) == len(set(names)), s.id
        for t in s.tools:
            assert t["type"] == "function"
            fn = t["function"]
            assert set(fn) == {"name", "description", "parameters"}
            assert fn["description"]
            assert fn["parameters"]["type"] == "object"
            jsonschema.Draft202012Validator.check_schema(fn["parameters"])
        assert {c.name for c in s.calls} <= set(names)


def test_curated_scenarios_are_fresh_objects():
    a = curated_scenarios()
    a[0].calls[0].arguments["mutated"] = True
    a[0].tools[0]["function"]["parameters"]["properties"]["mutated"] = {}
    b = curated_scenarios()
    assert "mutated" not in b[0].calls[0].arguments
    assert "mutated" not in b[0].tools[0]["function"]["parameters"]["properties"]


def test_curated_specific_shapes(curated):
    by_id = {s.id: s for s in curated}
    genfromtxt = by_id["edge-code-genfromtxt"].calls[0].arguments["code"]
    assert genfromtxt == 'data = np.genfromtxt("train.csv", delimiter=",")'
    assert by_id["edge-number-big-int"].calls[0].arguments["u64_over"] == 2**63
    assert by_id["edge-number-huge-int"].calls[0].arguments["n"] == 10**30
    assert math.copysign(1, by_id["edge-number-negative-zero"].calls[0].arguments["x"]) == -1
    assert by_id["edge-zero-args"].calls[0].arguments == {}
    assert by_id["edge-string-trailing-backslash-last"].calls[0].arguments["pattern"].endswith("\\")
    assert "\x00" in by_id["edge-string-nul"].calls[0].arguments["text"]
    assert "nul-in-string" in by_id["edge-string-nul"].tags
    # type lookalikes stay strings, and their schema says string
    for s in curated:
        if s.id.startswith("edge-string-looks-like") or s.id == "edge-string-array-looks-like-ints":
            params = s.tools[0]["function"]["parameters"]["properties"]
            for key, value in s.calls[0].arguments.items():
                values = value if isinstance(value, list) else [value]
                assert all(isinstance(v, str) for v in values), (s.id, key)
                assert "string" in str(params[key]), (s.id, key)
    # only the NUL case holds U+0000; only marked cases hold Gemma's string delimiter
    assert [s.id for s in curated if contains_any(s, ("\x00",))] == ["edge-string-nul"]
    holders = [s for s in curated if contains_any(s, (GEMMA_DELIM,))]
    assert [s.id for s in holders] == ["edge-marker-gemma-string-delim"]
    assert all("gemma-string-delimiter" in s.tags and GEMMA_DELIM in s.note for s in holders)


def test_curated_markers_tagged(curated):
    for s in curated:
        has_marker = any(m in text for text in scenario_strings(s) for m in MARKER_TEXTS)
        assert has_marker == ("marker-in-string" in s.tags), s.id


def test_infer_schema_shapes():
    assert infer_schema({"a": [1, "x"], "b": None, "c": []}) == {
        "type": "object",
        "properties": {
            "a": {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"type": "string"}]}},
            "b": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "c": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["a", "b", "c"],
    }
    merged = infer_schema([{"a": 1}, {"a": 2, "b": "x"}])
    assert merged["items"]["required"] == ["a"] and set(merged["items"]["properties"]) == {"a", "b"}


# --------------------------------------------------------------------------------------------------------
# Gemma 4 rendering (real template)
# --------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gemma_template() -> str:
    from harness.assets.sdist import sdist_file

    return sdist_file("models/templates/google-gemma-4-31B-it.jinja").read_text(encoding="utf-8")


def render_gemma(template: str, sc: Scenario) -> str:
    from transformers.utils.chat_template_utils import render_jinja_template

    message = {
        "role": "assistant",
        "content": sc.content_after,
        "tool_calls": [{"type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in sc.calls],
    }
    if sc.reasoning:
        message["reasoning"] = sc.reasoning
    out, _ = render_jinja_template(
        conversations=[[{"role": "user", "content": "hi"}, message]],
        tools=sc.tools,
        chat_template=template,
        add_generation_prompt=False,
        bos_token="<bos>",
        enable_thinking=bool(sc.reasoning),
    )
    return out[0]


def test_curated_render_through_gemma4(curated, gemma_template):
    assert GEMMA4.unrepresentable == (GEMMA_DELIM,)
    skipped = []
    for sc in curated:
        if contains_any(sc, GEMMA4.unrepresentable):
            skipped.append(sc.id)
            continue
        text = render_gemma(gemma_template, sc)
        completion = text.split("<|turn>model\n", 1)[1]
        if "marker-in-string" not in sc.tags:
            assert completion.count("<|tool_call>call:") == len(sc.calls), sc.id
        pos = 0
        for c in sc.calls:
            pos = completion.index(f"<|tool_call>call:{c.name}{{", pos) + 1
        if sc.reasoning:
            assert f"<|channel>thought\n{sc.reasoning}\n<channel|>" in completion
    assert skipped == ["edge-marker-gemma-string-delim"]


def test_generated_render_through_gemma4(gemma_template):
    for sc in generate_scenarios(60, 5, forbid=GEMMA4.unrepresentable):
        assert not contains_any(sc, GEMMA4.unrepresentable)
        completion = render_gemma(gemma_template, sc).split("<|turn>model\n", 1)[1]
        assert completion.startswith("<|channel>" if sc.reasoning else "<|tool_call>call:"), sc.id


# --------------------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(st.data())
def test_arguments_valid_for_random_schemas(data):
    schema = data.draw(json_schemas())
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert set(schema["required"]) <= set(schema["properties"])
    value = data.draw(arguments_for_schema(schema))
    assert validation_errors(value, schema) == []


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(tools_and_calls(forbid=(GEMMA_DELIM,)))
def test_tools_and_calls_shape(pair):
    tools, calls = pair
    assert 1 <= len(tools) <= 3 and 1 <= len(calls) <= 3
    names = [t["function"]["name"] for t in tools]
    assert len(set(names)) == len(names)
    sc = Scenario(id="t", tools=tools, calls=calls)
    assert call_errors(sc) == []
    assert not contains_any(sc, (GEMMA_DELIM,))


@settings(max_examples=300, deadline=None, database=None)
@given(floats())
def test_floats_finite_and_no_negative_zero(x):
    assert math.isfinite(x)
    assert not (x == 0 and math.copysign(1, x) < 0)
    assert float(str(x)) == x  # round-trips through str(), as templates write it


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(text_values(forbid=(",", "<|")))
def test_text_values_respect_forbid(s):
    assert "," not in s and "<|" not in s and "\x00" not in s


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(scenarios(forbid=(GEMMA_DELIM, ",")))
def test_scenarios_respect_forbid_everywhere(sc):
    assert contains_any(sc, (GEMMA_DELIM, ",")) == []
    assert all("," not in t["function"]["description"] for t in sc.tools)


def test_schema_errors_subset_validator():
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "e": {"type": "string", "enum": ["a", "b"]},
            "o": {"anyOf": [{"type": "number"}, {"type": "null"}]},
            "l": {"type": "array", "items": {"type": "boolean"}},
        },
        "required": ["n"],
        "additionalProperties": False,
    }
    assert schema_errors({"n": 1, "e": "a", "o": None, "l": [True]}, schema) == []
    assert schema_errors({"n": 1, "o": 2.5}, schema) == []
    assert schema_errors({}, schema)  # missing required
    assert schema_errors({"n": True}, schema)  # bool is not an integer
    assert schema_errors({"n": 1, "e": "c"}, schema)
    assert schema_errors({"n": 1, "o": "x"}, schema)
    assert schema_errors({"n": 1, "l": [1]}, schema)  # 1 is not a boolean
    assert schema_errors({"n": 1, "zz": 0}, schema)


# --------------------------------------------------------------------------------------------------------
# Generation and shrinking
# --------------------------------------------------------------------------------------------------------


def test_generated_scenarios_validate_and_are_labelled():
    got = generate_scenarios(150, 11)
    assert len(got) == 150
    assert [s.id for s in got] == [f"gen-11-{i:04d}" for i in range(150)]
    assert all(s.seed == 11 for s in got)
    assert len({scenario_key(s) for s in got}) == 150
    assert [e for s in got for e in call_errors(s)] == []
    for s in got:
        assert s.tags == shape_tags(s)
    tags = {t for s in got for t in s.tags}
    assert {"nested-object", "array-of-scalars", "unicode", "parallel", "reasoning"} <= tags


def test_generate_deterministic_in_process():
    a = generate_scenarios(80, 1234, forbid=(GEMMA_DELIM,))
    b = generate_scenarios(80, 1234, forbid=(GEMMA_DELIM,))
    assert fingerprint(a) == fingerprint(b)
    assert fingerprint(a) != fingerprint(generate_scenarios(80, 1235, forbid=(GEMMA_DELIM,)))


_CHILD = """
import hashlib, sys
if len(sys.argv) > 1:  # import a local module full of constants hypothesis would otherwise mine
    sys.path.insert(0, sys.argv[1])
    import noise_constants
from harness.corpus.generated import generate_scenarios, scenario_key
got = generate_scenarios(80, 1234, forbid=('<|"|>',))
text = "\\n".join(f"{s.id}|{s.seed}|{','.join(s.tags)}|{scenario_key(s)}" for s in got)
print(hashlib.sha256(text.encode()).hexdigest())
"""


def test_generate_deterministic_across_processes(tmp_path):
    """Same seed, same scenarios: in this (pytest) process, in plain child processes with different
    ``PYTHONHASHSEED``, and in a child that imported an extra local module (hypothesis mines constants
    from local modules; :func:`harness.corpus.generated.isolated_from_local_constants` must keep them out)."""
    expected = fingerprint(generate_scenarios(80, 1234, forbid=(GEMMA_DELIM,)))
    noise = tmp_path / "noise"
    noise.mkdir()
    (noise / "noise_constants.py").write_text(  # integers, floats and short strings hypothesis could use
        "\n".join(f"S{i} = {str(i)!r}; I{i} = {i * 7919 + 3}; F{i} = {i}.125" for i in range(300)) + "\n"
    )
    runs = [("0", []), ("4242", []), ("7", [str(noise)])]
    for hashseed, args in runs:
        env = dict(os.environ, PYTHONHASHSEED=hashseed)
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, *args], capture_output=True, text=True, cwd=REPO, env=env, timeout=120
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == expected, (hashseed, args)


def test_generate_zero_and_negative():
    assert generate_scenarios(0, 1) == []
    with pytest.raises(ValueError):
        generate_scenarios(-1, 1)


def _string_values(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _string_values(v)
    elif isinstance(value, list):
        for v in value:
            yield from _string_values(v)


def _has_comma(sc: Scenario) -> bool:
    return any("," in s for c in sc.calls for s in _string_values(c.arguments))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_minimal_failing_shrinks_to_a_comma(seed):
    found = minimal_failing(_has_comma, seed)
    assert found is not None
    assert len(found.calls) == 1 and len(found.tools) == 1
    assert len(found.calls[0].arguments) == 1
    assert list(_string_values(found.calls[0].arguments)) == [","]
    assert found.content_before == found.content_after == "" and found.reasoning is None
    assert found.id == f"min-{seed}" and found.seed == seed and "comma-in-string" in found.tags
    assert call_errors(found) == []


def test_minimal_failing_deterministic():
    a = minimal_failing(_has_comma, 7)
    b = minimal_failing(_has_comma, 7)
    assert scenario_key(a) == scenario_key(b)


def test_minimal_failing_none_when_nothing_fails():
    assert minimal_failing(lambda sc: False, 0, max_examples=40) is None


def test_minimal_failing_propagates_checker_errors():
    calls = []

    def broken(sc):
        calls.append(sc)
        raise KeyError("checker bug")

    with pytest.raises(KeyError, match="checker bug") as info:
        minimal_failing(broken, 0)
    assert len(calls) == 1  # not shrunk: the first exception stops the search
    assert any("minimal_failing" in note for note in getattr(info.value, "__notes__", []))


def test_forbid_that_rejects_everything_is_reported():
    with pytest.raises(RuntimeError, match="rejects"):
        generate_scenarios(3, 0, forbid=("",))
    with pytest.raises(RuntimeError, match="rejects"):
        minimal_failing(lambda sc: True, 0, forbid=("",))


def test_minimal_failing_respects_forbid():
    found = minimal_failing(lambda sc: any("<" in s for s in scenario_strings(sc)), 3, forbid=(GEMMA_DELIM,))
    assert found is not None and not contains_any(found, (GEMMA_DELIM,))
    copy.deepcopy(found)  # plain data

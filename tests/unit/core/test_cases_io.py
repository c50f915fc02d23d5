"""External case files: the shipped observed corpus loads; malformed lines are errors naming file and line."""

import json

import pytest

from harness.core.cases import CaseFileError, load_cases, write_cases
from harness.corpus.build import OBSERVED_FILE
from harness.formats import case_formats


def test_observed_corpus_ships_with_the_project_and_loads():
    cases = load_cases(OBSERVED_FILE)
    gemma = load_cases(OBSERVED_FILE, fmt="gemma4")
    assert len(cases) == 24 and len(gemma) == 10
    assert all(c.slice == "observed" and c.source.startswith("https://") for c in gemma)


def test_round_trip(tmp_path):
    cases = load_cases(OBSERVED_FILE)
    path = tmp_path / "copy.jsonl"
    assert write_cases(path, cases) == len(cases)
    again = load_cases(path)
    assert [c.to_json() for c in again] == [c.to_json() for c in cases]


GOOD = {
    "id": "a",
    "format": "gemma4",
    "kind": "strict",
    "text": "x",
    "expected": {"content": None, "reasoning": None, "tool_calls": []},
}


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", "invalid JSON"),
        (json.dumps({**GOOD, "format": "gemma5"}), "field 'format'"),
        (json.dumps({k: v for k, v in GOOD.items() if k != "text"}), "missing field(s) text"),
        (json.dumps({**GOOD, "kind": "weird"}), "field 'kind'"),
        (
            json.dumps({**GOOD, "expected": {"tool_calls": [{"name": "f", "arguments": "{}"}]}}),
            "expected.tool_calls[0].arguments",
        ),
        (json.dumps(GOOD), "duplicate id 'a'"),
        (json.dumps({**GOOD, "id": "b", "stream_specific": "yes"}), "field 'stream_specific'"),
        (json.dumps({**GOOD, "id": "b", "text_provenance": "bogus"}), "field 'text_provenance'"),
    ],
)
def test_malformed_line_names_file_and_line(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(GOOD) + "\n\n" + line + "\n")
    with pytest.raises(CaseFileError) as err:
        load_cases(path, formats=case_formats())  # the names the core does not know: the caller's
    assert f"{path}:3:" in str(err.value) and message in str(err.value)


def test_unknown_format_suggests_a_known_one_and_is_checked_only_against_the_names_given(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({**GOOD, "format": "gemma5"}) + "\n")
    with pytest.raises(CaseFileError, match=rf"{path}:1: field 'format' is 'gemma5' \(did you mean 'gemma4'\?\)"):
        load_cases(path, formats=case_formats())
    assert [c.format for c in load_cases(path)] == ["gemma5"]  # no names given: the format is not checked


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(CaseFileError, match="cannot read case file"):
        load_cases(tmp_path / "nope.jsonl")

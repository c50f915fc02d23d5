"""Reading data files (:mod:`harness.core.textio`, :mod:`harness.core.jsonl`): text that is not UTF-8, JSON nested too
deeply and a torn last line are each one error naming the file, line and byte (or skipped where asked), never a
traceback; the catalog, suite schemas and the sdist reader use them (issue 15, items 8 and 10)."""

from __future__ import annotations

import json

import pytest

from harness.assets.sdist import SdistError, sdist_file
from harness.capture.records import CaptureWriter, read_captures
from harness.core.errors import CatalogError
from harness.core.jsonl import MAX_JSON_DEPTH, json_depth, parse_json, prepare_append, read_objects, torn_tail
from harness.core.schemas import ref_problem
from harness.core.textio import NotUtf8Error, read_utf8
from harness.template.catalog import load_catalog


class Bad(Exception):
    pass


def test_read_utf8_names_the_first_bad_byte_by_line_column_and_offset(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes(b"ok\r\nline two caf\xe9\n")
    with pytest.raises(NotUtf8Error, match=r"t.txt: not UTF-8 text: byte 0xE9 at line 2, column 13 \(offset 16\)$"):
        read_utf8(path)
    path.write_bytes(b"a\r\nb\rc\n")
    assert read_utf8(path) == path.read_text(encoding="utf-8") == "a\nb\nc\n"  # newlines as text mode reads them


def test_json_deeper_than_the_limit_is_one_error_at_any_depth():
    assert json_depth(json.loads("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH)) == MAX_JSON_DEPTH == 100
    assert parse_json('{"a": ' + "[" * 99 + "]" * 99 + "}", "f:1", Bad) == {"a": json.loads("[" * 99 + "]" * 99)}
    for depth in (101, 5_000, 1_000_000):  # past the limit, past Python's JSON reader, far past it
        with pytest.raises(Bad, match="^f:1: JSON nested deeper than 100 levels$"):
            parse_json('{"a": ' + "[" * depth + "]" * depth + "}", "f:1", Bad)
    assert parse_json(json.dumps({"a": "[" * 500}), "f:1", Bad) == {"a": "[" * 500}  # brackets in a string
    with pytest.raises(Bad, match=r"^f:1: invalid JSON: Expecting value \(column 7\)$"):
        parse_json('{"a": }', "f:1", Bad)


def test_a_torn_last_line_is_skipped_when_asked_and_cut_off_before_appending(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text('{"a": 1}\n{"a": 2, "b": [tr', encoding="utf-8")
    assert torn_tail(path.read_text()) == '{"a": 2, "b": [tr' and torn_tail('{"a": 1}\n{"a": 2}') is None
    with pytest.raises(Bad, match=r"log.jsonl:2: invalid JSON"):  # by default a torn line is an error
        list(read_objects(path, Bad))
    torn: list[str] = []
    assert [data for _, data in read_objects(path, Bad, torn=torn)] == [{"a": 1}]
    assert torn == [f"{path}:2: torn last line skipped (17 characters, no newline: a write cut off)"]
    assert prepare_append(path) == f"{path}:2: torn last line cut off (17 bytes, no newline: a write cut off)"
    assert path.read_text() == '{"a": 1}\n'
    path.write_text('{"a": 1}\n{"a": 2}', encoding="utf-8")  # whole, only its newline missing: kept
    assert prepare_append(path) is None and path.read_text() == '{"a": 1}\n{"a": 2}\n'
    assert prepare_append(tmp_path / "new.jsonl") is None and not (tmp_path / "new.jsonl").exists()


def test_a_capture_file_killed_mid_write_reads_and_appends_again(tmp_path):
    head = {"prompt_id": "p", "suite": "s", "format": "hermes", "backend": "openai", "model": {}, "text": "x"}
    path = tmp_path / "cap.jsonl"
    path.write_text(json.dumps(head) + "\n" + json.dumps({**head, "prompt_id": "q"})[:30], encoding="utf-8")
    torn: list[str] = []
    assert [c.prompt_id for c in read_captures(path, torn)] == ["p"] and len(torn) == 1
    with CaptureWriter(path) as writer:
        writer.write(read_captures(path, [])[0])
    assert [c.prompt_id for c in read_captures(path)] == ["p", "p"]  # whole again: no torn line left


def test_a_catalog_that_is_not_utf8_or_names_a_template_outside_the_sdist_is_an_error(tmp_path):
    path = tmp_path / "catalog.toml"
    row = '[models.x]\nformat = "hermes"\nhf_repo = "a/b"\nhf_file = "t.jinja"\noffline_note = "n"\n'
    path.write_bytes(row.encode().replace(b'"n"', b'"\xff"'))
    with pytest.raises(CatalogError, match=r"catalog.toml: not UTF-8 text: byte 0xFF at line 5"):
        load_catalog(path)
    for name in ("../../../etc/passwd", "/etc/passwd", "sub/t.jinja", "..", "a\\b.jinja"):
        path.write_text(row + f'offline_template = "{name}"\noffline_template_model = "x"\n'.replace("\\", "\\\\"))
        with pytest.raises(CatalogError, match="field 'offline_template' must be a file name in the sdist's"):
            load_catalog(path)
    path.write_text(row + 'offline_template = "t.jinja"\noffline_template_model = "x"\n')
    assert load_catalog(path)["x"].offline_template_relpath == "models/templates/t.jinja"


@pytest.mark.parametrize("relpath", ["models/templates/../../../../../../etc/passwd", "/etc/passwd", "", "..\\x"])
def test_the_sdist_reader_reads_nothing_outside_its_folder(relpath):
    with pytest.raises(SdistError, match="is not a path inside llama_cpp_python-0.3.36.tar.gz's vendor/llama.cpp"):
        sdist_file(relpath)


CYCLE = {"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}}
TREE = {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}}}


@pytest.mark.parametrize(
    "schema, problem",
    [
        (CYCLE, "$ref cycle #/$defs/a -> #/$defs/a (validation would never end)"),
        ({"$ref": "#"}, "$ref cycle # -> #"),
        ({"allOf": [{"not": {"$ref": "#"}}]}, "$ref cycle # -> #/allOf/0 -> #/allOf/0/not -> #"),
        ({"$defs": {"n": {"$anchor": "n", "anyOf": [{"$ref": "#n"}]}}}, "$ref cycle #/$defs/n -> #/$defs/n/anyOf/0"),
        ({"$ref": "#/$defs/missing"}, "#: $ref '#/$defs/missing' names no part of this schema"),
        ({"properties": {"a": {"$ref": "https://example.com/s.json"}}}, "#/properties/a: $ref 'https://example.com"),
        (TREE, None),  # recursive, but through the value: fine
        ({"$defs": {"n": {"$anchor": "n", "type": "object", "properties": {"k": {"$ref": "#n"}}}}, "$ref": "#n"}, None),
        ({"$defs": {"a~b/c": {"type": "string"}}, "$ref": "#/$defs/a~0b~1c"}, None),
    ],
)
def test_suite_schema_refs_are_checked_before_any_validation(schema, problem):
    found = ref_problem(schema)
    assert (found is None) if problem is None else (found is not None and found.startswith(problem)), found


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_in_an_input_file_is_refused_but_kept_in_the_harness_own_records(literal, tmp_path):
    """Before: ``NaN`` (not JSON) was taken as a float in a case file, an expected argument nobody can match."""
    with pytest.raises(Bad, match=rf"^f:1: invalid JSON: {literal} is not a JSON value"):
        parse_json('{"a": ' + literal + "}", "f:1", Bad)
    assert str(parse_json('{"a": ' + literal + "}", "f:1", Bad, allow_nan=True)["a"]) in ("nan", "inf", "-inf")
    path = tmp_path / "r.jsonl"
    path.write_text('{"a": 1}\n{"a": ' + literal + "}\n", encoding="utf-8")
    with pytest.raises(Bad, match=rf"r.jsonl:2: invalid JSON: {literal} is not"):
        list(read_objects(path, Bad))
    assert len(list(read_objects(path, Bad, allow_nan=True))) == 2


def test_an_integer_too_long_for_python_is_one_error_line():
    """Before: a 5,000-digit integer in a case file raised ``ValueError`` out of ``json.loads``: a traceback."""
    with pytest.raises(Bad, match=r"^f:1: invalid JSON: a number Python cannot read \(Exceeds the limit"):
        parse_json('{"a": ' + "9" * 5000 + "}", "f:1", Bad)


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/null", "."])
def test_a_device_or_folder_is_not_read_as_a_data_file(path):
    """Before: ``check /dev/zero`` read for ever (killed at the wall limit, no error line)."""
    with pytest.raises(Bad, match=rf"^{path}: cannot read case file: a (device or socket|folder), not a file$"):
        list(read_objects(path, Bad, "case"))

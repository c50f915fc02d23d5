"""Every text file the harness writes takes lone surrogates (:mod:`harness.core.textio`): written as their JSON
escape, read back as the same value, and no module writes text another way (a ratchet over ``harness/``)."""

from __future__ import annotations

import ast
from pathlib import Path

from harness.capture.records import Capture, CaptureWriter, read_captures
from harness.core.cases import Case, load_cases, write_cases
from harness.core.jsonl import read_objects
from harness.core.messages import Message, ToolCall
from harness.core.results import Record, ResultsWriter
from harness.core.textio import encode, same_text, write_text

ROOT = Path(__file__).resolve().parents[3]
LONE = "a\ud800b\udfff"


def test_records_with_lone_surrogates_are_written_as_escapes_and_read_back(tmp_path):
    path = tmp_path / "results.jsonl"
    record = Record(
        f"case-{LONE}", "observed", "strict", "p", "oneshot", "fail", "wrong_content", f"got {LONE!r}",
        {"content": LONE, "tool_calls": [{"name": LONE, "arguments": {LONE: [LONE]}}]}, 0.1, 7, [LONE],
    )  # fmt: skip
    with ResultsWriter(path) as writer:
        writer.write(record)
        writer.write(record, extra=LONE)
    path.read_bytes().decode("ascii")  # the escapes are plain ASCII: valid UTF-8 and valid JSON
    (_, first), (_, second) = read_objects(path, ValueError)
    assert first == record.to_json() and second == {"extra": LONE, **record.to_json()}


def test_case_files_round_trip_lone_surrogates(tmp_path):
    expected = Message(content=LONE, tool_calls=[ToolCall("f", {"a": LONE})])
    case = Case(f"id-{LONE}", "hermes", LONE, expected, slice="observed")
    path = tmp_path / "cases.jsonl"
    assert write_cases(path, [case]) == 1
    (back,) = load_cases(path)
    assert (back.id, back.text, back.expected) == (case.id, case.text, case.expected)


def test_capture_files_round_trip_and_a_split_surrogate_pair_still_joins(tmp_path):
    path = tmp_path / "captures.jsonl"
    head = {"prompt_id": "p", "suite": "s", "format": "hermes", "backend": "openai", "model": {}}
    with CaptureWriter(path) as writer:
        for pieces in (["x", LONE], ["Hi ", "\ud83d", "\ude00"]):  # the second: a pair cut in two by a server
            writer.write(Capture(**head, text="".join(pieces), pieces=[[p, []] for p in pieces]))
    lone, pair = read_captures(path)
    assert lone.text == "x" + LONE and [p[0] for p in lone.pieces] == ["x", LONE]
    assert pair.text == "Hi \U0001f600" and [p[0] for p in pair.pieces] == ["Hi ", "\ud83d", "\ude00"]


def test_same_text_compares_as_json_does():
    assert same_text("\ud83d\ude00", "\U0001f600") and same_text(LONE, LONE)
    assert not same_text("\ud800", "\udc00") and not same_text("a", "b")


def test_write_text_and_encode_escape_only_what_utf8_cannot_encode(tmp_path):
    path = tmp_path / "report.md"
    write_text(path, f"é {LONE} 😀\n")
    assert path.read_bytes() == "é a\\ud800b\\udfff 😀\n".encode()
    assert encode(LONE) == b"a\\ud800b\\udfff"


def _writes_text(call: ast.Call) -> bool:
    """A call that writes a text file without :mod:`harness.core.textio`: ``Path.write_text(...)`` or ``open(...)``
    with a ``w``/``a``/``x`` mode that is not binary."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "write_text":
        return True
    if not (isinstance(func, ast.Name) and func.id == "open") and not (
        isinstance(func, ast.Attribute) and func.attr == "open"
    ):
        return False
    mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
    return (
        isinstance(mode, ast.Constant)
        and isinstance(mode.value, str)
        and bool(set(mode.value) & set("wax"))
        and ("b" not in mode.value)
    )


def test_no_module_writes_text_but_through_textio():
    offenders = []
    for path in sorted((ROOT / "harness").rglob("*.py")):
        if path.name == "textio.py" and path.parent.name == "core":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _writes_text(node):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == [], "write text with harness.core.textio (open_text / write_text): " + ", ".join(offenders)

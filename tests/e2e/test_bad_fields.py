"""Bad fields are blamed on whoever wrote them, through the real CLI (issue 15, item 9): a case file with a mistyped
field is refused with one ``error:`` line naming file, line and field, before any parser runs; a real worker process
(``tests/engines/workers/faulty_worker.py``, trigger ``NULLNAME``) whose reply has ``name: null`` or a tool-call piece
without an integer ``index`` costs that case an ``error``/``protocol`` record of the worker, not the parser's
``wrong_name``, and the next case runs on a restarted worker.

Measured before (2026-12-04, ``check --parser own``): ``prefix: 5`` was the parser's exception (``AttributeError:
'int' object has no attribute 'rfind'``); ``tags: "abc"`` was recorded as ``["a", "b", "c"]``; ``slice: 7``,
``parameters: [1, 2]`` and a ``$ref`` cycle passed; the worker's ``name: null`` was ``fail``/``wrong_name`` (``got
'None'``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FAULTY = f"cmd:{sys.executable} {ROOT / 'tests' / 'engines' / 'workers' / 'faulty_worker.py'}"
CYCLE = {"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}}
HERMES = {
    "id": "c1",
    "format": "hermes",
    "text": '<tool_call>\n{"name": "f", "arguments": {"a": "x"}}\n</tool_call>',
    "expected": {"content": None, "tool_calls": [{"name": "f", "arguments": {"a": "x"}}]},
}


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300
    )


def tools(parameters) -> list:
    return [{"type": "function", "function": {"name": "f", "parameters": parameters}}]


@pytest.mark.parametrize(
    "change, expected",
    [
        ({"prefix": 5}, "field 'prefix': expected a string or null, got number"),
        ({"tags": "abc"}, "field 'tags': expected a list of strings or null, got string"),
        ({"slice": 7}, "field 'slice': expected one of curated, generated, observed, drift, "),
        ({"tools": tools([1, 2])}, "field 'tools[0].function.parameters': expected a JSON-schema object, got list"),
        ({"tools": tools(CYCLE)}, "field 'tools[0].function.parameters': not a valid JSON schema: $ref cycle"),
    ],
    ids=["prefix", "tags", "slice", "parameters", "ref-cycle"],
)
def test_check_refuses_a_case_file_with_a_bad_field_in_one_line(tmp_path, change, expected):
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps(HERMES) + "\n" + json.dumps({**HERMES, "id": "c2", **change}) + "\n", encoding="utf-8")
    out = run_cli("check", str(path), "--parser", "own", "--out", str(tmp_path / "results.jsonl"))
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-2000:]
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}:2: {expected}"), out.stderr
    assert not (tmp_path / "results.jsonl").exists()  # refused before any parser ran


def gemma_case(case_id: str, city: str) -> dict:
    return {
        "id": case_id,
        "format": "gemma4",
        "text": f'<|tool_call>call:get_weather{{city:<|"|>{city}<|"|>}}<tool_call|>',
        "expected": {"content": None, "tool_calls": [{"name": "get_weather", "arguments": {"city": city}}]},
    }


def test_a_workers_null_name_is_its_protocol_error_not_the_parsers_wrong_name(tmp_path):
    path, out_file = tmp_path / "cases.jsonl", tmp_path / "results.jsonl"
    path.write_text("\n".join(json.dumps(gemma_case(*c)) for c in [("bad", "NULLNAME"), ("fine", "Paris")]) + "\n")
    out = run_cli("check", str(path), "--parser", FAULTY, "--modes", "oneshot,char", "--out", str(out_file))
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    got = {(r["case_id"], r["mode"]): r for r in map(json.loads, out_file.read_text(encoding="utf-8").splitlines())}
    assert len(got) == 4 and {r["parser"] for r in got.values()} == {"toolcall-harness==0.1.0:gemma4"}
    oneshot, char = got["bad", "oneshot"], got["bad", "char"]
    assert (oneshot["verdict"], oneshot["error_type"]) == (char["verdict"], char["error_type"]) == ("error", "protocol")
    assert oneshot["detail"].startswith(
        "worker protocol: parse result: field 'tool_calls[0].name': expected a string, got null: "
    )
    assert char["detail"].startswith(
        "worker protocol: finish result: field 'deltas[0].tool_calls[0].index': expected an integer ≥ 0, got null"
    )
    assert got["fine", "oneshot"]["verdict"] == got["fine", "char"]["verdict"] == "pass"  # restarted, the run goes on

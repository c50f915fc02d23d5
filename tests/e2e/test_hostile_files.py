"""Hostile and broken input files through the real CLI (a subprocess each): every one ends with exit status 2 and one
``error:`` line naming the file (and line, field or template source), never a traceback or a hang — templates past
their render bounds or failing (issue 15, item 3), files that are not UTF-8, JSON nested too deeply, a suite schema
with a ``$ref`` cycle (item 8), a catalog template path outside the sdist (item 10); and a capture file with a torn
last line is reported, skipped and repaired, so a run resumes (item 10)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "corpora" / "suites" / "nested-args.jsonl"
LOOPS = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"


def run_cli(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout
    )


def one_error(out: subprocess.CompletedProcess) -> str:
    """The run's one error line: exit status 2, no traceback, stderr's last line ``error: ...``, the only one."""
    assert out.returncode == 2, out.stderr[-2000:]
    assert "Traceback" not in out.stderr + out.stdout
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and out.stderr.rstrip().endswith(errors[0]), out.stderr[-2000:]
    return errors[0]


def model_dir(tmp_path: Path, template: bytes) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "chat_template.jinja").write_bytes(template)
    return folder


@pytest.mark.parametrize(
    "template, expected",
    [
        (b"{{ 1/0 }}", "chat_template.jinja, line 1 ({src}) failed to render: ZeroDivisionError: division by zero"),
        (b"{{ (7 ** (10 ** 7)) % 10 }}", "({src}) failed to render: time limit: no result within 2 s"),
        (LOOPS.encode(), "({src}) failed to render: time limit: no result within 2 s (--render-timeout)"),
        (b"{% for i in range(10**9) %}{% endfor %}", "OverflowError: Range too big"),
        (b"{% for i in range(99999) %}xxxxxxxxxxxx{% endfor %}", "output limit: it wrote 1,199,988 characters"),
        pytest.param(
            b"{{ 'x' * 10**10 }}",
            "({src}) failed to render: out of memory: more than 1024 MiB",
            marks=pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS is enforced on Linux only"),
        ),
        (b"{% for m in messages %}{{ m.content }", "chat_template.jinja, line 1 ({src}) failed to render: Jinja error"),
        (b'{{ "caf\xe9" }}', "chat_template.jinja: not UTF-8 text: byte 0xE9 at line 1, column 8 (offset 7)"),
        (b"", "chat_template.jinja ({src}) writes no tool call"),
        (b"hello", "it renders 'hello' whatever the conversation (an empty or constant template)"),
    ],
    ids=["div0", "c-level-pow", "nested-loops", "range", "output", "memory", "syntax", "non-utf8", "empty", "constant"],
)
def test_a_hostile_template_is_one_error_line_within_its_bound(tmp_path, template, expected):
    folder = model_dir(tmp_path, template)
    out = run_cli(
        "corpus", "--model", "qwen2.5-7b", "--model-dir", str(folder), "--slices", "curated",
        "--render-timeout", "2", "--out", str(tmp_path / "cases.jsonl"),
    )  # fmt: skip
    line = one_error(out)
    assert expected.format(src=f"local_dir {folder}") in line, line
    assert not (tmp_path / "cases.jsonl").exists()


def test_eval_over_a_constant_template_is_an_error_not_every_parser_passed(tmp_path):
    folder = model_dir(tmp_path, b"{{ bos_token }}<tool_call>{}</tool_call>")
    out = run_cli("eval", "--model", "qwen2.5-7b", "--model-dir", str(folder), "--no-capture", "--cases", "5",
                  "--out", str(tmp_path / "run"))  # fmt: skip
    assert "an empty or constant template" in one_error(out)
    assert "every parser passed" not in out.stdout


def test_eval_of_rendered_slices_with_no_case_is_an_error(tmp_path):
    """LFM2-8B-A1B's template writes a turn's content, never its calls: its rendered slices hold no case."""
    out = run_cli("eval", "--model", "lfm2-8b-a1b", "--slices", "curated,generated", "--cases", "5", "--no-capture",
                  "--out", str(tmp_path / "run"))  # fmt: skip
    assert "writes no tool call" in out.stdout + out.stderr
    assert one_error(out).startswith("error: nothing to run: the curated, generated slice(s) of lfm2-8b-a1b")


def deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def case_line(**change) -> str:
    case = {
        "id": "c1",
        "format": "hermes",
        "text": '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>',
        "expected": {"content": None, "tool_calls": [{"name": "f", "arguments": {}}]},
        **change,
    }
    return json.dumps(case)


def suite_line(**change) -> str:
    prompt = json.loads(SUITE.read_text(encoding="utf-8").splitlines()[0])
    return json.dumps({**prompt, **change})


CYCLE = {"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}}


@pytest.mark.parametrize(
    "command, name, body, expected",
    [
        ("check", "cases.jsonl", case_line().encode()[:-2] + b'\xff"}\n', "{f}: not UTF-8 text: byte 0xFF at line 1"),
        ("check", "cases.jsonl", case_line(note="x").replace('"x"', deep(100_000)).encode(), "{f}:1: JSON nested"),
        (
            "check",
            "cases.jsonl",
            (case_line() + "\n" + case_line(id="c2", note="x").replace('"x"', deep(101))).encode(),
            "{f}:2: JSON nested deeper",
        ),
        (
            "suites",
            "suite.jsonl",
            suite_line().encode().replace(b"Order", b"Ord\xe9r"),
            "{f}: not UTF-8 text: byte 0xE9",
        ),
        ("suites", "suite.jsonl", suite_line(x=[]).replace("[]", deep(5000)).encode(), "{f}:1: JSON nested deeper"),
        (
            "suites",
            "suite.jsonl",
            suite_line(
                tools=[{"type": "function", "function": {"name": "create_order", "parameters": CYCLE}}]
            ).encode(),
            "{f}:1: tools[0] (create_order): parameters is not a valid JSON schema: "
            "$ref cycle #/$defs/a -> #/$defs/a (validation would never end)",
        ),
        (
            "suites",
            "suite.jsonl",
            suite_line(
                tools=[
                    {
                        "type": "function",
                        "function": {"name": "create_order", "parameters": {"$ref": "https://example.com/schema.json"}},
                    }
                ]
            ).encode(),  # fmt: skip
            "names no part of this schema (only local refs are read)",
        ),
        ("models", "catalog.toml", b'[models.x]\nformat = "hermes"\noffline_note = "caf\xe9"\n', "{f}: not UTF-8 text"),
    ],
    ids=[
        "case-utf8",
        "case-deep",
        "case-deep-101",
        "suite-utf8",
        "suite-deep",
        "suite-ref-cycle",
        "suite-ref-remote",
        "catalog-utf8",
    ],  # fmt: skip
)
def test_a_broken_file_is_one_error_line_naming_it(tmp_path, command, name, body, expected):
    path = tmp_path / name
    path.write_bytes(body)
    if command == "check":
        out = run_cli("check", str(path), "--parser", "own")
    elif command == "suites":
        out = run_cli("suites", str(path))
    else:
        out = run_cli("models", env={"TOOLCALL_HARNESS_CATALOG": str(path)})
    line = one_error(out)
    assert expected.format(f=path) in line, line


def capture_line(prompt_id: str = "nested-01", text: str = "<tool_call>\n{}\n</tool_call>") -> str:
    return json.dumps(
        {
            "prompt_id": prompt_id,
            "suite": "nested-args",
            "format": "hermes",
            "backend": "fixture",
            "model": {"name": "m", "file": "", "sha256": ""},
            "text": text,
            "finish_reason": "stop",
        }  # fmt: skip
    )


def test_a_capture_file_that_is_not_utf8_or_scored_against_a_ref_cycle_is_one_error_line(tmp_path):
    captures = tmp_path / "cap.jsonl"
    captures.write_bytes(capture_line(text="café").encode().replace(b"\\u00e9", b"\xe9") + b"\n")
    out = run_cli("eval", "--model", "qwen2.5-7b", "--captures", str(captures), "--slices", "observed",
                  "--modes", "oneshot", "--out", str(tmp_path / "run1"))  # fmt: skip
    assert f"{captures}: not UTF-8 text: byte 0xE9 at line 1" in one_error(out)

    captures.write_text(capture_line("cycle") + "\n", encoding="utf-8")
    suite = tmp_path / "suite.jsonl"
    suite.write_text(
        suite_line(id="cycle", tools=[{"type": "function", "function": {"name": "create_order", "parameters": CYCLE}}])
        + "\n"
    )
    out = run_cli("eval", "--model", "qwen2.5-7b", "--captures", str(captures), "--suites", str(suite),
                  "--slices", "observed", "--modes", "oneshot", "--out", str(tmp_path / "run2"))  # fmt: skip
    assert f"{suite}:1: tools[0] (create_order): parameters is not a valid JSON schema: $ref cycle" in one_error(out)


def test_an_empty_capture_file_is_refused_not_scored_as_every_parser_passed(tmp_path):
    """Before: ``eval --captures empty.jsonl`` scored nothing and said "every parser passed every case", exit 0."""
    captures = tmp_path / "cap.jsonl"
    captures.write_text("\n", encoding="utf-8")
    out = run_cli("eval", "--model", "qwen2.5-7b", "--captures", str(captures), "--slices", "observed",
                  "--modes", "oneshot", "--out", str(tmp_path / "run"))  # fmt: skip
    assert one_error(out) == f"error: {captures}: no capture records in the file: nothing to score"
    assert not (tmp_path / "run" / "results.jsonl").exists()


def test_a_catalog_template_path_outside_the_sdist_is_refused(tmp_path):
    catalog = tmp_path / "catalog.toml"
    catalog.write_text(
        '[models.evil]\nformat = "hermes"\nhf_repo = "nobody/nothing"\nhf_file = "chat_template.jinja"\n'
        'offline_template = "../../../../../../../../etc/passwd"\noffline_template_model = "evil"\noffline_note = "x"\n'
    )
    out = run_cli("template", "--model", "evil", env={"TOOLCALL_HARNESS_CATALOG": str(catalog)})
    assert one_error(out) == (
        f"error: {catalog}: [models.evil]: field 'offline_template' must be a file name in the sdist's "
        "models/templates/ (no folders), got '../../../../../../../../etc/passwd'"
    )
    assert "root:" not in out.stdout


def test_a_torn_last_capture_line_is_reported_skipped_and_cut_off_so_the_run_resumes(tmp_path):
    """A capture killed mid-write leaves a last line without its newline. Scoring the file skips it with a warning;
    capturing into it again (here against a refused server: the record is a capture error) cuts it off first, so
    the file reads back whole."""
    captures = tmp_path / "cap.jsonl"
    torn = capture_line("nested-02")[:60]
    captures.write_text(capture_line() + "\n" + torn, encoding="utf-8")
    out = run_cli("eval", "--model", "qwen2.5-7b", "--captures", str(captures), "--suites", "nested-args",
                  "--slices", "observed", "--modes", "oneshot", "--out", str(tmp_path / "run"))  # fmt: skip
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert (
        f"{captures}:2: torn last line skipped (60 characters, no newline: a write cut off)" in out.stdout + out.stderr
    )
    scored = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert {r["case_id"] for r in scored if r["slice"].startswith("capture:")} == {"nested-01"}

    out = run_cli("capture", "--model", "qwen2.5-7b", "--backend", "openai", "--base-url", "http://127.0.0.1:9",
                  "--suites", "nested-args", "--capture-limit", "2", "--out", str(captures))  # fmt: skip
    assert "Traceback" not in out.stderr and f"{captures}:2: torn last line skipped" in out.stdout, out.stderr[-2000:]
    lines = captures.read_text(encoding="utf-8").split("\n")
    assert lines[-1] == "" and torn not in lines
    records = [json.loads(line) for line in lines[:-1]]
    assert records[0] == json.loads(capture_line()) and all(r["error"] for r in records[1:])
    assert {r["prompt_id"] for r in records[1:]} == {"nested-01", "nested-02"}  # fixture records are not reusable

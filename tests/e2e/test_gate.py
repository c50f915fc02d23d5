"""Baselines and the regression gate (harness/jobs/gate.py): `toolcall-harness baseline save` and `gate` on the
real Gemma 4 template and the project's own gemma4 parser, gated against a real subclass that breaks one input."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import main

MODEL = "gemma-4-e2b"
OWN_BASELINE = "toolcall-harness_gemma4.json"
SMALL = ["--model", MODEL, "--modes", "oneshot,whole", "--slices", "curated,generated", "--cases", "3"]
REPO = Path(__file__).resolve().parents[2]

CANDIDATE = '''
"""The project's Gemma 4 parser, except that it drops the tool calls of one input (a candidate to gate)."""
from parsers.own.gemma4 import Gemma4Parser

TARGET = {target!r}


class Broken(Gemma4Parser):
    def parse(self, text, tools=None, prefix=""):
        message = super().parse(text, tools, prefix)
        if text == TARGET:
            message.tool_calls = []
        return message
'''


@pytest.fixture(scope="module")
def offline():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        yield


@pytest.fixture(scope="module")
def saved(tmp_path_factory, offline):
    """A baseline of the own gemma4 parser, the case to break and a candidate module breaking it."""
    root = tmp_path_factory.mktemp("gate")
    rc = main(["baseline", "save", *SMALL, "--parsers", "own", "--dir", str(root / "bl"), "--out", str(root / "runs")])
    assert rc == 0
    baseline = json.loads((root / "bl" / MODEL / OWN_BASELINE).read_text(encoding="utf-8"))
    texts = [c["text"] for c in baseline["cases"].values()]
    target = next(
        r["case_id"]
        for r in baseline["results"]
        if r["mode"] == "oneshot"
        and r["slice"] == "curated"
        and r["verdict"] == "pass"
        and baseline["cases"][r["case_id"]]["expected"]["tool_calls"]
        and texts.count(baseline["cases"][r["case_id"]]["text"]) == 1
    )
    (root / "candidate_gate_broken.py").write_text(
        CANDIDATE.format(target=baseline["cases"][target]["text"]), encoding="utf-8"
    )
    return root, baseline, target


def _dirs(root: Path, baselines: str = "bl") -> list[str]:
    return ["--dir", str(root / baselines), "--out", str(root / "runs")]


def test_baseline_file_holds_verdicts_corpus_hash_and_parser(saved):
    _, baseline, target = saved
    assert baseline["parser"] == {
        "spec": "own",
        "name": "toolcall-harness:gemma4",
        "library": "toolcall-harness",
        "version": baseline["parser"]["version"],
    }
    assert baseline["settings"]["modes"] == ["oneshot", "whole"] and baseline["settings"]["n_generated"] == 3
    assert set(baseline["corpus"]["inputs"]) == {
        "template_sha256",
        "generator_version",
        "seed",
        "n_generated",
        "slices",
        "n_cases",
        "case_ids_sha256",
        "cases_sha256",
    }
    assert len(baseline["results"]) == 2 * len(baseline["cases"])
    assert sum(c["slice"] == "generated" for c in baseline["cases"].values()) == 3
    assert baseline["cases"][target]["text"].startswith("<|tool_call>")


def test_gate_fails_naming_exactly_the_broken_case(saved, capsys, monkeypatch):
    root, _, target = saved
    monkeypatch.syspath_prepend(str(root))  # the candidate named by module path
    rc = main(["gate", "--model", MODEL, "--parsers", "py:candidate_gate_broken:Broken", *_dirs(root)])
    out = capsys.readouterr().out
    assert rc == 1
    regressions = [line for line in out.splitlines() if line.startswith("REGRESSION")]
    assert regressions == [f"REGRESSION {target} (curated) [oneshot]"]
    assert "gate FAILED" in out and "1 regressed and 0 fixed" in out
    assert "[oneshot] now: fail wrong_call_count" in out
    gate_md = next((root / "runs").glob("gate-*candidate_gate_broken*/gate.md")).read_text(encoding="utf-8")
    assert f"### `{target}` (curated; oneshot)" in gate_md
    assert "| regressed | wrong_call_count | 1 |" in gate_md  # the summary per error type, on top


def test_regressed_case_gets_a_minimal_failing_input(saved, capsys, tmp_path):
    root, baseline, target = saved
    candidate = tmp_path / "candidate_by_name.py"  # breaks every call to the target's function
    name = baseline["cases"][target]["expected"]["tool_calls"][0]["name"]
    candidate.write_text(CANDIDATE.format(target=None).replace("text == TARGET", f"{name!r} in text"), encoding="utf-8")
    assert main(["gate", "--model", MODEL, "--parsers", f"py:{candidate}:Broken", *_dirs(root)]) == 1
    out = capsys.readouterr().out
    assert f"REGRESSION {target} (curated) [oneshot]" in out
    minimal = [line for line in out.splitlines() if line.startswith("  minimal failing input [oneshot]")]
    assert minimal and all(f"call:{name}" in line and "structure" in line for line in minimal)
    original = len(baseline["cases"][target]["text"])
    target_block = out.split(f"REGRESSION {target} ")[1]
    shown = target_block.split("  minimal failing input [oneshot] (")[1].split(" ")[0]
    assert int(shown) < original


def test_gate_of_the_unchanged_parser_passes(saved, capsys):
    root, _, _ = saved
    rc = main(["gate", "--model", MODEL, *_dirs(root)])
    out = capsys.readouterr().out
    assert rc == 0
    assert "gate passed" in out and "0 regressed and 0 fixed" in out and "REGRESSION" not in out


def test_fix_is_listed_and_passes(saved, capsys):
    root, _, target = saved
    candidate = f"py:{root / 'candidate_gate_broken.py'}:Broken"  # the file-path form
    assert main(["baseline", "save", *SMALL, "--parsers", candidate, *_dirs(root, "bl-broken")]) == 0
    capsys.readouterr()
    rc = main(["gate", "--model", MODEL, "--parsers", "own", *_dirs(root, "bl-broken")])
    out = capsys.readouterr().out
    assert rc == 0
    assert [line.split(":")[0] for line in out.splitlines() if line.startswith("FIXED")] == [
        f"FIXED {target} (curated) [oneshot]"
    ]
    assert "0 regressed and 1 fixed" in out


def test_changed_template_is_a_corpus_mismatch(saved, capsys, tmp_path):
    root, _, _ = saved
    from harness.template.sources import load_template

    (tmp_path / "chat_template.jinja").write_text(load_template(MODEL).text + "{# edited #}", encoding="utf-8")
    rc = main(["gate", "--model", MODEL, "--model-dir", str(tmp_path), *_dirs(root)])
    err = capsys.readouterr().err
    assert rc == 2
    assert "the corpus differs from the baseline's" in err and "template_sha256: baseline" in err
    assert "save a new baseline: toolcall-harness baseline save --model gemma-4-e2b --parsers own" in err
    assert err.rstrip().endswith(f"--model-dir {tmp_path}")


def test_other_cases_are_a_corpus_mismatch_naming_them(saved, capsys, tmp_path):
    root, baseline, _ = saved
    edited = {**baseline, "settings": {**baseline["settings"], "seed": 1}}
    path = tmp_path / "seed1.json"
    path.write_text(json.dumps(edited), encoding="utf-8")
    rc = main(["gate", "--baseline", str(path), *_dirs(root)])
    err = capsys.readouterr().err
    assert rc == 2
    assert f"{path}: the corpus differs" in err and "seed: baseline 0, now 1" in err
    assert "cases only in the baseline: 3 (gen-0-0000, gen-0-0001, gen-0-0002)" in err
    assert "cases only now: 3 (gen-1-0000, gen-1-0001, gen-1-0002)" in err


def test_missing_or_corrupt_baseline_is_a_clear_error(saved, capsys, tmp_path):
    root, _, _ = saved
    assert main(["gate", "--model", MODEL, "--dir", str(tmp_path / "none")]) == 2
    assert "no baseline for gemma-4-e2b" in capsys.readouterr().err
    assert main(["gate", "--model", MODEL, "--parsers", "transformers", *_dirs(root)]) == 2
    err = capsys.readouterr().err
    assert "no baseline for parser transformers" in err
    assert "baseline save --model gemma-4-e2b --parsers transformers" in err
    assert main(["gate", "--baseline", str(tmp_path / "gone.json")]) == 2
    assert (
        f"{tmp_path / 'gone.json'}: no such baseline; create one with `toolcall-harness baseline save"
        in capsys.readouterr().err
    )
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text('{"schema": 1,\n "model": ', encoding="utf-8")
    assert main(["gate", "--baseline", str(corrupt)]) == 2
    assert f"{corrupt}: not a baseline file: invalid JSON at line 2" in capsys.readouterr().err


def test_bad_candidate_spec_is_a_clear_error(saved, capsys, tmp_path):
    root, _, _ = saved
    assert main(["gate", "--model", MODEL, "--parsers", "py:no_such_module_xyz:Parser", *_dirs(root)]) == 2
    assert "cannot import no_such_module_xyz: ModuleNotFoundError" in capsys.readouterr().err
    (tmp_path / "notaparser.py").write_text("class Thing:\n    pass\n", encoding="utf-8")
    assert main(["gate", "--model", MODEL, "--parsers", f"py:{tmp_path / 'notaparser.py'}:Thing", *_dirs(root)]) == 2
    assert "Thing has no callable parse or stream" in capsys.readouterr().err


def test_gate_subprocess_exit_status(saved):
    root, _, target = saved
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "gate",
            "--model",
            MODEL,
            "--parsers",
            f"py:{root / 'candidate_gate_broken.py'}:Broken",
            *_dirs(root),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert f"REGRESSION {target} (curated) [oneshot]" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_compact_baseline_and_the_strict_gate(saved, capsys):
    """What the engine pins are: a compact baseline (no case texts, no passing outputs) that the strict gate holds
    to every difference, here a fix that the plain gate lets through."""
    root, _, target = saved
    candidate = f"py:{root / 'candidate_gate_broken.py'}:Broken"
    assert main(["baseline", "save", *SMALL, "--parsers", candidate, "--compact", *_dirs(root, "bl-compact")]) == 0
    data = json.loads((root / "bl-compact" / MODEL / OWN_BASELINE).read_text(encoding="utf-8"))
    assert all(set(c) == {"slice", "digest"} for c in data["cases"].values())
    assert all("got" not in r for r in data["results"] if r["verdict"] == "pass")
    (broken,) = [r for r in data["results"] if r["verdict"] != "pass"]
    assert (broken["case_id"], broken["mode"], broken["got"]["tool_calls"]) == (target, "oneshot", [])
    capsys.readouterr()
    assert main(["gate", "--model", MODEL, "--parsers", candidate, "--strict", *_dirs(root, "bl-compact")]) == 0
    assert "gate passed (strict)" in capsys.readouterr().out
    assert main(["gate", "--model", MODEL, "--parsers", "own", *_dirs(root, "bl-compact")]) == 0
    capsys.readouterr()
    assert main(["gate", "--model", MODEL, "--parsers", "own", "--strict", *_dirs(root, "bl-compact")]) == 1
    out = capsys.readouterr().out
    assert "gate FAILED (strict)" in out and "0 regressed and 1 fixed" in out and f"FIXED {target}" in out

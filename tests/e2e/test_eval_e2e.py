"""The main job end to end at small size, through the real CLI entry point (a subprocess)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

BIN = Path(sys.executable).parent / "toolcall-harness"


def run_cli(*args, cwd=None, env=None):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=900)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    proc = run_cli("eval", "--model", "gemma-4-e2b", "--cases", "12", "--seed", "7", "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, proc


def test_eval_prints_table_and_writes_reports(run):
    out, proc = run
    assert "passed/total" in proc.stdout
    for parser in ("toolcall-harness:gemma4", "transformers==5.24.0:gemma4", "mlx-lm==0.32.2:gemma4"):
        assert parser in proc.stdout
    for name in ("results.jsonl", "summary.csv", "report.md", "corpus.jsonl"):
        assert (out / name).stat().st_size > 0


def test_results_have_one_line_per_case_parser_mode(run):
    out, _ = run
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().strip("\n").split("\n")]
    cases = (out / "corpus.jsonl").read_text().strip("\n").split("\n")
    slices = {json.loads(c)["slice"] for c in cases}
    assert slices == {"curated", "generated", "observed", "drift", "peer-canitoolcall", "peer-llama.cpp"}
    modes = {r["mode"] for r in records}
    assert modes == {"oneshot", "roundtrip", "whole", "char", "random", "tokens", "prefix"}
    assert {r["mode"] for r in records if r["parser"] != "toolcall-harness:gemma4"} == modes - {"prefix"}
    per_parser = {}
    for r in records:
        per_parser.setdefault((r["parser"], r["mode"]), set()).add(r["case_id"])
    # round trips apply to the cases whose text the template wrote as is
    full = {
        json.loads(c)["id"]
        for c in cases
        if json.loads(c)["slice"] in ("curated", "generated", "drift")
        and json.loads(c).get("text_provenance", "full") == "full"
    }
    assert all(ids == full for (_, mode), ids in per_parser.items() if mode == "roundtrip")
    assert all(len(ids) == len(cases) for (_, mode), ids in per_parser.items() if mode != "roundtrip")
    own_roundtrips = [r for r in records if r["mode"] == "roundtrip" and r["parser"] == "toolcall-harness:gemma4"]
    assert own_roundtrips and all(r["verdict"] == "pass" for r in own_roundtrips)
    for r in records:
        assert r["verdict"] in ("pass", "soft_pass", "fail", "surfaced", "error")
        assert (r["error_type"] is None) == (r["verdict"] in ("pass", "soft_pass", "surfaced"))


def test_summary_csv_reads_with_pandas_and_matches_results(run):
    out, _ = run
    summary = pd.read_csv(out / "summary.csv")
    records = (out / "results.jsonl").read_text().strip("\n").split("\n")
    assert summary.total.sum() == len(records)
    assert (summary.passed + summary.failed + summary.surfaced + summary.errors == summary.total).all()
    assert (summary.soft <= summary.passed).all()  # passed counts the soft passes, soft shows them apart
    own = summary[(summary.parser == "toolcall-harness:gemma4") & (summary.slice == "generated")]
    assert (own.passed == own.total).all()


def test_report_names_template_source_sha_versions_and_seed(run):
    out, _ = run
    text = (out / "report.md").read_text()
    assert "google-gemma-4-31B-it.jinja" in text and "sha256" in text
    assert "fallback template used" in text and "stands in" in text
    assert "transformers 5.24.0" in text and "mlx-lm 0.32.2" in text
    assert "run_seed 7" in text and "harness: commit " in text
    assert "## Curated and observed cases that did not pass" in text


def test_check_prints_counts_and_failing_cases(tmp_path):
    from harness.corpus.build import OBSERVED_FILE

    proc = run_cli("check", str(OBSERVED_FILE), "--parser", "transformers", "--modes", "oneshot")
    assert proc.returncode == 0, proc.stderr
    first, *failing = proc.stdout.splitlines()
    assert first.startswith("transformers==5.24.0:gemma4: 10 cases × 1 mode(s) (oneshot) = 10 results: pass 6")
    assert "left out 14 case(s)" in proc.stdout
    assert any("gemma4_paren_form_absorbed_into_name_vllm [oneshot] exception" in line for line in failing)


@pytest.mark.parametrize(
    "args, message",
    [
        (("check", "{observed}", "--parser", "own", "--out", "{tmp}"), "error: Is a directory"),
        (("check", "{observed}", "--parser", "own", "--format", "nope"), "error: unknown format nope"),
        (("check", "{observed}", "--parser", "transformers", "--modes", "prefix"), "do not apply to transformers"),
        (("eval", "--timeout", "-1"), "must be more than 0 and at most 86400 seconds, got -1"),
        # setitimer overflows past ~1e9 s: every call was the parser's exception, exit 0 (issue 15, item 2)
        (("eval", "--timeout", "inf"), "argument --timeout: must be more than 0 and at most 86400 seconds, got inf"),
        (("check", "{observed}", "--parser", "own", "--timeout", "1e10"), "at most 86400 seconds, got 1e10"),
        (("sweep", "--timeout", "inf"), "at most 86400 seconds, got inf"),
        (("baseline", "save", "--timeout", "nan"), "at most 86400 seconds, got nan"),
        (("gate", "--timeout", "1e10"), "at most 86400 seconds, got 1e10"),
        (("eval", "--parsers", ""), "empty list"),
        (("eval", "--parsers", "nope"), "error: unknown parser 'nope'"),
    ],
)
def test_bad_arguments_give_one_error_line(tmp_path, args, message):
    from harness.corpus.build import OBSERVED_FILE

    args = [a.format(observed=OBSERVED_FILE, tmp=tmp_path) for a in args]
    proc = run_cli(*args)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("command", [("eval",), ("check",), ("sweep",), ("baseline", "save"), ("gate",)])
def test_timeout_help_states_the_range(command):
    proc = run_cli(*command, "--help")
    assert proc.returncode == 0 and "more than 0 and at most 86400" in " ".join(proc.stdout.split())


def test_unknown_model_is_a_clear_error_listing_known_models():
    proc = run_cli("eval", "--model", "gemma-9")
    assert proc.returncode == 2
    assert "gemma-4-e2b" in proc.stderr and "Traceback" not in proc.stderr


def test_check_scores_an_external_file(tmp_path):
    from harness.corpus.build import OBSERVED_FILE

    out = tmp_path / "res.jsonl"
    proc = run_cli(
        "check", str(OBSERVED_FILE), "--parser", "toolcall-harness:gemma4", "--mode", "oneshot,char", "--out", str(out)
    )
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in out.read_text().strip("\n").split("\n")]
    assert len(records) == 20  # 10 gemma4 cases x 2 modes
    assert {"case_id", "parser", "mode", "verdict", "error_type", "got"} <= set(records[0])


def test_check_malformed_file_names_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    proc = run_cli("check", str(bad), "--parser", "toolcall-harness:gemma4")
    assert proc.returncode == 2 and f"{bad}:1" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "template, message",
    [
        ("{% for m in messages %}{{ m.content }{% endfor %}", "Jinja error: unexpected '}'"),
        ('{{ raise_exception("no tools here") }}', "Jinja error: no tools here"),
    ],
)
def test_template_that_fails_to_render_is_named_with_the_jinja_error(tmp_path, template, message):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "chat_template.jinja").write_text(template)
    proc = run_cli("eval", "--model-dir", str(model_dir), "--cases", "2", "--out", str(tmp_path / "run"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "chat_template.jinja" in proc.stderr and str(model_dir) in proc.stderr and message in proc.stderr


def test_parsers_command_lists_the_three_parsers():
    proc = run_cli("parsers")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    for name in ("toolcall-harness:gemma4", "transformers==5.24.0:gemma4", "mlx-lm==0.32.2:gemma4"):
        assert any(line.startswith(name) and "available" in line for line in lines)


def test_family_grid_sums_templates_and_counts_observed_cases_once():
    from harness.report.families import family_grid

    def rec(parser, slice_name, mode, verdict, case_id):
        return {"parser": parser, "slice": slice_name, "mode": mode, "verdict": verdict, "case_id": case_id}

    records = [
        rec("p", "curated", "oneshot", "pass", "a"),
        rec("p", "curated", "oneshot", "fail", "a"),  # 2 templates
        rec("p", "curated", "char", "pass", "a"),
        rec("p", "curated", "whole", "pass", "a"),
        rec("p", "observed", "oneshot", "pass", "o"),
        rec("p", "observed", "oneshot", "pass", "o"),
    ]
    columns, rows = family_grid(records)
    assert columns == ["curated oneshot", "curated streaming", "observed oneshot"]
    assert rows == [("p", ["1/2", "2/2", "1/1"])]


def test_eval_all_models_prints_one_table_per_family(tmp_path):
    import subprocess
    import sys

    from harness.template.catalog import list_models

    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "eval",
            "--all-models",
            "--cases",
            "0",
            "--slices",
            "curated",
            "--modes",
            "oneshot",
            "--parsers",
            "own",
            "--no-shrink",
            "--out",
            str(tmp_path / "all"),
        ],
        capture_output=True,
        text=True,
        timeout=1200,
        env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "gemma4 family: passed/total" in proc.stdout
    assert "hermes family: passed/total" in proc.stdout
    report = (tmp_path / "all" / "report.md").read_text(encoding="utf-8")
    assert "## gemma4" in report and "same template as `gemma-4-e2b`" in report
    matrix = (tmp_path / "all" / "index.html").read_text(encoding="utf-8")  # families x parsers (browser: e2e html)
    assert '<a href="gemma-4-e2b/report.html">gemma-4-e2b</a>' in matrix and (tmp_path / "all" / "gemma-4-e2b").is_dir()
    assert "policy <code>malformed=either,whitespace=soft-v1,reasoning=deepseek</code>" in matrix
    assert matrix.count('<tr><th scope="row">') == len({e.format for e in list_models()})


def test_known_limitations_come_from_the_parser():
    from harness.parse.limitations import known_limitations

    items = known_limitations("llama3_json")
    assert items and any("no marker" in item for item in items)
    assert all("\n" not in item for item in items)
    assert known_limitations("no_such_format") == []


def test_modes_that_apply_to_no_parser_are_an_error_not_an_empty_success(tmp_path):
    proc = run_cli(
        "eval",
        "--model",
        "gemma-4-e2b",
        "--parsers",
        "transformers",
        "--modes",
        "prefix",
        "--slices",
        "curated",
        "--out",
        str(tmp_path),
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr + proc.stdout
    assert "no mode of prefix applies to transformers==5.24.0:gemma4" in proc.stdout + proc.stderr

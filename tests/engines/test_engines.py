"""Engines: environments built into the user cache, keyed by recipe, and old-versus-new comparisons.

These tests build real environments (transformers 5.16.0: ~20 s, mlx-lm 0.32.0: ~35 s on a cold cache,
reused afterwards) and run the real libraries in them through the worker protocol.
"""

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from harness.core.messages import ToolCall
from harness.engines import environments as engines
from harness.engines.client import WorkerParser
from harness.engines.spec import PipEngine
from harness.formats import get_format
from harness.parse.registry import create_parsers
from harness.score.runner import evaluate_case
from parsers.reference.transformers import ENGINE as TRANSFORMERS

# A cold cache builds the environment inside the first test (minutes): allow for it.
pytestmark = pytest.mark.timeout(1800)

ROOT = Path(__file__).resolve().parents[2]
FMT = get_format("gemma4")
OBSERVED = ROOT / "corpora" / "observed" / "observed_public.jsonl"


def test_every_engine_module_loads_and_names_its_engine():
    assert engines.broken_engines() == {}
    assert {"sglang", "vllm", "llama.cpp", "transformers", "mlx-lm"} <= set(engines.engines())


def test_environment_folder_is_keyed_by_name_version_and_recipe():
    changed = replace(TRANSFORMERS, recipe=lambda v: {**TRANSFORMERS.recipe(v), "extra": "pin"})
    a, b = engines.env_dir(TRANSFORMERS, "5.16.0"), engines.env_dir(changed, "5.16.0")
    assert a.name.startswith("transformers-5.16.0-") and b.name.startswith("transformers-5.16.0-") and a != b
    assert engines.env_dir(TRANSFORMERS, "5.17.0") != a


def test_unknown_engine_and_rejected_version_are_clear_errors():
    with pytest.raises(engines.EngineError, match="unknown engine 'nope'; known: .*sglang"):
        engines.install("nope==1")
    with pytest.raises(engines.EngineError, match="mlx-lm==0.30.7: .*predates"):
        engines.install("mlx-lm==0.30.7")


def test_a_failed_build_names_the_step_and_leaves_only_its_log(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLCALL_HARNESS_CACHE", str(tmp_path))
    empty = tmp_path / "no-wheels"
    empty.mkdir()
    broken = PipEngine(
        name="transformers",
        default_version="5.16.0",
        formats=("gemma4",),
        cold_install="seconds",
        steps=lambda v: [["install", "--no-index", "--find-links", str(empty), f"transformers=={v}"]],
        worker_module="parsers.reference.transformers",
    ).engine()
    monkeypatch.setattr(engines, "engines", lambda: {"transformers": broken})
    with pytest.raises(engines.EngineError, match=r"step failed with exit status \d+: .*pip .*install") as info:
        engines.install("transformers==5.16.0", log=lambda line: None)
    assert engines.find_installed("transformers", "5.16.0") is None
    leftovers = sorted(p.name for p in (tmp_path / "engines").iterdir())
    assert len(leftovers) == 1 and leftovers[0].endswith(".failed.log") and leftovers[0] in str(info.value)


def test_a_version_the_index_does_not_list_is_refused_before_building():
    with pytest.raises(engines.EngineError, match=r"the package index has no vllm 9\.9\.9; newest: (\S+, )*0\.33\.0\b"):
        engines.install("vllm==9.9.9")
    with pytest.raises(engines.EngineError, match="without :FORMAT"):
        engines.install("vllm==0.33.0:gemma4")


@pytest.fixture(scope="module")
def old_transformers():
    installed = engines.install("transformers==5.16.0")
    assert (installed.path / "manifest.json").is_file()
    parsers, unavailable = create_parsers(["transformers==5.16.0:gemma4", "transformers"], "gemma4")
    assert unavailable == {}
    yield parsers
    parsers[0].close()


def test_engine_parser_runs_the_other_version_out_of_process(old_transformers):
    old, new = old_transformers
    assert (old.name, new.name) == ("transformers==5.16.0:gemma4", "transformers==5.24.0:gemma4")
    assert isinstance(old, WorkerParser)
    text = '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>'
    assert old.parse(text).tool_calls == new.parse(text).tool_calls == [ToolCall("get_weather", {"city": "Paris"})]


def test_old_version_fails_where_the_new_one_was_fixed(old_transformers):
    """5.16.0 quotes a bare key only right after ``{`` or ``,``; 5.24.0 also after whitespace (a model that
    writes one argument per line, as the xinference report shows)."""
    old, new = old_transformers
    text = '<|tool_call>call:f{a:1,\nb:<|"|>x<|"|>}<tool_call|>'
    assert new.parse(text).tool_calls == [ToolCall("f", {"a": 1, "b": "x"})]
    with pytest.raises(Exception, match="could not parse after dialect transforms"):
        old.parse(text)


def test_eval_compares_versions_with_per_case_flips(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "eval",
            "--model",
            "gemma-4-e2b",
            "--cases",
            "20",
            "--parsers",
            "transformers==5.16.0:gemma4,transformers==5.24.0:gemma4",
            "--modes",
            "oneshot,tokens",
            "--slices",
            "curated,generated,observed",
            "--no-shrink",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    assert "fixed: 1 case (2 case×mode results)" in out.stdout
    assert "gemma4_plain_quote_in_string_xinference [oneshot,tokens]" in out.stdout
    report = (tmp_path / "report.md").read_text()
    assert "## Version comparison" in report
    assert "`gemma4_plain_quote_in_string_xinference` (observed; oneshot, tokens): old exception" in report
    assert "| oneshot |" in report


def test_mlx_lm_0_32_0_needs_one_state_per_chunk_and_0_32_2_does_not():
    """Same Gemma 4 tool parser in both; the server loop differs. 0.32.0 advances its text state machine with
    ``TextStateMachine.step`` (one state per generated piece), 0.32.2 with ``split`` (a piece may cross a
    marker). Token-by-token and char-by-char they agree; a piece holding a marker and text — the whole
    generation at once, the ``oneshot`` replay — breaks 0.32.0 and was fixed in 0.32.2."""
    from harness.core.cases import load_cases

    parsers, unavailable = create_parsers(["mlx-lm==0.32.0:gemma4", "mlx-lm"], "gemma4")
    assert unavailable == {} and [p.name for p in parsers] == ["mlx-lm==0.32.0:gemma4", "mlx-lm==0.32.2:gemma4"]
    fixed = []
    try:
        for case in load_cases(OBSERVED, fmt="gemma4"):
            old, new = (
                {r.mode: r.verdict for r in evaluate_case(case, p, FMT, ["oneshot", "char", "tokens"], 0)}
                for p in parsers
            )
            assert (old["char"], old["tokens"]) == (new["char"], new["tokens"]), case.id
            assert not (old["oneshot"] == "pass" and new["oneshot"] != "pass"), case.id
            if old["oneshot"] != "pass" and new["oneshot"] == "pass":
                fixed.append(case.id)
    finally:
        parsers[0].close()
    assert "gemma4_nested_object_as_string_mlx_swift" in fixed and len(fixed) >= 3


def test_mlx_lm_0_31_per_token_loop_agrees_with_0_32_2():
    """The issue's own example: 0.31.3 (token-id state machine in the generator) vs 0.32.2 (text state machine):
    the same Gemma 4 parser behind two server loops gives the same verdicts in every mode."""
    from harness.core.cases import load_cases

    parsers, unavailable = create_parsers(["mlx-lm==0.31.3:gemma4", "mlx-lm==0.32.2:gemma4"], "gemma4")
    assert unavailable == {} and parsers[0].name == "mlx-lm==0.31.3:gemma4"
    modes = ["oneshot", "char", "tokens"]
    try:
        for case in load_cases(OBSERVED, fmt="gemma4"):
            old, new = ([(r.mode, r.verdict, r.got) for r in evaluate_case(case, p, FMT, modes, 0)] for p in parsers)
            assert old == new, case.id
    finally:
        parsers[0].close()


def test_engines_cli_lists_engines_and_installed_environments():
    engines.install("transformers==5.16.0")
    out = subprocess.run(
        [sys.executable, "-m", "harness.cli", "engines", "list"], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "sglang==0.5.23" in out.stdout and "vllm==0.33.0" in out.stdout and "llama.cpp==" in out.stdout
    assert "pip install transformers==5.16.0 jinja2" in out.stdout
    installed_part = out.stdout.split("\ninstalled (", 1)[1]
    installed = [
        line
        for line in installed_part.splitlines()
        if line.strip().startswith("transformers==5.16.0 ") and "(current)" in line
    ]  # a cache may also hold builds of older recipes ("stale recipe")
    assert installed and "MB" in installed[0]


def test_mlx_lm_versions_on_the_newer_formats():
    """The same adapter on other mlx-lm versions (engine workers), on texts rendered by the presets' templates
    (``engine_common.rendered_cases``). 0.32.0 agrees with 0.32.2 character by character and token-like piece by
    piece (its ``step`` breaks only pieces holding a marker and text); 0.31.3 shows three older faults: its GLM
    parser keeps the newline after the name, its state machine has no reasoning→tool edge (MiniMax-M2's prompt
    ends ``<think>``: calls written without ``</think>`` first stay reasoning text), and its Mistral parser matches
    one greedy ``{.*}`` (two calls in one segment: JSONDecodeError, dropped)."""
    sys.path.insert(0, str(ROOT / "tests" / "engines"))
    from engine_common import rendered_cases, rendered_results

    def results(spec: str, preset: str, fmt: str, modes=("oneshot", "char", "pieces")):
        cases = rendered_cases(preset, "[TOOL_CALLS]" if fmt == "mistral" else None)
        parsers, unavailable = create_parsers([spec], fmt)
        assert unavailable == {}, unavailable
        try:
            return rendered_results(parsers[0], cases, modes)
        finally:
            if hasattr(parsers[0], "close"):
                parsers[0].close()

    presets = {
        "glm-4.6": "glm45",
        "glm-4.7-flash": "glm47",
        "qwen3-coder-30b-a3b": "qwen3_coder",
        "minimax-m2": "minimax_m2",
        "devstral-small": "mistral",
        "kimi-k2": "kimi_k2",
    }
    for preset, fmt in presets.items():
        new = results(f"mlx-lm==0.32.2:{fmt}", preset, fmt, ("char", "pieces"))
        assert results(f"mlx-lm==0.32.0:{fmt}", preset, fmt, ("char", "pieces")) == new, preset

    old = results("mlx-lm==0.31.3:glm45", "glm-4.6", "glm45")
    assert {c["name"] for modes in old.values() for m in modes.values() for c in m["tool_calls"]} == {"get_weather\n"}
    parsers, _ = create_parsers(["mlx-lm==0.31.3:minimax_m2"], "minimax_m2")
    try:  # a model that goes from thinking straight to its calls, without </think>
        block = '<minimax:tool_call>\n<invoke name="f">\n</invoke>\n</minimax:tool_call>'
        got = parsers[0].parse(block, None, "<think>\n")
    finally:
        if hasattr(parsers[0], "close"):
            parsers[0].close()
    assert got.tool_calls == [] and got.reasoning.startswith("<minimax:tool_call>")
    old = results("mlx-lm==0.31.3:mistral", "devstral-small", "mistral")
    assert old["two_calls"] == {
        mode: {"content": None, "reasoning": None, "tool_calls": []} for mode in ("oneshot", "char", "pieces")
    }
    assert len(old["one_call"]["oneshot"]["tool_calls"]) == 1


def test_transformers_5_16_qwen3_coder_parses_without_tools():
    """5.16.0 has the same Qwen 3.5 template, but its server passes no tools to the parser: values stay text."""
    sys.path.insert(0, str(ROOT / "tests" / "engines"))
    from engine_common import rendered_cases, rendered_msg, rendered_results

    cases = rendered_cases("qwen3-coder-30b-a3b")
    parsers, unavailable = create_parsers(["transformers==5.16.0:qwen3_coder"], "qwen3_coder")
    assert unavailable == {} and parsers[0].name == "transformers==5.16.0:qwen3_coder"
    try:
        got = rendered_results(parsers[0], {"two_calls": cases["two_calls"]}, ("oneshot", "char"))
    finally:
        parsers[0].close()
    text_args = rendered_msg(None, [{"city": "Paris", "days": "3"}, {"city": "Rome", "days": "1"}])
    assert got == {"two_calls": {"oneshot": text_args, "char": text_args}}

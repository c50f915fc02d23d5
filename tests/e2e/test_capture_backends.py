"""Capture backends for real, on the micro Gemma 4 fixture (built from the real tokenizer at test time):
forced reference answers through llama-cpp-python and transformers give the same text and the same real token
ids, every parser is scored on them, runs resume from the capture file, and a failed generation is recorded."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.capture.backends import Sampling, Weights, create_backend
from harness.capture.records import read_captures
from harness.capture.run import capture_stats, load_prompts, reference_text, run_capture
from harness.extra.micro_model import micro_gemma4
from harness.formats import get_format
from harness.parse.registry import create_parsers
from harness.score.captures import score_captures
from harness.template.sources import load_template

FMT = get_format("gemma4")
TOOL_CALL_ID, TOOL_CALL_END_ID = 48, 49  # <|tool_call>, <tool_call|> in ggml-vocab-gemma-4.gguf


@pytest.fixture(scope="module")
def micro():
    return micro_gemma4(log=lambda line: None)


@pytest.fixture(scope="module")
def template():
    return load_template("gemma-4-e2b")


@pytest.fixture(scope="module")
def prompts():
    return load_prompts(["nested-args", "code-with-quotes", "no-tool"], limit=2)


def _weights(micro, kind: str) -> Weights:
    path = micro.gguf if kind == "gguf" else micro.hf_dir
    return Weights(str(path), kind, "micro Gemma 4 fixture", micro.sha256, "micro-gemma4")


@pytest.fixture(scope="module")
def forced_llama(micro, template, prompts, tmp_path_factory):
    backend = create_backend("llama-cpp", _weights(micro, "gguf"))
    path = tmp_path_factory.mktemp("cap") / "llama.jsonl"
    run = run_capture(prompts, backend, template, FMT, path, sampling=Sampling(max_tokens=400), force=True)
    return backend, run


def test_forced_llama_cpp_capture_writes_the_reference_with_real_token_ids(forced_llama, template, prompts):
    _, run = forced_llama
    assert run.generated == len(prompts) and run.errors == 0
    for prompt, capture in zip(prompts, run.captures, strict=False):
        assert capture.text == reference_text(template, FMT, prompt)
        assert capture.finish_reason == "stop" and capture.prefix == "<|channel>thought\n<channel|>"
        if prompt.calls:
            assert capture.pieces[0] == ["<|tool_call>", [TOOL_CALL_ID]]
            assert ["<tool_call|>", [TOOL_CALL_END_ID]] in capture.pieces
    # the file holds the same records, valid for re-scoring
    assert [c.prompt_id for c in read_captures(run.path)] == [p.id for p in prompts]


def test_every_parser_passes_the_forced_answers_one_shot_and_on_pieces(forced_llama, prompts):
    _, run = forced_llama
    parsers, _ = create_parsers(None, "gemma4", install_missing=False)
    records = score_captures(run.captures, {p.id: p for p in prompts}, parsers, FMT)
    assert {r["mode"] for r in records} == {"oneshot", "pieces"}
    assert len(records) == len(prompts) * len(parsers) * 2
    assert [r for r in records if r["verdict"] != "pass"] == []
    stats = {row["suite"]: row for row in capture_stats(run.captures, FMT)}
    assert stats["nested-args"]["wrote_call"] == 2 and stats["no-tool"]["wrote_call"] == 0


def test_a_second_run_reuses_the_file_and_failures_are_recorded_then_retried(forced_llama, template, prompts):
    backend, run = forced_llama
    again = run_capture(prompts, backend, template, FMT, run.path, sampling=Sampling(max_tokens=400), force=True)
    assert (again.reused, again.generated) == (len(prompts), 0)
    # a different rendered prompt (here: few-shot turns in front) is generated again, not reused
    shown = run_capture(
        prompts[:1],
        backend,
        template,
        FMT,
        run.path,
        sampling=Sampling(max_tokens=400),
        force=True,
        examples=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
    )
    assert (shown.reused, shown.generated) == (0, 1)
    # a request that cannot fit the context is a recorded capture error, not an exception
    too_long = Sampling(max_tokens=10_000)
    failed = run_capture(prompts[:1], backend, template, FMT, run.path, sampling=too_long)
    assert failed.errors == 1 and "n_ctx" in failed.captures[0].error
    assert read_captures(run.path)[-1].error == failed.captures[0].error
    retried = run_capture(prompts[:1], backend, template, FMT, run.path, sampling=too_long)
    assert retried.generated == 1  # errors are captured again on the next run


def test_transformers_backend_gives_the_same_text_and_ids(micro, forced_llama, template, prompts, tmp_path):
    backend = create_backend("transformers", _weights(micro, "hf"))
    run = run_capture(
        prompts, backend, template, FMT, tmp_path / "tf.jsonl", sampling=Sampling(max_tokens=400), force=True
    )
    assert run.errors == 0
    llama = {c.prompt_id: c for c in forced_llama[1].captures}
    for capture in run.captures:
        assert capture.text == llama[capture.prompt_id].text
        ids = [i for _, piece_ids in capture.pieces for i in piece_ids]
        assert ids == [i for _, piece_ids in llama[capture.prompt_id].pieces for i in piece_ids]
    assert run.captures[0].versions["torch"].startswith("2.13.0")


def test_unforced_generation_records_consistent_pieces(micro, template, prompts, tmp_path):
    backend = create_backend("llama-cpp", _weights(micro, "gguf"))
    run = run_capture(
        prompts[:2],
        backend,
        template,
        FMT,
        tmp_path / "free.jsonl",
        sampling=Sampling(max_tokens=24, temperature=0.8, seed=7),
    )
    for capture in run.captures:
        assert capture.error is None and capture.tokens <= 24
        assert "".join(text for text, _ in capture.pieces) == capture.text
        assert capture.sampling == {"temperature": 0.8, "top_p": 1.0, "max_tokens": 24, "seed": 7}
    # same seed, same output
    again = run_capture(
        prompts[:2],
        backend,
        template,
        FMT,
        tmp_path / "free2.jsonl",
        sampling=Sampling(max_tokens=24, temperature=0.8, seed=7),
    )
    assert [c.text for c in again.captures] == [c.text for c in run.captures]


def test_eval_with_a_capture_prints_the_table_and_keeps_results(micro, tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "eval",
            "--model",
            "gemma-4-e2b",
            "--cases",
            "0",
            "--slices",
            "curated",
            "--modes",
            "oneshot",
            "--backend",
            "llama-cpp",
            "--gguf",
            str(micro.gguf),
            "--force-reference",
            "--suites",
            "nested-args,no-tool",
            "--capture-limit",
            "2",
            "--max-tokens",
            "300",
            "--out",
            str(out),
            "--no-shrink",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "parsers on captured output" in proc.stdout and "wrote a call marker" in proc.stdout
    lines = (out / "results.jsonl").read_text(encoding="utf-8").split("\n")  # not splitlines(): U+2028 in values
    captured = [r for r in map(json.loads, filter(None, lines)) if r["slice"].startswith("capture:")]
    assert len(captured) == 4 * 3 * 2 and all(r["verdict"] == "pass" for r in captured)
    report = (out / "report.md").read_text()
    assert "## captured output" in report and micro.sha256 in report


def test_eval_without_weights_explains_and_still_runs_the_rendered_slices(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "eval",
            "--model",
            "gemma-4-e2b",
            "--cases",
            "0",
            "--slices",
            "curated",
            "--modes",
            "oneshot",
            "--backend",
            "llama-cpp",
            "--out",
            str(tmp_path / "run"),
            "--no-shrink",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "capture skipped" in proc.stdout and "GGUF=" in proc.stdout
    assert "curated" in proc.stdout and (tmp_path / "run" / "report.md").is_file()


def test_mlx_lm_cpu_backend_gives_the_same_text_and_ids(micro, forced_llama, template, prompts, tmp_path):
    """mlx-lm's CPU build (mlx[cpu]) loads the fixture's Hugging Face folder directly (model type gemma4);
    the Metal path cannot run on Linux."""
    backend = create_backend("mlx-lm", _weights(micro, "hf"))
    run = run_capture(
        prompts, backend, template, FMT, tmp_path / "mlx.jsonl", sampling=Sampling(max_tokens=400), force=True
    )
    assert run.errors == 0
    llama = {c.prompt_id: c for c in forced_llama[1].captures}
    for capture in run.captures:
        assert capture.text == llama[capture.prompt_id].text
        ids = [i for _, piece_ids in capture.pieces for i in piece_ids]
        assert ids == [i for _, piece_ids in llama[capture.prompt_id].pieces for i in piece_ids]
    assert set(run.captures[0].versions) == {"mlx-lm", "mlx"}


def test_gbnf_grammar_with_token_references_emits_the_real_marker_ids(micro, template, prompts, tmp_path):
    """A grammar naming special tokens (``<|tool_call>``) makes llama.cpp emit their real ids, where literal text
    would let it spell the marker out of ordinary pieces (notes: 2/10 runs used id 48 with literal text)."""
    grammar = 'root ::= <|tool_call> "call:get_weather{city:" <|"|> [A-Z] [a-z]+ <|"|> "}" <tool_call|>'
    backend = create_backend("llama-cpp", _weights(micro, "gguf"), grammar=grammar)
    run = run_capture(
        prompts[:2],
        backend,
        template,
        FMT,
        tmp_path / "g.jsonl",
        sampling=Sampling(max_tokens=40, temperature=1.0, seed=3),
        options={"grammar": grammar},
    )
    for capture in run.captures:
        assert capture.error is None, capture.error
        assert capture.pieces[0] == ["<|tool_call>", [TOOL_CALL_ID]]
        assert capture.text.startswith('<|tool_call>call:get_weather{city:<|"|>')
        assert capture.options == {"grammar": grammar}


@pytest.mark.parametrize("grammar", ['root ::= ("yes" ', "root ::= undefined_rule", "root ::= <|nosuchtoken|>"])
def test_an_invalid_grammar_is_an_error_not_a_crash(micro, grammar):
    from harness.capture.backends import BackendError

    with pytest.raises(BackendError, match="rejected the GBNF grammar"):
        create_backend("llama-cpp", _weights(micro, "gguf"), grammar=grammar)

"""The grammar oracle (harness/analysis/grammar.py) with the real pinned xgrammar on real rendered cases: what the
Gemma 4 template writes is accepted, a value the grammar cannot spell is a disagreement with its position, a drift
case the grammar lets through is flagged, and the counts reach run.json and report.md."""

from __future__ import annotations

import pytest

from harness.analysis.grammar import XGRAMMAR, check_corpus, first_rejection, grammar_inputs, unavailable
from harness.core.cases import Case
from harness.core.messages import Message
from harness.corpus.build import build_corpus
from harness.formats import all_formats, get_format
from harness.jobs.evaluate import EvalConfig, run_eval
from harness.report.markdown import grammar_lines
from harness.template.sources import load_template

FMT = get_format("gemma4")
S = '<|"|>'
WEATHER = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]


def test_the_pinned_xgrammar_is_installed():
    assert unavailable() is None, "make installs xgrammar for the oracle"
    assert XGRAMMAR == ("xgrammar", "0.2.9")


def test_a_call_is_accepted_and_a_wrong_key_is_rejected_where_it_starts():
    assert first_rejection("gemma_4", WEATHER, f"<|tool_call>call:get_weather{{city:{S}Paris{S}}}<tool_call|>") is None
    assert first_rejection("gemma_4", WEATHER, "Just prose.") is None
    problem = first_rejection("gemma_4", WEATHER, f"<|tool_call>call:get_weather{{town:{S}Paris{S}}}<tool_call|>")
    assert problem is not None and problem.startswith("rejected at char 29:")
    assert first_rejection("gemma_4", WEATHER, "<|tool_call>call:get_weather{city:") == "incomplete at the end"


def test_the_input_is_what_the_model_generates():
    """The stop marker the render stripped is tried with and without; a pre-filled opener is written back."""
    case = Case(id="c", format="qwen3_coder", text="hm</think>\n\nHi", expected=Message("Hi", "hm"), prefix="<think>\n")
    assert grammar_inputs(case, get_format("qwen3_coder")) == ["<think>\nhm</think>\n\nHi"]
    harmony = Case(id="h", format="harmony", text=" to=functions.f", expected=Message(), extra={"stop": "<|call|>"})
    assert grammar_inputs(harmony, get_format("harmony")) == [" to=functions.f<|call|>", " to=functions.f"]


@pytest.fixture(scope="module")
def gemma_corpus():
    return build_corpus(
        load_template("gemma-4-e2b"), FMT, seed=0, n_generated=10, slices=("curated", "generated", "drift")
    )


def test_the_rendered_gemma4_corpus_is_checked_case_by_case(gemma_corpus):
    result = check_corpus(gemma_corpus.cases, FMT)
    assert result["engine"] == "xgrammar 0.2.9" and result["tag"] == "gemma_4"
    rendered = [c for c in gemma_corpus.cases if c.slice in ("curated", "generated")]
    assert result["total"] == len(rendered) and 0 < result["accepted"] < result["total"]
    assert result["accepted"] + len(result["rejected"]) == result["total"]
    rejected = dict(result["rejected"])
    # Gemma 4 writes a None value as `None`; the grammar's JSON-schema values have no such spelling
    assert (
        rejected["edge-array-mixed-scalars"].startswith("rejected at char")
        and "None" in rejected["edge-array-mixed-scalars"]
    )
    assert result["drift_total"] == sum(c.slice == "drift" for c in gemma_corpus.cases)
    assert 0 < len(result["drift_accepted"]) < result["drift_total"]
    lines = grammar_lines(result)
    assert lines[0].startswith(f"- grammar oracle (xgrammar 0.2.9, structural tag `gemma_4`): {result['accepted']}/")
    assert any("`edge-array-mixed-scalars`" in line for line in lines)


def test_formats_without_a_grammar_have_no_entry_and_every_named_tag_exists():
    import xgrammar

    assert check_corpus([], get_format("mistral")) is None
    for spec in all_formats().values():
        if spec.grammar:
            xgrammar.get_model_structural_tag(spec.grammar, tools=WEATHER)  # raises for an unknown tag name


def test_eval_records_the_oracle_in_run_json_and_report_md(tmp_path):
    log = run_eval(
        EvalConfig(
            model="gemma-4-e2b",
            parsers=["own"],
            n_generated=2,
            slices=("curated",),
            modes=("oneshot",),
            out_dir=tmp_path / "run",
            shrink=False,
            no_capture=True,
        )
    )
    grammar = log.provenance.grammar
    assert grammar is not None and grammar["total"] == log.provenance.corpus["curated"]
    assert "- grammar oracle (xgrammar 0.2.9" in (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    assert '"grammar": {' in (tmp_path / "run" / "run.json").read_text(encoding="utf-8")

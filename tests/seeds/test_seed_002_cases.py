"""Seed 002's cases (``seed_002_cases.jsonl``, SGLang PR #12456) without an engine: their provenance, how they
relate to the template and to the drift mutators, and the own parser on them. The SGLang before/after runs are in
``test_seed_002.py``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.core.cases import load_cases
from harness.core.paths import OBSERVED_FILE
from harness.core.scenarios import edge
from harness.corpus.drift import get_mutator
from harness.formats import get_format
from harness.parse.registry import get_parser
from harness.score.runner import evaluate_case
from harness.template.render import render_scenario
from harness.template.sources import load_template

CASES = {c.id: c for c in load_cases(Path(__file__).with_name("seed_002_cases.jsonl"))}
FMT = get_format("glm45")
PR = "https://github.com/sgl-project/sglang/pull/12456"


def _rendered(case_id: str):
    case = CASES[case_id]
    scenario = edge(case_id.replace("/", "-"), ["seed:002"], case.expected.tool_calls, tools=case.tools)
    return render_scenario(load_template("glm-4.6", offline=True), scenario, FMT)


def test_every_case_names_the_seed_and_the_pr():
    assert len(CASES) == 8
    for case in CASES.values():
        assert (case.format, case.prefix, case.slice) == ("glm45", "<think></think>", "observed")
        assert "seed:002" in case.tags and case.source.startswith(PR), case.id
        assert case.extra["seed_document"] == "shared/seeds/002_97509a4695bf500c.txt"
        assert [t["function"]["name"] for t in case.tools or []] == ["todo_write"]
    assert {c.text_provenance for c in CASES.values()} == {"full", "reconstructed"}


def test_the_seeds_todo_write_is_the_observed_case_with_its_tool():
    (observed,) = [
        c for c in load_cases(OBSERVED_FILE) if c.id == "glm_literal_backslash_escapes_double_serialized_sglang"
    ]
    case = CASES["seed002/pr-todo-write"]
    assert (case.text, case.expected.tool_calls) == (observed.text, observed.expected.tool_calls)
    assert observed.tools is None  # which is why the observed case alone cannot show SGLang's flip


def test_the_plain_input_is_what_the_template_writes():
    rendered = _rendered("seed002/test-plain")
    assert rendered.text == "\n" + CASES["seed002/test-plain"].text
    assert rendered.prefix == CASES["seed002/test-plain"].prefix


def test_the_escaped_input_is_both_escaping_mutators_but_its_last_newline():
    """No single drift mutator writes the seed's text: ``escaped-json-value`` then ``literal-backslash-escapes``
    on the rendered call does, except that the model kept the newline before ``</tool_call>`` real."""
    rendered = _rendered("seed002/test-plain")
    escaped = get_mutator("escaped-json-value").apply(rendered, FMT)
    both = get_mutator("literal-backslash-escapes").apply(dataclasses.replace(rendered, text=escaped.text), FMT)
    seed_text = CASES["seed002/test-escaped"].text
    assert both.text == "\n" + seed_text.replace("\n</tool_call>", "\\n</tool_call>")


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_own_parser_recovers_every_case_in_every_mode(case_id):
    parser = get_parser("toolcall-harness:glm45", FMT.name)
    records = list(evaluate_case(CASES[case_id], parser, FMT, ["oneshot", "whole", "char", "random"], seed=0))
    assert [(r.mode, r.verdict) for r in records] == [(m, "pass") for m in ("oneshot", "whole", "char", "random")]

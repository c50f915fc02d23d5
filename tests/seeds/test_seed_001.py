"""Seed 001 (C++ Gemma 4 string scanner: a plain quote cut strings short), reproduced.

The old rule (a plain ``"`` or backtick closes a ``<|"|>`` string when ``,`` or a closer follows) is the candidate
``tests/seeds/candidates/gemma4_old_quote_rule.py`` (the own parser with that one rule). The sweep (``--values
code``: string values made of code pieces dense in quotes, commas and closers) finds it wrong on exactly the cases
that hold the shape; the own parser is wrong on none. The 20 ``code-with-quotes`` prompts have no captures of a
real Gemma model here, so their reference answers (``corpora/seeds/001-code-with-quotes-answers.jsonl``, the code
each prompt asks for, written for this table) are rendered through the real template and judged as captures are.
"""

from __future__ import annotations

import io
import json
import re

import pytest
from rich.console import Console

from harness.capture.suites import load_suite
from harness.core.messages import ToolCall
from harness.core.paths import CORPORA_DIR, SOURCE_ROOT
from harness.core.scenarios import Scenario, _walk_strings
from harness.corpus.random_calls import random_scenario
from harness.formats import get_format
from harness.jobs.sweep import run_sweep
from harness.parse.loader import load_parser_object
from harness.parse.registry import get_parser
from harness.report.sweep import SweepConfig
from harness.score.captures import judge
from harness.template.render import render_scenario
from harness.template.sources import load_template

CANDIDATE = str(SOURCE_ROOT / "tests" / "seeds" / "candidates" / "gemma4_old_quote_rule.py") + ":OldQuoteRuleGemma4"
ANSWERS = CORPORA_DIR / "seeds" / "001-code-with-quotes-answers.jsonl"
FMT = get_format("gemma4")
SHAPE = re.compile(r'["`](?=[,}\]])')  # what the old rule takes for a closer

#: measured, seed 0: (n, value profile) -> wrong cases of the old rule in any check; the own parser: 0.
SWEEP_WRONG = {(300, "code"): 88, (2000, "code"): 566, (2000, "mixed"): 93}
#: measured: the code-with-quotes prompts whose reference answer each parser fails (wrong_call_count: the call is
#: cut at a quote and surfaced as content).
CODE_FAILS = {
    "candidate:gemma4-old-quote-rule": {
        "code-02",
        "code-04",
        "code-07",
        "code-08",
        "code-09",
        "code-11",
        "code-13",
        "code-16",
        "code-18",
    },
    "toolcall-harness:gemma4": set(),
    "transformers==5.24.0:gemma4": set(),
    "mlx-lm==0.32.2:gemma4": set(),
}


def _shaped(n: int, values: str) -> int:
    """Sweep cases (seed 0) whose string values hold a quote the old rule would take for a closer."""
    return sum(
        any(SHAPE.search(s) for c in random_scenario(0, i, FMT, values).calls for s in _walk_strings(c.arguments))
        for i in range(n)
    )


def _sweep(tmp_path, n: int, values: str):
    config = SweepConfig(
        parsers=[load_parser_object(CANDIDATE), "own"],
        n=n,
        seed=0,
        values=values,
        jobs=1,
        out_dir=tmp_path,
        repros=1,
        console=Console(file=io.StringIO()),
    )
    return run_sweep(config)


def test_old_rule_is_the_own_parser_but_for_plain_quote_closers():
    old, own = load_parser_object(CANDIDATE), get_parser("own", "gemma4")
    q = '<|"|>'
    code = f'<|tool_call>call:file_write{{content:{q}x = np.genfromtxt("train.csv", delimiter=",")\n{q}}}<tool_call|>'
    assert own.parse(code).tool_calls[0].arguments == {"content": 'x = np.genfromtxt("train.csv", delimiter=",")\n'}
    assert old.parse(code).tool_calls == []  # cut at `csv"` before `,`: the rest no longer parses
    model = f'<|tool_call>call:f{{a:{q}x",b:{q}y{q}}}<tool_call|>'  # the model closed a string with a plain quote
    assert old.parse(model).tool_calls[0].arguments == {"a": "x", "b": "y"}
    plain = f'<|tool_call>call:f{{a:{q}say "hi" now{q},b:[{q}`x` y{q}]}}<tool_call|>'
    assert old.parse(plain) == own.parse(plain)


def test_sweep_old_rule_wrong_exactly_on_the_shape(tmp_path):
    result = _sweep(tmp_path, 300, "code")
    old = "candidate:gemma4-old-quote-rule"
    assert result.rate(old) == (SWEEP_WRONG[(300, "code")], 300) == (_shaped(300, "code"), 300)
    assert result.rate(old, "truncation") == (0, 300)
    assert result.rate("toolcall-harness:gemma4") == (0, 300)
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    assert summary["values"] == "code"


@pytest.mark.parametrize("values", ["code", "mixed"])
def test_sweep_2000_rates(tmp_path, values):
    """The rates of the README table (about 15 s each on one core: marked slow in tests/conftest.py)."""
    result = _sweep(tmp_path, 2000, values)
    assert result.rate("candidate:gemma4-old-quote-rule") == (SWEEP_WRONG[(2000, values)], 2000)
    assert result.rate("toolcall-harness:gemma4") == (0, 2000)


def test_code_with_quotes_reference_answers():
    template = load_template("gemma-4-e2b", offline=True)
    answers = {row["id"]: row["content"] for row in map(json.loads, ANSWERS.read_text(encoding="utf-8").splitlines())}
    prompts = load_suite("code-with-quotes")
    assert sorted(answers) == [p.id for p in prompts]
    parsers = [load_parser_object(CANDIDATE), *(get_parser(n, "gemma4") for n in ("own", "transformers", "mlx-lm"))]
    fails: dict[str, set[str]] = {p.name: set() for p in parsers}
    for prompt in prompts:
        call = ToolCall("file_write", {**prompt.calls[0].pinned, "content": answers[prompt.id]})
        case = render_scenario(template, Scenario(prompt.id, prompt.tools, [call]), FMT, slice="capture")
        for parser in parsers:
            verdict = judge(prompt, parser.parse(case.text, prompt.tools, case.prefix), FMT, case.text)
            if not verdict.passed:
                assert verdict.error_type == "wrong_call_count", (prompt.id, parser.name, verdict)
                fails[parser.name].add(prompt.id)
    assert fails == CODE_FAILS

"""Seed 002 reproduced: ``shared/seeds/002_97509a4695bf500c.txt`` is SGLang PR #12456 (GLM-4.5/4.6 tool calls
whose output holds literal escapes ``\\n`` / ``\\"`` are dropped or double-serialized). Its ``todo_write`` output,
one reconstructed shape and the six inputs of its ``test_array_argument_with_escaped_json``
(``seed_002_cases.jsonl``) go through the harness (``get_any_parser`` + ``evaluate_case``) on SGLang 0.5.4.post2,
the last release without the fix, and 0.5.4.post3, the first with it; the flips are the seed's before -> after.
Measured table: ``docs/seeds.md, section 002``. A cold cache builds both engines here (about 1 min each).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.core.cases import load_cases
from harness.engines import environments as engines
from harness.formats import get_format
from harness.parse.registry import get_any_parser
from harness.report.flips import flips
from harness.score.runner import evaluate_case

pytestmark = pytest.mark.timeout(900)

OLD, NEW = "sglang==0.5.4.post2:glm45", "sglang==0.5.4.post3:glm45"
CASES = load_cases(Path(__file__).with_name("seed_002_cases.jsonl"))
FMT = get_format("glm45")
MODES = ["oneshot", "whole"]  # the seed's detect_and_parse, and the streaming path fed the text in one chunk
# the cases whose value the model escaped (\"): what the fix is for; the others pin what worked before it
ESCAPED = {c.id for c in CASES if "escaped-json" in c.tags}
DOUBLE = "seed002/pr-todo-write-escaped-value"  # newlines real, value escaped: the PR's double-serialized output


@pytest.fixture(scope="module")
def records() -> list[dict]:
    out: list[dict] = []
    for name in (OLD, NEW):
        parser = get_any_parser(name, FMT.name)  # builds the engine on a cold cache
        try:
            for case in CASES:
                out += [r.to_json() for r in evaluate_case(case, parser, FMT, MODES, seed=0)]
        finally:
            parser.close()
    return out


def _by(records: list[dict]) -> dict[tuple[str, str, str], dict]:
    return {(r["parser"], r["case_id"], r["mode"]): r for r in records}


@pytest.mark.parametrize(("spec", "fixed"), [(OLD, False), (NEW, True)])
def test_the_two_releases_straddle_the_fix(spec, fixed):
    """The PR's change to ``parse_arguments``: a second ``json.loads`` of the value wrapped as ``{"tmp": "..."}``."""
    installed = engines.install(spec.split(":")[0])
    (detector,) = installed.path.glob("venv/lib/python*/site-packages/sglang/srt/function_call/glm4_moe_detector.py")
    source = detector.read_text(encoding="utf-8")
    assert ('\'{"tmp": "\'' in source) is fixed
    assert ("(?:\\\\n|\\n)" in source) is fixed  # the call regex accepting a literal \n after the name


def test_the_fix_flips_every_escaped_case_and_breaks_none(records):
    result = flips(records, OLD, NEW)
    assert {(f["case_id"], f["mode"]) for f in result["fixed"]} == {(c, m) for c in ESCAPED for m in MODES}
    assert result["broken"] == []
    assert result["modes"]["oneshot"] == {"fixed": 5, "broken": 0, "old": 3, "new": 8, "total": 8}


def test_before_the_fix_literal_newlines_surface_and_an_escaped_value_is_double_serialized(records):
    by = _by(records)
    for case_id in ESCAPED - {DOUBLE}:
        # literal \n after the name: the old regex reads the whole line as the name, an undeclared tool, so no call
        assert by[(OLD, case_id, "oneshot")]["verdict"] == "surfaced", case_id
    record = by[(OLD, DOUBLE, "oneshot")]
    assert (record["verdict"], record["error_type"]) == ("fail", "wrong_argument_type")
    (call,) = record["got"]["tool_calls"]
    todos = call["arguments"]["todos"]
    (case,) = [c for c in CASES if c.id == DOUBLE]
    # a string, one JSON decoding short of the intended array: the value serialized once more
    assert (
        isinstance(todos, str)
        and json.loads(json.loads(f'"{todos}"')) == case.expected.tool_calls[0].arguments["todos"]
    )


def test_after_the_fix_every_case_passes_and_the_plain_ones_passed_before(records):
    by = _by(records)
    for case in CASES:
        for mode in MODES:
            assert by[(NEW, case.id, mode)]["verdict"] == "pass", (case.id, mode)
            if case.id not in ESCAPED:
                assert by[(OLD, case.id, mode)]["verdict"] == "pass", (case.id, mode)

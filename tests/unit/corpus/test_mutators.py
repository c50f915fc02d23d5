"""The drift slice: mutators (harness/corpus/drift.py), outcome classes (harness/score/outcomes.py), their scoring,
runner records and report tables.

Inputs are rendered by the real chat templates (offline copies, ``harness.template.sources.load_template``) from three
small scenarios; the parsers are the project's own (parsers/<format>.py) and, for the ``error`` class, the
transformers reference adapter. Mutator outputs are pinned as exact strings for Gemma 4 (the main format) and
as exact edits of the rendered base text for the other formats.
"""

from __future__ import annotations

import functools
import json

import pytest

from harness.core.cases import Case, load_cases, write_cases
from harness.core.messages import Message, ToolCall
from harness.core.scenarios import Scenario, infer_schema
from harness.corpus.build import build_corpus
from harness.corpus.drift import MUTATORS, drift_cases, get_mutator, is_base, mutators_for
from harness.formats import get_format, known_formats
from harness.parse.registry import get_parser
from harness.report.drift import outcome_grids, outcome_markdown, outcome_tables
from harness.score.outcomes import OUTCOMES, classify
from harness.score.policy import Policy
from harness.score.runner import evaluate_case
from harness.score.verdicts import ERROR_TYPES, score
from harness.template.catalog import list_models
from harness.template.render import render_scenario
from harness.template.sources import load_template

WEATHER = {"city": "Paris", "days": 3}
USER = {"user": {"name": "Ada"}, "notify": True}


def _tool(name: str, arguments: dict) -> dict:
    return {
        "type": "function",
        "function": {"name": name, "description": "test tool", "parameters": infer_schema(arguments)},
    }


SCENARIOS = {
    "one": Scenario(
        id="one",
        tools=[_tool("get_weather", WEATHER)],
        calls=[ToolCall("get_weather", WEATHER)],
        content_before="Checking.",
    ),
    "nested": Scenario(id="nested", tools=[_tool("create_user", USER)], calls=[ToolCall("create_user", USER)]),
    "two": Scenario(
        id="two",
        tools=[_tool("get_weather", WEATHER)],
        calls=[ToolCall("get_weather", WEATHER), ToolCall("get_weather", {"city": "Rome", "days": 1})],
    ),
}
#: one catalog model per format with an offline template (the first in catalog order).
MODELS = {}
for _entry in list_models():
    if _entry.offline_template:
        MODELS.setdefault(_entry.format, _entry.name)


@functools.cache
def rendered(fmt_name: str, scenario: str) -> Case:
    return render_scenario(load_template(MODELS[fmt_name]), SCENARIOS[scenario], get_format(fmt_name))


def mutated(name: str, fmt_name: str, scenario: str) -> Case:
    case = get_mutator(name).mutate(rendered(fmt_name, scenario), get_format(fmt_name), seed=7)
    assert case is not None, f"{name} does not apply to {fmt_name}/{scenario}"
    return case


# ------------------------------------------------------------------------------- mutator outputs (Gemma 4)

C = "Checking.<|tool_call>call:get_weather"
GEMMA4_PINS = [
    ("plain-quote-closer", "one", C + '{city:<|"|>Paris",days:3}<tool_call|>'),
    ("single-quote-closer", "one", C + "{city:<|\"|>Paris',days:3}<tool_call|>"),
    ("backtick-closer", "one", C + '{city:<|"|>Paris`,days:3}<tool_call|>'),
    ("missing-string-opener", "one", C + '{city:Paris<|"|>,days:3}<tool_call|>'),
    ("marker-quoted-key", "one", C + '{<|"|>city<|"|>:<|"|>Paris<|"|>,<|"|>days<|"|>:3}<tool_call|>'),
    ("space-before-key", "one", C + '{ city:<|"|>Paris<|"|>, days:3}<tool_call|>'),
    ("space-around-separators", "one", C + '{city : <|"|>Paris<|"|> , days : 3}<tool_call|>'),
    ("newline-between-args", "one", C + '{city:<|"|>Paris<|"|>,\ndays:3}<tool_call|>'),
    ("paren-call", "one", C + '(city:<|"|>Paris<|"|>,days:3)<tool_call|>'),
    ("key-equals-value", "one", C + "{city='Paris',days:3}<tool_call|>"),
    ("missing-comma", "one", C + '{city:<|"|>Paris<|"|>days:3}<tool_call|>'),
    ("json-quotes-in-container", "nested", '<|tool_call>call:create_user{notify:true,user:{name:"Ada"}}<tool_call|>'),
    (
        "wrapper-envelope",
        "one",
        'Checking.<|tool_call>call:tool_call{args:{city:<|"|>Paris<|"|>,days:3},id:<|"|>get_weather<|"|>}<tool_call|>',
    ),
    ("truncate-in-opener", "one", "Checking.<|tool"),
    ("truncate-in-key", "one", C + "{ci"),
    ("truncate-in-string", "one", C + '{city:<|"|>Pa'),
    ("truncate-before-closer", "one", C + '{city:<|"|>Paris<|"|>,days:3}'),
    ("truncate-in-closer", "one", C + '{city:<|"|>Paris<|"|>,days:3}<tool_'),
    ("partial-opener-after-call", "one", C + '{city:<|"|>Paris<|"|>,days:3}<tool_call|><|tool'),
    (
        "stray-closer",
        "one",
        'Checking.<tool_call|><|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>',
    ),
    (
        "doubled-opener",
        "one",
        'Checking.<|tool_call><|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>',
    ),
]


def test_every_gemma4_mutator_is_pinned():
    assert sorted(name for name, _, _ in GEMMA4_PINS) == sorted(m.name for m in mutators_for("gemma4"))


@pytest.mark.parametrize("name, scenario, text", GEMMA4_PINS, ids=[p[0] for p in GEMMA4_PINS])
def test_gemma4_mutator_output(name, scenario, text):
    base = rendered("gemma4", scenario)
    case = mutated(name, "gemma4", scenario)
    assert case.text == text
    assert case.id == f"{scenario}~{name}" and case.kind == "drift" and case.slice == "drift"
    assert case.tags[-1] == f"mutator:{name}" and case.seed == 7 and case.prefix == base.prefix
    drift = case.extra["drift"]
    assert drift["mutator"] == name and drift["base"] == scenario
    assert drift["outcomes"] == list(get_mutator(name).outcomes)
    if not name.startswith("truncate-") and name != "partial-opener-after-call":
        assert case.expected == base.expected  # the intended call is the base case's


def test_gemma4_structure_mutations_keep_the_damaged_call_as_raw():
    case = mutated("paren-call", "gemma4", "one")
    assert case.extra["drift"] == {
        "mutator": "paren-call",
        "base": "one",
        "outcomes": ["recovered", "declined"],
        "raw": '<|tool_call>call:get_weather(city:<|"|>Paris<|"|>,days:3)<tool_call|>',
        "tolerated": [],
        "recoverable": True,
    }


def test_truncation_expects_the_complete_calls_and_declines_the_fragment():
    single = mutated("truncate-in-string", "gemma4", "one")
    assert single.expected == Message(content="Checking.")
    assert single.extra["drift"]["raw"] == '<|tool_call>call:get_weather{city:<|"|>Pa'
    assert single.extra["drift"]["recoverable"] is False and single.extra["drift"]["outcomes"] == ["declined"]
    two = mutated("truncate-in-string", "gemma4", "two")
    assert two.text == (
        '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|><|tool_call>call:get_weather{city:<|"|>Ro'
    )
    assert two.expected == Message(tool_calls=[ToolCall("get_weather", WEATHER)])
    closer = mutated("truncate-in-closer", "gemma4", "one")  # every call complete: recoverable
    assert closer.expected == Message(content="Checking.", tool_calls=[ToolCall("get_weather", WEATHER)])
    assert closer.extra["drift"]["tolerated"] == ["<tool_"] and closer.extra["drift"]["recoverable"] is True
    after = mutated("partial-opener-after-call", "gemma4", "one")
    assert after.expected == Message(content="Checking.", tool_calls=[ToolCall("get_weather", WEATHER)])
    assert after.extra["drift"] == {**after.extra["drift"], "raw": "<|tool", "recoverable": False}


# ------------------------------------------------------------------------- mutator outputs (other formats)

JSON_ONE = '{"city": "Paris", "days": 3}'
ESCAPED_ONE = '"{\\"city\\": \\"Paris\\", \\"days\\": 3}"'
PRETTY_ONE = '{\n  "city": "Paris",\n  "days": 3\n}'


def _after_call_open(text: str, old: str, new: str, marker: str = "<tool_call>") -> str:
    at = text.index(marker)
    return text[:at] + text[at:].replace(old, new)


EDIT_PINS = [
    ("glm47", "missing-arg-key", "one", lambda t: t.replace("<arg_key>", "", 1)),
    ("glm47", "missing-arg-value-opener", "one", lambda t: t.replace("<arg_value>", "", 1)),
    ("glm47", "escaped-json-value", "nested", lambda t: t.replace('{"name": "Ada"}', '{\\"name\\": \\"Ada\\"}')),
    ("glm45", "missing-arg-key", "one", lambda t: t.replace("<arg_key>", "", 1)),
    ("glm45", "literal-backslash-escapes", "one", lambda t: _after_call_open(t, "\n", "\\n")),
    (
        "qwen3_coder",
        "missing-parameter-closer",
        "one",
        lambda t: t.replace("3\n</parameter>\n</function>", "3\n</function>"),
    ),
    ("qwen3_coder", "literal-backslash-escapes", "one", lambda t: _after_call_open(t, "\n", "\\n")),
    ("qwen3_coder", "escaped-json-value", "nested", lambda t: t.replace('{"name": "Ada"}', '{\\"name\\": \\"Ada\\"}')),
    ("minimax_m2", "missing-parameter-closer", "one", lambda t: t.replace("3</parameter>\n</invoke>", "3\n</invoke>")),
    (
        "deepseek_v32",
        "missing-parameter-closer",
        "one",
        lambda t: t.replace("3</｜DSML｜parameter>\n</｜DSML｜invoke>", "3\n</｜DSML｜invoke>"),
    ),
    ("hermes", "newline-between-args", "one", lambda t: t.replace(JSON_ONE, PRETTY_ONE)),
    ("hermes", "escaped-json-value", "one", lambda t: t.replace(JSON_ONE, ESCAPED_ONE)),
    (
        "hermes",
        "literal-backslash-escapes",
        "one",
        lambda t: t.replace("<tool_call>\n{", "<tool_call>\\n{").replace("}\n</tool_call>", "}\\n</tool_call>"),
    ),
    ("hermes", "truncate-in-key", "one", lambda t: t[: t.index('{"city"') + 4]),
    ("hermes", "stray-closer", "one", lambda t: t.replace("<tool_call>", "</tool_call><tool_call>", 1)),
    ("kimi_k2", "newline-between-args", "one", lambda t: t.replace(JSON_ONE, PRETTY_ONE)),
    ("kimi_k2", "escaped-json-value", "one", lambda t: t.replace(JSON_ONE, ESCAPED_ONE)),
    ("kimi_k2", "truncate-before-closer", "one", lambda t: t[: t.index("<|tool_call_end|>")]),
    (
        "kimi_k2",
        "stray-closer",
        "one",
        lambda t: t.replace("<|tool_calls_section_begin|>", "<|tool_calls_section_end|><|tool_calls_section_begin|>"),
    ),
    (
        "deepseek_v31",
        "doubled-opener",
        "one",
        lambda t: t.replace("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁begin｜>" * 2),
    ),
    ("deepseek_v31", "truncate-in-closer", "one", lambda t: t[: t.index("<｜tool▁call▁end｜>") + 8]),
    ("mistral", "partial-opener-after-call", "one", lambda t: t + "[TOOL_"),
    ("mistral", "truncate-in-opener", "one", lambda t: t[: t.index("[TOOL_CALLS]") + 6]),
    ("llama3_json", "escaped-json-value", "one", lambda t: t.replace(JSON_ONE, ESCAPED_ONE)),
    ("harmony", "truncate-in-string", "one", lambda t: t[: t.index('"Paris"') + 3]),
    ("harmony", "newline-between-args", "one", lambda t: t.replace(JSON_ONE, PRETTY_ONE)),
]


@pytest.mark.parametrize("fmt_name, name, scenario, edit", EDIT_PINS, ids=[f"{p[0]}-{p[1]}" for p in EDIT_PINS])
def test_mutator_output_is_an_exact_edit_of_the_rendered_text(fmt_name, name, scenario, edit):
    base = rendered(fmt_name, scenario)
    expected_text = edit(base.text)
    assert expected_text != base.text
    assert mutated(name, fmt_name, scenario).text == expected_text


def test_every_mutator_names_where_it_was_seen_and_what_it_allows():
    assert len({m.name for m in MUTATORS}) == len(MUTATORS)
    declined_only = {"truncate-in-opener", "truncate-in-key", "truncate-in-string", "partial-opener-after-call"}
    for mutator in MUTATORS:
        assert mutator.seen and mutator.deviation and mutator.formats, mutator.name
        assert mutator.outcomes and set(mutator.outcomes) <= {"recovered", "declined"}, mutator.name
        assert ("recovered" not in mutator.outcomes) == (mutator.name in declined_only), mutator.name


def test_a_mutator_skips_cases_it_cannot_damage():
    fmt = get_format("gemma4")
    assert get_mutator("json-quotes-in-container").mutate(rendered("gemma4", "one"), fmt) is None  # no container
    assert get_mutator("missing-arg-key").mutate(rendered("gemma4", "one"), fmt) is None  # a GLM mutator
    marker_case = Case(
        id="m",
        format="gemma4",
        text='<|tool_call>call:f{a:<|"|><tool_call|><|"|>}<tool_call|>',
        expected=Message(tool_calls=[ToolCall("f", {"a": "<tool_call|>"})]),
        tags=["marker-in-string"],
    )
    assert not is_base(marker_case, fmt)
    with pytest.raises(KeyError, match="unknown mutator 'nope'; known: plain-quote-closer"):
        get_mutator("nope")


# ------------------------------------------------------------------------ outcome classes, real parsers


@pytest.fixture(scope="module")
def own():
    return {name: get_parser(f"toolcall-harness:{name}", name) for name in ("gemma4", "glm47", "qwen3_coder")}


@pytest.mark.parametrize(
    "fmt_name, name, scenario, outcome",
    [
        ("gemma4", "paren-call", "one", "recovered"),
        ("gemma4", "stray-closer", "one", "recovered"),  # the stray closer stays in content: tolerated
        ("gemma4", "truncate-in-string", "two", "scrubbed"),  # the complete first call kept, the cut-off one dropped
        ("gemma4", "partial-opener-after-call", "one", "scrubbed"),  # the cut-off opener dropped
        ("gemma4", "plain-quote-closer", "one", "surfaced"),
        ("gemma4", "truncate-in-key", "one", "scrubbed"),
        ("glm47", "missing-arg-key", "one", "surfaced"),
        ("qwen3_coder", "missing-parameter-closer", "nested", "recovered"),
    ],
)
def test_outcome_class_with_the_own_parser(own, fmt_name, name, scenario, outcome):
    case = mutated(name, fmt_name, scenario)
    got = own[fmt_name].parse(case.text, case.tools, case.prefix)
    result = score(case, got, get_format(fmt_name))
    assert (result.outcome, result.verdict, result.error_type) == (outcome, "pass", None)


def test_wrong_dropped_and_leaked_outcomes():
    fmt = get_format("gemma4")
    paren = mutated("paren-call", "gemma4", "one")
    wrong = Message(content="Checking.", tool_calls=[ToolCall("get_weather", {"city": "Paris", "days": "3"})])
    result = score(paren, wrong, fmt)
    assert (result.outcome, result.verdict, result.error_type) == ("wrong", "fail", "wrong_argument_type")
    assert result.detail == (
        "wrong (allowed: recovered, surfaced, scrubbed): call 0: days: expected number 3, got string '3'"
    )
    scrubbed = score(paren, Message(content="Checking."), fmt)  # the malformed call dropped, the prose kept
    assert (scrubbed.outcome, scrubbed.verdict) == ("scrubbed", "pass")
    lossless = score(paren, Message(content="Checking."), fmt, policy=Policy(malformed="lossless"))
    assert (lossless.outcome, lossless.verdict, lossless.error_type) == ("scrubbed", "fail", "content_lost")
    lost = score(paren, Message(), fmt)
    assert (lost.outcome, lost.error_type) == ("dropped", "content_lost")
    leaked = Message(content="Checking." + paren.extra["drift"]["raw"], tool_calls=paren.expected.tool_calls)
    result = score(paren, leaked, fmt)
    assert (result.outcome, result.error_type) == ("leaked", "marker_leak")
    prose_lost = score(paren, Message(tool_calls=paren.expected.tool_calls), fmt)
    assert prose_lost.outcome == "dropped" and "Checking." in prose_lost.detail
    truncated = mutated("truncate-in-string", "gemma4", "two")  # the fragment may be kept or scrubbed
    scrubbed = Message(tool_calls=truncated.expected.tool_calls)
    assert classify(truncated, scrubbed, fmt)[0] == "scrubbed"
    half = Message(content="<|tool_call>call:get_weather", tool_calls=truncated.expected.tool_calls)
    assert classify(truncated, half, fmt)[0] == "leaked"
    prose = mutated("truncate-in-string", "gemma4", "one")
    assert classify(prose, Message(), fmt)[0] == "dropped"  # "Checking." lost


def test_surfaced_when_only_recovery_is_allowed_is_not_recovered():
    case = mutated("stray-closer", "gemma4", "one")
    result = score(case, Message(content=case.text), get_format("gemma4"))
    assert (result.outcome, result.verdict, result.error_type) == ("surfaced", "fail", "not_recovered")
    assert "not_recovered" in ERROR_TYPES


def test_streaming_and_error_records_carry_the_outcome(own):
    from parsers.reference.transformers import TransformersParser

    fmt = get_format("gemma4")
    case = mutated("paren-call", "gemma4", "one")
    records = list(evaluate_case(case, own["gemma4"], fmt, ["oneshot", "whole", "char", "prefix"], seed=0))
    assert [(r.mode, r.verdict, r.outcome) for r in records] == [
        ("oneshot", "pass", "recovered"),
        ("whole", "pass", "recovered"),
        ("char", "pass", "recovered"),
        ("prefix", "pass", "recovered"),
    ]
    assert records[0].to_json()["outcome"] == "recovered"
    failing = list(evaluate_case(case, TransformersParser("gemma4"), fmt, ["oneshot"], seed=0))
    assert (failing[0].verdict, failing[0].error_type, failing[0].outcome) == ("error", "exception", "error")
    strict = rendered("gemma4", "one")
    plain = next(evaluate_case(strict, own["gemma4"], fmt, ["oneshot"], seed=0))
    assert plain.outcome is None and "outcome" not in plain.to_json()


def test_drift_cases_survive_the_case_file_round_trip(tmp_path, own):
    case = mutated("truncate-in-string", "gemma4", "two")
    write_cases(tmp_path / "drift.jsonl", [case])
    line = json.loads((tmp_path / "drift.jsonl").read_text(encoding="utf-8"))
    assert line["drift"]["mutator"] == "truncate-in-string" and line["slice"] == "drift"
    [again] = load_cases(tmp_path / "drift.jsonl")
    assert again.to_json() == case.to_json()
    got = own["gemma4"].parse(again.text, again.tools, again.prefix)
    assert score(again, got, get_format("gemma4")).outcome == "scrubbed"


# ------------------------------------------------------------------------------------- the drift slice


#: mutators selected for a format that find no rendered case to apply to: MiniMax-M3 writes objects and arrays as
#: nested elements, never as JSON text, so there is no JSON value to double-encode; Seed-OSS and MiniCPM5 write
#: containers as Python literals ({'a': 1}).
NO_BASE_CASE = {f: {"escaped-json-value"} for f in ("minimax_m3", "seed_oss", "minicpm5")}


@pytest.fixture(scope="module")
def curated():
    out = {}
    for fmt_name, model in MODELS.items():
        out[fmt_name] = build_corpus(
            load_template(model), get_format(fmt_name), seed=0, n_generated=0, slices=("curated", "drift")
        )
    return out


def test_drift_slice_exists_for_every_format_with_an_offline_template(curated):
    # FunctionGemma, Llama 4 and DeepSeek V4.1 have no offline template
    assert set(MODELS) == set(known_formats()) - {"functiongemma", "llama4_pythonic", "deepseek_v41"}
    for fmt_name, corpus in curated.items():
        drift = [c for c in corpus.cases if c.slice == "drift"]
        made = {c.extra["drift"]["mutator"] for c in drift}
        assert made == {m.name for m in mutators_for(fmt_name)} - NO_BASE_CASE.get(fmt_name, set()), fmt_name
        assert all(c.kind == "drift" and c.seed == 0 and c.format == fmt_name for c in drift)
        assert len({c.id for c in corpus.cases}) == len(corpus.cases)
        per_mutator = [c.extra["drift"]["mutator"] for c in drift]
        assert max(per_mutator.count(name) for name in made) <= 3


def test_drift_slice_is_seeded_and_leaves_the_curated_slice_alone(curated):
    fmt = get_format("gemma4")
    template = load_template(MODELS["gemma4"])
    only_curated = build_corpus(template, fmt, seed=0, n_generated=0, slices=("curated",))
    both = curated["gemma4"]
    assert [c.to_json() for c in both.cases if c.slice == "curated"] == [c.to_json() for c in only_curated.cases]
    bases = only_curated.cases
    first, again, other = drift_cases(bases, fmt, 0), drift_cases(bases, fmt, 0), drift_cases(bases, fmt, 1)
    assert [c.to_json() for c in first] == [c.to_json() for c in again]
    assert [c.id for c in first] != [c.id for c in other] and {c.seed for c in other} == {1}
    assert [c.id for c in first] == [c.id for c in both.cases if c.slice == "drift"]


def test_outcome_tables_count_classes_per_parser_and_mutator(own):
    fmt = get_format("gemma4")
    cases = [mutated("paren-call", "gemma4", "one"), mutated("plain-quote-closer", "gemma4", "one")]
    records = [r.to_json() for c in cases for r in evaluate_case(c, own["gemma4"], fmt, ["oneshot", "whole"], 0)]
    records.append({**records[0], "parser": "other", "outcome": "wrong", "verdict": "fail", "detail": "wrong: x"})
    (columns, per_parser), (_, per_mutator) = outcome_grids(records, ["toolcall-harness:gemma4", "other"])
    assert columns == [*OUTCOMES, "ok", "stream≠oneshot"]
    assert per_parser == [
        ("toolcall-harness:gemma4", ["1", "1", "0", "0", "0", "0", "0", "2/2", "0"]),
        ("other", ["0", "0", "0", "0", "0", "1", "0", "0/1", "0"]),
    ]
    assert per_mutator == [
        ("paren-call", "R/S/C", ["1/1 R1", "0/1 W1"]),
        ("plain-quote-closer", "R/S/C", ["1/1 S1", "-"]),
    ]
    assert len(outcome_tables(records, ["toolcall-harness:gemma4", "other"])) == 2
    lines = outcome_markdown(records, ["toolcall-harness:gemma4", "other"])
    assert "| paren-call | R/S/C | 1/1 R1 | 0/1 W1 |" in lines
    assert "- `one~paren-call`: wrong: x" in lines
    assert outcome_tables([r for r in records if r["slice"] != "drift"], ["other"]) == []


def test_a_kept_stray_closer_between_content_pieces_is_recovered():
    """The stray closer is tolerated text: a parser that keeps it between the prose before and after the call
    still kept the expected content (``edge-content-both~stray-closer``)."""
    fmt = get_format("gemma4")
    tmpl = load_template("gemma-4-e2b")
    base = render_scenario(
        tmpl,
        Scenario(
            "both",
            [_tool("get_weather", WEATHER)],
            [ToolCall("get_weather", WEATHER)],
            content_before="Before. ",
            content_after="After.",
        ),
        fmt,
    )
    case = get_mutator("stray-closer").mutate(base, fmt, seed=0)
    assert case is not None and case.extra["drift"]["tolerated"]
    closer = case.extra["drift"]["tolerated"][0]
    kept = Message(content=f"Before. {closer}After.", tool_calls=[ToolCall("get_weather", WEATHER)])
    assert classify(case, kept, fmt)[0] == "recovered"
    lost = Message(content=f"{closer}After.", tool_calls=[ToolCall("get_weather", WEATHER)])
    assert classify(case, lost, fmt)[0] == "dropped"

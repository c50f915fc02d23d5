"""Delta debugging of real parser failures: shorter inputs that still fail the same way, by structure (re-rendered
through the real template), differentially against a parser that passes, over the raw text, and per fault class
in the report."""

import dataclasses

import pytest
from rich.console import Console

from harness.analysis.faults import cluster_failures
from harness.analysis.minimize import Budget, check_mode, ddmin, ddmin_text, minimize_case, scenario_of, text_atoms
from harness.analysis.repros import cluster_repros
from harness.core.messages import ToolCall
from harness.core.scenarios import Scenario, tools_for_calls
from harness.corpus.drift import get_mutator
from harness.formats import get_format
from harness.parse.registry import get_parser
from harness.report.faults import clusters_markdown, print_clusters
from harness.report.runlog import FaultClass
from harness.score.runner import evaluate_case
from harness.template.render import render_scenario
from harness.template.sources import load_template

FMT = get_format("gemma4")


@pytest.fixture(scope="module")
def template():
    return load_template("gemma-4-e2b")


@pytest.fixture(scope="module")
def parsers():
    return {name: get_parser(name, "gemma4") for name in ("toolcall-harness", "transformers", "mlx-lm")}


def rendered(template, calls, **kw):
    scenario = Scenario(id=kw.pop("id", "t"), tools=tools_for_calls(calls), calls=calls, **kw)
    return render_scenario(template, scenario, FMT)


def test_ddmin_finds_the_1_minimal_subset_and_respects_its_budget():
    fails = lambda items: {3, 11} <= set(items)  # noqa: E731
    assert ddmin(range(20), fails) == [3, 11]
    budget = Budget(10)
    partial = ddmin(range(20), fails, budget)
    assert budget.used == 10 and fails(partial) and len(partial) < 20 and partial != [3, 11]
    assert ddmin([1, 2], lambda items: True) == []
    assert ddmin([1, 2], lambda items: True, allow_empty=False) in ([1], [2])


def test_text_atoms_keep_markers_whole():
    text = '<|tool_call>call:f{a:<|"|>x y<|"|>}<tool_call|>'
    assert text_atoms(text, FMT.markers)[:3] == ["<|tool_call>", "c", "a"]
    assert text_atoms(text, FMT.markers, words=True)[:4] == ["<|tool_call>", "call", ":", "f"]
    assert "".join(text_atoms(text, FMT.markers)) == text
    shortest = ddmin_text(text, lambda t: "<|tool_call>" in t and "y" in t, markers=FMT.markers)
    assert shortest == "<|tool_call>y"


def test_structure_reduction_of_a_real_mlx_failure_is_pinned(template, parsers):
    case = rendered(
        template,
        [ToolCall("send_email", {"to": "a@b.c", "first name": "Ann", "body": "hi, {x}"})],
        content_after="Sent.",
    )
    assert check_mode(case, parsers["mlx-lm"], FMT, "oneshot").error_type == "wrong_call_count"
    repro = minimize_case(case, parsers["mlx-lm"], FMT, "oneshot", "wrong_call_count", template=template)
    assert repro["method"] == "structure"
    assert repro["text"] == '<|tool_call>call:send_email{first name:<|"|><|"|>}<tool_call|>'
    assert repro["expected"]["tool_calls"] == [{"name": "send_email", "arguments": {"first name": ""}}]
    assert repro["got"]["tool_calls"] == [] and repro["calls"] <= 150
    assert repro["original_len"] == len(case.text) > len(repro["text"])


def test_structure_reduction_of_a_real_transformers_exception_is_pinned(template, parsers):
    calls = [
        ToolCall("get_weather", {"city": "Paris, France", "days": [1, 2, 3]}),
        ToolCall("manim-video", {"scene": "a {b}: c", "fps": 30}),
    ]
    case = rendered(template, calls, content_after="Here you go.")
    assert scenario_of(case, template, FMT) is not None
    repro = minimize_case(case, parsers["transformers"], FMT, "oneshot", "exception", template=template)
    assert (repro["method"], repro["text"], repro["got"]) == (
        "structure",
        "<|tool_call>call:manim-video{}<tool_call|>",
        None,
    )
    assert repro["detail"].startswith("ValueError: json parser could not parse region as JSON.")


def test_text_reduction_without_a_template_keeps_the_exception(template, parsers):
    case = rendered(template, [ToolCall("manim-video", {"scene": "a {b}: c", "fps": 30})])
    observed = dataclasses.replace(case, source="observed", slice="observed")
    assert scenario_of(observed, template, FMT) is None
    repro = minimize_case(observed, parsers["transformers"], FMT, "oneshot", "exception")
    assert repro["method"] == "text" and repro["text"] == "<|tool_call>call:m"
    with pytest.raises(ValueError):
        parsers["transformers"].parse(repro["text"])


def test_differential_reduction_against_a_passing_parser_is_pinned(template, parsers):
    case = rendered(template, [ToolCall("send_email", {"to": "a@b.c", "first name": "Ann"})])
    observed = dataclasses.replace(case, source="observed", slice="observed")
    repro = minimize_case(
        observed, parsers["mlx-lm"], FMT, "oneshot", "wrong_call_count", budget=300, oracle=parsers["toolcall-harness"]
    )
    assert repro["method"] == "differential (oracle toolcall-harness:gemma4)"
    assert repro["text"] == '<|tool_call>call:l{:<|"|><|"|>}'
    assert len(parsers["toolcall-harness"].parse(repro["text"]).tool_calls) == 1
    assert parsers["mlx-lm"].parse(repro["text"]).tool_calls == []


def test_a_drift_case_is_reduced_through_its_base_and_keeps_its_mutation(template, parsers):
    base = rendered(
        template, [ToolCall("save_text", {"path": "notes/edge.txt", "text": "She said hi", "version": 2})], id="edge-x"
    )
    drift = get_mutator("key-equals-value").mutate(base, FMT, seed=0)
    assert drift is not None and "=" in drift.text
    record = check_mode(drift, parsers["transformers"], FMT, "oneshot")
    assert record.error_type == "exception"
    repro = minimize_case(drift, parsers["transformers"], FMT, "oneshot", "exception", template=template, base=base)
    assert repro["method"] == "structure (mutator key-equals-value)"
    assert "=" in repro["text"] and len(repro["text"]) < len(drift.text)
    assert (
        check_mode(dataclasses.replace(drift, text=repro["text"]), parsers["transformers"], FMT, "oneshot").error_type
        == "exception"
    )


def test_fault_classes_group_records_and_carry_minimized_repros(template, parsers):
    cases = [rendered(template, [ToolCall("manim-video", {"q": "a, b", "n": i})], id=f"c{i}") for i in range(3)]
    cases.append(rendered(template, [ToolCall("lookup", {"id": None})], id="c-null"))
    cases[2].tags.append("mutator:demo")
    chosen = [parsers["toolcall-harness"], parsers["transformers"]]
    records = [r.to_json() for c in cases for p in chosen for r in evaluate_case(c, p, FMT, ["oneshot", "char"], 0)]
    clusters = cluster_failures(records)
    keys = [(c["parser"], c["error_type"], c["group"], c["cases"], c["records"]) for c in clusters]
    assert keys == [
        ("transformers==5.24.0:gemma4", "exception", "curated", 3, 6),
        ("transformers==5.24.0:gemma4", "exception", "mutator:demo", 1, 2),
    ]
    assert clusters[0]["example"]["mode"] == "oneshot"
    cluster_repros(clusters, cases, records, list(parsers.values()), FMT, template)
    assert clusters[0]["repro"]["method"] == "structure"
    assert clusters[0]["repro"]["text"] in (
        "<|tool_call>call:lookup{id:None}<tool_call|>",
        "<|tool_call>call:manim-video{}<tool_call|>",
    )
    console = Console(record=True, width=200)
    print_clusters(console, [FaultClass.from_json(c) for c in clusters])
    shown = console.export_text()
    assert "fault classes: 2" in shown and clusters[0]["repro"]["text"] in shown and "expected" in shown
    markdown = "\n".join(clusters_markdown([FaultClass.from_json(c) for c in clusters]))
    assert "| 1 | `transformers==5.24.0:gemma4` | exception | `curated` | 3 | 6 |" in markdown
    assert "| expected | got |" in markdown

"""Rendering scenarios through the real Gemma 4 template (llama-cpp-python 0.3.36 sdist) into cases."""

from __future__ import annotations

import json

import pytest

from harness.assets.sdist import sdist_file
from harness.core.cases import Case
from harness.core.errors import HarnessError, TemplateRenderError, UnrepresentableError
from harness.core.messages import ToolCall
from harness.core.scenarios import Scenario
from harness.formats import get_format
from harness.template.render import HISTORY_USER, render_messages, render_scenario, split_completion
from harness.template.sources import load_template, template_from_text

FMT = get_format("gemma4")
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather",
        "parameters": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]},
    },
}
SEARCH = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}}},
    },
}
PARIS = '<|tool_call>call:get_weather{location:<|"|>Paris<|"|>}<tool_call|>'
EMPTY_THOUGHT = "<|channel>thought\n<channel|>"


@pytest.fixture(scope="module")
def gemma4():
    """The real template, through load_template's offline path (the sdist, cached after the first fetch)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("HF_HOME", "/nonexistent/hf-home-for-tests")
    mp.delenv("HF_HUB_CACHE", raising=False)
    try:
        tmpl = load_template("gemma-4-31b")
    finally:
        mp.undo()
    assert tmpl.source == "sdist" and tmpl.file == "google-gemma-4-31B-it.jinja"
    return tmpl


def weather(location="Paris", **extra):
    return ToolCall("get_weather", {"location": location, **extra})


def test_simple_call(gemma4):
    case = render_scenario(gemma4, Scenario("w1", [WEATHER], [weather()], tags=["simple"], seed=7), FMT)
    assert isinstance(case, Case)
    assert case.text == PARIS
    assert case.prefix == EMPTY_THOUGHT
    assert case.extra["stop"] == "<|tool_response>"
    assert case.extra["history"] == [{"role": "user", "content": HISTORY_USER}]
    assert case.expected.content is None and case.expected.reasoning is None
    assert [c.to_json() for c in case.expected.tool_calls] == [
        {"name": "get_weather", "arguments": {"location": "Paris"}}
    ]
    assert (case.id, case.format, case.kind, case.slice, case.tags, case.seed) == (
        "w1",
        "gemma4",
        "strict",
        "curated",
        ["simple"],
        7,
    )
    assert case.tools == [WEATHER]
    assert case.text_provenance == "full"
    assert case.source == "rendered:google-gemma-4-31B-it.jinja"
    assert case.template == gemma4.summary()
    assert set(case.template) == {"source", "file", "sha256", "fallback"}


def test_case_serialises_to_one_json_line(gemma4):
    case = render_scenario(gemma4, Scenario("w1", [WEATHER], [weather()]), FMT, slice="generated")
    data = json.loads(case.to_line())
    assert data["text"] == PARIS and data["prefix"] == EMPTY_THOUGHT and data["slice"] == "generated"
    assert data["stop"] == "<|tool_response>" and data["expected"]["tool_calls"][0]["name"] == "get_weather"


def test_thinking_renders_reasoning_channel_with_empty_prefix(gemma4):
    case = render_scenario(gemma4, Scenario("t1", [WEATHER], [weather()], reasoning="The user wants Paris."), FMT)
    assert case.text == "<|channel>thought\nThe user wants Paris.\n<channel|>" + PARIS
    assert case.prefix == ""
    assert case.expected.reasoning == "The user wants Paris."
    assert case.extra["stop"] == "<|tool_response>"


def test_content_after_calls(gemma4):
    case = render_scenario(gemma4, Scenario("a1", [WEATHER], [weather()], content_after="  Checking now. \n"), FMT)
    assert case.text == PARIS + "Checking now."  # the template trims content, writes it after the calls
    assert case.expected.content == "Checking now."
    assert case.extra["stop"] == "<|tool_response>"
    assert case.text_provenance == "full"


def test_content_before_is_composed(gemma4):
    case = render_scenario(
        gemma4, Scenario("b1", [WEATHER], [weather()], content_before="Let me look. ", content_after="Done."), FMT
    )
    assert case.text == "Let me look. " + PARIS + "Done."
    assert case.text_provenance == "composed"
    assert case.expected.content == "Let me look. Done."


def test_content_before_goes_after_reasoning(gemma4):
    case = render_scenario(
        gemma4, Scenario("b2", [WEATHER], [weather()], content_before="Sure.", reasoning="Think."), FMT
    )
    assert case.text == "<|channel>thought\nThink.\n<channel|>Sure." + PARIS


def test_parallel_calls(gemma4):
    calls = [weather("Paris"), ToolCall("search", {"query": "news", "limit": 3}), weather("Rome")]
    case = render_scenario(gemma4, Scenario("p1", [WEATHER, SEARCH], calls), FMT)
    assert case.text == (
        PARIS + '<|tool_call>call:search{limit:3,query:<|"|>news<|"|>}<tool_call|>' + PARIS.replace("Paris", "Rome")
    )
    assert [c.name for c in case.expected.tool_calls] == ["get_weather", "search", "get_weather"]


def test_value_rendering(gemma4):
    args = {
        "location": "Paris",
        "z": None,
        "b": True,
        "f": False,
        "n": 1.5,
        "i": -2,
        "big": 10**20,
        "e": 1e-07,
        "list": [1, "a", None, {"k": "v"}],
        "obj": {"y": 1, "x": {"deep": []}},
        "s": "",
    }
    case = render_scenario(gemma4, Scenario("v1", [WEATHER], [ToolCall("get_weather", args)]), FMT)
    assert case.text == (
        "<|tool_call>call:get_weather{b:true,big:100000000000000000000,e:1e-07,f:false,i:-2,"
        'list:[1,<|"|>a<|"|>,None,{k:<|"|>v<|"|>}],location:<|"|>Paris<|"|>,n:1.5,'
        'obj:{x:{deep:[]},y:1},s:<|"|><|"|>,z:None}<tool_call|>'
    )
    assert case.expected.tool_calls[0].arguments == args


def test_strings_are_raw(gemma4):
    value = 'line1\nline "two", {braces}: back\\slash <tag> ünïcode'
    case = render_scenario(gemma4, Scenario("r1", [WEATHER], [weather(value)]), FMT)
    assert case.text == '<|tool_call>call:get_weather{location:<|"|>' + value + '<|"|>}<tool_call|>'


def test_scenario_is_not_mutated(gemma4):
    args = {"location": "Paris", "nested": {"a": [1]}}
    scenario = Scenario("m1", [WEATHER], [ToolCall("get_weather", args)])
    case = render_scenario(gemma4, scenario, FMT)
    case.expected.tool_calls[0].arguments["nested"]["a"].append(2)
    assert args == {"location": "Paris", "nested": {"a": [1]}}


def test_no_calls_ends_turn(gemma4):
    case = render_scenario(gemma4, Scenario("c1", [WEATHER], [], content_after="No tool needed."), FMT)
    assert case.text == "No tool needed."
    assert case.extra["stop"] == "<turn|>\n"
    assert case.prefix == EMPTY_THOUGHT
    assert case.expected.tool_calls == []


def test_no_tools_declared(gemma4):
    case = render_scenario(gemma4, Scenario("n1", [], [weather()]), FMT)
    assert case.text == PARIS and case.tools == []


@pytest.mark.parametrize(
    "args",
    [{"location": 'say <|"|>hi<|"|>'}, {"location": "Paris", "nested": {"deep": ["ok", 'x<|"|>']}}, {'bad<|"|>key': 1}],
)
def test_unrepresentable_raises_naming_case(gemma4, args):
    with pytest.raises(UnrepresentableError) as info:
        render_scenario(gemma4, Scenario("u1", [WEATHER], [ToolCall("get_weather", args)]), FMT)
    assert "case u1" in str(info.value) and '<|"|>' in str(info.value)
    assert isinstance(info.value, HarnessError)


def test_reasoning_without_calls_is_dropped_by_template(gemma4):
    """Gemma 4 writes reasoning only on a turn with tool calls: such a scenario cannot be rendered."""
    with pytest.raises(UnrepresentableError, match="only on turns with tool calls"):
        render_scenario(gemma4, Scenario("d1", [WEATHER], [], content_after="Hi.", reasoning="hmm"), FMT)


def test_content_with_thinking_markers_is_rewritten(gemma4):
    with pytest.raises(UnrepresentableError, match="content_after"):
        render_scenario(
            gemma4, Scenario("d2", [WEATHER], [weather()], content_after="a <|channel>secret<channel|> b"), FMT
        )


# --- the cut ----------------------------------------------------------------------------------------


def test_cut_backs_off_to_marker_boundary():
    full = "<bos><|turn>model\n<|tool_call>call:f{}<tool_call|><|tool_response>"
    gen = "<bos><|turn>model\n<|channel>thought\n<channel|>"
    # character-wise the common prefix ends with "<|", inside both markers
    assert full[:20] == gen[:20] and full[:20].endswith("<|")
    prefix, completion, stop = split_completion(full, gen, FMT)
    assert (prefix, completion, stop) == (
        "<|channel>thought\n<channel|>",
        "<|tool_call>call:f{}<tool_call|>",
        "<|tool_response>",
    )


def test_cut_does_not_split_unlisted_tags():
    full = "<s>[ROLE]\n<tool_start>x"
    gen = "<s>[ROLE]\n<tool_prefill>"
    prefix, completion, stop = split_completion(full, gen, FMT)
    assert (prefix, completion, stop) == ("<tool_prefill>", "<tool_start>x", "")


def test_cut_strips_one_stop_marker_with_trailing_whitespace():
    prefix, completion, stop = split_completion("P:hello<turn|>\n<turn|>\n  ", "P:", FMT)
    assert (prefix, completion, stop) == ("", "hello<turn|>\n", "<turn|>\n  ")


def test_cut_ends_at_a_stop_marker_before_another_assistant_turn():
    """DeepSeek-R1-Distill-Qwen-32B writes a turn's content after the calls' stop marker, as a new turn: cut off.
    A stop marker and role header inside the calls (no call opener or closer may follow the cut) stay."""
    ds = get_format("deepseek_v3")
    eos, head, calls = "<｜end▁of▁sentence｜>", "<｜Assistant｜>", "<｜tool▁calls▁begin｜>C<｜tool▁calls▁end｜>"
    gen = f"U{head}<think>\n</think>"
    assert split_completion(f"U{head}{calls}{eos}{head}Done.{eos}", gen, ds) == ("<think>\n</think>", calls, eos)
    inner = f"<｜tool▁calls▁begin｜>{eos}{head}<｜tool▁calls▁end｜>"
    assert split_completion(f"U{head}{inner}{eos}", gen, ds)[1] == inner
    assert split_completion(f"U{head}x{eos}{head}{calls}{eos}", gen, ds)[1] == f"x{eos}{head}{calls}"


def test_cut_takes_the_closing_turn_out_of_both_renders():
    """Command R+ ends every render with an instruction turn (``closing_turn``), after the answer in the full render
    and before the role header in the prompt; a string value holding its opener stays."""
    cr = get_format("command_r")
    head, turn = "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>", cr.closing_turn + " now.<|END_OF_TURN_TOKEN|>"
    gen = f"U{turn}{head}"
    assert split_completion(f"U{head}Hi.<|END_OF_TURN_TOKEN|>{turn}", gen, cr) == ("", "Hi.", "<|END_OF_TURN_TOKEN|>")
    calls = f'\nAction:\n```json\n[{{"tool_name": "f", "parameters": {{"s": "{cr.closing_turn}"}}}}]```\n'
    assert split_completion(f"U{head}{calls}{turn}", gen, cr) == ("", calls, "")
    assert split_completion(f"U{head}x", f"U{head}", cr) == ("", "x", "")  # no closing turn: cut as ever


# --- other templates and failures -------------------------------------------------------------------


def test_older_gguf_template_ends_calls_with_turn_end():
    """The sdist vocab GGUF's (older) Gemma 4 template: same call syntax, but a call turn ends <turn|>."""
    tmpl = load_template("gemma-4-e2b", gguf=str(sdist_file("models/ggml-vocab-gemma-4.gguf")), offline=True)
    assert tmpl.source == "gguf"
    case = render_scenario(tmpl, Scenario("g1", [WEATHER], [weather()]), FMT)
    assert case.text == PARIS and case.prefix == EMPTY_THOUGHT and case.extra["stop"] == "<turn|>\n"
    assert case.source == "rendered:ggml-vocab-gemma-4.gguf"
    with pytest.raises(UnrepresentableError, match="does not write the reasoning"):
        render_scenario(tmpl, Scenario("g2", [WEATHER], [weather()], reasoning="hmm"), FMT)


def broken(text: str):
    return template_from_text(
        text, model="gemma-4-31b", format="gemma4", source="local_dir", location="/tmp/x", file="broken.jinja"
    )


def test_syntax_error_names_template_and_line():
    with pytest.raises(TemplateRenderError) as info:
        render_scenario(broken("{{ bos_token }}\n{% if messages %}\nno endif"), Scenario("s", [], [weather()]), FMT)
    msg = str(info.value)
    assert msg.startswith("chat template broken.jinja") and "Jinja error" in msg
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_raise_exception_names_template_message_and_line():
    text = "{{ bos_token }}\n{% if tools %}\n{{ raise_exception('tools are not supported') }}\n{% endif %}"
    with pytest.raises(TemplateRenderError) as info:
        render_scenario(broken(text), Scenario("s", [WEATHER], [weather()]), FMT)
    assert str(info.value) == (
        "chat template broken.jinja, line 3 (local_dir /tmp/x) failed to render: Jinja error: tools are not supported"
    )


def test_python_error_inside_template_is_wrapped():
    text = "{{ messages[0]['content'] + 1 }}"
    with pytest.raises(TemplateRenderError, match=r"broken.jinja, line 1 .*TypeError"):
        render_messages(broken(text), [{"role": "user", "content": "x"}], None)

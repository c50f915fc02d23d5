"""The SGLang engine: SGLang 0.5.23 in its own virtualenv (no CUDA stack), driven as its OpenAI server does, with
its Gemma 4 parsers, its Qwen 2.5 (Hermes JSON) detector and the parsers of the formats added after Hermes (GLM,
Qwen3-Coder, MiniMax-M2, Llama 3, Mistral, Kimi K2, DeepSeek V3.1/V3.2, gpt-oss) and of the later ones (Cohere,
DeepSeek V4, LFM2.5, MiniMax-M3, Ling 3.0, GigaChat 3 / 3.1, MiniCPM5), on texts their models' own templates render.

The first run builds the environment into the user cache (about 1-2.5 min, 2.5 GB); later runs reuse it.
"""

import pytest
from engine_common import (
    CALL,
    HERMES_TOOLS,
    OFF,
    RENDERED_MODES,
    STREAMED,
    TOOLS,
    engine_worker,
    hermes_worker,
    plain_message,
    rendered_cases,
    rendered_faults,
    rendered_msg,
    rendered_pieces,
    rendered_results,
)

from harness.assets.tokenizers import token_pieces
from harness.core.cases import Case
from harness.core.messages import Message, ToolCall
from harness.core.protocol import run_stream
from harness.formats import get_format
from harness.score.runner import evaluate_case

# A cold cache builds the environment inside the first test (minutes): allow for it.
pytestmark = pytest.mark.timeout(1800)

FMT = get_format("gemma4")


@pytest.fixture(scope="module")
def sglang():
    yield from engine_worker("sglang")


def test_hello_names_sglang_and_its_version(sglang):
    assert sglang.name == "sglang==0.5.23:gemma4"


def test_one_shot_and_token_streaming_parse_a_call(sglang):
    assert sglang.parse(CALL, TOOLS, OFF).tool_calls == [ToolCall("get_weather", {"city": "Paris", "days": 3})]
    pieces = token_pieces(CALL, "gemma4")
    streamed = run_stream(sglang, [p for p, _ in pieces], TOOLS, OFF, token_ids=[ids for _, ids in pieces])
    assert streamed.tool_calls == [ToolCall("get_weather", {"city": "Paris", "days": 3})]


def test_bare_null_and_template_none_become_strings(sglang):
    got = sglang.parse('<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,note:None}<tool_call|>', TOOLS, OFF)
    assert got.tool_calls == [ToolCall("get_weather", {"city": "Paris", "note": "None"})]
    got = sglang.parse('<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,note:null}<tool_call|>', TOOLS, OFF)
    assert got.tool_calls == [ToolCall("get_weather", {"city": "Paris", "note": "null"})]


def test_two_calls_to_one_tool_share_a_stream_index_and_merge(sglang):
    """Streaming numbers calls by the tool's position in ``tools``, so a client merges two calls to one tool."""
    text = CALL + CALL.replace("Paris", "Rome")
    case = Case(
        id="two",
        format="gemma4",
        text=text,
        tools=TOOLS,
        prefix=OFF,
        slice="curated",
        expected=Message(
            tool_calls=[
                ToolCall("get_weather", {"city": "Paris", "days": 3}),
                ToolCall("get_weather", {"city": "Rome", "days": 3}),
            ]
        ),
    )
    verdicts = {
        r.mode: (r.verdict, r.error_type)
        for r in evaluate_case(case, sglang, FMT, ["oneshot", "tokens"], seed=0, timeout_s=30)
    }
    assert verdicts["oneshot"] == ("pass", None)
    assert verdicts["tokens"] == ("fail", "stream_diverges")


def test_a_looping_library_call_is_a_timeout_and_the_worker_stays(sglang):
    """SGLang 0.5.23 loops forever on ``]`` inside a string in a nested array; the worker interrupts it."""
    tools = [
        {
            "type": "function",
            "function": {
                "name": "f",
                "parameters": {
                    "type": "object",
                    "properties": {"k": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}}},
                },
            },
        }
    ]
    case = Case(
        id="loop",
        format="gemma4",
        text='<|tool_call>call:f{k:[[<|"|>]x<|"|>]]}<tool_call|>',
        tools=tools,
        prefix=OFF,
        slice="curated",
        expected=Message(tool_calls=[ToolCall("f", {"k": [["]x"]]})]),
    )
    (record,) = evaluate_case(case, sglang, FMT, ["oneshot"], seed=0, timeout_s=30)
    assert (record.verdict, record.error_type) == ("error", "timeout")
    assert "did not return within" in record.detail
    assert sglang.parse(CALL, TOOLS, OFF).tool_calls and sglang.restarts == 0


# ------------------------------------------------------------------------------------------------- Hermes


@pytest.fixture(scope="module")
def sglang_hermes():
    yield from hermes_worker("sglang")


def test_hermes_parser_is_named_for_the_format(sglang_hermes):
    assert sglang_hermes.name == "sglang==0.5.23:hermes"


def test_hermes_call_to_an_undeclared_tool_is_dropped_and_streaming_leaks_its_tail(sglang_hermes):
    text = '<tool_call>\n{"name": "send_mail", "arguments": {"to": "x"}}\n</tool_call>'
    got = sglang_hermes.parse(text, HERMES_TOOLS, "")
    assert (got.content, got.tool_calls) == (None, [])
    assert any("undefined function: send_mail" in d for d in got.diagnostics)
    streamed = run_stream(sglang_hermes, list(text), HERMES_TOOLS, "")
    assert (streamed.content, streamed.tool_calls) == (', "arguments": {"to": "x"}}\n', [])


# ------------------------------------------------------------------------------------------------- newer formats
# (parsers/reference/sglang.py, "Formats added after Hermes"; every expectation below that differs from the case's own
# message is a documented SGLang fault or a consequence of the documented server configuration)

NEW_FORMATS = (
    "glm45",
    "glm47",
    "qwen3_coder",
    "minimax_m2",
    "llama3_json",
    "mistral",
    "kimi_k2",
    "deepseek_v31",
    "deepseek_v32",
    "harmony",
    "apertus",
    "muse_glimmer",
)


@pytest.fixture(scope="module")
def sglang_for():
    """``sglang_for(format)``: the SGLang worker parser of a format (one worker per format, stopped afterwards)."""
    from harness.engines import environments as engines
    from harness.parse.registry import get_any_parser

    engines.install("sglang")
    started = {}

    def get(fmt):
        if fmt not in started:
            started[fmt] = get_any_parser("sglang", fmt)
        return started[fmt]

    yield get
    for parser in started.values():
        parser.close()


def test_every_new_format_has_a_parser_and_all_creates_it(sglang_for):
    from harness.parse.registry import expand_names

    for fmt in NEW_FORMATS:
        assert sglang_for(fmt).name == f"sglang==0.5.23:{fmt}"
        assert "sglang" in expand_names(["all"], fmt)
    assert "sglang" not in expand_names(["all"], "functiongemma")


def test_template_detection_gives_the_configured_server_state():
    """SGLang's own ``detect_reasoning_pattern`` on each format's template (the sdist copy) finds what
    ``Launch.template_toggle`` / ``template_force_reasoning`` say, and its ``auto`` detection picks the parsers of
    the entries configured from it (no tokenizer: the vocabulary rules stay off). template_detection imports two
    ``sglang.srt.arg_groups`` modules that need torchvision; detection does not use them, so they are stubbed."""
    import json
    import subprocess

    from harness.assets.sdist import sdist_file
    from harness.engines import environments as engines
    from harness.engines.spec import venv_python
    from parsers.reference.sglang import FORMATS

    installed = engines.install("sglang")
    paths = {fmt: str(sdist_file(f"models/templates/{c.template}")) for fmt, c in FORMATS.items()}
    script = (
        "import json, sys, types\n"
        "for m, names in {'sglang.srt.arg_groups.muse_spark_hook': ['muse_spark_chat_template_default'],\n"
        "                 'sglang.srt.arg_groups.overrides': ['declare_resolution', 'resolving_view']}.items():\n"
        "    mod = types.ModuleType(m)\n"
        "    for n in names: setattr(mod, n, None)\n"
        "    sys.modules[m] = mod\n"
        "from sglang.srt.parser import template_detection as td\n"
        "out = {}\n"
        "for fmt, path in json.loads(sys.argv[1]).items():\n"
        "    text = open(path, encoding='utf-8').read()\n"
        "    force, cfg = td.detect_reasoning_pattern(text)\n"
        "    auto = [f(text, None, cfg, force) for f in (td.detect_reasoning_parser, td.detect_tool_call_parser)]\n"
        "    out[fmt] = [force, None if cfg is None else [cfg.toggle_param, cfg.default_enabled, cfg.special_case],\n"
        "                auto]\n"
        "print(json.dumps(out))\n"
    )
    proc = subprocess.run(
        [str(venv_python(installed.path)), "-c", script, json.dumps(paths)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={"PATH": "/usr/bin:/bin", "PYTHONNOUSERSITE": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    detected = json.loads(proc.stdout.strip().splitlines()[-1])
    for fmt, config in FORMATS.items():
        toggle = config.template_toggle
        want = [
            config.template_force_reasoning,
            None if toggle is None else [toggle.toggle_param, toggle.default_enabled, toggle.special_case],
        ]
        assert detected[fmt][:2] == want, fmt
    # what `--reasoning-parser auto --tool-call-parser auto` picks from the template, where the entry takes it
    for fmt in ("minimax_m3", "ling3"):
        assert detected[fmt][2] == [FORMATS[fmt].reasoning_parser, FORMATS[fmt].tool_call_parser], fmt
    for fmt in ("lfm2", "minicpm5"):
        assert detected[fmt][2][1] == FORMATS[fmt].tool_call_parser, fmt


def test_requests_carry_the_documented_thinking_switch():
    from parsers.reference.sglang import FORMATS

    assert FORMATS["glm45"].request_kwargs("<think></think>") == {"enable_thinking": False}
    assert FORMATS["glm45"].request_kwargs("") is None
    assert FORMATS["glm47"].request_kwargs("</think>") == {"enable_thinking": False}
    assert FORMATS["glm47"].request_kwargs("<think>") is None
    assert FORMATS["glm47"].request_kwargs("") is None
    assert FORMATS["deepseek_v31"].request_kwargs("") is None
    assert FORMATS["deepseek_v32"].request_kwargs("<think></think>") is None
    assert FORMATS["deepseek_v32"].request_kwargs("") == {"thinking": True}
    assert FORMATS["gemma4"].request_kwargs(OFF) is None
    assert FORMATS["gemma4"].request_kwargs("") == {"enable_thinking": True}


def test_harmony_model_form_parses_streamed(sglang_for):
    """The header gpt-oss models write (``<|channel|>commentary to=functions.NAME <|constrain|>json``): with the
    ``<|call|>`` the detokenizer keeps (restored by the adapter) the call parses streamed whole or by pieces;
    one-shot only after an earlier message (``<|start|>assistant<|channel|>commentary`` must be in the text)."""
    from harness.core.protocol import run_stream

    parser = sglang_for("harmony")
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]
    call = '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}'
    after_analysis = "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant" + call
    paris = [{"city": "Paris"}]

    def modes(text):
        return {
            "oneshot": plain_message(parser.parse(text, tools, "")),
            "whole": plain_message(run_stream(parser, [text], tools, "")),
            "pieces": plain_message(run_stream(parser, rendered_pieces(text, "harmony"), tools, "")),
        }

    assert modes(call) == {
        "oneshot": rendered_msg(call + "<|call|>"),
        "whole": rendered_msg(calls=paris),
        "pieces": rendered_msg(calls=paris),
    }
    assert modes(after_analysis) == {
        mode: rendered_msg(calls=paris, reasoning="Think.") for mode in ("oneshot", "whole", "pieces")
    }


def test_corpus_shaped_faults(sglang_for):
    """Shapes from the harness corpus (edge catalog / generated slice) that the rendered texts above do not hold:
    Mistral streams at most one call per step; Mistral streaming drops every ``]`` of prose; Llama 3 finds no call
    after prose, and a ``<|python_tag|>`` inside a string splits the text there; Kimi K2 drops a tool whose name
    holds ``:``."""
    import json

    from harness.core.protocol import run_stream

    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]

    def modes(parser, text, tools=tools):
        return {
            "oneshot": plain_message(parser.parse(text, tools, "")),
            "whole": plain_message(run_stream(parser, [text], tools, "")),
            "char": plain_message(run_stream(parser, list(text), tools, "")),
        }

    cities = [{"city": c} for c in ("Paris", "Rome", "Oslo")]
    three = "".join("[TOOL_CALLS]get_weather[ARGS]" + json.dumps(c) for c in cities)
    assert modes(sglang_for("mistral"), three) == {
        "oneshot": rendered_msg(calls=cities),
        "whole": rendered_msg(calls=cities[:2]),
        "char": rendered_msg(calls=cities),
    }
    prose = 'See [docs] first.[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}'
    got = modes(sglang_for("mistral"), prose)
    assert (got["oneshot"]["content"], got["whole"]["content"], got["char"]["content"]) == (
        "See [docs] first.",
        "See [docs] first.",
        "See [docs first.",
    )

    llama = sglang_for("llama3_json")
    after_prose = 'Let me check.{"name": "get_weather", "parameters": {"city": "Paris"}}'
    assert modes(llama, after_prose) == {
        "oneshot": rendered_msg(after_prose),
        "whole": rendered_msg(after_prose),
        "char": rendered_msg("Let me check.", [{"city": "Paris"}]),
    }
    tag = '{"name": "get_weather", "parameters": {"city": "a <|python_tag|> b"}}'
    assert modes(llama, tag) == {
        "oneshot": rendered_msg('{"name": "get_weather", "parameters": {"city": "a b"}}'),
        "whole": rendered_msg(),
        "char": rendered_msg(calls=[{"city": "a <|python_tag|"}]),
    }

    colon = [
        {
            "type": "function",
            "function": {
                "name": "ns.tool:v2",
                "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}},
            },
        }
    ]
    text = (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.ns.tool:v2:0<|tool_call_argument_begin|>"
        '{"x": 1}<|tool_call_end|><|tool_calls_section_end|>'
    )
    got = modes(sglang_for("kimi_k2"), text, colon)
    assert (got["oneshot"], got["whole"]) == (rendered_msg(), rendered_msg())


# ------------------------------------------------------------------------------------------------- later formats
# Each format on its catalog model's rendered texts (engine_common.rendered_cases): {case: modes that differ from the
# message the case stands for}. Why: docs/engines/sglang.md, "Formats added later".

ALL_MODES = list(RENDERED_MODES)
LATER_FORMATS = {
    "cohere": ("north-mini-code", {"two_calls": STREAMED, "marker_in_string": ALL_MODES}),
    "deepseek_v4": ("deepseek-v4-flash", {"marker_in_string": ["oneshot"]}),
    "lfm2": ("lfm2.5-8b-a1b", dict.fromkeys(("one_call", "two_calls", "content_call", "marker_in_string"), ALL_MODES)),
    "minimax_m3": ("minimax-m3", dict.fromkeys(("one_call", "two_calls", "content_call"), ["char"])),
    "ling3": ("ling-3.0-flash", {"content_call": ["whole"], "marker_in_string": ALL_MODES}),
    "gigachat3": ("gigachat3-10b-a1.8b", dict.fromkeys(("one_call", "content_call", "marker_in_string"), STREAMED[:2])),
    "gigachat31": (
        "gigachat3.1-10b-a1.8b",
        dict.fromkeys(("one_call", "content_call", "marker_in_string"), STREAMED[:2]),
    ),
    "minicpm5": ("minicpm5-1b", dict.fromkeys(("marker_in_string", "reasoning_call"), ALL_MODES)),
}


@pytest.mark.parametrize("fmt", sorted(LATER_FORMATS))
def test_later_formats_on_rendered_texts(sglang_for, fmt):
    from harness.parse.registry import expand_names

    model, faults = LATER_FORMATS[fmt]
    parser = sglang_for(fmt)
    assert parser.name == f"sglang==0.5.23:{fmt}" and "sglang" in expand_names(["all"], fmt)
    assert rendered_faults(parser, rendered_cases(model)) == faults


def test_later_format_faults(sglang_for):
    """What the faults above are, one mode each (and Command R7B's own, on the cohere entry)."""

    def got(fmt, model, case, mode):
        return rendered_results(sglang_for(fmt), {case: rendered_cases(model)[case]}, (mode,))[case][mode]

    paris = [{"city": "Paris", "days": 3}]
    # cohere: both streamed items carry index 0 (the tool's position), so a client merges them into one call
    merged = got("cohere", "north-mini-code", "two_calls", "whole")["tool_calls"]
    assert [c["name"] for c in merged] == ["get_weatherget_weather"]
    # cohere: the block ends at the first <|END_ACTION|>; the partial-JSON fallback keeps the cut value
    assert got("cohere", "north-mini-code", "marker_in_string", "oneshot") == rendered_msg(
        calls=[{"city": "Paris", "note": "a"}]
    )
    assert got("cohere", "command-r7b", "reasoning_call", "char")["reasoning"] == (
        "<|START_THINKING|>The user wants the weather."
    )
    # lfm2: --reasoning-parser qwen3 forces reasoning (no template switch): a text without <think> is all reasoning
    text = rendered_cases("lfm2.5-8b-a1b")["one_call"].text
    assert got("lfm2", "lfm2.5-8b-a1b", "one_call", "oneshot") == rendered_msg(reasoning=text)
    assert got("minimax_m3", "minimax-m3", "one_call", "char") == rendered_msg("</mm:think>", paris)
    assert got("ling3", "ling-3.0-flash", "content_call", "whole") == rendered_msg(calls=paris)
    # gigachat3: the chunk that holds the name sends only the name; a header split across chunks leaks into content
    assert got("gigachat3", "gigachat3-10b-a1.8b", "one_call", "whole") == rendered_msg(calls=[{}])
    assert got("gigachat31", "gigachat3.1-10b-a1.8b", "one_call", "char") == rendered_msg("<|function_call|>", paris)
    # minicpm5: no reasoning parser in OpenBMB's launch, so the reasoning and </think> stay content
    assert got("minicpm5", "minicpm5-1b", "reasoning_call", "oneshot") == rendered_msg(
        "The user wants the weather.\n</think>", paris
    )

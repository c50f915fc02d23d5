"""The SGLang engine: SGLang 0.5.23 in its own virtualenv (no CUDA stack), driven as its OpenAI server does, with
its Gemma 4 parsers, its Qwen 2.5 (Hermes JSON) detector and the parsers of the formats added after Hermes (GLM,
Qwen3-Coder, MiniMax-M2, Llama 3, Mistral, Kimi K2, DeepSeek V3.1/V3.2, gpt-oss), on texts their models' own
templates render.

The first run builds the environment into the user cache (about 1-2.5 min, 2.5 GB); later runs reuse it.
"""

import pytest
from engine_common import (
    CALL,
    HERMES_CASES,
    HERMES_MODES,
    HERMES_TOOLS,
    OFF,
    PARIS,
    RENDERED_MODES,
    ROME,
    TOOLS,
    engine_worker,
    hermes_expected,
    hermes_msg,
    hermes_results,
    hermes_worker,
    plain_message,
    rendered_cases,
    rendered_expected,
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


def test_hermes_texts_one_shot_and_streaming(sglang_hermes):
    """``--tool-call-parser qwen`` (Qwen25Detector): one-shot strips the content before a call; streamed whole,
    the text before a call and every call after the first are lost; streamed in pieces, content keeps its
    newline. ``</tool_call>`` inside a string is handled (the detector needs ``\\n</tool_call>``)."""
    got = hermes_results(sglang_hermes)
    expected = {case: {mode: hermes_expected(case) for mode in HERMES_MODES} for case in HERMES_CASES}
    expected["two_calls"]["whole"] = hermes_msg(calls=[PARIS])
    expected["content_then_call"].update(
        whole=hermes_msg(calls=[PARIS]),
        char=hermes_msg("Let me check.\n", [PARIS]),
        pieces=hermes_msg("Let me check.\n", [PARIS]),
    )
    assert got == expected


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
)
REASON = "The user wants the weather."


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


def everywhere(message: dict) -> dict:
    return {mode: message for mode in RENDERED_MODES}


def raw(case, before: str = "") -> dict:
    """No call: the text itself (after ``before``) is the content."""
    return rendered_msg((before + case.text).strip() or None)


def test_every_new_format_has_a_parser_and_all_creates_it(sglang_for):
    from harness.parse.registry import expand_names

    for fmt in NEW_FORMATS:
        assert sglang_for(fmt).name == f"sglang==0.5.23:{fmt}"
        assert "sglang" in expand_names(["all"], fmt)
    assert "sglang" not in expand_names(["all"], "functiongemma")


def test_template_detection_gives_the_configured_server_state():
    """SGLang's own ``detect_reasoning_pattern`` on each format's template (the sdist copy) finds what
    ``Launch.template_toggle`` / ``template_force_reasoning`` say. template_detection imports two
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
        "from sglang.srt.parser.template_detection import detect_reasoning_pattern\n"
        "out = {}\n"
        "for fmt, path in json.loads(sys.argv[1]).items():\n"
        "    force, cfg = detect_reasoning_pattern(open(path, encoding='utf-8').read())\n"
        "    out[fmt] = [force, None if cfg is None else [cfg.toggle_param, cfg.default_enabled, cfg.special_case]]\n"
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
        assert detected[fmt] == want, fmt


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


def test_glm45_texts(sglang_for):
    """GLM-4.6: a ``</tool_call>`` inside a value cuts the call (one-shot: key dropped; streamed: invalid JSON and
    the rest in content); prose before a call streamed in one chunk with it is lost; one-shot reasoning keeps the
    ``<think>`` written after a newline."""
    cases = rendered_cases("glm-4.6")
    got = rendered_results(sglang_for("glm45"), cases)
    expected = rendered_expected(cases)
    expected["content_call"]["whole"] = rendered_msg(calls=[PARIS])
    cut = '{"city": "Paris", "note": "a}'
    expected["marker_in_string"].update(
        oneshot=rendered_msg(calls=[{"city": "Paris"}]),
        whole=rendered_msg("b</arg_value>", [cut]),
        char=rendered_msg("b</arg_value>\n</tool_call>", ['{"city": "Paris", "note": "a </tool_call}']),
        pieces=rendered_msg("b</arg_value>", [cut]),
    )
    expected["reasoning_call"]["oneshot"] = rendered_msg(calls=[PARIS], reasoning="<think>" + REASON)
    assert got == expected


def test_glm47_texts(sglang_for):
    """GLM-4.7-Flash: the thinking-off prefix ``</think>`` gives ``{"enable_thinking": false}`` and the
    thinking-on prefix ``<think>`` the default request, so prose and reasoning parse; a ``</tool_call>`` inside a
    value cuts the call."""
    cases = rendered_cases("glm-4.7-flash")
    got = rendered_results(sglang_for("glm47"), cases)
    expected = rendered_expected(cases)
    cut = '{"city": "Paris", "note": }'
    expected["marker_in_string"].update(
        oneshot=rendered_msg("b</arg_value></tool_call>", [{"city": "Paris"}]),
        whole=rendered_msg("b</arg_value>", [cut]),
        char=rendered_msg("b</arg_value></tool_call>", [cut]),
        pieces=rendered_msg("b</arg_value>", [cut]),
    )
    assert got == expected


def test_qwen3_coder_texts(sglang_for):
    """Qwen3-Coder and Nemotron-3-Nano texts: one-shot cuts a value at ``</tool_call>``; without a reasoning parser
    Nemotron's reasoning stays in content."""
    parser = sglang_for("qwen3_coder")
    for model in ("qwen3-coder-30b-a3b", "nemotron-3-nano"):
        cases = rendered_cases(model)
        got = rendered_results(parser, cases)
        expected = rendered_expected(cases)
        expected["marker_in_string"]["oneshot"] = rendered_msg(calls=[{"city": "Paris", "note": "a "}])
        if "reasoning_call" in cases:
            expected["reasoning_call"] = everywhere(rendered_msg(REASON + "\n</think>", [PARIS]))
        assert got == expected, model
    assert "reasoning_call" not in rendered_cases("qwen3-coder-30b-a3b")


def test_minimax_m2_texts(sglang_for):
    """``minimax-append-think`` prepends ``<think>`` and puts everything in content: a thinking-off text, which
    closes the pre-filled block first, gives ``<think></think>``, reasoning gives ``<think>REASONING</think>``; by
    characters no call is found; two calls in one chunk both get the second's arguments;
    ``</minimax:tool_call>`` in a value ends the block."""
    cases = rendered_cases("minimax-m2")
    got = rendered_results(sglang_for("minimax_m2"), cases)
    note_null = [{"city": "Paris", "note": None}]
    empty = "<think></think>"
    expected = {
        "one_call": everywhere(rendered_msg(empty, [PARIS])),
        "two_calls": {**everywhere(rendered_msg(empty, [PARIS, ROME])), "whole": rendered_msg(empty, [ROME, ROME])},
        "content_call": everywhere(rendered_msg(empty + "Let me check.Done.", [PARIS])),
        "marker_in_string": {
            **everywhere(rendered_msg(empty, note_null)),
            "oneshot": rendered_msg(empty + "\n b</parameter>\n</invoke>\n</minimax:tool_call>", note_null),
        },
        "reasoning_call": everywhere(rendered_msg(f"<think>{REASON}\n</think>", [PARIS])),
    }
    for name, case in cases.items():
        expected[name]["char"] = raw(case, "<think>")
    assert got == expected


def test_llama3_json_texts(sglang_for):
    """Llama 3.1: one call per turn and no content (the template's); ``<|eot_id|>`` inside a string is data."""
    cases = rendered_cases("llama-3.1-8b", marker="<|eot_id|>")
    assert set(cases) == {"one_call", "marker_in_string"}
    assert rendered_results(sglang_for("llama3_json"), cases) == rendered_expected(cases)


def test_mistral_texts(sglang_for):
    """Devstral's ``[TOOL_CALLS]NAME[ARGS]`` passes; Mistral Small 3.2's ``[CALL_ID]`` becomes part of the name, an
    undeclared tool: dropped one-shot (no content either), raw text streamed."""
    parser = sglang_for("mistral")
    cases = rendered_cases("devstral-small", marker="[TOOL_CALLS]")
    assert rendered_results(parser, cases) == rendered_expected(cases)
    cases = rendered_cases("mistral-small-3.2", marker="[TOOL_CALLS]")
    got = rendered_results(parser, cases)
    assert set(cases) == {"one_call", "two_calls", "marker_in_string"}
    assert got == {name: {**everywhere(raw(case)), "oneshot": rendered_msg()} for name, case in cases.items()}
    assert any(
        "undefined function: get_weather[CALL_ID]call00000" in d
        for d in parser.parse(cases["one_call"].text, cases["one_call"].tools, "").diagnostics
    )


def test_kimi_k2_texts(sglang_for):
    """Kimi K2 passes except streamed by characters: a marker split after its first character is never found."""
    cases = rendered_cases("kimi-k2")
    got = rendered_results(sglang_for("kimi_k2"), cases)
    expected = rendered_expected(cases)
    for name, case in cases.items():
        expected[name]["char"] = raw(case)
    assert got == expected


def test_deepseek_v31_texts(sglang_for):
    """DeepSeek V3.1: streamed whole, prose before the calls is lost and two calls merge into one whose name spans
    both; by characters no call."""
    cases = rendered_cases("deepseek-v3.1")
    got = rendered_results(sglang_for("deepseek_v31"), cases)
    expected = rendered_expected(cases)
    for name, case in cases.items():
        expected[name]["char"] = raw(case)
    expected["content_call"]["whole"] = rendered_msg(calls=[PARIS])
    merged = (
        "get_weather<｜tool▁sep｜>"
        + '{"city": "Paris", "days": 3}'
        + "<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_weather"
    )
    expected["two_calls"]["whole"] = rendered_msg(calls=[ROME], name=merged)
    assert got == expected


def test_deepseek_v32_texts(sglang_for):
    """DeepSeek V3.2: thinking off (prefix ``<think></think>``, no ``thinking`` kwarg) and on (prefix ``<think>``,
    ``{"thinking": true}``) both pass, except that one-shot a value holding ``</｜DSML｜function_calls>`` drops the
    call."""
    cases = rendered_cases("deepseek-v3.2")
    got = rendered_results(sglang_for("deepseek_v32"), cases)
    expected = rendered_expected(cases)
    expected["marker_in_string"]["oneshot"] = rendered_msg()
    assert got == expected


def test_harmony_template_texts_give_no_call(sglang_for):
    """gpt-oss: the template's `` to=functions.NAME<|channel|>commentary json<|message|>`` header is not SGLang's
    (recipient after the channel, ``<|constrain|>json``): no call in any mode; analysis reasoning is separated."""
    cases = rendered_cases("gpt-oss-20b")
    got = rendered_results(sglang_for("harmony"), cases)
    assert set(cases) == {"one_call", "marker_in_string", "reasoning_call"}
    twice = "to=functions.get_weather to=functions.get_weather"
    header = "to=functions.get_weather<|channel|>commentary json<|message|>"
    assert got == {
        "one_call": {
            **everywhere(rendered_msg(twice)),
            "oneshot": rendered_msg(header + '{"city": "Paris", "days": 3}<|call|>'),
        },
        "marker_in_string": {
            "oneshot": rendered_msg(cases["marker_in_string"].text),
            "whole": rendered_msg('to=functions.get_weather b"}'),
            "char": rendered_msg(twice + 'b"}'),
            "pieces": rendered_msg(twice + 'b"}'),
        },
        "reasoning_call": {
            "oneshot": rendered_msg(
                "<|start|>assistant " + header + '{"city": "Paris", "days": 3}<|call|>', reasoning=REASON
            ),
            "whole": rendered_msg(reasoning=REASON),
            "pieces": rendered_msg(reasoning=REASON),
            "char": rendered_msg(
                reasoning=f"{REASON}<|end|><|start|>assistant {header}" + '{"city": "Paris", "days": 3}'
            ),
        },
    }


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

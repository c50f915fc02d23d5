"""The vllm-mlx engine: vllm-mlx 0.6.0 in its own virtualenv, its tool-call and reasoning parsers behind its own
server's request handling (``parsers/reference/vllm_mlx.py``), on the texts each mapped format's catalog model
renders (``engine_common.rendered_cases``), one-shot and streamed, and the faults they and a few hand-written texts
show. The assertions pin what vllm-mlx does today, right or wrong (``docs/engines/vllm_mlx.md`` explains each
failure); an upgrade that changes a behaviour fails here on purpose.

The first run builds the environment into the user cache (about 75 s, 360 MB); later runs reuse it.
"""

import json

import pytest
from engine_common import (
    CALL,
    HERMES_TOOLS,
    OFF,
    RENDERED_PARAMETERS,
    TOOLS,
    plain_message,
    rendered_cases,
    rendered_msg,
    rendered_results,
)

from harness.core.protocol import run_stream
from harness.engines import environments as engines
from harness.parse.registry import expand_names, get_any_parser

# A cold cache builds the environment inside the first test: allow for it.
pytestmark = pytest.mark.timeout(1800)

#: the catalog model each mapped format is run on (the model of the docs' example where the catalog has it).
MODELS = {
    "gemma4": "gemma-4-e2b",
    "hermes": "qwen2.5-7b",
    "qwen3_coder": "qwen3-coder-30b-a3b",
    "glm45": "glm-4.6",
    "glm47": "glm-4.7-flash",
    "ling3": "ling-3.0-flash",
    "llama3_json": "llama-3.2-3b",
    "mistral": "devstral-small",
    "mistral_reasoning": "ministral-3-reasoning",
    "minimax_m2": "minimax-m2",
    "kimi_k2": "kimi-k2",
    "deepseek_v3": "deepseek-r1-distill-qwen-32b",
    "deepseek_v4": "deepseek-v4-flash",
    "harmony": "gpt-oss-20b",
    "functionary_v31": "functionary-medium-v3.1",
}
#: the marker put inside a string value where the format's call close is none (Mistral's calls have no closer).
MARKERS = {"mistral": "[TOOL_CALLS]", "mistral_reasoning": "[TOOL_CALLS]"}
MODES = ("oneshot", "whole", "pieces")
_ALL = {"one_call", "two_calls", "content_call", "marker_in_string"}
#: the rendered cases each mode gets wrong today, per format (every other rendered case passes).
FAILING = {
    "gemma4": {
        "oneshot": {"two_calls", "content_call", "marker_in_string"},
        "whole": {"two_calls", "content_call", "marker_in_string", "reasoning_call"},
        "pieces": {"two_calls", "content_call", "marker_in_string"},
    },
    "hermes": {"oneshot": set(), "whole": {"content_call"}, "pieces": {"marker_in_string"}},
    "qwen3_coder": {
        "oneshot": {"marker_in_string"},
        "whole": {"content_call", "marker_in_string"},
        "pieces": {"content_call", "marker_in_string"},
    },
    **dict.fromkeys(
        ("glm45", "glm47", "ling3"),
        {
            "oneshot": {"content_call", "marker_in_string"},
            "whole": {"content_call", "marker_in_string"},
            "pieces": {"marker_in_string"},
        },
    ),
    "llama3_json": {"oneshot": set(), "whole": set(), "pieces": set()},
    "mistral": {"oneshot": set(), "whole": {"two_calls"}, "pieces": set()},
    "mistral_reasoning": {"oneshot": set(), "whole": {"two_calls"}, "pieces": {"content_call"}},
    "minimax_m2": {
        "oneshot": {"marker_in_string"},
        "whole": {"content_call", "marker_in_string"},
        "pieces": {"marker_in_string"},
    },
    "kimi_k2": {"oneshot": set(), "whole": _ALL, "pieces": _ALL},
    "deepseek_v3": {"oneshot": set(), "whole": _ALL - {"content_call"}, "pieces": _ALL - {"content_call"}},
    "deepseek_v4": dict.fromkeys(MODES, {"marker_in_string"}),
    "harmony": dict.fromkeys(MODES, {"one_call", "reasoning_call", "marker_in_string"}),
    "functionary_v31": {"oneshot": set(), "whole": {"content_call"}, "pieces": set()},
}


@pytest.fixture(scope="module")
def vllm_mlx_for():
    """``vllm_mlx_for(format)``: the vllm-mlx worker parser of a format (one worker per format, stopped afterwards)."""
    engines.install("vllm-mlx")
    started = {}

    def get(fmt):
        if fmt not in started:
            started[fmt] = get_any_parser("vllm-mlx", fmt)
        return started[fmt]

    yield get
    for parser in started.values():
        parser.close()


def _engine_python(code: str) -> str:
    """Run ``code`` with the engine's interpreter; the last line of its stdout."""
    import os
    import subprocess
    from pathlib import Path

    python = next(engines.install("vllm-mlx").path.glob("venv/bin/python"))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()[-1]


def test_every_format_has_a_registered_parser_and_all_creates_it(vllm_mlx_for):
    from parsers.reference.vllm_mlx import ENGINE, FORMATS, UNSUPPORTED

    assert set(ENGINE.formats) == set(FORMATS) == set(MODELS)
    for fmt in FORMATS:
        assert "vllm-mlx" in expand_names(["all"], fmt), fmt
    for fmt in UNSUPPORTED:
        assert "vllm-mlx" not in expand_names(["all"], fmt), fmt
    assert vllm_mlx_for("gemma4").name == "vllm-mlx==0.6.0:gemma4"
    names = json.loads(
        _engine_python(
            "import json\nfrom vllm_mlx.tool_parsers import ToolParserManager\nfrom vllm_mlx.reasoning import "
            "list_parsers\nprint(json.dumps([ToolParserManager.list_registered(), list_parsers()]))"
        )
    )
    tool_names, reasoning_names = names
    assert len(tool_names) == 38 and len(reasoning_names) == 10
    assert {launch.tool_parser for launch in FORMATS.values()} <= set(tool_names)
    assert {launch.reasoning_parser for launch in FORMATS.values()} - {None} <= set(reasoning_names)


def test_rendered_cases_of_every_mapped_format(vllm_mlx_for):
    """Every mapped format on its model's rendered texts: one-shot, streamed whole and by token-like pieces."""
    got = {}
    for fmt, model in MODELS.items():
        cases = rendered_cases(model, MARKERS.get(fmt))
        results = rendered_results(vllm_mlx_for(fmt), cases, MODES)
        got[fmt] = {
            mode: {name for name, case in cases.items() if results[name][mode] != plain_message(case.expected)}
            for mode in MODES
        }
    assert got == FAILING


def test_gemma4_one_shot_keeps_one_call_block_and_no_text_after_it(vllm_mlx_for):
    gemma4 = vllm_mlx_for("gemma4")
    rome = '<|tool_call>call:get_weather{city:<|"|>Rome<|"|>,days:1}<tool_call|>'
    paris = {"city": "Paris", "days": 3}
    assert plain_message(gemma4.parse(CALL + rome, TOOLS, OFF)) == rendered_msg(calls=[paris])
    assert plain_message(gemma4.parse("Hi." + CALL + "Done.", TOOLS, OFF)) == rendered_msg("Hi.", [paris])
    # streamed by pieces, both blocks arrive as index 0: the name and the first arguments, twice
    pieces = ["<|tool_call>", "call", ":", "get_weather", "{", "city", ":", '<|"|>', "Paris", '<|"|>', ",", "days"]
    pieces += [":", "3", "}", "<tool_call|>"] + ["<|tool_call>", "call", ":", "get_weather", "{city:", '<|"|>']
    pieces += ["Rome", '<|"|>', ",days:1}", "<tool_call|>"]
    streamed = plain_message(run_stream(gemma4, pieces, TOOLS, OFF))
    assert streamed["tool_calls"] == [{"name": "get_weatherget_weather", "arguments": '{"city":"Paris","days":3}' * 2}]


def test_streaming_never_parses_kimi_and_deepseek_calls(vllm_mlx_for):
    """The server starts its streaming tool parser only after a marker of ``_STREAMING_TOOL_MARKERS`` (or one the
    parser declares); Kimi K2's and DeepSeek V3's openers are in neither, so the markup streams out as content."""
    for fmt, model in (("kimi_k2", "kimi-k2"), ("deepseek_v3", "deepseek-r1-distill-qwen-32b")):
        case = rendered_cases(model)["one_call"]
        parser = vllm_mlx_for(fmt)
        assert plain_message(parser.parse(case.text, case.tools, case.prefix)) == plain_message(case.expected)
        streamed = plain_message(run_stream(parser, [case.text], case.tools, case.prefix))
        assert streamed["content"] == case.text.strip(), fmt


def test_streamed_arguments_after_prose_are_not_typed_by_the_schema(vllm_mlx_for):
    """The Qwen3-Coder parser takes the request's tools only on a first call with no previous text; the server's
    fast path feeds prose before a call without calling the parser, so a call after prose streams untyped (one-shot,
    the server coerces the arguments to the declared types)."""
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": RENDERED_PARAMETERS}}]
    text = (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n"
        "</parameter>\n</function>\n</tool_call>"
    )
    parser = vllm_mlx_for("qwen3_coder")
    typed, untyped = {"city": "Paris", "days": 3}, {"city": "Paris", "days": "3"}
    assert parser.parse("Hi.\n" + text, tools, "").tool_calls[0].arguments == typed
    lines = ("Hi.\n" + text).replace("\n", "\n\x00").split("\x00")
    assert run_stream(parser, lines, tools, "").tool_calls[0].arguments == untyped
    assert run_stream(parser, lines[1:], tools, "").tool_calls[0].arguments == typed


def test_request_validation_and_requests_without_tools(vllm_mlx_for):
    """A tool name outside ``^[A-Za-z0-9_-]{1,64}$`` is refused by the request model (HTTP 422), so the case
    raises; without tools the server skips tool parsing and the call text stays content."""
    gemma4 = vllm_mlx_for("gemma4")
    dotted = [{"type": "function", "function": {"name": "web.search", "parameters": {"type": "object"}}}]
    with pytest.raises(Exception, match="function.name must match"):
        gemma4.parse("<|tool_call>call:web.search{}<tool_call|>", dotted, OFF)
    got = gemma4.parse(CALL, None, OFF)
    assert (got.content, got.tool_calls) == (CALL, [])
    assert "the request declares no tools: vllm-mlx's server skips tool parsing" in got.diagnostics


def test_generation_stops_at_an_eos_token(vllm_mlx_for):
    hermes = vllm_mlx_for("hermes")
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    got = hermes.parse(call + "<|im_end|>ignored", HERMES_TOOLS, "")
    assert plain_message(got) == rendered_msg(calls=[{"city": "Paris"}])
    assert "generation stops at '<|im_end|>': 7 characters after it never reach vllm-mlx" in got.diagnostics


def test_mistral_small_call_ids(vllm_mlx_for):
    """Mistral Small 3.2 writes ``[CALL_ID]`` between the name and ``[ARGS]``: one-shot finds no call, streaming
    keeps it in the name."""
    case = rendered_cases("mistral-small-3.2", "[TOOL_CALLS]")["one_call"]
    mistral = vllm_mlx_for("mistral")
    assert plain_message(mistral.parse(case.text, case.tools, case.prefix)) == rendered_msg(case.text)
    streamed = run_stream(mistral, [case.text], case.tools, case.prefix)
    assert [c.name for c in streamed.tool_calls] == ["get_weather[CALL_ID]call00000"]


def test_harmony_loses_calls_and_reasoning(vllm_mlx_for):
    """gpt-oss's template writes the recipient before the channel (`` to=functions.f<|channel|>commentary json
    <|message|>``); the harmony parser reads only ``<|channel|>commentary to=functions.f``. The channel-first form
    fails too: one-shot, ``SimpleEngine.chat`` runs ``clean_output_text`` before any parser, which keeps only the
    final (or commentary) message; streamed by tokens, the harmony reasoning parser keeps the first channel it saw
    (``<|channel|>`` and the channel name are separate tokens) and suppresses commentary, so the tool parser never
    sees the call and a final answer streams as reasoning."""
    harmony = vllm_mlx_for("harmony")
    case = rendered_cases("gpt-oss-20b")["one_call"]
    got = harmony.parse(case.text, case.tools, case.prefix)
    assert (got.content, got.tool_calls) == ('{"city": "Paris", "days": 3}', [])
    call = '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}'
    tokens = ["<|channel|>", "comment", "ary", " to", "=", "functions", ".get", "_weather", " ", "<|constrain|>"]
    tokens += ["json", "<|message|>", '{"', "city", '":', ' "', "Paris", '"}']
    assert "".join(tokens) == call
    assert plain_message(harmony.parse(call, TOOLS, "")) == rendered_msg('{"city": "Paris"}')
    assert plain_message(run_stream(harmony, tokens, TOOLS, "")) == rendered_msg()
    answer = ["<|channel|>", "analysis", "<|message|>", "Think", ".", "<|end|>", "<|start|>", "assistant"]
    answer += ["<|channel|>", "final", "<|message|>", "Hi", "."]
    assert plain_message(harmony.parse("".join(answer), TOOLS, "")) == rendered_msg("Hi.")
    assert plain_message(run_stream(harmony, answer, TOOLS, "")) == rendered_msg(reasoning="Think.Hi.")

"""The reference adapters against the real libraries (transformers 5.24.0, mlx-lm 0.32.2) on Hermes and the
newer formats, in process.

Inputs: Hermes completions rendered by the real Qwen 2.5 template (``engine_common.HERMES_CASES``, shared with the
engine tests), texts rendered by each catalog preset's own template (``engine_common.rendered_cases``) and
hand-written FunctionGemma texts. The assertions pin what each library does today, right or wrong; a library
upgrade that changes a behaviour fails here on purpose. Gemma 4: ``test_parsers_reference.py``.
"""

from __future__ import annotations

import pytest
from engine_common import (
    HERMES_CASES,
    HERMES_TOOLS,
    PARIS,
    hermes_msg,
    msg,
    plain,
    plain_message,
    rendered_cases,
    rendered_msg,
    stream_chars,
)

# ------------------------------------------------------------------------------------------------- Hermes


@pytest.fixture(scope="module")
def tf_hermes():
    from parsers.reference.transformers import TransformersParser

    return TransformersParser("hermes")


@pytest.fixture(scope="module")
def mlx_hermes():
    from parsers.reference.mlx_lm import MlxLmParser

    return MlxLmParser("hermes")


def test_tf_hermes_uses_the_builtin_qwen2_template(tf_hermes):
    from transformers.cli.serving.utils import _RESPONSE_TEMPLATE_FALLBACKS

    assert (tf_hermes.name, tf_hermes.formats) == ("transformers==5.24.0:hermes", ("hermes",))
    key = next(k for k in _RESPONSE_TEMPLATE_FALLBACKS if "qwen2" in k)
    assert tf_hermes.template_dict is _RESPONSE_TEMPLATE_FALLBACKS[key] and "qwen3" in key


def test_tf_hermes_thinking_and_text_after_calls(tf_hermes):
    call = HERMES_CASES["one_call"][0]()
    text = "<think>\nhmm\n</think>\n\n" + call + "\nDone."
    assert tf_hermes.parse(text, HERMES_TOOLS, "").to_json() == hermes_msg("Done.", [PARIS], reasoning="hmm")
    streamed, _, _ = stream_chars(tf_hermes, text, HERMES_TOOLS, "")
    assert streamed.to_json() == hermes_msg("\nDone.", [PARIS], reasoning="\nhmm\n")
    with pytest.raises(KeyError):  # a call without "arguments"
        tf_hermes.parse('<tool_call>\n{"name": "get_weather"}\n</tool_call>', HERMES_TOOLS, "")


def test_mlx_hermes_uses_json_tools_without_thinking(mlx_hermes):
    from mlx_lm.tool_parsers import json_tools

    assert (mlx_hermes.name, mlx_hermes.formats) == ("mlx-lm==0.32.2:hermes", ("hermes",))
    tok = mlx_hermes._rt.tokenizer
    assert (tok.tool_call_start, tok.tool_call_end, tok.tool_parser) == (
        "<tool_call>",
        "</tool_call>",
        json_tools.parse_tool_call,
    )
    assert not tok.has_thinking  # Qwen 2.5's / Hermes 3's vocabulary has no <think> token


def test_mlx_hermes_stops_at_im_end_and_keeps_think_tags_as_content(mlx_hermes):
    call = HERMES_CASES["one_call"][0]()
    got = mlx_hermes.parse("<think>\nhmm\n</think>\n\n" + call + "<|im_end|>ignored", HERMES_TOOLS, "")
    assert plain(got) == hermes_msg("<think>\nhmm\n</think>\n\n", [PARIS])
    assert got.diagnostics == [
        "generation stops at the stop token '<|im_end|>': 7 characters after it never reach mlx-lm"
    ]


# ------------------------------------------------------------------------------------------------ newer formats
# transformers' built-in Qwen 3.5 template (qwen3_coder) and mlx-lm's tool parsers for glm45, glm47, qwen3_coder,
# minimax_m2, mistral, kimi_k2 and functiongemma, on texts rendered by each catalog preset's own template through
# the harness (engine_common.rendered_cases; FunctionGemma has no template offline: hand-written texts). Module
# docstrings: "Qwen3-Coder" (parsers/reference/transformers.py) and "Newer formats" (parsers/reference/mlx_lm.py).

PARIS3 = {"city": "Paris", "days": 3}
ROME1 = {"city": "Rome", "days": 1}
# The marker put inside a string value: the format's call close, except Mistral's (it has none).
NEW_MARKERS = {"mistral": "[TOOL_CALLS]"}


def new_cases(preset: str) -> dict:
    from harness.template.catalog import get_model

    return rendered_cases(preset, NEW_MARKERS.get(get_model(preset).format))


@pytest.fixture(scope="module")
def tf_qwen3_coder():
    from parsers.reference.transformers import TransformersParser

    return TransformersParser("qwen3_coder")


def test_tf_qwen3_coder_uses_the_builtin_qwen3_5_template(tf_qwen3_coder):
    """The only built-in template for the <function=...> markup is keyed by Qwen 3.5's model types; Qwen3-Coder's
    own type (qwen3_moe) falls back to the JSON template, which rejects every such call."""
    from transformers.cli.serving.utils import _RESPONSE_TEMPLATE_FALLBACKS
    from transformers.utils.chat_parsing import parse_response
    from transformers.utils.chat_parsing.response_templates import load_response_template

    from parsers.reference.transformers import builtin_template

    assert (tf_qwen3_coder.name, tf_qwen3_coder.formats) == ("transformers==5.24.0:qwen3_coder", ("qwen3_coder",))
    key = next(k for k in _RESPONSE_TEMPLATE_FALLBACKS if "qwen3_5" in k)
    assert tf_qwen3_coder.template_dict is _RESPONSE_TEMPLATE_FALLBACKS[key]
    assert "qwen3_moe" not in key and "nemotron_h" not in {t for k in _RESPONSE_TEMPLATE_FALLBACKS for t in k}
    text = new_cases("qwen3-coder-30b-a3b")["one_call"].text
    with pytest.raises(ValueError, match="json parser could not parse region as JSON"):
        parse_response(text, load_response_template(builtin_template("qwen3_moe")), prefix="<|im_start|>assistant\n")


def test_tf_qwen3_coder_faults(tf_qwen3_coder):
    tools = [
        {
            "type": "function",
            "function": {
                "name": "f",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "s": {"type": "string"},
                        "code": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                    },
                },
            },
        }
    ]
    text = (
        "<tool_call>\n<function=f>\n<parameter=s>\n \n</parameter>\n<parameter=code>\n001\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    # the tag pattern's \s* strips every value; the first declared type that casts wins
    assert plain(tf_qwen3_coder.parse(text, tools, "")) == msg(calls=[("f", {"s": "", "code": 1})])
    assert plain(tf_qwen3_coder.parse(text, None, "")) == msg(calls=[("f", {"s": "", "code": "001"})])


# mlx-lm ------------------------------------------------------------------------------------------------------

NEW_MLX_PRESETS = {
    "glm-4.5": "glm45",
    "glm-4.6": "glm45",
    "glm-4.7-flash": "glm47",
    "qwen3-coder-30b-a3b": "qwen3_coder",
    "nemotron-3-nano": "qwen3_coder",
    "minimax-m2": "minimax_m2",
    "mistral-small-3.2": "mistral",
    "devstral-small": "mistral",
    "kimi-k2": "kimi_k2",
    "kimi-k3": "kimi_k3",
    "ling-3.0-flash": "ling3",
    "muse-glimmer-30b": "muse_glimmer",
}
THINKING_FORMATS = {"glm45", "glm47", "qwen3_coder", "minimax_m2", "kimi_k3", "ling3"}
THINK_MARKERS = {"kimi_k3": ("<|open|>think<|sep|>", "<|close|>think<|sep|>")}


def mlx_parser(fmt: str):
    from parsers.reference.mlx_lm import MlxLmParser

    return MlxLmParser(fmt)


@pytest.mark.parametrize("preset, fmt", sorted(NEW_MLX_PRESETS.items()))
def test_mlx_tool_parser_is_the_one_mlx_lm_infers_from_the_preset_template(preset, fmt):
    import importlib

    from mlx_lm.tokenizer_utils import _infer_tool_parser

    from harness.template.sources import load_template
    from parsers.reference.mlx_lm import FORMATS

    class Tokenizer:  # what _infer_tool_parser reads: the chat template, then (no match) the vocabulary
        chat_template = load_template(preset, offline=True).text

        def get_vocab(self):
            return dict.fromkeys(FORMATS[fmt].special_tokens, 0)

    assert _infer_tool_parser(Tokenizer()) == FORMATS[fmt].tool_module
    parser = mlx_parser(fmt)
    module = importlib.import_module(f"mlx_lm.tool_parsers.{FORMATS[fmt].tool_module}")
    tok = parser._rt.tokenizer
    assert (tok.tool_call_start, tok.tool_call_end, tok.tool_parser) == (
        module.tool_call_start,
        module.tool_call_end,
        module.parse_tool_call,
    )
    assert parser.name == f"mlx-lm==0.32.2:{fmt}"
    assert tok.has_thinking == (fmt in THINKING_FORMATS)
    if tok.has_thinking:
        assert (tok.think_start, tok.think_end) == THINK_MARKERS.get(fmt, ("<think>", "</think>"))


def test_mlx_new_formats_stop_markers_are_the_formats_and_special_tokens_are_single_ids():
    from harness.formats import get_format
    from parsers.reference.mlx_lm import FORMATS, UNSUPPORTED, _CharTokenizer

    for fmt in set(NEW_MLX_PRESETS.values()) | {"functiongemma"}:
        # the model's stop tokens, all of them the format's (glm47's also holds Spark 2.5's, not GLM's vocabulary)
        assert FORMATS[fmt].stop_markers and set(FORMATS[fmt].stop_markers) <= set(get_format(fmt).stop_markers), fmt
    assert not set(FORMATS) & set(UNSUPPORTED)
    tok = _CharTokenizer(("<think>", "</think>", "<tool_call>"))
    ids = tok.encode("a<think>b</think><tool_call>")
    assert ids == [ord("a"), 0x110000, ord("b"), 0x110001, 0x110002]
    assert tok.decode(ids) == "a<think>b</think><tool_call>"


def test_mlx_glm45_and_glm47_share_the_glm47_parser_on_the_same_template_shapes():
    # GLM-4.5 renders with GLM-4.6's template offline (the catalog's stand-in): same texts, same results
    assert {k: c.text for k, c in new_cases("glm-4.5").items()} == {k: c.text for k, c in new_cases("glm-4.6").items()}


G = "<start_function_call>"
E = "<end_function_call>"
ESC = "<escape>"
FG_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "note": {"type": "string"},
                    "where": {"type": "object"},
                },
            },
        },
    }
]


@pytest.mark.parametrize(
    "text, expected, diagnostic",
    [
        (f"{G}call:get_weather{{city:{ESC}Paris{ESC},days:3}}{E}", rendered_msg(None, [PARIS3]), None),
        (
            f"{G}call:get_weather{{city:{ESC}Paris{ESC},days:3}}{E}{G}call:get_weather{{city:{ESC}Rome{ESC},days:1}}{E}",
            rendered_msg(None, [PARIS3, ROME1]),
            None,
        ),
        (
            f"Let me check.{G}call:get_weather{{city:{ESC}Paris{ESC},days:3}}{E}",
            rendered_msg("Let me check.", [PARIS3]),
            None,
        ),
        # the call's end marker inside a string value ends the segment: dropped, the rest leaks into content
        (
            f"{G}call:get_weather{{city:{ESC}Paris{ESC},note:{ESC}a {E} b{ESC}}}{E}",
            rendered_msg(f"b{ESC}}}{E}"),
            "ValueError: No function provided.",
        ),
        # arguments end at the first "}": a brace inside a string or a nested object breaks the key scan
        (
            f"{G}call:get_weather{{city:{ESC}Paris{ESC},note:{ESC}a }} b{ESC}}}{E}",
            rendered_msg(None),
            "ValueError: substring not found",
        ),
        # (a nested object: its text up to the first "}" becomes a string value; what follows is lost)
        (
            f"{G}call:get_weather{{where:{{city:{ESC}Paris{ESC}}},days:3}}{E}",
            rendered_msg(None, [{"where": f"{{city:{ESC}Paris{ESC}"}]),
            None,
        ),
        # \w+ names: a hyphenated name finds no call
        (f"{G}call:get-weather{{days:3}}{E}", rendered_msg(None), "ValueError: No function provided."),
        # <start_function_response> is a stop token: what follows never reaches mlx-lm
        (
            f"{G}call:get_weather{{days:3}}{E}<start_function_response>x",
            rendered_msg(None, [{"days": 3}]),
            "never reach mlx-lm",
        ),
    ],
)
def test_mlx_functiongemma_hand_written_texts(text, expected, diagnostic):
    """No FunctionGemma template offline: texts in the shape harness/formats/functiongemma.py describes."""
    from harness.core.protocol import run_stream

    parser = mlx_parser("functiongemma")
    got = parser.parse(text, FG_TOOLS, "")
    assert plain_message(got) == expected
    assert (len(got.diagnostics) == 1 and diagnostic in got.diagnostics[0]) if diagnostic else got.diagnostics == []
    for chunks in ([text], list(text)):
        assert plain_message(run_stream(parser, chunks, FG_TOOLS, "")) == expected


@pytest.mark.parametrize(
    "fmt, text, tools, expected, diagnostic",
    [
        # glm47.py line 226 strips values; only {"type": "string"} keeps text (lines 25-39)
        (
            "glm47",
            (
                "<tool_call>f<arg_key>s</arg_key><arg_value> </arg_value><arg_key>b</arg_key><arg_value>true"
                "</arg_value></tool_call>"
            ),
            [
                {
                    "type": "function",
                    "function": {
                        "name": "f",
                        "parameters": {
                            "type": "object",
                            "properties": {
                                "s": {"type": "string"},
                                "b": {"anyOf": [{"type": "string"}, {"type": "boolean"}]},
                            },
                        },
                    },
                }
            ],
            msg(calls=[("f", {"s": "", "b": True})]),
            None,
        ),
        # qwen3_coder.py: numbers through float (lines 62-72); null whatever the schema (line 39)
        (
            "qwen3_coder",
            (
                "<tool_call>\n<function=f>\n<parameter=n>\n9007199254740993\n</parameter>\n<parameter=s>\n"
                "null\n</parameter>\n</function>\n</tool_call>"
            ),
            [
                {
                    "type": "function",
                    "function": {
                        "name": "f",
                        "parameters": {
                            "type": "object",
                            "properties": {"n": {"type": "integer"}, "s": {"type": "string"}},
                        },
                    },
                }
            ],
            msg(calls=[("f", {"n": 9007199254740992, "s": None})]),
            None,
        ),
        # minimax_m2.py line 92: the string "null" is None even when declared a string; line 191 strips values
        (
            "minimax_m2",
            (
                '</think><minimax:tool_call><invoke name="f"><parameter name="s">null</parameter>'
                '<parameter name="t"> x </parameter></invoke></minimax:tool_call>'
            ),
            [
                {
                    "type": "function",
                    "function": {
                        "name": "f",
                        "parameters": {
                            "type": "object",
                            "properties": {"s": {"type": "string"}, "t": {"type": "string"}},
                        },
                    },
                }
            ],
            msg(calls=[("f", {"s": None, "t": "x"})]),
            None,
        ),
        # muse_spark.py: only the ATEM block is parsed (values stripped, line 30); Muse Glimmer's message headers and
        # to=self reasoning stay content, since Muse Spark's response format is not set for a Glimmer checkpoint
        (
            "muse_glimmer",
            (
                " to=self<|message|>Hm.<|eom|><|start|>assistant to=f<|message|><atem:function_calls>\n"
                '<atem:invoke name="f">\n<atem:parameter name="a">x\n</atem:parameter>\n</atem:invoke>\n'
                "</atem:function_calls>"
            ),
            None,
            msg(" to=self<|message|>Hm.<|eom|><|start|>assistant to=f<|message|>", None, [("f", {"a": "x"})]),
            None,
        ),
        # mistral.py line 9: [\w-]+ before [ARGS] -- a dotted name keeps its last part; </s> in a string is the stop
        ("mistral", '[TOOL_CALLS]web.search[ARGS]{"q": "x"}', None, msg(calls=[("search", {"q": "x"})]), None),
        ("mistral", '[TOOL_CALLS]f[ARGS]{"q": "a </s> b"}', None, msg(), "Could not parse tool call"),
        # kimi_k2.py lines 16-18: an id without functions./:N finds no name; the whole section is dropped
        (
            "kimi_k2",
            (
                "<|tool_calls_section_begin|><|tool_call_begin|>functionsexec5<|tool_call_argument_begin|>{}"
                "<|tool_call_end|><|tool_call_begin|>functions.f:1<|tool_call_argument_begin|>{}<|tool_call_end|>"
                "<|tool_calls_section_end|>"
            ),
            None,
            msg(),
            "No tool call found.",
        ),
    ],
)
def test_mlx_newer_format_faults(fmt, text, tools, expected, diagnostic):
    parser = mlx_parser(fmt)
    got = parser.parse(text, tools, "")
    assert plain(got) == expected
    assert any(diagnostic in d for d in got.diagnostics) if diagnostic else got.diagnostics == []
    streamed, _, _session = stream_chars(parser, text, tools, "")
    assert streamed.to_json() == expected


def test_mlx_mistral_leaves_magistral_think_text_in_content():
    """Magistral Small 2506's plain-text ``<think>`` (canitoolcall ``mistral/vllm-v11-think-text``): the tekken
    vocabulary has no ``<think>`` token, so mlx-lm infers no thinking and the block stays content; the judge's
    reasoning policy decides whether that passes (docs/peers/canitoolcall.md)."""
    from harness.corpus.peers import canitoolcall
    from harness.formats import get_format
    from harness.score.policy import Policy
    from harness.score.runner import evaluate_case

    parser = mlx_parser("mistral")
    assert not parser._rt.tokenizer.has_thinking
    (case,) = [c for c in canitoolcall.load_suite().cases["mistral"] if c.id.endswith("/vllm-v11-think-text")]
    assert plain(parser.parse(case.text, case.tools, case.prefix)) == msg("<think>r</think>c")
    fmt, modes = get_format("mistral"), ["oneshot", "whole", "char"]
    verdicts = {
        form: {r.verdict for r in evaluate_case(case, parser, fmt, modes, seed=3, policy=Policy(reasoning=form))}
        for form in ("deepseek", "none", "any")
    }
    assert verdicts == {"deepseek": {"fail"}, "none": {"pass"}, "any": {"pass"}}


def test_mlx_minimax_prompt_starts_in_reasoning_and_calls_leave_it():
    parser = mlx_parser("minimax_m2")
    text = 'plan\n<minimax:tool_call>\n<invoke name="f">\n</invoke>\n</minimax:tool_call>'
    assert plain(parser.parse(text, None, "<think>\n")) == msg(reasoning="plan\n", calls=[("f", {})])
    assert plain(parser.parse("plan</think>Hi", None, "")) == msg("Hi", "plan")


@pytest.mark.parametrize("preset", ["glm-4.6", "glm-4.7-flash", "qwen3-coder-30b-a3b", "nemotron-3-nano", "minimax-m2"])
def test_mlx_prompt_of_a_case_is_its_templates_generation_prompt(preset):
    """The prompt the adapter gives mlx-lm for a case (tail + pre-filled prefix) ends like the generation prompt the
    preset's template renders for that case (thinking on exactly when the case has reasoning), so the server starts
    in the same state. GLM-4.6 alone differs by a newline: its thinking-off prompt ends ``<|assistant|>\\n<think>
    </think>``, its thinking-on one ``<|assistant|>``, and the render leaves that newline out of the prefix."""
    from harness.formats import get_format
    from harness.template.catalog import get_model
    from harness.template.render import HISTORY_USER, render_messages
    from harness.template.sources import load_template
    from parsers.reference.mlx_lm import FORMATS, prompt_end

    fmt = get_format(get_model(preset).format)
    template = load_template(preset, offline=True)
    parser = mlx_parser(fmt.name)
    for name, case in new_cases(preset).items():
        real = render_messages(
            template,
            [{"role": "user", "content": HISTORY_USER}],
            case.tools,
            add_generation_prompt=True,
            **{**fmt.template_vars, "enable_thinking": bool(case.expected.reasoning)},
        )
        ours = prompt_end(FORMATS[fmt.name], case.prefix)
        assert parser._rt.initial_state(ours) == parser._rt.initial_state(real), (name, ours)
        assert real.endswith(ours) or (preset, name) == ("glm-4.6", "reasoning_call"), (name, ours, real[-40:])

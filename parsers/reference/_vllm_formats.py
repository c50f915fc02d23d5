"""How :mod:`parsers.reference.vllm` serves each format (data only, standard library): :data:`FORMATS`, one
:class:`Launch` per format (the server flags, served model, real tokenizer, prompt and stop tokens), and
:data:`UNSUPPORTED`, the reason for every other format. Each setting's source: ``docs/engines/vllm.md``,
"Per-format configuration".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harness.formats.harmony import ends_with_call


def _ends_with(marker: str) -> Callable[[str], bool]:
    return lambda text: text.rstrip().endswith(marker)


@dataclass(frozen=True)
class Launch:
    """How a vLLM server is started for a model of one format, and what the adapter needs to know about its
    prompt and stop tokens."""

    tool_parser: str  # --tool-call-parser
    reasoning_parser: str | None  # --reasoning-parser (None: not given)
    model_name: str  # the served model whose chat template the corpus renders with
    tokenizer: str  # "gemma4" (from $TOOLCALL_HARNESS_TOKENIZER_GEMMA4), a TOKENIZER_PACKAGES key
    generation_prompt_tail: str  # the end of the rendered prompt (the parsers read it back to a turn boundary)
    tool_call_open: str
    stop_after_call: str  # the stop token a generation ends with after a closed call ...
    stop_otherwise: str  # ... and otherwise (the server's last step carries its id, not its text)
    call_at_end: Callable[[str], bool]  # whether the text ends with a closed call (which stop token ends it)
    thinking_kwarg: str | None = None  # chat_template_kwargs key a request sets from the prefix, if any
    thinking: Callable[[str], bool] = lambda prefix: False  # its value for a case's prefix
    tokenizer_mode: str = "hf"  # --tokenizer-mode
    model_type: str | None = None  # the checkpoint config's model_type, when AutoTokenizer's class choice needs it
    is_harmony: bool = False  # gpt-oss: ParserManager(is_harmony=True), the Harmony render path
    # "text": streamed chunks arrive as text without token ids (engine parsers lex text; docs/engines/vllm.md);
    # "encode": chunks are tokenized as a server's detokenizer would have produced them (parsers that read ids).
    stream_ids: str = "text"


FORMATS: dict[str, Launch] = {
    # The flags the Gemma 4 model card documents for vLLM.
    "gemma4": Launch(
        tool_parser="gemma4",
        reasoning_parser="gemma4",
        model_name="google/gemma-4-31B-it",
        tokenizer="gemma4",
        generation_prompt_tail="<|turn>model\n",
        tool_call_open="<|tool_call>",
        stop_after_call="<|tool_response>",
        stop_otherwise="<turn|>",
        call_at_end=_ends_with("<tool_call|>"),
        thinking_kwarg="enable_thinking",
        thinking=lambda prefix: not prefix.rstrip().endswith("<channel|>"),
    ),
    # vLLM's tool-calling docs for Qwen2.5 and Hermes 2 Pro / Hermes 3: --tool-call-parser hermes, no reasoning
    # parser (docs/engines/vllm.md, "Hermes": why Qwen3's --reasoning-parser qwen3 is not added).
    # Generation ends with <|im_end|> (the eos of Qwen2.5-Instruct's generation_config) in both cases.
    "hermes": Launch(
        tool_parser="hermes",
        reasoning_parser=None,
        model_name="Qwen/Qwen2.5-7B-Instruct",
        tokenizer="qwen",
        generation_prompt_tail="<|im_start|>assistant\n",
        tool_call_open="<tool_call>",
        stop_after_call="<|im_end|>",
        stop_otherwise="<|im_end|>",
        call_at_end=_ends_with("</tool_call>"),
    ),
    # Qwen3-Coder's model card and vLLM's docs: --tool-call-parser qwen3_coder (Qwen3-Coder does not think).
    "qwen3_coder": Launch(
        tool_parser="qwen3_coder",
        reasoning_parser=None,
        model_name="Qwen/Qwen3-Coder-30B-A3B-Instruct",
        tokenizer="qwen",
        generation_prompt_tail="<|im_start|>assistant\n",
        tool_call_open="<tool_call>",
        stop_after_call="<|im_end|>",
        stop_otherwise="<|im_end|>",
        call_at_end=_ends_with("</tool_call>"),
    ),
    # vLLM's tool-calling docs for Llama 3.1 / 3.2 JSON calls: --tool-call-parser llama3_json.
    "llama3_json": Launch(
        tool_parser="llama3_json",
        reasoning_parser=None,
        model_name="meta-llama/Llama-3.1-8B-Instruct",
        tokenizer="llama",
        generation_prompt_tail="<|start_header_id|>assistant<|end_header_id|>\n\n",
        tool_call_open="{",
        stop_after_call="<|eot_id|>",
        stop_otherwise="<|eot_id|>",
        call_at_end=lambda text: False,
        stream_ids="encode",
    ),
    # vLLM's tool-calling docs for DeepSeek-V3-0324 / DeepSeek-R1: --tool-call-parser deepseek_v3, with
    # --reasoning-parser deepseek_r1 (vLLM's reasoning docs) for R1's <think>; the corpus template
    # (R1-Distill-Qwen-32B's) switches thinking with enable_thinking. Untested (no vLLM build where it was written).
    "deepseek_v3": Launch(
        tool_parser="deepseek_v3",
        reasoning_parser="deepseek_r1",
        model_name="deepseek-ai/DeepSeek-R1",
        tokenizer="deepseek",
        model_type="deepseek_v3",
        generation_prompt_tail="<｜Assistant｜>",
        tool_call_open="<｜tool▁calls▁begin｜>",
        stop_after_call="<｜end▁of▁sentence｜>",
        stop_otherwise="<｜end▁of▁sentence｜>",
        call_at_end=lambda text: False,
        thinking_kwarg="enable_thinking",
        thinking=lambda prefix: not prefix.rstrip().endswith("</think>"),
        stream_ids="encode",
    ),
    # vLLM's docs for DeepSeek-V3.1: --tool-call-parser deepseek_v31 (+ --reasoning-parser deepseek_v3 for the
    # thinking switch, chat_template_kwargs {"thinking": ...}).
    "deepseek_v31": Launch(
        tool_parser="deepseek_v31",
        reasoning_parser="deepseek_v3",
        model_name="deepseek-ai/DeepSeek-V3.1",
        tokenizer="deepseek",
        model_type="deepseek_v3",
        generation_prompt_tail="<｜Assistant｜>",
        tool_call_open="<｜tool▁calls▁begin｜>",
        stop_after_call="<｜end▁of▁sentence｜>",
        stop_otherwise="<｜end▁of▁sentence｜>",
        call_at_end=lambda text: False,
        thinking_kwarg="thinking",
        thinking=lambda prefix: prefix.rstrip().endswith("<think>"),
        stream_ids="encode",
    ),
    # vLLM's DeepSeek-V3.2 recipe: --tokenizer-mode deepseek_v32 --tool-call-parser deepseek_v32
    # --reasoning-parser deepseek_v3.
    "deepseek_v32": Launch(
        tool_parser="deepseek_v32",
        reasoning_parser="deepseek_v3",
        model_name="deepseek-ai/DeepSeek-V3.2",
        tokenizer="deepseek",
        tokenizer_mode="deepseek_v32",
        generation_prompt_tail="<｜Assistant｜>",
        tool_call_open="<｜DSML｜function_calls>",
        stop_after_call="<｜end▁of▁sentence｜>",
        stop_otherwise="<｜end▁of▁sentence｜>",
        call_at_end=lambda text: False,
        thinking_kwarg="thinking",
        thinking=lambda prefix: not prefix.rstrip().endswith("</think>"),
        stream_ids="encode",
    ),
    # vLLM's DeepSeek-V4 recipe: --tokenizer-mode deepseek_v4 --tool-call-parser deepseek_v4 --reasoning-parser
    # deepseek_v4 (one DeepSeekV4Parser state machine, vllm/parser/deepseek_v4.py). vLLM 0.33.0 thinks unless the
    # request says otherwise (tokenizers/deepseek_v4.py), so a thinking-off prompt is {"thinking": false}.
    "deepseek_v4": Launch(
        tool_parser="deepseek_v4",
        reasoning_parser="deepseek_v4",
        model_name="deepseek-ai/DeepSeek-V4-Flash",
        tokenizer="deepseek",
        tokenizer_mode="deepseek_v4",
        generation_prompt_tail="<｜Assistant｜>",
        tool_call_open="<｜DSML｜tool_calls>",
        stop_after_call="<｜end▁of▁sentence｜>",
        stop_otherwise="<｜end▁of▁sentence｜>",
        call_at_end=lambda text: False,
        thinking_kwarg="thinking",
        thinking=lambda prefix: not prefix.rstrip().endswith("</think>"),
        stream_ids="encode",
    ),
    # vLLM's gpt-oss recipe: --tool-call-parser openai --enable-auto-tool-choice --reasoning-parser openai_gptoss;
    # model_type gpt_oss makes the server use the Harmony parser and render path.
    "harmony": Launch(
        tool_parser="openai",
        reasoning_parser="openai_gptoss",
        model_name="openai/gpt-oss-20b",
        tokenizer="harmony",
        generation_prompt_tail="<|start|>assistant",
        tool_call_open=" to=functions.",
        stop_after_call="<|call|>",
        stop_otherwise="<|return|>",
        call_at_end=ends_with_call,
        is_harmony=True,
        stream_ids="encode",
    ),
}
# vLLM 0.33.0 registers parsers for these too; what is missing offline (docs/engines/vllm.md, "Absent formats"):
UNSUPPORTED: dict[str, str] = {
    "cohere": "no Cohere tokenizer offline (vLLM's parsers would be --tool-call-parser cohere_command3 / "
    "cohere_command4, vllm/tool_parsers/cohere_command_tool_parser.py)",
    "glm45": "no GLM tokenizer offline (its <think>, <|assistant|> ... ids drive vLLM's glm45 parser)",
    "glm47": "no GLM tokenizer offline (its <think>, <|assistant|> ... ids drive vLLM's glm47 parser)",
    "minimax_m2": "no MiniMax-M2 tokenizer offline (its </think> id ends reasoning)",
    "kimi_k2": "no Kimi tokenizer offline (its section tokens are the kimi_k2 parser's token-id terminals)",
    "kimi_k3": "no Kimi K3 tokenizer offline (its kimi_k3 tool parser requires the model tokenizer, and the "
    "<|open|>/<|close|>/<|sep|> special tokens must reach it as text)",
    "mistral": "no v11+ Mistral tokenizer offline (Mistral Small 3.2's / Devstral's tekken.json): the bundled ones "
    "make vLLM's mistral parser expect the old JSON-list format",
    "mistral_reasoning": "no v13 Mistral tokenizer offline (Ministral 3 Reasoning's / Magistral's tekken.json): vLLM's "
    "mistral parser (--tool-call-parser mistral --reasoning-parser mistral) reads [THINK] as a special token of it",
    "functiongemma": "no FunctionGemma tokenizer or template offline",
    "deepseek_v41": "no DeepSeek V4.1 template or tokenizer offline (vLLM's parser would be --tool-call-parser "
    "deepseek_v41, vllm/parser/deepseek_v41.py: V4's parser with the spaced DSML tags)",
    "functionary_v32": "no Functionary parser: vLLM 0.33.0 registers none that reads >>>NAME segments",
    "functionary_v31": "no Functionary parser: vLLM 0.33.0 registers none that reads <function=NAME>{...}</function>",
    "firefunction_v2": "not configured: vLLM 0.33.0 has no FireFunction parser (its phi4_mini_json parser reads "
    "Phi-4-mini's functools[...] with a non-greedy regex, and vLLM's docs do not name it for FireFunction)",
    **dict.fromkeys(("seed_oss", "gigachat3", "gigachat31", "minicpm5"), "no tokenizer offline (vLLM has a parser)"),
    **dict.fromkeys(("apriel", "nemotron_v2"), "no parser: vLLM 0.33.0 registers none for its JSON-list calls"),
    "lfm2": "no LFM2 tokenizer offline (vLLM's parser would be --tool-call-parser lfm2)",
    "minimax_m3": "no MiniMax-M3 tokenizer offline (vLLM's parsers would be --tool-call-parser minimax_m3 "
    "--reasoning-parser minimax_m3)",
    "ling3": "no Ling 3.0 tokenizer offline (vLLM's parsers would be --tool-call-parser ling3 --reasoning-parser "
    "ling3)",
    "llama4_pythonic": "no Llama 4 tokenizer or template offline (vLLM's parser would be --tool-call-parser "
    "llama4_pythonic)",
    "command_r": "no parser: vLLM 0.33.0's Cohere parsers (cohere_command3 / cohere_command4) read <|START_ACTION|>",
    "apertus": "no Apertus tokenizer offline (vLLM's: --tool-call-parser apertus; it requires the model tokenizer)",
    "muse_glimmer": "no Muse Glimmer tokenizer offline (vLLM's: --tool-call-parser / --reasoning-parser muse_glimmer)",
}

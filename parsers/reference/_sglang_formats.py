"""How :mod:`parsers.reference.sglang` serves each format (data only, standard library): :data:`FORMATS`, one
:class:`Launch` per format (the server's ``--tool-call-parser`` / ``--reasoning-parser``, what its template detection
finds, the request's thinking switch), and :data:`UNSUPPORTED`, the reason for every other format. Each setting's
source: ``docs/engines/sglang.md``, "Per-format configuration".
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReasoningToggle:
    """``sglang.srt.parser.template_detection.ReasoningToggleConfig``: what SGLang's template detection
    (``detect_reasoning_pattern``, run by the server on the model's chat template at start-up and kept as
    ``template_manager.reasoning_config``) finds about the template's thinking switch."""

    toggle_param: str | None = None  # the chat_template_kwargs key that switches thinking
    default_enabled: bool | None = None  # thinking when the request does not set it
    special_case: str | None = None  # "always": the template always thinks


@dataclass(frozen=True)
class Launch:
    """How an SGLang server is launched for a model of one format (its ``--tool-call-parser`` and
    ``--reasoning-parser``), what its template detection finds, and what the request of a case carries."""

    tool_call_parser: str  # --tool-call-parser
    reasoning_parser: str | None  # --reasoning-parser (None: not given, no reasoning is separated)
    model_name: str
    # The chat template the two values below were detected from (a file of models/templates/ in the pinned
    # llama-cpp-python sdist; tests/engines/test_engine_sglang.py re-runs SGLang's detection on it).
    template: str = ""
    # ``template_manager.reasoning_config`` / ``template_manager.force_reasoning`` for that template.
    template_toggle: ReasoningToggle | None = None
    template_force_reasoning: bool = False
    # The request's ``chat_template_kwargs``. With ``thinking_off_prefix`` set, a case prefix ending with it
    # means the prompt was rendered with thinking off (the request carries ``chat_template_kwargs``), any other
    # prefix, ``""`` included, that it was rendered with thinking on (``thinking_kwargs``).
    chat_template_kwargs: dict | None = None
    thinking_off_prefix: str | None = None
    thinking_kwargs: dict | None = None
    # A stop token the server's detokenizer keeps at the end of the output (``trim_matched_stop``) where the
    # harness has removed it: put back when the text ends the way only that stop ends it (restore_kept_stop).
    kept_stop: str | None = None

    def request_kwargs(self, prefix: str) -> dict | None:
        """The ``chat_template_kwargs`` of the request a case with parse prefix ``prefix`` stands for."""
        if self.thinking_off_prefix is not None and not prefix.endswith(self.thinking_off_prefix):
            return self.thinking_kwargs
        return self.chat_template_kwargs


_ENABLE_THINKING_OFF_DEFAULT = ReasoningToggle(toggle_param="enable_thinking", default_enabled=False)
_ENABLE_THINKING_ON_DEFAULT = ReasoningToggle(toggle_param="enable_thinking", default_enabled=True)

FORMATS: dict[str, Launch] = {
    # Gemma 4's documented flags (also what ``auto`` detects from a template containing ``<|channel>``).
    "gemma4": Launch(
        tool_call_parser="gemma4",
        reasoning_parser="gemma4",
        model_name="google/gemma-4-31B-it",
        template="google-gemma-4-31B-it.jinja",
        template_toggle=_ENABLE_THINKING_OFF_DEFAULT,
        thinking_off_prefix="<|channel>thought\n<channel|>",
        thinking_kwargs={"enable_thinking": True},
    ),
    # Qwen 2.5: ``--tool-call-parser qwen`` (``qwen25`` is its deprecated alias, the same Qwen25Detector), no
    # reasoning parser; see "Hermes" in docs/engines/sglang.md (and why not ``hermes`` / ``--reasoning-parser qwen3``).
    "hermes": Launch(
        tool_call_parser="qwen",
        reasoning_parser=None,
        model_name="Qwen/Qwen2.5-7B-Instruct",
        template="Qwen-Qwen2.5-7B-Instruct.jinja",
    ),
    # GLM-4.5 / GLM-4.6 (SGLang's GLM guide): the thinking-off prompt pre-fills <think></think> (the request sent
    # {"enable_thinking": false}); any other prefix is the default request, thinking on (docs: "GLM").
    "glm45": Launch(
        tool_call_parser="glm45",
        reasoning_parser="glm45",
        model_name="zai-org/GLM-4.6",
        template="GLM-4.6.jinja",
        template_toggle=_ENABLE_THINKING_ON_DEFAULT,
        chat_template_kwargs={"enable_thinking": False},
        thinking_off_prefix="<think></think>",
    ),
    # GLM-4.7: its own tool-call parser, GLM-4.5's reasoning parser; the thinking-off prompt pre-fills </think>,
    # the thinking-on one <think> (the default request).
    "glm47": Launch(
        tool_call_parser="glm47",
        reasoning_parser="glm45",
        model_name="zai-org/GLM-4.7-Flash",
        template="GLM-4.7-Flash.jinja",
        template_toggle=_ENABLE_THINKING_ON_DEFAULT,
        chat_template_kwargs={"enable_thinking": False},
        thinking_off_prefix="</think>",
    ),
    # Qwen3-Coder: ``--tool-call-parser qwen3_coder`` and no reasoning parser (the model does not think).
    "qwen3_coder": Launch(
        tool_call_parser="qwen3_coder",
        reasoning_parser=None,
        model_name="Qwen/Qwen3-Coder-30B-A3B-Instruct",
        template="Qwen3-Coder.jinja",
    ),
    # MiniMax-M2: the flags of MiniMax's SGLang deployment guide and SGLang's cookbook.
    "minimax_m2": Launch(
        tool_call_parser="minimax-m2",
        reasoning_parser="minimax-append-think",
        model_name="MiniMaxAI/MiniMax-M2",
        template="MiniMax-M2.jinja",
    ),
    # Llama 3.1 / 3.2 JSON tool calling.
    "llama3_json": Launch(
        tool_call_parser="llama3",
        reasoning_parser=None,
        model_name="meta-llama/Llama-3.1-8B-Instruct",
        template="meta-llama-Llama-3.1-8B-Instruct.jinja",
    ),
    # Mistral Small 3.2 / Devstral Small: no reasoning parser (Magistral 2506's text <think> stays content).
    "mistral": Launch(
        tool_call_parser="mistral",
        reasoning_parser=None,
        model_name="mistralai/Mistral-Small-3.2-24B-Instruct-2506",
        template="Mistral-Small-3.2-24B-Instruct-2506.jinja",
    ),
    # Ministral 3 Reasoning / Magistral Small 2509: the mistral detector reads [TOOL_CALLS]NAME[ARGS]{...}, the
    # mistral reasoning detector [THINK]...[/THINK] (optional: not forced). Untested here (no SGLang build on the
    # machine this entry was written on).
    "mistral_reasoning": Launch(
        tool_call_parser="mistral",
        reasoning_parser="mistral",
        model_name="mistralai/Ministral-3-14B-Reasoning-2512",
        template="mistralai-Ministral-3-14B-Reasoning-2512.jinja",
    ),
    # Kimi-K2-Instruct (no reasoning; ``--reasoning-parser kimi_k2`` is for Kimi-K2-Thinking).
    "kimi_k2": Launch(
        tool_call_parser="kimi_k2",
        reasoning_parser=None,
        model_name="moonshotai/Kimi-K2-Instruct",
        template="moonshotai-Kimi-K2.jinja",
    ),
    # DeepSeek V3-0324 / R1 (SGLang's tool-parser docs: --tool-call-parser deepseekv3; R1's
    # --reasoning-parser deepseek-r1). Untested here (no SGLang build on the machine this entry was written on).
    "deepseek_v3": Launch(
        tool_call_parser="deepseekv3",
        reasoning_parser="deepseek-r1",
        model_name="deepseek-ai/DeepSeek-R1",
        template="deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
        thinking_off_prefix="</think>",
        thinking_kwargs={"enable_thinking": True},
    ),
    # Kimi K3: the parsers SGLang picks itself for a KimiK3 architecture (template_detection.py: reasoning and
    # tool-call parser "kimi_k3"); the template thinks unless ``thinking`` is false, whose prompt pre-fills
    # <|open|>response<|sep|> instead of <|open|>think<|sep|>.
    "kimi_k3": Launch(
        tool_call_parser="kimi_k3",
        reasoning_parser="kimi_k3",
        model_name="moonshotai/Kimi-K3",
        template="Kimi-K3.jinja",
        chat_template_kwargs={"thinking": False},
        thinking_off_prefix="<|open|>response<|sep|>",
    ),
    # DeepSeek V3.1 / V3.2 (SGLang's DeepSeek guide): thinking is ``chat_template_kwargs={"thinking": true}``.
    "deepseek_v31": Launch(
        tool_call_parser="deepseekv31",
        reasoning_parser="deepseek-v3",
        model_name="deepseek-ai/DeepSeek-V3.1",
        template="deepseek-ai-DeepSeek-V3.1.jinja",
    ),
    "deepseek_v32": Launch(
        tool_call_parser="deepseekv32",
        reasoning_parser="deepseek-v3",
        model_name="deepseek-ai/DeepSeek-V3.2",
        template="deepseek-ai-DeepSeek-V3.2.jinja",
        thinking_off_prefix="<think></think>",
        thinking_kwargs={"thinking": True},
    ),
    # gpt-oss: ``--tool-call-parser gpt-oss --reasoning-parser gpt-oss``; the template always reasons.
    "harmony": Launch(
        tool_call_parser="gpt-oss",
        reasoning_parser="gpt-oss",
        model_name="openai/gpt-oss-20b",
        template="openai-gpt-oss-120b.jinja",
        template_toggle=ReasoningToggle(special_case="always"),
        template_force_reasoning=True,
        kept_stop="<|call|>",
    ),
    # North Mini Code (Cohere2 MoE): the cohere_command4 detectors, written for Command A / cohere2_moe
    # (cohere_command4_detector.py, reasoning_parser.py CohereCommand4Detector; not auto-detected). Command R7B's
    # <|START_RESPONSE|> content is not theirs (docs: "Cohere").
    "cohere": Launch(
        tool_call_parser="cohere_command4",
        reasoning_parser="cohere_command4",
        model_name="CohereLabs/North-Mini-Code-1.0",
        template="Cohere2MoE.jinja",
    ),
    # DeepSeek V4: what ``auto`` resolves to for a DeepseekV4 architecture (template_detection.py
    # _architecture_auto_parsers) and SGLang's DeepSeek-V4 cookbook; thinking is {"thinking": true}.
    "deepseek_v4": Launch(
        tool_call_parser="deepseekv4",
        reasoning_parser="deepseek-v4",
        model_name="deepseek-ai/DeepSeek-V4-Flash",
        template="deepseek-ai-DeepSeek-V4.jinja",
        thinking_off_prefix="</think>",
        thinking_kwargs={"thinking": True},
    ),
    # LFM2.5-8B-A1B: SGLang's LFM2.5 cookbook (--tool-call-parser lfm2 --reasoning-parser qwen3).
    "lfm2": Launch(
        tool_call_parser="lfm2",
        reasoning_parser="qwen3",
        model_name="LiquidAI/LFM2.5-8B-A1B",
        template="LFM2.5-8B-A1B.jinja",
    ),
    # MiniMax-M3: minimax-m3 for both, what ``auto`` detects from the template (and the architecture); the catalog's
    # prompts are adaptive (no thinking_mode), so reasoning is not forced.
    "minimax_m3": Launch(
        tool_call_parser="minimax-m3",
        reasoning_parser="minimax-m3",
        model_name="MiniMaxAI/MiniMax-M3",
        template="MiniMax-M3.jinja",
    ),
    # Ling 3.0: ling3 for both (``auto``: template and BailingMoeV3 architecture); thinking on by default, the
    # thinking-off prompt pre-fills <think></think> ({"enable_thinking": false}).
    "ling3": Launch(
        tool_call_parser="ling3",
        reasoning_parser="ling3",
        model_name="inclusionAI/Ling-3.0-flash",
        template="inclusionai-ling-3.0-flash.jinja",
        chat_template_kwargs={"enable_thinking": False},
        thinking_off_prefix="<think></think>",
    ),
    # GigaChat 3 and 3.1: the gigachat3 detector reads both call headers; the templates write no reasoning.
    "gigachat3": Launch(
        tool_call_parser="gigachat3",
        reasoning_parser=None,
        model_name="ai-sage/GigaChat3-10B-A1.8B",
        template="GigaChat3-10B-A1.8B.jinja",
    ),
    "gigachat31": Launch(
        tool_call_parser="gigachat3",
        reasoning_parser=None,
        model_name="ai-sage/GigaChat3.1-10B-A1.8B",
        template="GigaChat3.1-10B-A1.8B.jinja",
    ),
    # MiniCPM5: OpenBMB's SGLang launch, --tool-call-parser minicpm5 and no reasoning parser.
    "minicpm5": Launch(
        tool_call_parser="minicpm5",
        reasoning_parser=None,
        model_name="openbmb/MiniCPM5-1B",
        template="openbmb-MiniCPM5-1B.jinja",
    ),
    # Apertus, Muse Glimmer: the detectors registered for them (apertus2509, which template_detection.py also picks
    # for a vocabulary holding <|inner_prefix|>; muse), tool call and reasoning alike; detection finds no thinking
    # toggle in either template. The muse detector JSON-decodes every value, whatever the tool's schema says.
    "apertus": Launch("apertus2509", "apertus2509", "swiss-ai/Apertus-8B-Instruct-2509", "Apertus-8B-Instruct.jinja"),
    "muse_glimmer": Launch("muse", "muse", "meta-models/Muse-Glimmer-30B", "muse-glimmer.jinja"),
}
# No detector, or nothing offline to serve it with (SGLang 0.5.23's ToolCallParserEnum):
UNSUPPORTED = {
    "deepseek_v41": "no DeepSeek V4.1 template offline to serve it with (the detector would be deepseekv41)",
    "functionary_v32": "no detector reads Functionary's >>>NAME segments",
    "firefunction_v2": "no detector reads FireFunction's functools[...]",
    "functiongemma": "no FunctionGemma detector: the gemma4 detector reads only Gemma 4's <|tool_call> markup",
    "llama4_pythonic": "no Llama 4 template offline to serve it with (the detector would be pythonic)",
    **dict.fromkeys(("seed_oss", "apriel", "nemotron_v2"), "no detector for its calls"),
    "functionary_v31": "no detector reads Functionary v3.1's <function=NAME>{...}</function> calls",
    "command_r": "no detector: cohere_command4 reads <|START_ACTION|>, not Command R+'s Action: block",
}

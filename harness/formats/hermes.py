"""Hermes JSON tool-call format facts (Hermes 2 Pro / Hermes 3, Qwen 2.5, Qwen3, SmolLM2 with a Hermes prompt,
IBM Granite 4.0 / 4.1, Reka Edge 2603).

Source: ``NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja`` and ``Qwen-Qwen2.5-7B-Instruct.jinja`` in the
llama-cpp-python 0.3.36 sdist (``vendor/llama.cpp/models/templates``).

ChatML turns (``<|im_start|>ROLE\\n ... <|im_end|>``). A call is a JSON object ``{"name": ..., "arguments": {...}}``
between ``<tool_call>\\n`` and ``\\n</tool_call>``; several calls follow one another. Arguments are written with
``tojson`` (transformers' version: no HTML escaping, non-ASCII kept), so a string value may hold a literal
``</tool_call>``. Hermes 3 drops an assistant turn's content when it has tool calls; Qwen 2.5 writes it first.
Generation ends with ``<|im_end|>``.

Hermes 3 writes ``bos_token`` first; ChatML models (Qwen, SmolLM2) have no BOS text, and Llama 3.1's
``<|begin_of_text|>`` is added by the engine's tokenizer, so prompts render with an empty ``bos_token``.

Granite 4.0 / 4.1 (``ibm-granite-granite-4.0.jinja`` / ``ibm-granite-granite-4.1.jinja``) write the same calls in
Granite turns: ``<|start_of_role|>ROLE<|end_of_role|> ... <|end_of_text|>`` (4.0 lines 60-62, 81-83, 103; 4.1 lines
58, 77-79, 99), generation prompt ``<|start_of_role|>assistant<|end_of_role|>`` (4.0 line 117, 4.1 line 113). Each
call is ``<tool_call>\\n{"name": "NAME", "arguments": ARGS}\\n</tool_call>``, ARGS a string as is or ``tojson``
(4.0 lines 92-100, 4.1 lines 88-96); a ``\\n`` goes before a call unless it is the first with empty content
(4.0 lines 86-88, 4.1 lines 82-84); the content comes first. Tool results go in a user turn as
``<tool_response>``...``</tool_response>`` (4.0 lines 104-113). Neither writes reasoning.

Reka Edge (``Reka-Edge.jinja``) writes the same calls in ``human: ...<sep>`` / ``assistant: ...`` turns: the content,
a ``\\n`` before the first call when the content does not end with one (lines 115-118), then per call
``<tool_call>\\n{"name": "NAME", "arguments": ARGS}\\n</tool_call>`` with no separator between calls, ARGS a
string as is or ``tojson(ensure_ascii=True)`` (lines 119-136: non-ASCII as ``\\uXXXX``); the turn ends
``\\n\\n<sep>`` (line 139), ``<sep>`` its stop marker. With ``enable_thinking`` the turn after the last user message
starts ``<think>\\nREASONING\\n</think>\\n\\n`` (lines 107-113) and the generation prompt is ``assistant: <think>\\n``;
without it the prompt is ``assistant:`` (lines 152-160), and the turn's ``assistant: `` leaves a space before the
completion. Tool results go in a ``human: `` turn as ``<tool_response>\\n...\\n</tool_response>`` (lines 141-149).
"""

from harness.formats import FormatSpec, Markers

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
#: the markers and stop markers of the ChatML templates (Hermes, Qwen, SmolLM2), Granite 4's turn markers and
#: Reka Edge's separator.
CHATML_MARKERS = (CALL_OPEN, CALL_CLOSE, "<|im_start|>", "<|im_end|>", "<tool_response>", "</tool_response>")
CHATML_STOPS = ("<|im_end|>", "<|endoftext|>")
GRANITE_MARKERS = ("<|start_of_role|>", "<|end_of_role|>", "<|end_of_text|>")
#: Reka Edge's turn separator (its stop marker).
REKA_SEP = "<sep>"


SPEC = FormatSpec(
    name="hermes",
    markers=(*CHATML_MARKERS, *GRANITE_MARKERS, REKA_SEP),
    stop_markers=(*CHATML_STOPS, "<|end_of_text|>", REKA_SEP),
    call=Markers(CALL_OPEN, CALL_CLOSE),
    reasoning=Markers("<think>", "</think>"),
    arguments="json",
    call_newlines=True,
    vocabulary="qwen",
    template_vars={"bos_token": ""},
    role_headers=("<|im_start|>assistant\n", "<|start_of_role|>assistant<|end_of_role|>", "assistant:"),
    peers=(
        "canitoolcall:qwen3-hermes",
        "llama.cpp:NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
        "llama.cpp:NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja",
        "llama.cpp:Qwen-Qwen2.5-7B-Instruct.jinja",
        "llama.cpp:Qwen-Qwen3-0.6B.jinja",
        "llama.cpp:Qwen-QwQ-32B.jinja",
        "llama.cpp:MiMo-VL.jinja",
        "llama.cpp:ibm-granite-granite-4.0.jinja",
        "llama.cpp:ibm-granite-granite-4.1.jinja",
        "llama.cpp:Reka-Edge.jinja",
    ),
    grammar="qwen_3",
    source="NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja, Qwen-Qwen2.5-7B-Instruct.jinja, "
    "ibm-granite-granite-4.0.jinja, ibm-granite-granite-4.1.jinja, Reka-Edge.jinja (llama-cpp-python 0.3.36 sdist)",
)

"""LFM2 / LFM2.5 tool-call format facts (Liquid AI: ``<|tool_call_start|>[NAME(key=value, ...)]<|tool_call_end|>``).

Sources: ``LFM2.5-8B-A1B.jinja``, ``LFM2-8B-A1B.jinja`` and ``LFM2.5-Instruct.jinja`` in the llama-cpp-python 0.3.36
sdist (``vendor/llama.cpp/models/templates``); line numbers are ``LFM2.5-8B-A1B.jinja``'s unless named.

- Line 1: ``{{- bos_token -}}`` (``<|startoftext|>``, which the engine's tokenizer adds itself): empty
  ``bos_token``.
- Lines 53-67: tools go into the system turn as ``List of tools: [`` + each tool ``tojson`` + ``]``
  (``LFM2-8B-A1B.jinja`` lines 9-19 wrap the list in ``<|tool_list_start|>``/``<|tool_list_end|>``); turns are
  ``<|im_start|>ROLE\\n ... <|im_end|>\\n`` (line 75, 104, 110); the generation prompt is ``<|im_start|>assistant\\n``
  (line 114) and nothing is pre-filled after it (parse prefix ``""``).
- Lines 78-79: an assistant turn after the last user message writes ``<think>`` + ``message.thinking`` +
  ``</think>`` first (the ``reasoning`` block; never pre-filled), then its content (lines 81-98), then its
  calls (line 99).
- Lines 32-43 (``render_tool_calls``): all the calls of a turn in one block,
  ``<|tool_call_start|>[NAME(key=VALUE, ...), NAME2(...)]<|tool_call_end|>``; ``NAME`` and each key pasted raw,
  arguments joined by ``", "``, calls by ``", "``.
- Lines 4-12 (``format_arg_value``): a string value is pasted raw between single quotes (``'`` + value + ``'``,
  nothing escaped), a mapping with ``tojson`` (JSON inside the list: ``true``/``false``/``null``, double-quoted
  strings with JSON escapes), anything else with ``| string``: Python's ``str`` (``True``, ``None``, ``1.5``,
  ``1e-07``, a list as Python's ``repr``: ``['a', 1, True]``).
- ``LFM2-8B-A1B.jinja`` (lines 24-34) and ``LFM2.5-Instruct.jinja`` (lines 30-42) write only ``content``: an
  assistant turn's calls are not rendered (the model writes the same markup in its content; llama.cpp's
  ``test-chat.cpp`` runs one parser, ``test_lfm2_parser``, for all three templates, line 5227-5233).
- Generation ends with ``<|im_end|>`` (LFM2's eos).

``unrepresentable``: ``'`` and ``\\`` in a string value -- the template pastes strings raw between single quotes,
so a quote ends the string and a backslash reads as an escape (Python's rules, as llama.cpp and vLLM read it).
"""

from __future__ import annotations

from harness.formats import FormatSpec, Markers

CALL_OPEN = "<|tool_call_start|>"
CALL_CLOSE = "<|tool_call_end|>"
IM_END = "<|im_end|>"


SPEC = FormatSpec(
    name="lfm2",
    markers=(
        CALL_OPEN,
        CALL_CLOSE,
        "<|im_start|>",
        IM_END,
        "<|tool_list_start|>",
        "<|tool_list_end|>",
        "<|tool_response_start|>",
        "<|tool_response_end|>",
    ),
    stop_markers=(IM_END,),
    call=Markers(CALL_OPEN, CALL_CLOSE),
    reasoning=Markers("<think>", "</think>"),
    arguments="pythonic",
    vocabulary=None,
    no_vocabulary="the LFM2 / LFM2.5 tokenizers (LiquidAI on Hugging Face) are in no PyPI package",
    unrepresentable=("'", "\\"),
    template_vars={"bos_token": ""},
    role_headers=("<|im_start|>assistant\n",),
    peers=("llama.cpp:LFM2-8B-A1B.jinja", "llama.cpp:LFM2.5-8B-A1B.jinja", "llama.cpp:LFM2.5-Instruct.jinja"),
    source="LFM2.5-8B-A1B.jinja, LFM2-8B-A1B.jinja, LFM2.5-Instruct.jinja (llama-cpp-python 0.3.36 sdist)",
)

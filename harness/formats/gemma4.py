"""Gemma 4 tool-call format facts.

Source: llama.cpp's copy of the Gemma 4 chat template, ``google-gemma-4-31B-it.jinja`` in the
llama-cpp-python 0.3.36 sdist (``vendor/llama.cpp/models/templates``), and the token table of
``ggml-vocab-gemma-4.gguf`` in the same sdist.

A call is written ``<|tool_call>call:NAME{key:value,...}<tool_call|>``: keys bare and sorted (dictsort),
strings between ``<|"|>`` markers with nothing escaped, nested objects/arrays inline, null as ``None``,
booleans ``true``/``false``, numbers via Python ``str()``. After a call with no tool response the template
writes ``<|tool_response>``, which ends generation. With thinking off the generation prompt ends with the
pre-filled empty thought channel ``<|channel>thought\\n<channel|>``. Reasoning is written
``<|channel>thought\\nTEXT\\n<channel|>`` (line 238), the ``thought`` block.
"""

from harness.formats import FormatSpec, Markers

STRING_DELIM = '<|"|>'
CALL_OPEN = "<|tool_call>"
CALL_CLOSE = "<tool_call|>"
CHANNEL_OPEN = "<|channel>"
CHANNEL_CLOSE = "<channel|>"


SPEC = FormatSpec(
    name="gemma4",
    markers=(
        CALL_OPEN,
        CALL_CLOSE,
        STRING_DELIM,
        CHANNEL_OPEN,
        CHANNEL_CLOSE,
        "<|tool_response>",
        "<tool_response|>",
        "<|tool>",
        "<tool|>",
        "<|turn>",
        "<turn|>",
        "<|think|>",
    ),
    stop_markers=("<|tool_response>", "<turn|>", "<eos>"),
    call=Markers(CALL_OPEN, CALL_CLOSE),
    thought=Markers(CHANNEL_OPEN + "thought\n", CHANNEL_CLOSE),
    arguments="quote-token",
    string_delimiter=STRING_DELIM,
    vocabulary="gemma4",
    unrepresentable=(STRING_DELIM,),
    role_headers=("<|turn>model\n",),
    peers=("canitoolcall:gemma4", "llama.cpp:google-gemma-4-31B-it.jinja"),
    grammar="gemma_4",
    source="google-gemma-4-31B-it.jinja (llama-cpp-python 0.3.36 sdist)",
)

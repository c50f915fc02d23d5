"""GigaChat 3.1 tool-call format facts: one JSON call after ``<|function_call|>``.

Source: ``GigaChat3.1-10B-A1.8B.jinja`` in the llama-cpp-python 0.3.36 sdist (``vendor/llama.cpp/models/templates``);
line numbers below are that file's.

An assistant turn (``render_role_message``, lines 191-209; tokens lines 216-220)::

    assistant<|role_sep|>\\nCONTENT<|function_call|>{"name": "NAME", "arguments": ARGS}<|message_sep|>\\n\\n

- Only the first call of a turn is written (``message.tool_calls[0]``, line 204): a turn has at most one call.
- ARGS is a string as is, else ``tojson(ensure_ascii=False)`` (lines 182-185); the name is written raw between
  quotes (line 187). Nothing closes the call: ``<|message_sep|>`` ends the turn, and generation.
- The content comes first, as given (line 201). The generation prompt is ``assistant<|role_sep|>\\n`` (line 337);
  the template writes no reasoning.
"""

from harness.formats import FormatSpec, Markers

CALL_OPEN = "<|function_call|>"
MESSAGE_SEP = "<|message_sep|>"
ROLE_SEP = "<|role_sep|>"

SPEC = FormatSpec(
    name="gigachat31",
    markers=(CALL_OPEN, MESSAGE_SEP, ROLE_SEP),
    stop_markers=(MESSAGE_SEP + "\n\n", MESSAGE_SEP),
    call=Markers(CALL_OPEN, None),
    arguments="json",
    vocabulary=None,
    no_vocabulary="GigaChat's tokenizer is not available offline",
    role_headers=("assistant" + ROLE_SEP + "\n",),
    peers=("llama.cpp:GigaChat3.1-10B-A1.8B.jinja",),
    source="GigaChat3.1-10B-A1.8B.jinja (llama-cpp-python 0.3.36 sdist)",
)

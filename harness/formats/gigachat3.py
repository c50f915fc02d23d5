"""GigaChat 3 tool-call format facts: one JSON call in a ``function call`` role message after the assistant's.

Source: ``GigaChat3-10B-A1.8B.jinja`` in the llama-cpp-python 0.3.36 sdist (``vendor/llama.cpp/models/templates``);
line numbers below are that file's.

An assistant turn with a call is two role messages (``render_role_message`` line 187, tokens lines 213-216,
assistant lines 326-341)::

    assistant<|role_sep|>\\nCONTENT<|message_sep|>\\n\\n
    function call<|role_sep|>\\n{"name": "NAME", "arguments": ARGS}<|message_sep|>\\n\\n

(one text, cut above after ``\\n\\n``).

- Only the first call of a turn is written (``message.tool_calls[0]``, line 331): a turn has at most one call.
- ARGS is a string as is, else ``tojson(ensure_ascii=False)`` (lines 198-201); the name is written raw between
  quotes (line 206). The call opener is the assistant message's end plus the ``function call`` role header
  (:data:`CALL_OPEN`); nothing closes the call but the message end ``<|message_sep|>``, which ends generation.
- The content comes first, as given (line 338; ``''`` when none). The generation prompt is
  ``assistant<|role_sep|>\\n`` (line 352); the template writes no reasoning.
"""

from harness.formats import FormatSpec, Markers

MESSAGE_SEP = "<|message_sep|>"
ROLE_SEP = "<|role_sep|>"
CALL_OPEN = MESSAGE_SEP + "\n\nfunction call" + ROLE_SEP

SPEC = FormatSpec(
    name="gigachat3",
    markers=(CALL_OPEN, MESSAGE_SEP, ROLE_SEP),
    stop_markers=(MESSAGE_SEP + "\n\n", MESSAGE_SEP),
    call=Markers(CALL_OPEN, None),
    arguments="json",
    call_newlines=True,
    vocabulary=None,
    no_vocabulary="GigaChat's tokenizer is not available offline",
    role_headers=("assistant" + ROLE_SEP + "\n",),
    peers=("llama.cpp:GigaChat3-10B-A1.8B.jinja",),
    source="GigaChat3-10B-A1.8B.jinja (llama-cpp-python 0.3.36 sdist)",
)

"""ServiceNow Apriel tool-call format facts (Apriel 1.5 and Apriel 1.6 Thinker): a JSON list of calls in
``<tool_calls>`` tags.

Sources: ``unsloth-Apriel-1.5.jinja`` and ``Apriel-1.6-15b-Thinker-fixed.jinja`` in the llama-cpp-python 0.3.36
sdist (``vendor/llama.cpp/models/templates``); line numbers are those files'.

All calls of a turn in one block (1.5 lines 101-112, 1.6 lines 127-139)::

    <tool_calls>[{"name": "NAME", "arguments": ARGS}, {"name": "NAME2", "arguments": ARGS2}]</tool_calls>

- ``\\n`` before ``<tool_calls>[``; objects joined by ``", "``; ARGS is ``tojson`` of the arguments (non-ASCII
  kept, nothing escaped beyond JSON), so a string may hold ``</tool_calls>`` literally. Every call but those of
  the last assistant message also gets ``, "id": "ID"`` after ARGS (1.5 lines 105-107, 1.6 lines 132-134).
- The content comes first, as given (1.5 lines 89-97, 1.6 lines 109-121). Apriel 1.5 then ends the turn with
  ``\\n<|end|>\\n`` (line 113), Apriel 1.6 writes nothing after the last message (line 142).
- Apriel 1.6 reasons first: its generation prompt is ``\\n<|begin_assistant|>\\nHere are my reasoning steps:\\n``
  (line 168, ``reasoning_asst_turn_start`` line 21), and the last assistant turn writes its reasoning then
  ``\\n[BEGIN FINAL RESPONSE]\\n`` before the content (line 106). The completion therefore starts inside the
  reasoning and ``[BEGIN FINAL RESPONSE]`` ends it. Apriel 1.5 writes no ``reasoning_content`` (its
  ``<thinking>`` block reads a ``thought`` key, line 98-100); its generation prompt is ``<|assistant|>\\n``
  (line 123).
- Apriel 1.5 writes ``eos_token`` after ``<|end|>`` (line 113); generation stops at ``<|end|>``, so renders get an
  empty ``eos_token`` (the text after the stop marker is never generated).
"""

from harness.core.scenarios import call, edge, text_case
from harness.formats import FormatSpec, Markers

CALL_OPEN = "<tool_calls>"
CALL_CLOSE = "</tool_calls>"
REASONING_OPEN = "Here are my reasoning steps:\n"
REASONING_CLOSE = "[BEGIN FINAL RESPONSE]"
END = "<|end|>"


def edge_scenarios() -> list:
    """Apriel-specific curated shapes (ids ``edge-apriel-...``): the block closer inside strings, calls after
    reasoning."""
    return [
        text_case("apriel-block-close-in-value", ["closer-in-string", "marker-in-string"], 'a ]</tool_calls> "b'),
        edge(
            "apriel-reasoning-then-parallel",
            ["reasoning", "parallel"],
            [call("get_weather", {"city": "Paris"}), call("get_weather", {"city": "Oslo"})],
            reasoning="Two cities, one <tool_calls> block.",
        ),
    ]


SPEC = FormatSpec(
    name="apriel",
    markers=(
        CALL_OPEN,
        CALL_CLOSE,
        REASONING_CLOSE,
        END,
        "<|begin_system|>",
        "<|begin_user|>",
        "<|begin_assistant|>",
        "<|begin_tool_result|>",
        "<|system|>",
        "<|user|>",
        "<|assistant|>",
        "<|tool_result|>",
    ),
    stop_markers=(END,),
    call=Markers(CALL_OPEN, CALL_CLOSE),
    reasoning=Markers(REASONING_OPEN, REASONING_CLOSE),
    arguments="json",
    template_vars={"eos_token": ""},
    vocabulary=None,
    no_vocabulary="Apriel's tokenizer is not available offline",
    edge_scenarios=edge_scenarios,
    role_headers=("\n<|begin_assistant|>\n", "<|assistant|>\n"),
    peers=("llama.cpp:unsloth-Apriel-1.5.jinja", "llama.cpp:Apriel-1.6-15b-Thinker-fixed.jinja"),
    source="unsloth-Apriel-1.5.jinja, Apriel-1.6-15b-Thinker-fixed.jinja (llama-cpp-python 0.3.36 sdist)",
)

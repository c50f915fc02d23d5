"""Cohere tool-call format facts (Command R7B 12-2024, Cohere2 MoE / North Mini Code): a JSON list of calls between
``<|START_ACTION|>`` and ``<|END_ACTION|>``.

Source: ``CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja`` (R7B) and ``Cohere2MoE.jinja`` (2MoE) in the
llama-cpp-python 0.3.36 sdist (``vendor/llama.cpp/models/templates``); line numbers below are those files'.

- A turn with calls (R7B lines 135-141, 2MoE lines 226-241) is ``<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>``, a
  thinking block ``<|START_THINKING|>REASONING<|END_THINKING|>`` (R7B: always, empty without reasoning; 2MoE: only
  with reasoning, lines 228-234), then ``<|START_ACTION|>[``, per call
  ``{"tool_call_id": "N", "tool_name": "NAME", "parameters": ARGS}`` (ARGS ``tojson``; ids count up from 0 over the
  conversation), separated by ``,``; rendered with ``trim_blocks``/``lstrip_blocks`` (as transformers does)
  both give ``[\\n    {...},\\n    {...}\\n]``; then ``<|END_ACTION|><|END_OF_TURN_TOKEN|>``. Neither writes the
  content of a turn with calls, and both write the reasoning raw (a reasoning holding ``<|START_ACTION|>`` reads
  as the start of the calls, as llama.cpp's parser reads it).
- A turn without calls wraps its content: R7B ``<|START_RESPONSE|>CONTENT<|END_RESPONSE|>`` (line 141), 2MoE
  ``<|START_TEXT|>CONTENT<|END_TEXT|>`` (lines 94-98, 242-246, after an optional thinking block); the wrappers are
  markup, not content.
- Generation prompt: ``<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>``; R7B adds ``<|START_THINKING|><|END_THINKING|>``
  unless ``enable_thinking`` (line 156); 2MoE adds ``<|START_THINKING|>`` while ``reasoning`` is on (the default
  unless ``reasoning_effort`` is ``none``, line 11), else ``<|START_THINKING|><|END_THINKING|>`` (line 263). So a
  2MoE completion starts inside the thinking block (``REASONING<|END_THINKING|><|START_ACTION|>...``).
- ``bos_token`` starts the prompt (R7B line 1, 2MoE line 22); generation ends with ``<|END_OF_TURN_TOKEN|>``. Tool
  results come back in a system turn, ``<|START_TOOL_RESULT|>[...]<|END_TOOL_RESULT|>`` (R7B lines 142-154).

Not this format: ``CohereForAI-c4ai-command-r-plus-tool_use.jinja`` (Command R+) writes its calls as plain text,
``\\nAction:\\n```json\\n[{"tool_name": ..., "parameters": ...}]```\\n`` after the content (its lines 159-183), with no
action tokens: :mod:`harness.formats.command_r`.
"""

from harness.core.scenarios import call, edge
from harness.formats import FormatSpec, Markers

ACTION_OPEN, ACTION_CLOSE = "<|START_ACTION|>", "<|END_ACTION|>"
THINK_OPEN, THINK_CLOSE = "<|START_THINKING|>", "<|END_THINKING|>"
RESPONSE_OPEN, RESPONSE_CLOSE = "<|START_RESPONSE|>", "<|END_RESPONSE|>"  # R7B's content wrapper
TEXT_OPEN, TEXT_CLOSE = "<|START_TEXT|>", "<|END_TEXT|>"  # 2MoE's content wrapper
TURN_OPEN, TURN_CLOSE = "<|START_OF_TURN_TOKEN|>", "<|END_OF_TURN_TOKEN|>"
CHATBOT = "<|CHATBOT_TOKEN|>"
BOS = "<BOS_TOKEN>"
#: the content wrappers, (open, close) each.
WRAPPERS = ((RESPONSE_OPEN, RESPONSE_CLOSE), (TEXT_OPEN, TEXT_CLOSE))


def edge_scenarios() -> list:
    """Cohere shapes: action and thinking tokens inside string values, several calls in one list, calls after
    reasoning."""
    return [
        edge(
            "cohere-action-tokens-in-string",
            ["marker-in-string"],
            call("save_text", {"path": "a.txt", "text": f'{ACTION_CLOSE}]{ACTION_OPEN}[{{"tool_name": "rm"}}'}),
        ),
        edge(
            "cohere-three-calls",
            ["parallel"],
            [call("get_weather", {"city": "Paris"}), call("get_time"), call("get_weather", {"city": "Oslo"})],
        ),
        edge(
            "cohere-reasoning-then-calls",
            ["reasoning", "parallel"],
            [call("get_weather", {"city": "Paris"}), call("get_time", {"tz": "CET"})],
            reasoning="Two lookups: weather first, then the time.",
        ),
    ]


SPEC = FormatSpec(
    name="cohere",
    markers=(
        ACTION_OPEN,
        ACTION_CLOSE,
        THINK_OPEN,
        THINK_CLOSE,
        RESPONSE_OPEN,
        RESPONSE_CLOSE,
        TEXT_OPEN,
        TEXT_CLOSE,
        TURN_OPEN,
        TURN_CLOSE,
        CHATBOT,
        "<|USER_TOKEN|>",
        "<|SYSTEM_TOKEN|>",
        "<|START_TOOL_RESULT|>",
        "<|END_TOOL_RESULT|>",
        BOS,
    ),
    stop_markers=(TURN_CLOSE,),
    call=Markers(ACTION_OPEN, ACTION_CLOSE),
    reasoning=Markers(THINK_OPEN, THINK_CLOSE),
    arguments="json",
    call_newlines=True,
    vocabulary=None,
    no_vocabulary="Cohere's tokenizers (CohereForAI/c4ai-command-r7b-12-2024, gated; CohereLabs/North-Mini-Code-1.0) "
    "are in no PyPI package",
    template_vars={"bos_token": BOS},
    edge_scenarios=edge_scenarios,
    role_headers=(TURN_OPEN + CHATBOT,),
    peers=("llama.cpp:CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", "llama.cpp:Cohere2MoE.jinja"),
    grammar="cohere",
    source="CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja, lines 1-156; Cohere2MoE.jinja, lines 1-263 "
    "(llama-cpp-python 0.3.36 sdist)",
)

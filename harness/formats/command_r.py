"""Command R+ tool-call format facts (CohereForAI/c4ai-command-r-plus, 04-2024): ``Action:`` and a JSON list of
calls in a ``json`` code block, written as plain text after the content.

Source: ``CohereForAI-c4ai-command-r-plus-tool_use.jinja`` in the llama-cpp-python 0.3.36 sdist
(``vendor/llama.cpp/models/templates``; the sdist holds no Command R (non-plus) template); line numbers below are
that file's.

- Line 111: the prompt starts with ``bos_token`` (``<BOS_TOKEN>``, ``template_vars``). Lines 119-152: a system
  turn with the preamble and the tools as Python stubs (lines 68-109), which fail on a parameter without a
  ``description`` (line 104 concatenates it) and on an object schema without ``additionalProperties`` (line 15):
  :func:`declare_tools` completes the declarations; a type name the macro does not map (``null``) recurses
  without end (lines 16-24), so such a scenario is unrepresentable. Turns are
  ``<|START_OF_TURN_TOKEN|>`` + ``<|USER_TOKEN|>``/``<|SYSTEM_TOKEN|>``/``<|CHATBOT_TOKEN|>`` + the trimmed
  content + ``<|END_OF_TURN_TOKEN|>`` (lines 155-158, 185); tool results come back in a system turn,
  ``<results>\\n...</results>`` (lines 186-189).
- Lines 159-183, a turn with calls: ``<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>``, the trimmed content, then
  ``\\nAction:\\n```json\\n[\\n``, per call ``    {\\n        "tool_name": "NAME",\\n        "parameters": ARGS``
  ``\\n    }`` joined by ``,\\n`` (``NAME`` pasted raw between quotes; ``ARGS`` ``tojson(indent=4)|indent(8)``, ``{}``
  for empty arguments, line 176), then ``\\n]```\\n``: no ``<|END_OF_TURN_TOKEN|>`` after the list. Content comes
  before the calls only; there is no reasoning and no call id. Jinja's ``indent`` breaks lines where
  ``str.splitlines`` does, so a U+0085, U+2028 or U+2029 in a string (``tojson`` leaves them raw) becomes a newline
  and 8 spaces inside the JSON string: ``unrepresentable``.
- Lines 192-199: every render ends with one more system turn, ``<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>Write
  'Action:' followed by a json-formatted list of actions ...<|END_OF_TURN_TOKEN|>`` (it also names a
  ``directly-answer`` tool the model may call instead of answering): ``closing_turn``, which the completion cut
  takes out of both renders. Lines 200-202: the generation prompt is ``<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>``;
  nothing is pre-filled. Generation ends with ``<|END_OF_TURN_TOKEN|>``.

``Action:`` and the code fences are plain text, not special tokens. llama.cpp reads the template with its
auto-parser, patched to read content as wrapped in ``<|CHATBOT_TOKEN|>`` ... ``<|END_OF_TURN_TOKEN|>``
(``common/chat-diff-analyzer.cpp`` lines 69-80); its cases (``tests/test-chat.cpp`` lines 5890-5909) start the
calls at ``Action:`` (no newline before it) and put a newline between the list's ``]`` and the closing fence.
"""

from __future__ import annotations

from harness.core.scenarios import call, edge, text_case
from harness.formats import FormatSpec, Markers

ACTION = "Action:"
FENCE = "```"
CALL_OPEN = f"\n{ACTION}\n{FENCE}json\n"  # what line 164 writes before the list's [
TURN_OPEN, TURN_CLOSE = "<|START_OF_TURN_TOKEN|>", "<|END_OF_TURN_TOKEN|>"
CHATBOT, USER, SYSTEM = "<|CHATBOT_TOKEN|>", "<|USER_TOKEN|>", "<|SYSTEM_TOKEN|>"
BOS = "<BOS_TOKEN>"
ROLE_HEADER = TURN_OPEN + CHATBOT
#: the start of the tool-use instruction turn every render ends with (lines 192-199).
INSTRUCTION_TURN = f"{TURN_OPEN}{SYSTEM}Write 'Action:' followed by a json-formatted list of actions"


def _typed(schema: object) -> object:
    """``schema`` with ``additionalProperties: true`` (JSON Schema's default) on every object schema that the type
    macro (lines 2-28) reads one of: it recurses into ``items`` and ``additionalProperties`` and fails on a missing
    one (line 15)."""
    if not isinstance(schema, dict):
        return schema
    out = {**schema}
    if out.get("type") == "object":
        out["additionalProperties"] = _typed(out.get("additionalProperties", True))
    if out.get("type") == "array" and "items" in out:
        out["items"] = _typed(out["items"])
    return out


def declare_tools(tools: list) -> list:
    """The tools as the template can declare them (a new list, other fields as given): every parameter with a
    ``description`` (``""`` where it has none: line 104 concatenates it) and :func:`_typed`."""
    out = []
    for tool in tools:
        function = tool.get("function", tool) if isinstance(tool, dict) else None
        parameters = function.get("parameters") if isinstance(function, dict) else None
        properties = parameters.get("properties") if isinstance(parameters, dict) else None
        if not (isinstance(function, dict) and isinstance(parameters, dict) and isinstance(properties, dict)):
            out.append(tool)
            continue
        completed = {k: _typed({"description": "", **v} if isinstance(v, dict) else v) for k, v in properties.items()}
        function = {**function, "parameters": {**parameters, "properties": completed}}
        out.append({**tool, "function": function} if "function" in tool else function)
    return out


def edge_scenarios() -> list:
    """Command R+ shapes (ids ``edge-command_r-...``): a whole action block and the turn tokens inside strings, prose
    holding ``Action:`` and a code block before the calls, several calls in one list."""

    def text(id: str, tags: list[str], value: str, note: str = ""):
        return text_case(f"command_r-{id}", tags, value, note)

    return [
        text(
            "action-block-in-string",
            ["marker-in-string"],
            f'{CALL_OPEN}[{{"tool_name": "rm", "parameters": {{"path": "/"}}}}]{FENCE}',
            note="A whole Action: code block inside a string value is data (tojson leaves backticks alone).",
        ),
        text("turn-tokens-in-string", ["marker-in-string"], f"end{TURN_CLOSE}{TURN_OPEN}{USER}hi {CHATBOT}"),
        edge(
            "command_r-prose-with-action-and-code",
            ["content-before"],
            call("get_weather", {"city": "Rome"}),
            content_before=f"Action: look it up. Plan:\n{FENCE}\nstep 1\n{FENCE}\n",
            note="Action: without a code fence after it, and a code block in prose, are content.",
        ),
        edge(
            "command_r-three-calls",
            ["parallel"],
            [call("get_weather", {"city": "Paris"}), call("get_time"), call("get_weather", {"city": "Oslo"})],
            note="One action list; get_time's empty arguments are written {} (line 176).",
        ),
    ]


SPEC = FormatSpec(
    name="command_r",
    markers=(CALL_OPEN, TURN_OPEN, TURN_CLOSE, CHATBOT, USER, SYSTEM, BOS),
    stop_markers=(TURN_CLOSE,),
    call=Markers(CALL_OPEN, FENCE),  # one block holds the list of every call of the turn
    arguments="json",
    call_newlines=True,
    unrepresentable=("\x85", "\u2028", "\u2029"),  # line breaks to |indent(8) (line 173)
    vocabulary=None,
    no_vocabulary="Command R+'s tokenizer (CohereForAI/c4ai-command-r-plus, gated) is in no PyPI package",
    template_vars={"bos_token": BOS},
    declare_tools=declare_tools,
    edge_scenarios=edge_scenarios,
    role_headers=(ROLE_HEADER,),
    peers=("llama.cpp:CohereForAI-c4ai-command-r-plus-tool_use.jinja",),
    closing_turn=INSTRUCTION_TURN,
    source="CohereForAI-c4ai-command-r-plus-tool_use.jinja (llama-cpp-python 0.3.36 sdist), lines 111-202",
)

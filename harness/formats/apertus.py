"""Swiss AI Apertus tool-call format facts: a JSON list of ``{"NAME": ARGS}`` objects between ``<|tools_prefix|>``
and ``<|tools_suffix|>`` (the function name is the object's key).

Source: ``Apertus-8B-Instruct.jinja`` in the llama-cpp-python 0.3.36 sdist (``vendor/llama.cpp/models/templates``),
llama.cpp's copy of swiss-ai/Apertus-8B-Instruct-2509's chat template; line numbers below are that file's.

All calls of a message in one block (lines 292-306)::

    <|tools_prefix|>[{"NAME": ARGS}, {"NAME2": ARGS2}]<|tools_suffix|>

- The name is pasted between quotes unescaped (line 297); ARGS is ``arguments|tojson`` (``json.dumps``, ``", "`` /
  ``": "`` separators, key order and non-ASCII kept), so a string value may hold ``<|tools_suffix|>`` literally.
  Objects are joined by ``", "`` (line 299); nothing separates the block from the content before it.
- The assistant turn opens ``<|assistant_start|>`` once for a run of assistant and tool messages (lines 217-220);
  a string content is written raw, untrimmed, before the calls (line 228); tool results follow the block inside
  the same turn as ``[RESULT, RESULT]`` (lines 307-317, 322-324); ``<|assistant_end|>`` closes the turn only when a
  user message follows (lines 194-197), so the last turn of a render has no closer.
- Reasoning is written only from the ``blocks`` form of the content (lines 229-285): ``thoughts`` blocks as
  ``<|inner_prefix|>TEXT``, closed by ``<|inner_suffix|>`` before a ``response`` block (lines 277-280); a
  ``tool_calls`` block inside the thoughts keeps them open (lines 243-259: a call may come from inside the
  reasoning). The OpenAI ``reasoning_content`` field is never read, so a rendered case has no reasoning;
  ``enable_thinking`` only switches the developer turn's ``Deliberation: enabled|disabled`` (lines 174-179).
- Generation prompt: ``<|assistant_start|>`` (lines 325-327); nothing is pre-filled. ``bos_token`` starts the
  prompt (line 139); tools are declared as TypeScript types in the developer turn (lines 98-137, 180-181).
"""

from harness.core.scenarios import call, edge, text_case
from harness.formats import FormatSpec, Markers

CALL_OPEN = "<|tools_prefix|>"
CALL_CLOSE = "<|tools_suffix|>"
INNER_OPEN = "<|inner_prefix|>"
INNER_CLOSE = "<|inner_suffix|>"
ASSISTANT_START = "<|assistant_start|>"
ASSISTANT_END = "<|assistant_end|>"


def edge_scenarios() -> list:
    """Apertus-specific curated shapes (ids ``edge-apertus-...``): the block markers inside strings, arguments whose
    keys spell a ``{"name", "arguments"}`` call object, a tool whose name is ``name``, three calls in one block."""
    return [
        text_case(
            "apertus-block-markers-in-value",
            ["closer-in-string", "marker-in-string"],
            f'a }}]{CALL_CLOSE}{CALL_OPEN}[{{"rm": {{}}}}] "b',
        ),
        edge(
            "apertus-arguments-spell-a-call-object",
            ["nested-object"],
            call("schedule", {"name": "standup", "arguments": {"when": "9:00"}}),
            note='The arguments of a name-as-key object hold "name" and "arguments" keys: a reader of '
            '{"name": ..., "arguments": ...} objects would call "standup".',
        ),
        edge(
            "apertus-tool-named-name",
            ["name-lookalike"],
            call("name", {"arguments": "x"}),
            note='Rendered {"name": {"arguments": "x"}}: the call is to the tool "name".',
        ),
        edge(
            "apertus-three-calls",
            ["parallel"],
            [call("get_weather", {"city": "Paris"}), call("get_time"), call("get_weather", {"city": "Oslo"})],
        ),
    ]


SPEC = FormatSpec(
    name="apertus",
    markers=(
        CALL_OPEN,
        CALL_CLOSE,
        INNER_OPEN,
        INNER_CLOSE,
        ASSISTANT_START,
        ASSISTANT_END,
        "<|user_start|>",
        "<|user_end|>",
        "<|system_start|>",
        "<|system_end|>",
        "<|developer_start|>",
        "<|developer_end|>",
    ),
    stop_markers=(ASSISTANT_END,),
    call=Markers(CALL_OPEN, CALL_CLOSE),
    thought=Markers(INNER_OPEN, INNER_CLOSE),
    arguments="json",
    vocabulary=None,
    no_vocabulary="Apertus's tokenizer (swiss-ai/Apertus-8B-Instruct-2509) is in no PyPI package",
    edge_scenarios=edge_scenarios,
    role_headers=(ASSISTANT_START,),
    peers=("llama.cpp:Apertus-8B-Instruct.jinja",),
    source="Apertus-8B-Instruct.jinja, lines 139-327 (llama-cpp-python 0.3.36 sdist)",
)

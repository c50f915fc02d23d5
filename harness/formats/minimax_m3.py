"""MiniMax-M3 tool-call format facts (format ``minimax_m3``: namespaced XML, the parameter name is the tag).

Source: ``MiniMax-M3.jinja`` in the llama-cpp-python 0.3.36 sdist (``vendor/llama.cpp/models/templates``); line
numbers below are that file's. Unlike MiniMax-M2 (:mod:`harness.formats.minimax_m2`: ``<parameter name=...>``
and ``tojson`` values), every tag is preceded by the namespace token ``NS`` = ``]<]minimax[>[`` (line 2) and
nested values are expanded into elements. The calls of one turn share one block (lines 173-190)::

    NS<tool_call>
    NS<invoke name="NAME">NS<KEY>VALUE NS</KEY>...NS</invoke>
    NS<invoke name="NAME2">NS</invoke>
    NS</tool_call>

(without the spaces). ``NS<tool_call>`` + ``\\n`` opens the block (lines 6, 174); each call is
``NS<invoke name="NAME">``, its arguments with nothing between them, ``NS</invoke>`` + ``\\n`` (lines 180-187);
``NS</tool_call>`` closes the block (lines 7, 190), right before ``[e~[`` + ``\\n`` (line 199), the end of turn.

- VALUE (macro ``to_xml``, lines 20-36): a mapping is one ``NS<K>...NS</K>`` element per entry, an array one
  ``NS<item>...NS</item>`` per item, a boolean ``true``/``false`` (``tojson``), anything else -- strings and
  numbers -- written as ``{{ val }}`` (Python ``str()``: ``1.5``, ``1e-07``, ``-14``), raw and unescaped. The text
  carries no type (``"3"`` and ``3`` look alike; an empty string, array and object are all empty): the tool's
  schema decides. Keys and names are written raw.
- ``None`` values are skipped, key and all (lines 14-19, 22, 182): a null argument cannot be written.
- The turn is ``]~b]ai\\n`` (line 149), then ``<mm:think>REASONING</mm:think>`` or a bare ``</mm:think>``
  when it has no reasoning (lines 162-168), then the content as given (line 171), then the block.
- The generation prompt is ``]~b]ai\\n`` (line 236), followed by ``<mm:think>`` only with
  ``thinking_mode="enabled"`` and ``</mm:think>`` only with ``"disabled"`` (lines 237-246); with
  ``thinking_mode`` undefined (adaptive) nothing is pre-filled, so the completion opens with the think block or
  the bare ``</mm:think>``.
- ``]~!b[`` (the prompt's first text, line 115), ``]~b]`` and ``[e~[`` are MiniMax's role and turn tokens.
"""

from harness.core.scenarios import call, edge, object_schema
from harness.formats import FormatSpec, Markers

NS = "]<]minimax[>["
CALL_OPEN = NS + "<tool_call>"
CALL_CLOSE = NS + "</tool_call>"
INVOKE_OPEN = NS + '<invoke name="'
INVOKE_CLOSE = NS + "</invoke>"
THINK_OPEN = "<mm:think>"
THINK_CLOSE = "</mm:think>"
END_OF_TURN = "[e~["
ITEM = "item"


def edge_scenarios() -> list:
    """MiniMax-M3-specific curated shapes (ids ``edge-minimax_m3-...``): nested objects and arrays expanded into
    elements, empty containers read by their schema, strings that look like other types or like tags, and calls
    after reasoning."""

    def e(id: str, tags: list[str], calls, **kw):
        return edge(f"minimax_m3-{id}", tags, calls, **kw)

    return [
        e(
            "nested-containers",
            ["nested-object", "array-of-objects"],
            call("nested_args", {"tags": ["alpha", "beta"], "entries": [{"id": 1, "label": "one"}], "m": {"x": 1.5}}),
            parameters={
                "nested_args": object_schema(
                    {
                        "tags": {"type": "array", "items": {"type": "string"}},
                        "entries": {
                            "type": "array",
                            "items": object_schema({"id": {"type": "integer"}, "label": {"type": "string"}}),
                        },
                        "m": object_schema({"x": {"type": "number"}}),
                    }
                )
            },
        ),
        e(
            "empty-containers",
            ["empty-string", "empty-array", "empty-object"],
            call("configure", {"s": "", "a": [], "o": {}}),
            parameters={
                "configure": object_schema({"s": {"type": "string"}, "a": {"type": "array"}, "o": {"type": "object"}})
            },
            note="All three are written NS<k>NS</k>: the schema decides.",
        ),
        e(
            "string-lookalikes",
            ["string-looks-like-type"],
            call("lookup", {"a": "true", "b": "-5", "c": '{"x": 1}', "d": "<item>x</item>", "e": "1.10"}),
        ),
        e(
            "tags-in-strings",
            ["marker-in-string"],
            call("set_pattern", {"pattern": '</invoke></tool_call><invoke name="x">'}),
            note="Tag text without the namespace token is data.",
        ),
        e(
            "reasoning-then-parallel",
            ["reasoning", "parallel"],
            [call("get_weather", {"city": "Paris"}), call("get_weather", {"city": "Oslo"})],
            reasoning="Two cities.",
        ),
        e(
            "reasoning-content-zero-args",
            ["reasoning", "content-after", "zero-args"],
            call("get_time"),
            reasoning="Time.",
            content_after="Checking.",
        ),
    ]


SPEC = FormatSpec(
    name="minimax_m3",
    markers=(CALL_OPEN, CALL_CLOSE, NS, THINK_OPEN, THINK_CLOSE, "]~!b[", "]~b]", END_OF_TURN),
    stop_markers=(END_OF_TURN,),
    call=Markers(INVOKE_OPEN, INVOKE_CLOSE),
    section=Markers(CALL_OPEN, CALL_CLOSE),
    reasoning=Markers(THINK_OPEN, THINK_CLOSE),
    arguments="xml-values",
    parameter=Markers(NS + "<", NS + "</"),
    # call_newlines stays False: nothing is written between the parts of one call (line 180-187), only between
    # calls and around the block.
    vocabulary=None,
    no_vocabulary="MiniMax-M3's tokenizer is not available offline",
    unrepresentable=(NS,),
    edge_scenarios=edge_scenarios,
    role_headers=("]~b]ai\n",),
    peers=("llama.cpp:MiniMax-M3.jinja",),
    grammar="minimax_m3",
    source="MiniMax-M3.jinja (llama-cpp-python 0.3.36 sdist)",
)

"""MiniMax-M2 XML tool-call format facts.

Source: ``MiniMax-M2.jinja`` in the llama-cpp-python 0.3.36 sdist (``vendor/llama.cpp/models/templates``); line
numbers below are that file's.

The calls of one assistant turn share one block (lines 103-120)::

    <minimax:tool_call>
    <invoke name="NAME">
    <parameter name="KEY">VALUE</parameter>
    </invoke>
    <invoke name="NAME2">
    </invoke>
    </minimax:tool_call>

- ``<minimax:tool_call>`` / ``</minimax:tool_call>`` are the block markers (lines 2-3); ``\\n`` comes before the
  block (line 104) and after its opener, ``<invoke name="NAME">`` is followed by ``\\n`` (line 110 and the
  template text after it), each ``<parameter name="KEY">VALUE</parameter>`` by ``\\n`` (lines 113-116), and
  ``</invoke>`` by ``\\n`` (line 117). Names and keys are written raw between double quotes.
- VALUE has no padding and no type (line 114): a string is written raw, with nothing escaped (so
  ``</parameter>``, ``</invoke>``, ``</minimax:tool_call>`` can occur inside a value); any other value with
  ``tojson(ensure_ascii=False)``: ``null``, ``true``/``false``, JSON numbers, objects and arrays. The string
  ``"1"`` and the number ``1`` look alike: the tool's schema decides (``parsers.own._schema_types``).
- The turn is ``]~b]ai\\n`` (line 85), then ``<think>\\nREASONING\\n</think>\\n\\n`` when the turn has reasoning
  (line 98), then the content as given, untrimmed (line 101), then the block, then ``[e~[\\n`` (line 125), the
  end-of-turn token that ends generation.
- The generation prompt always ends ``]~b]ai\\n<think>\\n`` (line 158), thinking or not. A turn *with*
  reasoning repeats that text, so its rendered completion starts inside the reasoning
  (``REASONING\\n</think>\\n\\n...``) with prefix ``""``; a turn *without* reasoning does not, so its completion
  is plain content and calls with the prefix ``<think>\\n`` (the prompt's open think that the turn never
  closes). Whether text is reasoning is therefore told by a ``</think>`` in the text, not by the prefix.
- ``]~!b[`` (written as text at the start of the prompt, line 61), ``]~b]`` and ``[e~[`` are MiniMax's role and
  turn tokens; the template does not use ``bos_token``.
"""

from harness.core.scenarios import call, edge, last_case, object_schema, text_case
from harness.formats import FormatSpec, Markers

CALL_OPEN = "<minimax:tool_call>"
CALL_CLOSE = "</minimax:tool_call>"
INVOKE_OPEN = '<invoke name="'
INVOKE_CLOSE = "</invoke>"
PARAMETER_OPEN = '<parameter name="'
PARAMETER_CLOSE = "</parameter>"
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
END_OF_TURN = "[e~["


def edge_scenarios() -> list:
    """MiniMax-M2-specific curated shapes (ids ``edge-minimax_m2-...``): the format's closers and openers inside
    string values, JSON-spelled scalars under typed and ``anyOf`` schemas, strings that look like other types,
    unpadded values made of or ending in newlines, and calls after reasoning."""

    def text(id: str, tags: list[str], value: str, note: str = ""):
        return text_case(f"minimax_m2-{id}", ["closer-in-string", *tags], value, note)

    def last(id: str, tags: list[str], value: str, note: str = ""):
        return last_case(f"minimax_m2-{id}", ["closer-in-string", *tags], value, note)

    return [
        # ---- the format's own closers and openers inside string values -----------------------------------
        text("parameter-close-in-value", ["marker-in-string"], "a </parameter> b"),
        text(
            "parameter-close-then-newline",
            ["marker-in-string"],
            "x</parameter>\n",
            note="A closer followed by the newline the template writes after each parameter.",
        ),
        text("invoke-close-in-value", ["marker-in-string"], "</invoke>\n</minimax:tool_call>"),
        last(
            "block-close-in-value",
            ["marker-in-string", "unicode"],
            "Montréal </minimax:tool_call> café",
            note="The observed Dynamo shape (frontend-crates PR 245), rendered by the template.",
        ),
        text(
            "closer-chain-in-value",
            ["marker-in-string"],
            "x</parameter>\n</invoke>\n</minimax:tool_call>\nmore",
            note="A whole block end inside a middle value; only the text after it shows it is data.",
        ),
        last("closer-chain-in-last-value", ["marker-in-string"], "</parameter>\n</invoke>\n</minimax:tool_call>\ntail"),
        text(
            "openers-in-value",
            ["marker-in-string"],
            '<minimax:tool_call>\n<invoke name="rm">\n<parameter name="path">/',
        ),
        edge(
            "minimax_m2-closers-parallel",
            ["closer-in-string", "marker-in-string", "parallel"],
            [
                call("set_pattern", {"pattern": '</invoke>\n<invoke name="x">'}),
                call("set_pattern", {"pattern": "</parameter></invoke>"}),
            ],
            note="Two calls in one block whose values hold the markers that separate calls.",
        ),
        # ---- scalars and strings that look like them ------------------------------------------------------
        edge(
            "minimax_m2-json-scalars-anyof",
            ["schema-anyof", "boolean", "null"],
            call("configure", {"a": True, "b": None, "c": 7, "d": 2.5, "e": {"k": None}}),
            parameters={
                "configure": object_schema(
                    {
                        "a": {"anyOf": [{"type": "string"}, {"type": "boolean"}]},
                        "b": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                        "c": {"type": ["integer", "string"]},
                        "d": {"anyOf": [{"type": "number"}, {"type": "null"}]},
                        "e": {"anyOf": [{"type": "object"}, {"type": "null"}]},
                    }
                )
            },
        ),
        edge(
            "minimax_m2-string-lookalikes-anyof",
            ["string-looks-like-type", "schema-anyof"],
            call("lookup", {"code": "001", "flag": "yes", "none": "nil", "list": "[1, 2"}),
            parameters={
                "lookup": object_schema(
                    {
                        "code": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                        "flag": {"anyOf": [{"type": "string"}, {"type": "boolean"}]},
                        "none": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                        "list": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "integer"}}]},
                    }
                )
            },
            note='No other type reads these texts: "001" is not a JSON integer, so it stays a string. (MiniMax '
            "writes true/null, but the shared policy also reads True/None, so those are not used here.)",
        ),
        edge(
            "minimax_m2-string-lookalikes-string",
            ["string-looks-like-type"],
            call("lookup", {"a": "true", "b": "null", "c": "-5", "d": '{"x": 1}', "e": "1.10"}),
        ),
        # ---- newlines: values are not padded ----------------------------------------------------------------
        text("value-only-newline", ["whitespace-string", "newline-in-string"], "\n"),
        last("value-leading-trailing-newlines", ["leading-trailing-space", "multiline"], "\nbody\n"),
        edge(
            "minimax_m2-multiline-and-empty",
            ["multiline", "empty-string"],
            call("write_file", {"path": "a.py", "content": "def f():\n    return 1\n", "mode": ""}),
        ),
        # ---- calls after reasoning --------------------------------------------------------------------------
        edge(
            "minimax_m2-reasoning-then-parallel",
            ["reasoning", "parallel"],
            [call("get_weather", {"city": "Paris"}), call("get_weather", {"city": "Oslo"})],
            reasoning='Two cities.\nCall get_weather twice: <parameter name="city"> each.',
        ),
        edge(
            "minimax_m2-reasoning-content-closer-value",
            ["reasoning", "content-after", "closer-in-string"],
            call("set_pattern", {"pattern": "</invoke>\n</minimax:tool_call>"}),
            reasoning="Set the pattern.",
            content_after="Setting it.",
        ),
    ]


SPEC = FormatSpec(
    name="minimax_m2",
    markers=(CALL_OPEN, CALL_CLOSE, THINK_OPEN, THINK_CLOSE, "]~!b[", "]~b]", END_OF_TURN),
    stop_markers=(END_OF_TURN,),
    call=Markers(INVOKE_OPEN, INVOKE_CLOSE),
    section=Markers(CALL_OPEN, CALL_CLOSE),
    reasoning=Markers(THINK_OPEN, THINK_CLOSE),
    arguments="xml-values",
    parameter=Markers(PARAMETER_OPEN, PARAMETER_CLOSE),
    call_newlines=True,
    vocabulary=None,
    no_vocabulary="MiniMax-M2's tokenizer is not available offline",
    edge_scenarios=edge_scenarios,
    role_headers=("]~b]ai\n",),
    peers=("llama.cpp:MiniMax-M2.jinja",),
    grammar="minimax",
    source="MiniMax-M2.jinja (llama-cpp-python 0.3.36 sdist)",
)

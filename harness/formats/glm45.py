"""GLM-4.5 / GLM-4.6 tool-call format facts (format ``glm45``: the newline layout).

Source: ``GLM-4.6.jinja`` in the llama-cpp-python 0.3.36 sdist (``vendor/llama.cpp/models/templates``), llama.cpp's
copy of zai-org/GLM-4.6's chat template; GLM-4.5 has no copy there and the 4.6 template stands in (same format).
Line numbers below are lines of that file.

- The prompt starts ``[gMASK]<sop>`` (line 1), text the template writes itself, so no ``bos_token`` is involved.
  Turns open with ``<|user|>``, ``<|assistant|>``, ``<|system|>``, ``<|observation|>`` (lines 45, 49, 87, 100);
  there is no turn-closing marker: generation ends on ``<|user|>``, ``<|observation|>`` (what the template writes
  before tool results) or ``<|endoftext|>`` -- the eos ids of GLM-4.5/4.6's generation_config; llama.cpp's GLM-4.5
  converter (sdist ``vendor/llama.cpp/conversion/glm.py``, lines 41-42) sets eos ``<|endoftext|>`` and eot
  ``<|user|>`` -- so a rendered turn carries no stop marker.
- An assistant turn (lines 49-84) writes ``\\n<think>REASONING</think>`` (reasoning stripped; only on a turn after
  the last user message, line 61) or ``\\n<think></think>``, then ``\\n`` + the stripped content when it is not
  blank (lines 66-68), then per call (lines 69-83, ``trim_blocks``)::

      \\n<tool_call>NAME
      <arg_key>KEY</arg_key>
      <arg_value>VALUE</arg_value>
      ...
      </tool_call>

  so content comes *before* the calls, a zero-argument call is ``<tool_call>NAME\\n</tool_call>``, and the turn
  ends right after the last ``</tool_call>`` (``trim_blocks`` eats the line breaks of lines 83-84); the next turn
  starts ``<|observation|>`` (tool results) or ``<|user|>``.
- ``<arg_key>{{ k }}</arg_key>`` writes keys raw (line 80); ``<arg_value>`` (line 81) writes a string value raw
  (nothing escaped, so a value may hold ``</arg_value>``, ``</tool_call>`` or ``<arg_key>`` literally) and any
  other value with ``tojson(ensure_ascii=False)`` (``null``, ``true``, ``1e+16``, ``{"a": [1, 2]}``). The text
  carries no type: ``"3"`` and ``3`` are both written ``3``; the declared schema decides
  (:mod:`parsers.own._schema_types`). A non-string value is never written with surrounding whitespace.
- Arguments must be a mapping: anything else raises (lines 75-78).
- The generation prompt is ``<|assistant|>`` (line 106), followed by ``\\n<think></think>`` when
  ``enable_thinking`` is false; the full render of the turn repeats it, so the cut leaves no parse prefix.
- The user turn gets ``/nothink`` appended when thinking is off (line 48): history text, not completion text.

Nothing is unrepresentable in the strict sense, but a string holding ``</arg_value>`` directly followed
(whitespace aside) by ``<arg_key>`` or ``</tool_call>``, or a key holding ``</arg_key>``, reads two ways; and a
string that spells exactly what ``tojson`` writes for another type the schema allows (``null`` under
``anyOf [string, null]``) is indistinguishable from that value.
"""

from harness.core.scenarios import call, edge, object_schema, text_case
from harness.formats import FormatSpec, Markers

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
KEY_OPEN, KEY_CLOSE = "<arg_key>", "</arg_key>"
VALUE_OPEN, VALUE_CLOSE = "<arg_value>", "</arg_value>"
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
STOP_MARKERS = ("<|user|>", "<|observation|>", "<|endoftext|>")
#: why the ``tokens`` mode skips GLM (shared with glm47): see parsers/reference/vllm.py, "Absent formats".
NO_VOCABULARY = "GLM's tokenizer is in no PyPI package and no sdist vocabulary"

MARKERS = (
    CALL_OPEN,
    CALL_CLOSE,
    KEY_OPEN,
    KEY_CLOSE,
    VALUE_OPEN,
    VALUE_CLOSE,
    THINK_OPEN,
    THINK_CLOSE,
    "<|user|>",
    "<|assistant|>",
    "<|system|>",
    "<|observation|>",
    "<|endoftext|>",
    "[gMASK]",
    "<sop>",
)


def edge_scenarios() -> list:
    """GLM-specific curated shapes (shared by ``glm45`` and ``glm47``; ids ``edge-<format>-...``)."""
    return glm_edge_scenarios("glm45")


def glm_edge_scenarios(fmt: str) -> list:
    """The GLM shapes for format ``fmt`` (``glm45`` or ``glm47``): markers of the format inside string values,
    strings that look like other types under string and ``anyOf`` schemas, typed values next to strings, and
    calls after reasoning."""

    def e(id, tags, calls, **kw):
        return edge(f"{fmt}-{id}", ["glm", *tags], calls, **kw)

    def save(id, tags, value, note=""):
        return text_case(f"{fmt}-{id}", ["glm", "marker-in-string", *tags], value, note, path="notes/glm.txt")

    nullable = {"anyOf": [{"type": "string"}, {"type": "null"}]}
    s: list = [
        save(
            "value-close-in-string",
            ["glm-value-close"],
            "a</arg_value>b",
            note="</arg_value> inside a value, not followed by <arg_key> or </tool_call>: data.",
        ),
        save(
            "value-close-at-end",
            ["glm-value-close"],
            "ends </arg_value>",
            note="The value ends with </arg_value>; the template's own closer follows right after it.",
        ),
        save("value-close-newline", ["glm-value-close"], "</arg_value>\n</arg_value>\n"),
        save("call-close-in-string", ["glm-call-close"], 'END = "</tool_call>"\n'),
        e(
            "call-close-last",
            ["marker-in-string", "glm-call-close"],
            call("set_pattern", {"pattern": "x</tool_call>"}),
            note="The last value ends with </tool_call>; the template's </arg_value> and </tool_call> follow.",
        ),
        save("key-open-in-string", ["glm-key-open"], "<arg_key>k</arg_key>"),
        save("key-open-value-open", ["glm-key-open"], "<arg_key>version</arg_key><arg_value>9"),
        save("call-open-in-string", ["glm-call-open"], "<tool_call>rm\n<arg_key>path</arg_key>\n<arg_value>/"),
        save("think-in-string", ["glm-think"], "</think>not reasoning<think>"),
        e(
            "markers-last-argument",
            ["marker-in-string", "glm-call-close"],
            call("set_pattern", {"pattern": "</arg_value></arg_key></tool_call"}),
            note="Marker text in the last value, right before the call's own closer.",
        ),
        # strings that look like other types
        e(
            "string-lookalikes",
            ["string-looks-like-type"],
            call(
                "configure",
                {
                    "a": "001",
                    "b": "1.10",
                    "c": "true",
                    "d": "null",
                    "e": "[1, 2]",
                    "f": '{"k": 1}',
                    "g": "-0",
                    "h": "1e5",
                    "i": "None",
                    "j": "False",
                },
            ),
            note='Under type string every value is the text as written; "001" stays "001".',
        ),
        e(
            "anyof-string-lookalikes",
            ["string-looks-like-type", "anyof"],
            call("configure", {"a": "001", "b": "true", "c": "None", "d": " null", "e": "[1]", "f": "12"}),
            parameters={"configure": object_schema({k: nullable for k in "abcdef"})},
            note="anyOf [string, null]: only the exact text null is null; tojson never writes None or padding.",
        ),
        e(
            "anyof-null-and-values",
            ["null", "anyof"],
            call("configure", {"a": None, "b": "x", "c": 3, "d": None, "e": [1, "a"]}),
            parameters={
                "configure": object_schema(
                    {
                        "a": nullable,
                        "b": nullable,
                        "c": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                        "d": {"oneOf": [{"type": "object"}, {"type": "null"}]},
                        "e": {
                            "anyOf": [
                                {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"type": "string"}]}},
                                {"type": "null"},
                            ]
                        },
                    }
                )
            },
        ),
        e(
            "anyof-number-or-string",
            ["string-looks-like-type", "anyof"],
            call("configure", {"a": 7, "b": "seven", "c": 2.5}),
            parameters={
                "configure": object_schema({k: {"anyOf": [{"type": "number"}, {"type": "string"}]} for k in "abc"})
            },
            note="A number under anyOf [number, string] is read as a number; a word stays a string.",
        ),
        e(
            "typed-values",
            ["integer", "float", "boolean", "null", "nested-object", "array-of-objects"],
            call(
                "update_record",
                {
                    "id": 12,
                    "ratio": 0.5,
                    "big": 10**30,
                    "active": False,
                    "owner": None,
                    "meta": {"tags": ["a", "b"], "n": {"x": 1.5e-07}},
                    "rows": [{"k": "v"}],
                },
            ),
        ),
        e(
            "untyped-property",
            ["no-schema"],
            call("configure", {"declared": "001", "free": 5}),
            parameters={"configure": {"type": "object", "properties": {"declared": {"type": "string"}}}},
            note="A property the schema does not declare is typed from its text (JSON when it is JSON).",
        ),
        e(
            "multiline-values",
            ["multiline", "leading-trailing-space"],
            call("run_python", {"code": "\nprint(1)\n\n", "note": "  two spaces  "}),
        ),
        # reasoning and layout
        e(
            "reasoning-then-call",
            ["reasoning"],
            call("get_weather", {"city": "Paris"}),
            reasoning="The user wants the weather.\nCall the tool.",
        ),
        e(
            "reasoning-content-parallel",
            ["reasoning", "parallel", "content-after"],
            [call("get_weather", {"city": "Paris"}), call("get_time")],
            reasoning="Two tools.",
            content_after="Checking both.",
        ),
        e("zero-args-parallel", ["zero-args", "parallel"], [call("get_time"), call("list_files")]),
    ]
    return s


SPEC = FormatSpec(
    name="glm45",
    markers=MARKERS,
    stop_markers=STOP_MARKERS,
    call=Markers(CALL_OPEN, CALL_CLOSE),
    reasoning=Markers(THINK_OPEN, THINK_CLOSE),
    arguments="xml-values",
    argument_key=Markers(KEY_OPEN, KEY_CLOSE),
    argument_value=Markers(VALUE_OPEN, VALUE_CLOSE),
    call_newlines=True,
    vocabulary=None,
    no_vocabulary=NO_VOCABULARY,
    edge_scenarios=edge_scenarios,
    role_headers=("<|assistant|>",),
    peers=("canitoolcall:glm/zai-org/GLM-4.5", "llama.cpp:GLM-4.6.jinja"),
    source="GLM-4.6.jinja (llama-cpp-python 0.3.36 sdist)",
)

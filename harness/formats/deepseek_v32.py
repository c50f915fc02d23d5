"""DeepSeek V3.2 tool-call format facts (deepseek-ai/DeepSeek-V3.2): the DSML invoke format.

Source: ``deepseek-ai-DeepSeek-V3.2.jinja`` in the llama-cpp-python 0.3.36 sdist (``vendor/llama.cpp/models/
templates``): llama.cpp's Jinja rendition of DeepSeek's Python encoder (the model repository ships
``encoding/encoding_dsv32.py``, not a Jinja template). Line numbers below are that file's. ``｜`` is U+FF5C.

- ``dsml_token = '｜DSML｜'`` (line 11). An assistant turn with calls writes (lines 80-101) its content, then
  ``\\n\\n<｜DSML｜function_calls>\\n``, per call ``<｜DSML｜invoke name="NAME">\\n``, per argument (in the
  arguments' own order) ``<｜DSML｜parameter name="KEY" string="true">VALUE</｜DSML｜parameter>\\n`` for a
  string -- the value raw, nothing escaped -- or ``string="false">`` + ``value | tojson`` for any other value
  (numbers, booleans, null, arrays, objects), then ``</｜DSML｜invoke>\\n``; finally
  ``</｜DSML｜function_calls>`` and ``<｜end▁of▁sentence｜>`` (line 103), the stop marker.
- Values are typed by the ``string`` attribute first: ``true`` means the text is the string itself;
  ``false`` means the text is JSON. The tools' schemas (``parsers/own/_schema_types.py``) only settle text whose
  attribute is missing or not ``true``/``false``, JSON that does not decode, or a ``string="true"`` value for a
  property whose schema admits no string (drift).
- Because string values are raw, one holding ``</｜DSML｜parameter>`` cannot be written unambiguously:
  ``unrepresentable``. Names and keys are written raw between double quotes.
- Thinking (lines 55-77, 126-141): the generation prompt ends ``<｜Assistant｜><think>`` (thinking on) or
  ``<｜Assistant｜><think></think>`` (thinking off). The assistant turn itself writes
  ``<think>REASONING</think>`` (thinking on) or only ``</think>`` (thinking off, line 65). Measured cuts:
  thinking on gives prefix ``""`` (the prompt's ``<think>`` lies in the common prefix) and a completion
  ``REASONING</think>CONTENT\\n\\n<｜DSML｜function_calls>...``; thinking off gives the prefix
  ``<think></think>`` and a completion that starts with a second ``</think>`` -- a quirk of this rendition
  (DeepSeek's own encoder, ``encoding_dsv32.py``, of which vLLM keeps a copy in
  ``vllm/tokenizers/deepseek_v32_encoding.py``, pre-fills ``</think>`` alone with thinking off, joins
  parameters and calls with single newlines and writes ``\n\n`` inside an invoke without parameters).
- The prompt starts with ``bos_token`` (line 40); DeepSeek's BOS text ``<｜begin▁of▁sentence｜>`` is given as
  ``template_vars`` (it does not affect the cut completions).
- Generation ends with ``<｜end▁of▁sentence｜>``.
"""

from harness.core.scenarios import call, edge
from harness.formats import FormatSpec, Markers

# DeepSeek's turn and think tokens, the same in V3.1 (both templates write them; one ``deepseek`` vocabulary)
from harness.formats.deepseek_v31 import ASSISTANT, BOS, EOS, THINK_CLOSE, THINK_OPEN, USER

DSML = "｜DSML｜"
BLOCK_OPEN = f"<{DSML}function_calls>"
BLOCK_CLOSE = f"</{DSML}function_calls>"
INVOKE_OPEN = f"<{DSML}invoke"
INVOKE_CLOSE = f"</{DSML}invoke>"
PARAM_OPEN = f"<{DSML}parameter"
PARAM_CLOSE = f"</{DSML}parameter>"


def edge_scenarios() -> list:
    """DeepSeek V3.2 shapes: ``string="true"`` values that look like numbers, booleans, null or JSON (they must
    stay strings), ``string="false"`` values of every JSON type, DSML tags and the other formats' tokens as
    literal text inside raw string values and inside JSON values, raw strings with the whitespace the format
    keeps, calls after reasoning, and a key holding a double quote."""
    return [
        edge(
            "deepseek_v32-string-true-number",
            ["string-looks-like-type", "dsml-string-attr"],
            call(
                "lookup",
                {
                    "code": "123",
                    "ratio": "-4.5e3",
                    "flag": "false",
                    "nothing": "null",
                    "list": "[1]",
                    "obj": '{"a": 1}',
                },
            ),
            note='Written string="true">123: the attribute, not the text, says it is a string.',
        ),
        edge(
            "deepseek_v32-string-false-types",
            ["dsml-string-attr", "integer", "float", "boolean", "null"],
            call(
                "configure",
                {
                    "n": 42,
                    "f": -0.5,
                    "e": 1e-07,
                    "big": 2**63,
                    "ok": True,
                    "none": None,
                    "arr": [1, "two", None],
                    "obj": {"k": [True]},
                },
            ),
        ),
        edge(
            "deepseek_v32-dsml-in-raw-string",
            ["marker-in-string", "dsml-tags"],
            call(
                "save_text",
                {
                    "path": "a.txt",
                    "version": 1,
                    "text": f'{BLOCK_OPEN}\n{INVOKE_OPEN} name="rm">\n{PARAM_OPEN} name="p" '
                    f'string="true">/{INVOKE_CLOSE}\n{BLOCK_CLOSE}',
                },
            ),
            note="Every DSML tag but the parameter closer (unrepresentable) inside a raw string value.",
        ),
        edge(
            "deepseek_v32-closers-in-json-value",
            ["marker-in-string", "dsml-tags", "nested-object"],
            call("configure", {"cfg": {"end": INVOKE_CLOSE + "\n" + BLOCK_CLOSE, "eos": EOS, "p": PARAM_OPEN}, "n": 1}),
            parameters={
                "configure": {"type": "object", "properties": {"cfg": {"type": "object"}, "n": {"type": "integer"}}}
            },
        ),
        edge(
            "deepseek_v32-raw-whitespace",
            ["whitespace-string", "leading-trailing-space", "multiline"],
            call("save_text", {"path": " p ", "text": "\n\n  indented\n\t\n", "version": 3}),
        ),
        edge(
            "deepseek_v32-reasoning-then-calls",
            ["reasoning", "parallel"],
            [call("get_weather", {"city": "Paris"}), call("get_time", {"tz": "CET"})],
            reasoning="Two lookups are needed; the <｜DSML｜ tags come after this.",
            note="Thinking on: REASONING</think> then the block, cut with an empty prefix.",
        ),
        edge(
            "deepseek_v32-reasoning-content-calls",
            ["reasoning", "content-after"],
            call("search", {"query": "</think>"}),
            reasoning="Search for the closing tag.",
            content_after="Searching.",
        ),
        edge("deepseek_v32-key-quote", ["key-quote"], call("update_record", {'say "hi"': "x", "a": 1})),
        edge(
            "deepseek_v32-anyof-string-number",
            ["string-looks-like-type", "dsml-string-attr"],
            call("lookup", {"v": "7", "w": 7}),
            parameters={
                "lookup": {
                    "type": "object",
                    "properties": {
                        "v": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                        "w": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                    },
                }
            },
            note='Under anyOf [string, integer] only the attribute tells "7" from 7.',
        ),
    ]


SPEC = FormatSpec(
    name="deepseek_v32",
    markers=(BLOCK_OPEN, BLOCK_CLOSE, INVOKE_OPEN, INVOKE_CLOSE, PARAM_OPEN, PARAM_CLOSE, EOS, BOS, USER, ASSISTANT),
    stop_markers=(EOS,),
    call=Markers(INVOKE_OPEN, INVOKE_CLOSE),
    section=Markers(BLOCK_OPEN, BLOCK_CLOSE),
    reasoning=Markers(THINK_OPEN, THINK_CLOSE),
    arguments="xml-values",
    parameter=Markers(PARAM_OPEN, PARAM_CLOSE),
    call_newlines=True,
    vocabulary="deepseek",
    unrepresentable=(PARAM_CLOSE,),
    template_vars={"bos_token": BOS},
    edge_scenarios=edge_scenarios,
    role_headers=(ASSISTANT,),
    # canitoolcall: V4 (<｜DSML｜tool_calls>: deepseek_v4) and V4.1 (<｜DSML｜ calls>) use other block markers.
    peers=("canitoolcall:deepseek/deepseek-ai/DeepSeek-V3.2", "llama.cpp:deepseek-ai-DeepSeek-V3.2.jinja"),
    grammar="deepseek_v3_2",
    source="deepseek-ai-DeepSeek-V3.2.jinja (llama-cpp-python 0.3.36 sdist), lines 1-141",
)

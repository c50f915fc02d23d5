"""GLM-4.7 tool-call format facts (format ``glm47``: the inline layout).

Source: ``GLM-4.7-Flash.jinja`` in the llama-cpp-python 0.3.36 sdist (``vendor/llama.cpp/models/templates``),
llama.cpp's copy of zai-org/GLM-4.7-Flash's chat template. Line numbers below are lines of that file.

Same markers and value rules as :mod:`harness.formats.glm45`, but nothing is written between the parts of a call
(lines 65-66, ``{{- ... -}}`` and ``trim_blocks``)::

    <tool_call>NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>...</tool_call>

- An assistant turn (lines 41-68) writes ``<think>REASONING</think>`` (stripped; only after the last user
  message, or always with ``clear_thinking=false``, line 52) or a lone ``</think>``, then the stripped content
  (lines 57-59), then the calls with nothing between them; the turn ends right after the last ``</tool_call>``
  (line 66). A zero-argument call is ``<tool_call>NAME</tool_call>``.
- Keys raw (line 66); string values raw, other values ``tojson(ensure_ascii=False)`` (line 66). Arguments are
  iterated with ``.items()`` (line 66): a non-mapping fails.
- The generation prompt is ``<|assistant|><think>`` (thinking on, the default) or ``<|assistant|></think>``
  (``enable_thinking=false``) (line 85). The full render of the turn repeats that marker, so the cut between
  the two renders falls after it: the completion text starts *inside* reasoning (``REASONING</think>...``)
  with an empty parse prefix, or, thinking off, directly with content or ``<tool_call>``. A parser must
  therefore read text before a ``</think>`` that precedes any call as reasoning even without ``<think>``.
- The user turn is written ``<|user|>TEXT`` with no newline (line 39); generation ends on ``<|user|>``,
  ``<|observation|>`` or ``<|endoftext|>``.

Spark-X2.5 (``Spark2.5.jinja``, XHToken/Spark-X2.5-1.7B and -4B) writes the same inline calls (lines 74-86:
``<tool_call>`` + NAME, ``<arg_key>K</arg_key><arg_value>V</arg_value>`` per argument, strings raw, other values
``tojson``, then ``</tool_call>``, nothing between calls) in turns of its own: ``<｜start▁of▁sentence｜><|Bot|>``,
then ``<think>REASONING</think>`` or a lone ``</think>`` (lines 65-70), the content, the calls and
``<｜end▁of▁sentence｜>`` (line 87), which ends generation. ``enable_thinking`` defaults to true (line 5), so the
generation prompt is ``<｜start▁of▁sentence｜><|Bot|><think>`` (thinking on) or ``...<|Bot|></think>`` (lines
103-109): the completion starts inside reasoning, as GLM-4.7's. Tool results go in a ``<|Tool|>`` turn as
``<tool_response>``...``</tool_response>`` (lines 90-96).
"""

from harness.formats import FormatSpec, Markers
from harness.formats.glm45 import (
    CALL_CLOSE,
    CALL_OPEN,
    KEY_CLOSE,
    KEY_OPEN,
    MARKERS,
    NO_VOCABULARY,
    STOP_MARKERS,
    VALUE_CLOSE,
    VALUE_OPEN,
    glm_edge_scenarios,
)


def edge_scenarios() -> list:
    return glm_edge_scenarios("glm47")


#: Spark-X2.5's turn markers (Spark2.5.jinja lines 36, 56, 65, 87, 92).
SPARK_BOS, SPARK_EOS = "<｜start▁of▁sentence｜>", "<｜end▁of▁sentence｜>"
SPARK_MARKERS = (SPARK_BOS, SPARK_EOS, "<|System|>", "<|User|>", "<|Bot|>", "<|Tool|>")

SPEC = FormatSpec(
    name="glm47",
    markers=tuple(dict.fromkeys(MARKERS + SPARK_MARKERS)),
    stop_markers=(*STOP_MARKERS, SPARK_EOS),
    call=Markers(CALL_OPEN, CALL_CLOSE),
    reasoning=Markers("<think>", "</think>"),
    arguments="xml-values",
    argument_key=Markers(KEY_OPEN, KEY_CLOSE),
    argument_value=Markers(VALUE_OPEN, VALUE_CLOSE),
    vocabulary=None,
    no_vocabulary=NO_VOCABULARY,
    edge_scenarios=edge_scenarios,
    role_headers=("<|assistant|>", SPARK_BOS + "<|Bot|>"),
    # canitoolcall: GLM-5.3's fixtures are the same compact format (no newlines between the parts of a call).
    peers=(
        "canitoolcall:glm/zai-org/GLM-4.7",
        "canitoolcall:glm/zai-org/GLM-5.3",
        "llama.cpp:GLM-4.7-Flash.jinja",
        "llama.cpp:Spark2.5.jinja",
    ),
    grammar="glm_4_7",
    source="GLM-4.7-Flash.jinja, Spark2.5.jinja (llama-cpp-python 0.3.36 sdist)",
)

"""Ling 3.0 (Bailing V3) tool-call format facts (format ``ling3``: GLM's tagged arguments in ``<role>`` turns).

Source: ``inclusionai-ling-3.0-flash.jinja`` in the llama-cpp-python 0.3.36 sdist
(``vendor/llama.cpp/models/templates``), llama.cpp's copy of inclusionAI/Ling-3.0-flash's chat template ("Bailing
V3", line 1). Line numbers below are lines of that file.

The calls use GLM-4.5's markers and value rules (:mod:`harness.formats.glm45`), laid out per call (lines 85-105;
``trim_blocks``/``lstrip_blocks``)::

    <tool_call>NAME
    <arg_key>KEY</arg_key>
    <arg_value>VALUE</arg_value><arg_key>KEY2</arg_key>
    <arg_value>VALUE2</arg_value>
    </tool_call>

- ``\\n`` comes before each call except a first one with no content before it (lines 86-88); after NAME the
  template text's line break survives (line 93-94: ``{% set %}`` strips only its own indentation); each key is
  followed by ``\\n<arg_value>`` (lines 96-97), the last value by ``\\n</tool_call>`` (line 105). A zero-argument
  call is ``<tool_call>NAME\\n\\n</tool_call>``.
- Keys raw (line 96); string values raw, nothing escaped; other values ``tojson(ensure_ascii=False)`` (lines
  98-102). Arguments are iterated with ``.items()`` (line 95): a non-mapping fails.
- Turns are ``<role>SYSTEM</role>``, ``<role>HUMAN</role>``, ``<role>ASSISTANT</role>``,
  ``<role>OBSERVATION</role>`` (lines 19, 62, 77-82, 111), each ended by ``<|role_end|>`` (lines 31-44, 62, 108,
  117), the end of generation (llama.cpp's ``common/parsers/ling3.cpp`` adds it as a stop).
- An assistant turn writes ``\\n<think>REASONING</think>`` + the content, or ``\\n<think></think>`` + the content
  (lines 75-83; ``preserved_thinking`` is true, line 16, so every turn keeps its reasoning), then the calls.
- The generation prompt is ``<role>ASSISTANT</role>\\n<think>`` (thinking on, the default: lines 5-13, 126) or
  ``<role>ASSISTANT</role>\\n<think></think>`` (``enable_thinking=false``, line 128), so the completion starts
  inside reasoning (``REASONING</think>...``) or, thinking off, with content or ``<tool_call>``. llama.cpp's
  parser also ends open reasoning at a ``<tool_call>`` (``thinking_end_tags``, ``common/parsers/ling3.cpp``).
"""

from harness.formats import FormatSpec, Markers
from harness.formats.glm45 import (
    CALL_CLOSE,
    CALL_OPEN,
    KEY_CLOSE,
    KEY_OPEN,
    THINK_CLOSE,
    THINK_OPEN,
    VALUE_CLOSE,
    VALUE_OPEN,
    glm_edge_scenarios,
)

ROLE_END = "<|role_end|>"
ROLE_HEADER = "<role>ASSISTANT</role>"
STOP_MARKERS = (ROLE_END,)
MARKERS = (
    CALL_OPEN,
    CALL_CLOSE,
    KEY_OPEN,
    KEY_CLOSE,
    VALUE_OPEN,
    VALUE_CLOSE,
    THINK_OPEN,
    THINK_CLOSE,
    ROLE_END,
    ROLE_HEADER,
    "<role>HUMAN</role>",
    "<role>SYSTEM</role>",
    "<role>OBSERVATION</role>",
)


def edge_scenarios() -> list:
    """The GLM shapes (:func:`harness.formats.glm45.glm_edge_scenarios`), ids ``edge-ling3-...``."""
    return glm_edge_scenarios("ling3")


SPEC = FormatSpec(
    name="ling3",
    markers=MARKERS,
    stop_markers=STOP_MARKERS,
    call=Markers(CALL_OPEN, CALL_CLOSE),
    reasoning=Markers(THINK_OPEN, THINK_CLOSE),
    arguments="xml-values",
    argument_key=Markers(KEY_OPEN, KEY_CLOSE),
    argument_value=Markers(VALUE_OPEN, VALUE_CLOSE),
    call_newlines=True,
    vocabulary=None,
    no_vocabulary="Ling 3.0's tokenizer is in no PyPI package and no sdist vocabulary",
    edge_scenarios=edge_scenarios,
    role_headers=(ROLE_HEADER,),
    peers=("llama.cpp:inclusionai-ling-3.0-flash.jinja",),
    source="inclusionai-ling-3.0-flash.jinja (llama-cpp-python 0.3.36 sdist)",
)

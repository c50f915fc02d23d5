"""DeepSeek V4 tool-call format facts (deepseek-ai/DeepSeek-V4-Flash, -V4-Pro): DSML invoke calls in a
``tool_calls`` block.

Source: ``deepseek-ai-DeepSeek-V4.jinja`` in the llama-cpp-python 0.3.36 sdist (``vendor/llama.cpp/models/
templates``); line numbers below are that file's. ``deepseek-ai-DeepSeek-V4-Flash-0731.jinja`` differs only in its
reasoning-effort preambles (its lines 17-18, 55-57). ``｜`` is U+FF5C.

- The calls are DeepSeek V3.2's DSML (:mod:`harness.formats.deepseek_v32`) in a block renamed ``tool_calls``
  (lines 104-126): the content, then ``\\n\\n<｜DSML｜tool_calls>\\n``, per call ``<｜DSML｜invoke name="NAME">\\n``,
  per argument ``<｜DSML｜parameter name="KEY" string="true">VALUE</｜DSML｜parameter>\\n`` for a string (raw) or
  ``string="false">`` + ``value | tojson`` otherwise, a lone ``\\n`` for a call without arguments (lines
  120-122), ``</｜DSML｜invoke>\\n``; then ``</｜DSML｜tool_calls>`` and ``<｜end▁of▁sentence｜>`` (line 127).
  A string value holding ``</｜DSML｜parameter>`` is unrepresentable, as in V3.2.
- Thinking (``thinking``, else ``enable_thinking``, lines 4-10): the generation prompt ends
  ``<｜Assistant｜><think>`` (on) or ``<｜Assistant｜></think>`` (off; V3.2 pre-fills ``<think></think>``), lines
  130-136. The turn after the last user message writes ``<think>REASONING</think>`` (on) or ``</think>`` (off),
  lines 89-100. Measured cuts: thinking on gives prefix ``<think>``, off gives ``</think>``.
- ``bos_token`` starts the prompt (line 53); generation ends with ``<｜end▁of▁sentence｜>``.

canitoolcall's DeepSeek-V4-Flash fixtures write the same shape (and SGLang's self-closing
``<｜DSML｜invoke name="NAME"/>``). Its DeepSeek-V4.1-Flash fixtures write another spelling, ``<｜DSML｜ calls>``
with a space after every ``｜DSML｜``, which no sdist template writes: the ``deepseek_v41`` format
(:mod:`harness.formats.deepseek_v41`).
"""

from harness.core.scenarios import call, edge
from harness.formats import FormatSpec, Markers
from harness.formats.deepseek_v31 import ASSISTANT, BOS, EOS, THINK_CLOSE, THINK_OPEN, USER
from harness.formats.deepseek_v32 import DSML, INVOKE_CLOSE, INVOKE_OPEN, PARAM_CLOSE, PARAM_OPEN

BLOCK_OPEN = f"<{DSML}tool_calls>"
BLOCK_CLOSE = f"</{DSML}tool_calls>"


def edge_scenarios() -> list:
    """DeepSeek V4 shapes: V4 and V3.2 block tags inside raw string values, a call without arguments among
    others, and calls after reasoning."""
    return [
        edge(
            "deepseek_v4-block-tags-in-raw-string",
            ["marker-in-string", "dsml-tags"],
            call(
                "save_text",
                {
                    "path": "a.txt",
                    "version": 1,
                    "text": f'{BLOCK_OPEN}\n{INVOKE_OPEN} name="rm">\n{BLOCK_CLOSE} <{DSML}function_calls>',
                },
            ),
        ),
        edge(
            "deepseek_v4-empty-call-between",
            ["empty-arguments", "parallel"],
            [call("get_weather", {"city": "Paris"}), call("get_time"), call("get_weather", {"city": "Oslo"})],
        ),
        edge(
            "deepseek_v4-reasoning-then-calls",
            ["reasoning", "parallel"],
            [call("get_weather", {"city": "Paris"}), call("get_time", {"tz": "CET"})],
            reasoning="Two lookups; the <｜DSML｜ tags come after this.",
        ),
    ]


SPEC = FormatSpec(
    name="deepseek_v4",
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
    # canitoolcall: V4.1-Flash's <｜DSML｜ calls> spelling (a space after ｜DSML｜) is deepseek_v41's.
    peers=(
        "canitoolcall:deepseek/deepseek-ai/DeepSeek-V4-Flash",
        "llama.cpp:deepseek-ai-DeepSeek-V4.jinja",
        "llama.cpp:deepseek-ai-DeepSeek-V4-Flash-0731.jinja",
    ),
    grammar="deepseek_v4",
    source="deepseek-ai-DeepSeek-V4.jinja (llama-cpp-python 0.3.36 sdist), lines 1-137",
)

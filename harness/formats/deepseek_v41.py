"""DeepSeek V4.1 tool-call format facts (deepseek-ai/DeepSeek-V4.1-Flash: format ``deepseek_v41``): spaced DSML
invoke calls in a ``calls`` block.

There is no DeepSeek V4.1 template in the llama-cpp-python 0.3.36 sdist (``vendor/llama.cpp/models/templates`` has
``deepseek-ai-DeepSeek-V4.jinja`` and ``-V4-Flash-0731.jinja``, which write ``<｜DSML｜tool_calls>``; ``test-chat.cpp``
has no V4.1 case), and the hub is not reachable offline, so these facts are *not* read from a template the harness
renders. Each comes from a public source (none of it is copied):

- canitoolcall 0.1.1 ``deepseek/v41.jsonl`` (19 fixtures, provenance ``template_render`` of DeepSeek's own encoder
  ``encoding/encoding.py`` in deepseek-ai/DeepSeek-V4.1-Flash at dba1be0a, MIT): DeepSeek V4's DSML
  (:mod:`harness.formats.deepseek_v4`) with a space after every ``｜DSML｜`` and the block renamed ``calls``:
  the content, then ``\\n\\n<｜DSML｜ calls>\\n``, per call ``<｜DSML｜ invoke name="NAME">\\n``, per argument
  ``<｜DSML｜ parameter name="KEY" string="true">VALUE</｜DSML｜ parameter>\\n`` for a string (raw, unescaped:
  ``a<b>.py``, ``"``, tabs, leading spaces kept) or ``string="false">`` + JSON otherwise, a lone ``\\n`` for a
  call without arguments, ``</｜DSML｜ invoke>\\n``; then ``</｜DSML｜ calls>``. A string value holding
  ``</｜DSML｜ parameter>`` is unrepresentable, as in V3.2.
- canitoolcall 0.1.1 ``deepseek/family.json`` (reference model ``variant`` ``deepseek-v41``): the generation
  prompt ``<｜Assistant｜></think>`` (thinking off; the fixtures record ``<｜Assistant｜><think>`` with thinking
  on), stop token ``<｜end▁of▁sentence｜>``; its fixtures' reasoning is ``REASONING</think>`` before the content
  (``</think>I'll look both up.\\n\\n<｜DSML｜ calls>``), as in V4.
- canitoolcall 0.1.1 ``deepseek/engine-tests.jsonl`` (2 fixtures from vLLM's ``tests/parser/engine/
  test_deepseek_v41.py`` at ced6857a) and vLLM 0.33.0's ``vllm/parser/deepseek_v41.py`` (``--tool-call-parser
  deepseek_v41``): the same six tags (``<｜DSML｜ calls>``, ``</｜DSML｜ calls>``, ``<｜DSML｜ invoke name="``,
  ``</｜DSML｜ invoke>``, ``<｜DSML｜ parameter``, ``</｜DSML｜ parameter>``) on V4's parser.

``bos_token`` and the turn markers are V3.1's (``<｜begin▁of▁sentence｜>``, ``<｜User｜>``, ``<｜Assistant｜>``).
"""

from __future__ import annotations

from harness.formats import FormatSpec, Markers
from harness.formats.deepseek_v31 import ASSISTANT, BOS, EOS, THINK_CLOSE, THINK_OPEN, USER
from harness.formats.deepseek_v32 import DSML

BLOCK_OPEN = f"<{DSML} calls>"
BLOCK_CLOSE = f"</{DSML} calls>"
INVOKE_OPEN = f"<{DSML} invoke"
INVOKE_CLOSE = f"</{DSML} invoke>"
PARAM_OPEN = f"<{DSML} parameter"
PARAM_CLOSE = f"</{DSML} parameter>"


SPEC = FormatSpec(
    name="deepseek_v41",
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
    role_headers=(ASSISTANT,),
    peers=("canitoolcall:deepseek/deepseek-ai/DeepSeek-V4.1-Flash",),
    grammar="deepseek_v4_1",
    source="no template offline: canitoolcall 0.1.1's deepseek V4.1 fixtures (DeepSeek's encoding/encoding.py "
    "renders) and family.json, and vLLM 0.33.0's deepseek_v41 parser (see the module docstring)",
)

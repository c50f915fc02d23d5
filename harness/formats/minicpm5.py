"""OpenBMB MiniCPM5 XML tool-call format facts.

Source: ``openbmb-MiniCPM5-1B.jinja`` in the llama-cpp-python 0.3.36 sdist (``vendor/llama.cpp/models/templates``);
line numbers below are that file's.

One call (lines 137-150); there is no block around the calls::

    <function name="NAME"><param name="KEY">VALUE</param></function>

- Calls follow the content, each after a ``\\n`` (none before a first call when the content is empty, lines
  130-133); nothing is written between the parts of a call. A zero-argument call is
  ``<function name="NAME"></function>``.
- VALUE: a string holding ``<``, ``&`` or a newline is wrapped in ``<![CDATA[...]]>`` (lines 142-143), any other
  value is written with ``{{ }}``, i.e. Python ``str()``: other strings raw, ``True``/``False``, ``None``, numbers,
  containers as Python literals (``{'a': 1}``). Nothing else is escaped (a CDATA value may hold ``</param>``).
- The turn is ``<|im_start|>assistant\\n``, then ``<think>\\nREASONING\\n</think>\\n\\n`` (turns after the last
  user query, line 121), the content, the calls and ``<|im_end|>\\n`` (line 153). The generation prompt is
  ``<|im_start|>assistant\\n``, plus ``<think>\\n`` with ``enable_thinking=true`` or ``<think>\\n\\n</think>\\n\\n``
  with ``enable_thinking=false`` (lines 170-178).
"""

from harness.formats import FormatSpec, Markers

FUNCTION_OPEN = '<function name="'
FUNCTION_CLOSE = "</function>"
PARAMETER_OPEN = '<param name="'
PARAMETER_CLOSE = "</param>"
CDATA_OPEN = "<![CDATA["
CDATA_CLOSE = "]]>"
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"

SPEC = FormatSpec(
    name="minicpm5",
    markers=(FUNCTION_OPEN, FUNCTION_CLOSE, THINK_OPEN, THINK_CLOSE, "<|im_start|>", "<|im_end|>"),
    stop_markers=("<|im_end|>", "<|endoftext|>"),
    call=Markers(FUNCTION_OPEN, FUNCTION_CLOSE),
    reasoning=Markers(THINK_OPEN, THINK_CLOSE),
    arguments="xml-values",
    parameter=Markers(PARAMETER_OPEN, PARAMETER_CLOSE),
    vocabulary=None,
    no_vocabulary="MiniCPM5's tokenizer is not available offline",
    role_headers=("<|im_start|>assistant\n",),
    peers=("llama.cpp:openbmb-MiniCPM5-1B.jinja",),
    source="openbmb-MiniCPM5-1B.jinja (llama-cpp-python 0.3.36 sdist)",
)

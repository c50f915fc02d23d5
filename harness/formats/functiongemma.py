"""FunctionGemma tool-call format facts (google/functiongemma-270m-it: format ``functiongemma``).

There is no FunctionGemma template in the llama-cpp-python 0.3.36 sdist, and the hub is not reachable offline, so
these facts are *not* read from the real template. Each comes from a public source (looked up with the project's
search tool; none of it is copied):

- Google's "FunctionGemma formatting and best practices" page (ai.google.dev/gemma/docs/functiongemma/
  formatting-and-best-practices): turns are ``<start_of_turn>ROLE ... <end_of_turn>`` (roles developer, user,
  model); six control tokens ``<start_function_declaration>``/``<end_function_declaration>``,
  ``<start_function_call>``/``<end_function_call>`` (the model's call), ``<start_function_response>``/
  ``<end_function_response>``; ``<start_function_response>`` is an additional stop sequence for the engine; every
  string value is enclosed in the single token ``<escape>`` (``key:<escape>string value<escape>``) so ``{``, ``}``,
  ``,`` and quotes inside it are literal.
- vLLM's ``functiongemma`` tool parser (``vllm/tool_parsers/functiongemma_tool_parser.py``, vllm 0.33.0, installed
  under the engines cache): the call shape ``<start_function_call>call:NAME{param:<escape>value<escape>}
  <end_function_call>``; mlx-lm's ``mlx_lm/tool_parsers/function_gemma.py`` (0.32.2): the same start/end markers.
- Ollama's FunctionGemma renderer and its tests (ollama/ollama ``model/renderers/functiongemma.go``,
  ``functiongemma_test.go``), a re-implementation of the template: the generation prompt is
  ``<start_of_turn>model\\n``; an assistant turn writes its content (trimmed) first, then every call back to back
  with no separator, each ``<start_function_call>call:NAME{k:v,...}<end_function_call>``, then
  ``<start_function_response>`` when a tool result follows, else ``<end_of_turn>\\n``; keys are written bare and
  sorted at every depth; strings between ``<escape>`` markers; booleans ``true``/``false``; integers without a
  fraction; objects ``{k:v,...}`` and arrays ``[v,...]`` nested inline; no thinking/reasoning support.
- The observed case ``functiongemma_braces_in_escape_and_multicall_mlx_lm`` (corpora/observed, from
  ml-explore/mlx-lm PR 1628): hyphenated tool names (``artifact-submit``), camelCase keys, a string value holding
  ``{``, ``}``, ``,``, ``:``, quotes and newlines, two calls back to back, and a bare ``true``.

Not established by any source, so read leniently (see :mod:`parsers.own.functiongemma`): how the template writes
null (Gemma 4's ``format_argument`` writes Python's ``None``; the parser accepts ``None`` and ``null``) and
floats (``str()``: ``1e-07``, ``1e+16``).

Unrepresentable: a string holding ``<escape>`` (the template has no escape for its own delimiter).
"""

from harness.formats import FormatSpec, Markers

CALL_OPEN = "<start_function_call>"
CALL_CLOSE = "<end_function_call>"
ESCAPE = "<escape>"
RESPONSE_OPEN, RESPONSE_CLOSE = "<start_function_response>", "<end_function_response>"
DECL_OPEN, DECL_CLOSE = "<start_function_declaration>", "<end_function_declaration>"
TURN_OPEN, TURN_CLOSE = "<start_of_turn>", "<end_of_turn>"


SPEC = FormatSpec(
    name="functiongemma",
    markers=(
        CALL_OPEN,
        CALL_CLOSE,
        ESCAPE,
        RESPONSE_OPEN,
        RESPONSE_CLOSE,
        DECL_OPEN,
        DECL_CLOSE,
        TURN_OPEN,
        TURN_CLOSE,
    ),
    stop_markers=(RESPONSE_OPEN, TURN_CLOSE, "<eos>"),
    call=Markers(CALL_OPEN, CALL_CLOSE),
    arguments="escape-token",
    string_delimiter=ESCAPE,
    vocabulary=None,
    no_vocabulary="FunctionGemma's tokenizer (the Gemma 3 vocabulary with its function-call tokens) is not "
    "available offline",
    unrepresentable=(ESCAPE,),
    source="no template offline: Google's FunctionGemma formatting page, vLLM's and mlx-lm's functiongemma "
    "parsers, Ollama's FunctionGemma renderer, and the observed case (see the module docstring)",
)

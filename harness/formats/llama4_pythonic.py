"""Llama 4 pythonic tool-call format facts (meta-llama/Llama-4-Scout-17B-16E-Instruct: format ``llama4_pythonic``).

There is no Llama 4 template in the llama-cpp-python 0.3.36 sdist (``vendor/llama.cpp/models/templates`` has
Llama 3.1, 3.2 and 3.3 only; ``test-chat.cpp`` has no Llama 4 case), and the meta-llama repositories are gated and
the hub is not reachable offline, so these facts are *not* read from a template the harness renders. Each comes
from a public source (looked up with the project's search tool; none of it is copied):

- Meta's Llama 4 prompt-format document (meta-llama/llama-models ``models/llama4/prompt_format.md`` at 0e0b8c5,
  lines 204-207 and 259-262, quoted by canitoolcall 0.1.1's ``llama/l4-meta-*`` fixtures): the model answers a
  tool request with the bare list ``[get_weather(city="San Francisco"), get_weather(city="Seattle")]`` (no marker
  before it, keyword arguments, Python literals: ``user_id=7890, special='black'``), then ``<|eot|>``.
- canitoolcall 0.1.1 ``llama/family.json`` (reference model ``variant`` ``llama4-pythonic``): the generation
  prompt ``<|header_start|>assistant<|header_end|>\\n\\n`` (nothing pre-filled), stop tokens ``<|eot|>``,
  ``<|eom|>``, ``<|end_of_text|>``, the markers ``<|python_start|>``/``<|python_end|>``, ``<|header_start|>``/
  ``<|header_end|>``, ``<|begin_of_text|>``; its fixtures (from vLLM's ``tests/tool_parsers/
  test_llama4_pythonic_tool_parser.py``) add ``<|python_start|>[...]<|python_end|>`` around the list, parallel
  calls with no spaces (``[f(a='x'),g(b=9)]``), ``\\'`` and ``\\"`` escapes, ``None``/``True`` and dict and list
  literals as values, and a parameterless call ``[get_weather()]``.
- Meta's Hugging Face chat template for Llama 4 Scout (seen through the search tool's code index): turns are
  ``<|header_start|>ROLE<|header_end|>\\n\\nCONTENT<|eot|>``; an assistant turn with calls writes
  ``<|python_start|>`` + content + ``<|python_end|>`` and then each call as JSON ``{"name": ..., "parameters":
  ...}``, a form the model was not shown answering in (Meta's document above) and canitoolcall has no fixture
  of; vLLM ships its own ``examples/tool_chat_template_llama4_pythonic.jinja`` that writes the calls back as
  ``[NAME(k="v", ...)]`` with every value pasted through ``"%s"|format`` between double quotes.
- vLLM's ``llama4_pythonic`` tool parser (``--tool-call-parser llama4_pythonic``, vLLM's tool-calling docs): it
  strips ``<|python_start|>``/``<|python_end|>`` and reads the rest with Python's ``ast`` as a list of calls.

``call_open`` is the ``[`` that starts the list: the format has no marker, so a parser tells a call list from
prose with brackets (``[link](url)``, ``[1, 2]``) only by its shape ``[NAME(``. ``call_end`` is the ``]`` that
ends it. The format has no reasoning.
"""

from __future__ import annotations

from harness.formats import FormatSpec, Markers

PYTHON_START = "<|python_start|>"
PYTHON_END = "<|python_end|>"
EOT = "<|eot|>"
EOM = "<|eom|>"
END_OF_TEXT = "<|end_of_text|>"
ROLE_HEADER = "<|header_start|>assistant<|header_end|>\n\n"


SPEC = FormatSpec(
    name="llama4_pythonic",
    markers=(
        PYTHON_START,
        PYTHON_END,
        EOT,
        EOM,
        END_OF_TEXT,
        "<|header_start|>",
        "<|header_end|>",
        "<|begin_of_text|>",
    ),
    stop_markers=(EOT, EOM, END_OF_TEXT),
    call=Markers("[", None),  # a bare list: only its shape ends it
    call_end="]",
    arguments="pythonic",
    vocabulary=None,
    no_vocabulary="Llama 4's tokenizer (meta-llama/Llama-4-Scout-17B-16E-Instruct, gated) is in no PyPI package",
    template_vars={"bos_token": ""},
    role_headers=(ROLE_HEADER,),
    peers=("canitoolcall:llama/meta-llama/Llama-4-Scout-17B-16E-Instruct",),
    source="no template offline: Meta's Llama 4 prompt-format document, canitoolcall's llama family, Meta's and "
    "vLLM's Llama 4 chat templates and vLLM's llama4_pythonic parser (see the module docstring)",
)

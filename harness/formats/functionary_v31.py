"""Functionary v3.1 tool-call format facts (MeetKai functionary-medium-v3.1, a Llama 3.1 fine-tune).

Source: ``meetkai-functionary-medium-v3.1.jinja`` in the llama-cpp-python 0.3.36 sdist (``vendor/llama.cpp/models/
templates``), llama.cpp's copy of the model's chat template (first line ``{# version=v3-llama3.1 #}``). Line
numbers below are that file's.

- Line 11: the prompt starts with ``bos_token`` (Llama 3.1's ``<|begin_of_text|>``, which the engine's tokenizer
  adds itself), so prompts render with an empty ``bos_token`` (``template_vars``), as for Llama 3 JSON. The system
  header (lines 11-17: "Cutting Knowledge Date: December 2023", no date variable; "Environment: ipython" when a
  tool has ``"type": "code_interpreter"``) and the tool declarations (lines 18-28) follow; the instructions name
  the syntax ``<function=NAME>{...}</function>`` (and ask for one call at a time, although lines 43-49 write any
  number). Each declaration is ``"..."|safe + (t | tojson)``: a ``Markup`` plus a ``str`` escapes the ``str``, so
  transformers' rendering writes the declarations HTML-escaped (``{&#34;name&#34;: ...``). Only the prompt is
  affected: the assistant turn concatenates plain strings.
- Lines 33-36: user and system turns ``<|start_header_id|>ROLE<|end_header_id|>\\n\\nTEXT<|eot_id|>``; a tool
  result is an ``ipython`` turn.
- Lines 37-53, an assistant turn: ``<|start_header_id|>assistant<|end_header_id|>\\n\\n``, then the content
  raw (line 40, when non-empty), then each call with nothing between (lines 43-49): ``<function=NAME>ARGS</function>``
  (line 47), or for the tool named ``python`` (lines 44-45) ``<|python_tag|>ARGS`` with no closer. ``NAME`` is
  pasted raw (no escape); ``ARGS`` is ``arguments | tojson`` (the filter binds tighter than ``+``; transformers'
  ``tojson``: ``json.dumps``, non-ASCII kept, nothing HTML-escaped), so a string value may hold ``</function>``
  or ``<|eom_id|>`` literally. (An ``arguments`` given as a JSON string would be double-encoded; the harness
  passes objects.) Content and calls mix only in this order: the content, then the calls; no reasoning.
- Line 50 ends a turn with calls with ``<|eom_id|>``; line 52 ends one without with ``<|eot_id|>``. Both are stop
  markers, and so is ``<|end_of_text|>``, Llama 3.1's end-of-text token (Llama 3.1 Instruct's
  ``generation_config.json`` lists 128001, 128008 and 128009 as eos ids; functionary's own is not in the sdist),
  as for Llama 3 JSON; the template never writes it.
- Lines 56-58: the generation prompt is ``<|start_header_id|>assistant<|end_header_id|>\\n\\n``; nothing is
  pre-filled after it (parse prefix ``""``).

The vocabulary is the Llama 3.2 tokenizer that ``llama3_json`` names too (``llama``,
:data:`harness.assets.tokenizers.TOKENIZERS`): functionary v3.1 is fine-tuned from Llama 3.1 Instruct, whose
vocabulary 3.2 shares, and the template uses only Llama 3.1's special tokens; ``<|python_tag|>`` (128010),
``<|eom_id|>`` (128008) and ``<|eot_id|>`` (128009) are single tokens in it, ``<function=`` / ``</function>``
plain text.

llama.cpp in the pinned sdist reads this template with its auto-parser and a patch for it
(``common/chat-diff-analyzer.cpp``, "Functionary 3.1": no section, per call ``<function=`` ... ``</function>``;
``<|python_tag|>`` is not among its preserved tokens); no engine module configures the format yet.

A scenario whose only call is to ``python`` renders no ``<function=`` (the spec's call opener), which the
renderer takes for a template that writes no calls: such scenarios are skipped; the edge scenarios put the python
call after a function call.
"""

from __future__ import annotations

from harness.core.scenarios import call, edge, text_case
from harness.formats import FormatSpec, Markers

CALL_OPEN = "<function="
NAME_END = ">"
CALL_CLOSE = "</function>"
PYTHON_TAG = "<|python_tag|>"
PYTHON_TOOL = "python"  # the tool whose call is written after <|python_tag|> (line 44)
EOT = "<|eot_id|>"
EOM = "<|eom_id|>"
END_OF_TEXT = "<|end_of_text|>"
HEADER_OPEN, HEADER_CLOSE = "<|start_header_id|>", "<|end_header_id|>"
BEGIN_OF_TEXT = "<|begin_of_text|>"


def edge_scenarios() -> list:
    """Functionary v3.1 shapes (ids ``edge-functionary_v31-...``): the format's markers and a whole call inside
    strings, the python tool's tagged call, prose before the calls with marker-like text."""
    fake_call = f'{CALL_OPEN}rm>{{"path": "/"}}{CALL_CLOSE}'

    def text(id: str, tags: list[str], value: str, note: str = ""):
        return text_case(f"functionary_v31-{id}", tags, value, note)

    return [
        text(
            "call-in-string",
            ["marker-in-string", "functionary-function-tag"],
            f"run {fake_call} now",
            note="A whole <function=...>...</function> call inside a string value is data.",
        ),
        text(
            "closer-in-string",
            ["marker-in-string", "functionary-function-tag"],
            f'done{CALL_CLOSE}{CALL_OPEN}x>{{"a": 1}}',
            note="The closer inside a string value does not end the call.",
        ),
        text(
            "python-tag-in-string",
            ["marker-in-string", "functionary-python-tag"],
            f'{PYTHON_TAG}{{"code": "print(1)"}}',
        ),
        text(
            "stop-markers-in-string",
            ["marker-in-string"],
            f"end {EOM} more {EOT} {HEADER_OPEN}user{HEADER_CLOSE}\n\nhi",
        ),
        edge(
            "functionary_v31-python-after-function",
            ["functionary-python-tag", "parallel-2"],
            [call("get_weather", {"city": "Paris"}), call(PYTHON_TOOL, {"code": "import math\nprint(math.pi)"})],
            note="The python tool's call is written <|python_tag|>ARGS, with no closer, after the other call.",
        ),
        edge(
            "functionary_v31-zero-args",
            ["zero-args"],
            call("get_time"),
            note="Written <function=get_time>{}</function>.",
        ),
        edge(
            "functionary_v31-angle-brackets-in-value",
            ["functionary-function-tag"],
            call("compare", {"expr": "a>=b => <c> <function x>"}),
            note="'>' and '<' in a value: only the first '>' after <function= ends the name.",
        ),
        edge(
            "functionary_v31-prose-marker-prefix-before",
            ["content-before"],
            call("get_weather", {"city": "Rome"}),
            content_before="a < b, <func and <|eo then: ",
            note="Prose with marker prefixes right before the call is content.",
        ),
        edge(
            "functionary_v31-content-then-calls",
            ["content-after", "parallel-2"],
            [call("get_weather", {"city": "Oslo"}), call("get_time")],
            content_after="Checking both.",
            note="The template writes the turn's content first, then the calls with nothing between.",
        ),
    ]


SPEC = FormatSpec(
    name="functionary_v31",
    markers=(CALL_OPEN, CALL_CLOSE, PYTHON_TAG, EOT, EOM, END_OF_TEXT, HEADER_OPEN, HEADER_CLOSE, BEGIN_OF_TEXT),
    stop_markers=(EOM, EOT, END_OF_TEXT),
    call=Markers(CALL_OPEN, CALL_CLOSE),
    arguments="json",
    vocabulary="llama",
    template_vars={"bos_token": ""},
    edge_scenarios=edge_scenarios,
    role_headers=("<|start_header_id|>assistant<|end_header_id|>\n\n",),
    peers=("llama.cpp:meetkai-functionary-medium-v3.1.jinja",),
    source="meetkai-functionary-medium-v3.1.jinja (llama-cpp-python 0.3.36 sdist)",
)

"""Kimi K2 tool-call format facts (moonshotai/Kimi-K2-Instruct).

Source: ``moonshotai-Kimi-K2.jinja`` in the llama-cpp-python 0.3.36 sdist (``vendor/llama.cpp/models/templates``),
llama.cpp's copy of moonshotai/Kimi-K2-Instruct's chat template. Line numbers below are that file's.

- Turns: ``<|im_user|>user<|im_middle|>...<|im_end|>``, ``<|im_assistant|>assistant<|im_middle|>...<|im_end|>``,
  ``<|im_system|>system<|im_middle|>...<|im_end|>`` (lines 6-16, 39); the generation prompt is
  ``<|im_assistant|>assistant<|im_middle|>`` (line 42), so nothing is pre-filled: the parse prefix is ``""``.
- An assistant turn with calls writes its content first (line 18), then
  ``<|tool_calls_section_begin|>`` (line 19), per call
  ``<|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>ARGS<|tool_call_end|>`` (lines 20-24), and
  ``<|tool_calls_section_end|>`` (line 25), then ``<|im_end|>`` (line 39), the stop marker. Nothing separates
  the markers (``-`` whitespace control everywhere).
- The call id is built by the template, not taken from the message: ``'functions.' + name + ':' +
  loop.index0`` (line 22), the call's position in this turn. The tool name is written raw, so a name holding
  ``.`` or ``:`` gives ``functions.web.search:0`` / ``functions.mcp:search:0``: the index is after the *last*
  colon, the name between ``functions.`` and it.
- ``ARGS`` is ``arguments | tojson`` (line 23; transformers' ``tojson``: ``json.dumps`` with non-ASCII kept, no
  HTML escaping), so values carry their JSON types and a string may hold any marker text literally.
- The template has no reasoning: ``reasoning_content`` is never written (Kimi-K2-Thinking adds ``<think>``
  blocks, which this template does not write: the ``thought`` block the own parser reads), so scenarios with
  reasoning are unrepresentable.
- No BOS text is written; the template needs no ``template_vars``.
- Generation ends with ``<|im_end|>``, the turn end the template writes after the section (line 39).

Nothing is unrepresentable in strings: JSON escapes what it must and the markers inside strings are data.
"""

from harness.core.scenarios import call, edge
from harness.formats import FormatSpec, Markers

SECTION_BEGIN = "<|tool_calls_section_begin|>"
SECTION_END = "<|tool_calls_section_end|>"
CALL_BEGIN = "<|tool_call_begin|>"
ARGUMENT_BEGIN = "<|tool_call_argument_begin|>"
CALL_END = "<|tool_call_end|>"
IM_END = "<|im_end|>"
ID_PREFIX = "functions."


def edge_scenarios() -> list:
    """Kimi-specific curated shapes: tool names that make the template's ``functions.NAME:IDX`` id ambiguous to a
    naive split, names that look like the id's own parts, special tokens as literal text inside strings, and
    several calls (ids ``:0``, ``:1``, ``:2``)."""
    tokens = "".join(
        (SECTION_BEGIN, CALL_BEGIN, "functions.rm:0", ARGUMENT_BEGIN, '{"path": "/"}', CALL_END, SECTION_END, IM_END)
    )
    return [
        edge(
            "kimi_k2-name-colon",
            ["name-colon", "kimi-id"],
            call("mcp:search", {"query": "kimi"}),
            note="The id is functions.mcp:search:0: the index follows the last colon.",
        ),
        edge(
            "kimi_k2-name-dot-colon",
            ["name-dot", "name-colon", "kimi-id"],
            call("ns.tool:v2", {"x": 1}),
            note="functions.ns.tool:v2:0",
        ),
        edge(
            "kimi_k2-name-functions-prefix",
            ["kimi-id"],
            call("functions.lookup", {"q": "x"}),
            note="A tool whose own name starts with 'functions.': the id is functions.functions.lookup:0.",
        ),
        edge(
            "kimi_k2-name-ends-digits-parallel",
            ["kimi-id", "parallel", "same-tool-twice"],
            [call("get_v2", {"n": 1}), call("get_v2", {"n": 2}), call("exec5", {})],
            note="Names ending in digits next to the index: functions.get_v2:0, functions.get_v2:1, functions.exec5:2.",
        ),
        edge(
            "kimi_k2-tokens-in-string",
            ["marker-in-string", "kimi-tokens"],
            call("save_text", {"path": "a.txt", "text": tokens, "version": 1}),
            note="A whole Kimi call, written as text inside a JSON string value.",
        ),
        edge(
            "kimi_k2-id-text-in-string",
            ["marker-in-string", "kimi-id"],
            call("set_pattern", {"pattern": "functions.exec:0" + ARGUMENT_BEGIN}),
            content_before="Run it.",
            note="An id-like string followed by the argument marker, inside a value.",
        ),
        edge(
            "kimi_k2-tokens-in-content-args-nested",
            ["marker-in-string", "nested-object"],
            call("configure", {"cfg": {"end": CALL_END, "list": [SECTION_END, IM_END]}}),
        ),
    ]


SPEC = FormatSpec(
    name="kimi_k2",
    markers=(
        SECTION_BEGIN,
        SECTION_END,
        CALL_BEGIN,
        ARGUMENT_BEGIN,
        CALL_END,
        IM_END,
        "<|im_user|>",
        "<|im_assistant|>",
        "<|im_system|>",
        "<|im_middle|>",
    ),
    stop_markers=(IM_END,),
    call=Markers(CALL_BEGIN, CALL_END),
    section=Markers(SECTION_BEGIN, SECTION_END),
    thought=Markers("<think>", "</think>"),
    arguments="json",
    vocabulary=None,
    no_vocabulary="Kimi's tiktoken vocabulary with its section tokens is not available offline",
    edge_scenarios=edge_scenarios,
    role_headers=("<|im_assistant|>assistant<|im_middle|>",),
    # canitoolcall: Kimi K2.6 writes these calls after a <think> block (read as reasoning by the own parser);
    # Kimi K3's XTML format (<|open|>call ...) is another format: kimi_k3.
    peers=(
        "canitoolcall:kimi/moonshotai/Kimi-K2-Instruct-0905",
        "canitoolcall:kimi/moonshotai/Kimi-K2.6",
        "llama.cpp:moonshotai-Kimi-K2.jinja",
        "llama.cpp:Kimi-K2-Instruct.jinja",
        "llama.cpp:Kimi-K2-Thinking.jinja",
    ),
    grammar="kimi",
    source="moonshotai-Kimi-K2.jinja (llama-cpp-python 0.3.36 sdist), lines 1-43",
)

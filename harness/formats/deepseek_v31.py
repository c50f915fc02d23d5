"""DeepSeek V3.1 tool-call format facts (deepseek-ai/DeepSeek-V3.1).

Source: ``deepseek-ai-DeepSeek-V3.1.jinja`` in the llama-cpp-python 0.3.36 sdist (``vendor/llama.cpp/models/
templates``), llama.cpp's copy of the model's chat template. Line numbers below are that file's. The bars and
the ``▁`` in the markers are U+FF5C (FULLWIDTH VERTICAL LINE) and U+2581 (LOWER ONE EIGHTH BLOCK).

- The prompt starts with ``bos_token`` (line 23). DeepSeek's BOS text is ``<｜begin▁of▁sentence｜>``; it is
  given as ``template_vars`` so prompts carry the real text (it does not affect the cut completions).
- Turns: ``<｜User｜>TEXT`` (line 28); an assistant turn with calls starts ``<｜Assistant｜><think></think>``
  (line 31), whatever ``thinking`` is: reasoning is never written on such a turn, nor on a turn without calls
  (line 49 writes ``<think></think>`` and drops ``reasoning_content``), so scenarios with reasoning are
  unrepresentable.
- Calls (lines 36-44): the content first, then
  ``<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>`` for the first call,
  ``<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>`` for each further call, then
  ``<｜tool▁calls▁end｜><｜end▁of▁sentence｜>``. Nothing separates them. ``ARGS`` is
  ``arguments | tojson`` (the filter binds tighter than ``+``): JSON, non-ASCII kept, markers inside strings
  written literally. (Because of ``tojson``, an ``arguments`` already given as a JSON string would be
  double-encoded; the harness passes objects.)
- Generation prompt (lines 67-70): ``<｜Assistant｜><think></think>`` with thinking off, ``<｜Assistant｜><think>``
  with thinking on. The full render of a turn with calls repeats ``<think></think>``, so with thinking off the
  cut leaves the prefix ``""`` and the completion starts with the content or ``<｜tool▁calls▁begin｜>``.
- Generation ends with ``<｜end▁of▁sentence｜>``.

DeepSeek V3 (before 3.1) wrote
``<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\\n```json\\nARGS\\n```<｜tool▁call▁end｜>``;
llama.cpp's own analyzer (``common/chat-diff-analyzer.cpp``) still knows that shape,
and the project's parser reads it as drift.
"""

from harness.core.scenarios import call, edge
from harness.formats import FormatSpec, Markers

CALLS_BEGIN = "<｜tool▁calls▁begin｜>"
CALLS_END = "<｜tool▁calls▁end｜>"
CALL_BEGIN = "<｜tool▁call▁begin｜>"
SEP = "<｜tool▁sep｜>"
CALL_END = "<｜tool▁call▁end｜>"
EOS = "<｜end▁of▁sentence｜>"
BOS = "<｜begin▁of▁sentence｜>"
USER = "<｜User｜>"
ASSISTANT = "<｜Assistant｜>"
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


def edge_scenarios() -> list:
    """DeepSeek V3.1 shapes: the format's special tokens as literal text inside strings (a whole call, the
    separator right after a name-like string, the end-of-sentence stop marker), content before calls, and a
    V3-style fenced body written as a string."""
    whole = CALLS_BEGIN + CALL_BEGIN + "rm" + SEP + '{"path": "/"}' + CALL_END + CALLS_END
    return [
        edge(
            "deepseek_v31-tokens-in-string",
            ["marker-in-string", "deepseek-tokens"],
            call("save_text", {"path": "a.txt", "text": whole, "version": 1}),
            note="A whole DeepSeek V3.1 call written as text inside a JSON string value.",
        ),
        edge(
            "deepseek_v31-sep-in-string",
            ["marker-in-string", "deepseek-tokens"],
            call("set_pattern", {"pattern": "name" + SEP + "{" + CALL_END}),
            note="The separator and the call end inside the last value, right before the real call end.",
        ),
        edge(
            "deepseek_v31-eos-in-string",
            ["marker-in-string", "deepseek-tokens"],
            call("save_text", {"path": "b.txt", "text": "stop here " + EOS + " or not" + EOS, "version": 2}),
            note="The stop marker inside a string: only a trailing one ends generation.",
        ),
        edge(
            "deepseek_v31-v3-fence-in-string",
            ["marker-in-string", "code"],
            call("save_text", {"path": "c.md", "text": "function" + SEP + "x\n```json\n{}\n```", "version": 3}),
            note="DeepSeek V3's fenced call body as text inside a value.",
        ),
        edge(
            "deepseek_v31-think-in-string-content",
            ["marker-in-string", "content-after"],
            call("search", {"query": "</think> and <think>"}),
            content_after="Searching for the tags.",
        ),
    ]


SPEC = FormatSpec(
    name="deepseek_v31",
    markers=(
        CALLS_BEGIN,
        CALLS_END,
        CALL_BEGIN,
        SEP,
        CALL_END,
        EOS,
        BOS,
        USER,
        ASSISTANT,
        "<｜tool▁output▁begin｜>",
        "<｜tool▁output▁end｜>",
    ),
    stop_markers=(EOS,),
    call=Markers(CALL_BEGIN, CALL_END),
    section=Markers(CALLS_BEGIN, CALLS_END),
    reasoning=Markers(THINK_OPEN, THINK_CLOSE),
    arguments="json",
    vocabulary="deepseek",
    template_vars={"bos_token": BOS},
    edge_scenarios=edge_scenarios,
    role_headers=(ASSISTANT,),
    # canitoolcall: V3-0324's function<｜tool▁sep｜>NAME ```json``` calls are V3's format (deepseek_v3; drift here).
    peers=("canitoolcall:deepseek/deepseek-ai/DeepSeek-V3.1", "llama.cpp:deepseek-ai-DeepSeek-V3.1.jinja"),
    grammar="deepseek_v3_1",
    source="deepseek-ai-DeepSeek-V3.1.jinja (llama-cpp-python 0.3.36 sdist), lines 1-71",
)

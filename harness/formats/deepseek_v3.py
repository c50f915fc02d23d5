"""DeepSeek V3 / V3-0324 / R1 tool-call format facts: the fenced ``function<｜tool▁sep｜>NAME`` calls.

Sources: three templates of the llama-cpp-python 0.3.36 sdist (``vendor/llama.cpp/models/templates``), line
numbers below are theirs; and canitoolcall 0.1.1's ``deepseek`` family (reference model
``deepseek-ai/DeepSeek-V3-0324``). The bars and the ``▁`` in the markers are U+FF5C and U+2581.

- The call (``deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja`` lines 18, 21; ``llama-cpp-deepseek-r1.jinja``
  line 52): ``<｜tool▁call▁begin｜>TYPE<｜tool▁sep｜>NAME\\n```json\\nARGS\\n```<｜tool▁call▁end｜>`` with ``TYPE``
  the call's ``type`` (``function``) and ``ARGS`` ``arguments | tojson`` (the filter binds tighter than ``+``):
  JSON, non-ASCII kept, marker and fence text inside strings written literally. The calls of a turn sit between
  ``<｜tool▁calls▁begin｜>`` and ``<｜tool▁calls▁end｜>``, joined by ``\\n`` (Qwen-32B line 21, R1 line 48); then
  ``<｜end▁of▁sentence｜>`` (Qwen-32B line 24, R1 line 54), the stop marker. canitoolcall's V3-0324 fixtures
  write the same shape, with the content right before ``<｜tool▁calls▁begin｜>`` (``v3-text-before-call``) and
  calls joined by nothing or ``\\n``.
- Turns: ``bos_token`` first (Qwen-32B line 9; DeepSeek's BOS text ``<｜begin▁of▁sentence｜>`` is given as
  ``template_vars``), ``<｜User｜>TEXT`` (line 12), ``<｜Assistant｜>`` before the section (line 18).
- Content and reasoning on a turn with calls (Qwen-32B lines 26-35): the content is written *after* the calls'
  ``<｜end▁of▁sentence｜>``, as a second ``<｜Assistant｜>CONTENT<｜end▁of▁sentence｜>`` turn (also for empty
  content), which a model's generation, ending at the first stop marker, never reaches: the cut drops it
  (:func:`harness.template.render.split_completion`) and content after the calls is unrepresentable.
  ``reasoning_content`` is never read: scenarios with reasoning are unrepresentable too.
- Generation prompt: ``<｜Assistant｜><think>\\n`` (Qwen-32B line 46, R1 line 75,
  ``deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja`` line 43: R1 always opens its reasoning), plus ``</think>``
  with thinking off in Qwen-32B's (line 46). The full render writes no ``<think>``, so with thinking off the
  cut's prefix is ``<think>\\n</think>``. canitoolcall's V3-0324 prompt is ``<｜Assistant｜>`` (no reasoning).

Which templates write calls (rendered with transformers' Jinja, as the harness renders):

- ``deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja``: yes (the rendered corpus).
- ``llama-cpp-deepseek-r1.jinja`` (llama.cpp's own R1 template): not under transformers -- line 12 pipes
  ``tools | map(attribute='function')`` (a generator there) into ``tojson``, a TypeError whenever tools are
  given; llama.cpp's own engine renders it. It writes calls only on a turn whose content is empty (line 41;
  content otherwise drops the calls, lines 56-62).
- ``deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja``: no -- calls only when ``content is none`` (line 14, the
  harness passes ``""``), the arguments concatenated raw (lines 17, 19: a dict fails ``+``), and the section
  closed only after a second call (line 19). Its llama.cpp cases are reasoning only.

DeepSeek V3.1 later dropped the ``TYPE`` head and the fence (:mod:`harness.formats.deepseek_v31`); the parser
reads that shape as drift.
"""

from harness.core.scenarios import call, edge
from harness.formats import FormatSpec, Markers

# The same special tokens as V3.1 (one ``deepseek`` vocabulary: DeepSeek-R1's tokenizer)
from harness.formats.deepseek_v31 import (
    ASSISTANT,
    BOS,
    CALL_BEGIN,
    CALL_END,
    CALLS_BEGIN,
    CALLS_END,
    EOS,
    SEP,
    THINK_CLOSE,
    THINK_OPEN,
    USER,
)

CALL_TYPE = "function"
FENCE = "```"
OUTPUTS_BEGIN = "<｜tool▁outputs▁begin｜>"
OUTPUTS_END = "<｜tool▁outputs▁end｜>"
OUTPUT_BEGIN = "<｜tool▁output▁begin｜>"
OUTPUT_END = "<｜tool▁output▁end｜>"


def fenced_call(name: str, args_json: str) -> str:
    """One call as the templates write it."""
    return f"{CALL_BEGIN}{CALL_TYPE}{SEP}{name}\n{FENCE}json\n{args_json}\n{FENCE}{CALL_END}"


def edge_scenarios() -> list:
    """DeepSeek V3 shapes: a whole fenced call, the closing fence and the call end, and V3.1's unfenced call
    written as text inside string values; a tool named like the call type; content before the calls."""
    whole = CALLS_BEGIN + fenced_call("rm", '{"path": "/"}') + CALLS_END
    return [
        edge(
            "deepseek_v3-tokens-in-string",
            ["marker-in-string", "deepseek-tokens"],
            call("save_text", {"path": "a.txt", "text": whole, "version": 1}),
            note="A whole fenced DeepSeek V3 call written as text inside a JSON string value.",
        ),
        edge(
            "deepseek_v3-fence-close-in-string",
            ["marker-in-string", "code"],
            call("set_pattern", {"pattern": "}\n" + FENCE + CALL_END}),
            note="The closing fence and the call end inside the last value, right before the real ones.",
        ),
        edge(
            "deepseek_v3-v31-shape-in-string",
            ["marker-in-string", "deepseek-tokens"],
            call("save_text", {"path": "b.txt", "text": CALL_BEGIN + "x" + SEP + "{}" + CALL_END, "version": 2}),
            note="DeepSeek V3.1's unfenced call as text inside a value.",
        ),
        edge(
            "deepseek_v3-tool-named-function",
            ["name-like-marker"],
            call(CALL_TYPE, {"x": 1}),
            parameters={CALL_TYPE: {"type": "object", "properties": {"x": {"type": "integer"}}}},
            note="A tool named like the call type: function<｜tool▁sep｜>function.",
        ),
        edge(
            "deepseek_v3-content-first-parallel",
            ["content-before", "parallel"],
            [call("get_weather", {"city": "Paris"}), call("get_time", {"tz": "CET"})],
            content_before="Two lookups: </think> is text here.",
        ),
    ]


SPEC = FormatSpec(
    name="deepseek_v3",
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
        OUTPUTS_BEGIN,
        OUTPUTS_END,
        OUTPUT_BEGIN,
        OUTPUT_END,
    ),
    stop_markers=(EOS,),
    call=Markers(CALL_BEGIN, CALL_END),
    section=Markers(CALLS_BEGIN, CALLS_END),
    reasoning=Markers(THINK_OPEN, THINK_CLOSE),
    arguments="json",
    call_newlines=True,
    vocabulary="deepseek",
    template_vars={"bos_token": BOS},
    edge_scenarios=edge_scenarios,
    role_headers=(ASSISTANT,),
    peers=(
        "canitoolcall:deepseek/deepseek-ai/DeepSeek-V3-0324",
        "llama.cpp:deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
        "llama.cpp:llama-cpp-deepseek-r1.jinja",
        "llama.cpp:deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja",
    ),
    grammar="deepseek_r1",
    source="deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja (llama-cpp-python 0.3.36 sdist), lines 1-47; "
    "llama-cpp-deepseek-r1.jinja, lines 1-76; deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja, lines 1-44",
)

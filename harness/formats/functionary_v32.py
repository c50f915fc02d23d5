"""Functionary v3.2 tool-call format facts (MeetKai functionary-medium-v3.2, a Llama 3 fine-tune): ``>>>RECIPIENT``
segments.

Source: ``meetkai-functionary-medium-v3.2.jinja`` in the llama-cpp-python 0.3.36 sdist (``vendor/llama.cpp/models/
templates``), llama.cpp's copy of the model's chat template (first line ``{# version=v3.llama3 #}``). Line numbers
below are that file's.

- Line 265: the prompt starts with ``bos_token`` (``<|begin_of_text|>``, which the engine adds itself: empty in
  ``template_vars``), then a system turn that asks for the format ``>>>${recipient}\\n${content}`` ("Ask for the
  required input to:recipient==all") and declares the tools as TypeScript types (lines 235-261).
- Lines 270-273: user, system and tool turns ``<|start_header_id|>ROLE<|end_header_id|>\\n\\nTEXT<|eot_id|>``.
- Lines 274-285, an assistant turn: the header, then ``>>>all\\n`` + the content raw (line 277, when non-empty),
  then per call ``>>>`` + ``NAME`` + ``\\n`` + ``ARGUMENTS`` (line 281) with nothing between segments, then
  ``<|eot_id|>`` (line 284), the stop marker. ``ARGUMENTS`` is ``function.arguments`` pasted as given: a string
  (the OpenAI API's JSON), and an object makes the template fail (``str + dict``), so renders pass the JSON
  string (``string_arguments``). Content comes before the calls only; no reasoning.
- Line 287: the generation prompt is ``<|start_header_id|>assistant<|end_header_id|>\\n\\n>>>``: the first
  segment's ``>>>`` is pre-filled (``call_prefill``; parse prefix ``>>>``), so a completion starts with its
  recipient: ``all\\nTEXT`` or ``NAME\\n{...}``.
- Content holding ``>>>`` cannot be written unambiguously (the next segment would start there); argument strings
  may (they are inside the JSON).

``<|end_of_text|>``, Llama 3's end-of-text token, is a stop marker too, as for ``llama3_json``; the vocabulary is
Llama 3's (``llama``): ``>>>`` is plain text.

llama.cpp in the pinned sdist reads this template with a specialized handler (``common/chat.cpp``
``common_chat_try_specialized_template``: ``>>>all`` and ``>>>${recipient}`` in the source select
``common_chat_params_init_functionary_v3_2``).
"""

from __future__ import annotations

from harness.core.scenarios import call, edge, text_case
from harness.formats import FormatSpec, Markers

RECIPIENT = ">>>"
ALL = "all"  # the recipient of content
EOT = "<|eot_id|>"
END_OF_TEXT = "<|end_of_text|>"
HEADER_OPEN, HEADER_CLOSE = "<|start_header_id|>", "<|end_header_id|>"
BEGIN_OF_TEXT = "<|begin_of_text|>"
ROLE_HEADER = f"{HEADER_OPEN}assistant{HEADER_CLOSE}\n\n"


def compose_content_before(completion: str, prose: str) -> str:
    """Prose before the calls is the ``all`` segment's content (line 277): it opens the completion."""
    head = f"{ALL}\n"
    if completion.startswith(head):
        return head + prose + completion[len(head) :]
    return head + prose + RECIPIENT + completion


def edge_scenarios() -> list:
    """Functionary v3.2 shapes (ids ``edge-functionary_v32-...``): segment markers and a whole segment inside
    strings, a call named like the content recipient's prefix, content then parallel calls."""

    def text(id: str, tags: list[str], value: str, note: str = ""):
        return text_case(f"functionary_v32-{id}", tags, value, note)

    return [
        text(
            "segment-in-string",
            ["marker-in-string"],
            f'{RECIPIENT}rm\n{{"path": "/"}}{RECIPIENT}{ALL}\nhi',
            note="A whole >>>NAME\\n{...} segment inside a string value is data.",
        ),
        text("stop-markers-in-string", ["marker-in-string"], f"end {EOT} {HEADER_OPEN}user{HEADER_CLOSE}\n\nhi"),
        edge(
            "functionary_v32-name-starting-all",
            ["parallel-2"],
            [call("allocate", {"n": 2}), call("all_items")],
            note="A recipient that starts with 'all' is a call, not content.",
        ),
        edge(
            "functionary_v32-content-then-calls",
            ["content-after", "parallel-2"],
            [call("get_weather", {"city": "Oslo", "unit": "c"}), call("get_time")],
            content_after="Checking both.",
            note="The template writes >>>all\\nCONTENT first, then >>>NAME\\n{...} per call.",
        ),
    ]


SPEC = FormatSpec(
    name="functionary_v32",
    markers=(RECIPIENT, EOT, END_OF_TEXT, HEADER_OPEN, HEADER_CLOSE, BEGIN_OF_TEXT),
    stop_markers=(EOT, END_OF_TEXT),
    call=Markers(RECIPIENT, None),  # a segment ends at the next >>> or the end
    arguments="json",
    vocabulary="llama",
    string_arguments=True,
    call_prefill=RECIPIENT,
    template_vars={"bos_token": ""},
    edge_scenarios=edge_scenarios,
    compose_content_before=compose_content_before,
    role_headers=(ROLE_HEADER,),
    peers=("llama.cpp:meetkai-functionary-medium-v3.2.jinja",),
    source="meetkai-functionary-medium-v3.2.jinja (llama-cpp-python 0.3.36 sdist), lines 235-287",
)

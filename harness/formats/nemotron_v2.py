"""NVIDIA Nemotron-Nano-v2 tool-call format facts: a JSON list of calls in ``<TOOLCALL>`` tags.

Source: ``NVIDIA-Nemotron-Nano-v2.jinja`` in the llama-cpp-python 0.3.36 sdist (``vendor/llama.cpp/models/templates``);
line numbers below are that file's.

All calls of a turn in one block (lines 84-101 for history turns, 143-158 for the last assistant message)::

    <TOOLCALL>[{"name": "NAME", "arguments": ARGS}, {"name": "NAME2", "arguments": ARGS2}]</TOOLCALL>

- Objects joined by ``", "``; ARGS a string as is, else ``tojson`` (lines 93-97), so a string value may hold
  ``</TOOLCALL>`` literally. In a history turn the stripped content comes first, then ``\\n`` when it is not
  empty (lines 85-88), and the turn ends ``\\n<SPECIAL_12>\\n`` (line 102).
- The generation prompt is ``<SPECIAL_11>Assistant\\n<think>\\n`` (thinking on, the default) or
  ``<SPECIAL_11>Assistant\\n<think></think>`` (``/no_think`` in the system message) (lines 121-128): the completion
  starts inside reasoning, which ``</think>`` ends. The template never writes a turn's reasoning back (content
  before ``</think>`` is cut, lines 80-82), and it renders the last assistant message's calls in a separate
  ``<SPECIAL_11>Assistant\\n`` turn without the ``<think>`` of the prompt (lines 143-159), so rendered cases of
  a final turn with calls do not continue the generation prompt: content, then
  ``\n<SPECIAL_12>\n<SPECIAL_11>Assistant\n`` (:data:`TURN_BREAK`), then the block. The content is written
  whole before the calls (lines 131-139), so prose before the calls goes at the start of that content
  (:func:`compose_content_before`).
"""

from harness.formats import FormatSpec, Markers

CALL_OPEN = "<TOOLCALL>"
CALL_CLOSE = "</TOOLCALL>"
END = "<SPECIAL_12>"
THINK_CLOSE = "</think>"
#: what separates the last message's content from its calls in a render (lines 140-146).
TURN_BREAK = "<SPECIAL_12>\n<SPECIAL_11>Assistant\n"


def compose_content_before(completion: str, prose: str) -> str:
    """Prose before the calls starts the turn's content (lines 131-139): right after the ``</think>`` that closes
    the pre-filled reasoning block, else at the start of the completion."""
    if completion.startswith(THINK_CLOSE):
        return THINK_CLOSE + prose + completion[len(THINK_CLOSE) :]
    return prose + completion


SPEC = FormatSpec(
    name="nemotron_v2",
    markers=(CALL_OPEN, CALL_CLOSE, END, TURN_BREAK, "<SPECIAL_11>", "<TOOL_RESPONSE>", "</TOOL_RESPONSE>"),
    stop_markers=(END,),
    call=Markers(CALL_OPEN, CALL_CLOSE),
    reasoning=Markers("<think>", THINK_CLOSE),
    arguments="json",
    vocabulary=None,
    no_vocabulary="Nemotron-Nano-v2's tokenizer is not available offline",
    compose_content_before=compose_content_before,
    role_headers=("<SPECIAL_11>Assistant\n",),
    peers=("llama.cpp:NVIDIA-Nemotron-Nano-v2.jinja",),
    source="NVIDIA-Nemotron-Nano-v2.jinja (llama-cpp-python 0.3.36 sdist)",
)

"""The project's own Nemotron-Nano-v2 tool-call parser: the reader of :mod:`parsers.own.hermes` with
``<TOOLCALL>`` markers.

Format facts come from the real chat template (``NVIDIA-Nemotron-Nano-v2.jinja``, llama-cpp-python 0.3.36 sdist;
see :mod:`harness.formats.nemotron_v2` for the template lines)::

    <TOOLCALL>[{"name": "NAME", "arguments": ARGS}, ...]</TOOLCALL>

Reading rules (Hermes', see :mod:`parsers.own.hermes`): after ``<TOOLCALL>`` a JSON array of call objects (or one
object), found by its syntax, so ``</TOOLCALL>`` inside a string is data; ``"parameters"``, JSON-encoded
arguments and a missing closer are recovered; a block cut off by the end of the text is dropped, other faults
surfaced as content. Reasoning: a prefix that leaves ``<think>`` open (the prompt's default) starts the text in
reasoning, up to ``</think>`` or a ``<TOOLCALL>`` (the template writes no ``</think>`` for a turn without
reasoning); a ``<think>`` block at the start is reasoning too. ``<SPECIAL_12>\n<SPECIAL_11>Assistant\n`` in the
text is a turn break (the template writes the last message's content and its calls as two turns) and is dropped.
A trailing ``<SPECIAL_12>`` is dropped.

Streaming: as in :mod:`parsers.own.hermes`: each block emitted whole once decided.
"""

from __future__ import annotations

from harness.formats.nemotron_v2 import SPEC, TURN_BREAK
from parsers.own.hermes import HermesParser, HermesReader


class NemotronV2Reader(HermesReader.for_spec(SPEC)):  # type: ignore[misc]
    """Hermes' reader with two template facts: a call ends the pre-filled reasoning, a turn break is dropped."""

    def _text(self) -> bool:
        marker = self._scan(self._emit_content, (self.call_open, TURN_BREAK))
        if marker == self.call_open:
            self.think_allowed = False
            self._begin_call()
        elif marker == TURN_BREAK:
            self.think_allowed = False
        return marker is not None

    def _think(self) -> bool:
        marker = self._scan(self._emit_reasoning, (self.think_close, self.call_open))
        if marker is None:
            return False
        self.step = self._text
        if marker == self.call_open:
            self._begin_call()
        return True


class NemotronV2Parser(HermesParser):
    """The Nemotron-Nano-v2 format (``<TOOLCALL>[...]</TOOLCALL>`` after ``<think>`` reasoning)."""

    name = "toolcall-harness:nemotron_v2"
    formats: tuple[str, ...] = ("nemotron_v2",)
    stops = SPEC.stop_markers
    READER = NemotronV2Reader
    limitations = (
        "Arguments that are not a JSON object leave the block surfaced as content.",
        "A call written inside the reasoning (before ``</think>``) stays reasoning text.",
    )


PARSERS = [NemotronV2Parser]  # registry entry (see harness/parse/registry.py)

"""The project's own Apriel tool-call parser: the reader of :mod:`parsers.own.hermes` with Apriel's markers.

Format facts come from the real chat templates (``unsloth-Apriel-1.5.jinja``, ``Apriel-1.6-15b-Thinker-fixed.jinja``,
llama-cpp-python 0.3.36 sdist; see :mod:`harness.formats.apriel` for the template lines)::

    <tool_calls>[{"name": "NAME", "arguments": ARGS}, ...]</tool_calls>

Reading rules (Hermes', see :mod:`parsers.own.hermes`): after ``<tool_calls>`` a JSON array of call objects (or
one object), found by its syntax, so ``</tool_calls>`` inside a string is data; extra keys such as ``"id"`` are
ignored; ``"parameters"``, JSON-encoded arguments and a missing closer are recovered; a block cut off by the end
of the text is dropped, other faults surfaced as content. Reasoning: a prefix that leaves
``Here are my reasoning steps:\\n`` open (Apriel 1.6's prompt) starts the text in reasoning, up to
``[BEGIN FINAL RESPONSE]``. Content is the rest, stripped; a trailing ``<|end|>`` is dropped.

Streaming: as in :mod:`parsers.own.hermes`: each block emitted whole once decided.
"""

from __future__ import annotations

from harness.formats.apriel import SPEC
from parsers.own.hermes import HermesParser, HermesReader


class AprielParser(HermesParser):
    """The Apriel format (``<tool_calls>[...]</tool_calls>``, Apriel 1.6's reasoning before
    ``[BEGIN FINAL RESPONSE]``)."""

    name = "toolcall-harness:apriel"
    formats: tuple[str, ...] = ("apriel",)
    stops = SPEC.stop_markers
    READER = HermesReader.for_spec(SPEC)
    limitations = (
        "Arguments that are not a JSON object leave the block surfaced as content.",
        "With no reasoning opener in the prefix, text before ``[BEGIN FINAL RESPONSE]`` is content.",
    )


PARSERS = [AprielParser]  # registry entry (see harness/parse/registry.py)

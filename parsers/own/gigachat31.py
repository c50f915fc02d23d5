"""The project's own GigaChat 3.1 tool-call parser: the reader of :mod:`parsers.own.hermes` with GigaChat 3.1's
``<|function_call|>`` opener and no closer.

Format facts come from the real chat template (``GigaChat3.1-10B-A1.8B.jinja``, llama-cpp-python 0.3.36 sdist;
see :mod:`harness.formats.gigachat31` for the template lines)::

    CONTENT<|function_call|>{"name": "NAME", "arguments": ARGS}

Reading rules (Hermes', see :mod:`parsers.own.hermes`): after ``<|function_call|>`` one JSON call object (or an
array of them), found by its syntax, so marker text inside a string is data; the call ends with its JSON.
``"parameters"`` and JSON-encoded arguments are recovered; a call cut off by the end of the text is dropped,
other faults surfaced as content. Content is the text outside the call, stripped; a trailing
``<|message_sep|>`` is dropped. No reasoning.

Streaming: as in :mod:`parsers.own.hermes`: the call emitted whole once its JSON closes.
"""

from __future__ import annotations

from harness.formats.gigachat31 import SPEC
from parsers.own.hermes import HermesParser, HermesReader


class GigaChat31Parser(HermesParser):
    """The GigaChat 3.1 format (``<|function_call|>`` + one JSON call)."""

    name = "toolcall-harness:gigachat31"
    formats: tuple[str, ...] = ("gigachat31",)
    stops = SPEC.stop_markers
    READER = HermesReader.for_spec(SPEC)
    limitations: tuple[str, ...] = ("Arguments that are not a JSON object leave the call surfaced as content.",)


PARSERS = [GigaChat31Parser]  # registry entry (see harness/parse/registry.py)

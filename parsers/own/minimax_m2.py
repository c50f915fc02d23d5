"""The project's own MiniMax-M2 XML tool-call parser: the reader of :mod:`parsers.own.qwen3_coder` with
MiniMax's markers.

Format facts come from the real chat template (``MiniMax-M2.jinja``, llama-cpp-python 0.3.36 sdist; see
:mod:`harness.formats.minimax_m2` for the template lines)::

    <minimax:tool_call>
    <invoke name="NAME">
    <parameter name="KEY">VALUE</parameter>
    </invoke>
    </minimax:tool_call>

All calls of a turn share one ``<minimax:tool_call>`` block. VALUE is written raw with no padding: strings as
they are, nothing escaped; every other value with ``tojson`` (``null``, ``true``, numbers, JSON containers).

Reading rules (the same as Qwen3-Coder's, see :mod:`parsers.own.qwen3_coder` for the details):

- A block starts at ``<minimax:tool_call>``; inside it, whitespace-separated ``<invoke name="NAME">`` calls, each
  holding ``<parameter name="KEY">VALUE</parameter>`` parameters and ending with ``</invoke>``; then
  ``</minimax:tool_call>``. NAME and KEY run to the next ``">`` (no newline, ``<`` or ``>`` in them).
- A ``</parameter>`` ends a value only when whitespace and then ``<parameter name="`` or ``</invoke>`` follow and
  the rest of the block parses; the first parse whose ``</minimax:tool_call>`` is followed by whitespace and then
  another block or the end of the text wins, else the first parse. So ``</parameter>``, ``</invoke>`` and
  ``</minimax:tool_call>`` may occur inside a value (the observed Dynamo case holds the last).
- The value is kept exactly (no padding to remove) and typed by the tool's schema with
  :func:`parsers.own._schema_types.typed_value`, after one template fact (:func:`parsers.own._common.tojson_typed`):
  where the schema allows a string next to other types, a text ``tojson`` cannot have written (``None``,
  ``True``, ``001``, padded text) is the string itself.
- Drift recovered: ``</parameter>`` missing before ``</invoke>`` (one newline before it is then structure), also
  when a later ``</parameter>`` would make the value run across a call boundary (``</invoke>``, optionally a
  block end and a new block, then ``<invoke name="``); ``</minimax:tool_call>`` missing at the end of the
  text or before the next block; any whitespace (or none) between the tags; JSON double-encoded inside a value
  whose schema wants an object or array (:func:`parsers.own._schema_types.typed_value`, rule 4).
- A block cut off by the end of the text is dropped (the complete invokes before the cut kept); other malformed
  blocks are surfaced: the opener stays in content and the text after it is read again as content.
- Reasoning: the prompt always ends ``<think>\\n``; a turn with reasoning renders as ``REASONING\\n</think>\\n\\n...``
  (prefix ``""``), one without as plain content and calls (prefix ``<think>\\n``, never closed). So text before a
  ``</think>`` that precedes any call is reasoning, whatever the prefix says; an explicit ``<think>`` at the start
  opens a reasoning block.
- Content is the text outside calls and reasoning, stripped; a trailing ``[e~[`` (end of turn) is dropped.

Streaming: as in :mod:`parsers.own.qwen3_coder`: content released as soon as it cannot start a marker, each block
emitted whole once decided, streaming equal to one-shot for every chunking.
"""

from __future__ import annotations

from harness.formats import minimax_m2 as _fmt
from parsers.own.qwen3_coder import Dialect, XmlCallParser

MINIMAX_M2 = Dialect(
    _fmt.SPEC,
    _fmt.INVOKE_OPEN,
    '">',
    _fmt.INVOKE_CLOSE,
    _fmt.PARAMETER_OPEN,
    _fmt.PARAMETER_CLOSE,
    padded=False,
    tojson=True,
)


class MiniMaxM2Parser(XmlCallParser):
    """The MiniMax-M2 format (``<minimax:tool_call>`` / ``<invoke name=...>`` / ``<parameter name=...>``)."""

    dialect = MINIMAX_M2
    limitations = (
        "Text at the start, before any ``</think>``, block or explicit ``<think>``, is held until one of "
        "them (or the end) decides whether it is reasoning or content: a real MiniMax-M2 answer therefore "
        "streams its reasoning only at ``</think>``.",
        "A block followed by other text is decided only at the end of the text.",
        'A value holding ``</parameter>`` followed by whitespace and ``<parameter name="`` (or by '
        '``</invoke>`` and a new ``<invoke name="``) is cut there when the rest parses; a value holding a '
        "whole block end followed by a new block opener is cut there; so is a value holding a call "
        "boundary (``</invoke>``, optionally ``</minimax:tool_call><minimax:tool_call>``, then ``<invoke "
        'name="``) when the rest parses.',
        'Typing: under a schema that allows both, the string ``"null"`` and null, ``"true"`` and true, '
        '``"5"`` and 5 are written alike and read as the non-string (generated seed 5, 400 cases: 5 cases '
        'hold the string ``"null"`` under ``anyOf [string, null]``). Names and keys holding ``">`` cannot '
        "be written.",
    )


PARSERS = [MiniMaxM2Parser]  # registry entry (see harness/parse/registry.py)

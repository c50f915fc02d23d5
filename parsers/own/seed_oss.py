"""The project's own ByteDance Seed-OSS XML tool-call parser: the reader of :mod:`parsers.own.qwen3_coder` with
Seed-OSS's markers.

Format facts come from the real chat template (``ByteDance-Seed-OSS.jinja``, llama-cpp-python 0.3.36 sdist; see
:mod:`harness.formats.seed_oss` for the template lines)::

    <seed:tool_call>
    <function=NAME>
    <parameter=KEY>VALUE</parameter>
    </function>
    </seed:tool_call>

VALUE is written raw with no padding: strings as they are, nothing escaped; every other value with Python
``str()`` (``True``, ``None``, ``{'a': 1}``).

Reading rules (Qwen3-Coder's, see :mod:`parsers.own.qwen3_coder` for the details): a ``</parameter>`` ends a
value only when whitespace and then ``<parameter=`` or ``</function>`` follow and the rest of the block parses
(the first parse that ends cleanly wins); the value is kept exactly and typed by the tool's schema with
:func:`parsers.own._schema_types.typed_value` (Python literals understood). The same drift is recovered (missing
``</parameter>`` or ``</seed:tool_call>``, any whitespace between the tags, a bare ``<function=...>``), a call cut
off by the end of the text is dropped and other malformed blocks are surfaced as content. Reasoning is an
explicit ``<seed:think>`` ... ``</seed:think>`` block at the start (the prompt pre-fills nothing); text before a
``</seed:think>`` that precedes any call is reasoning too. A trailing ``<seed:eos>`` is dropped.

Streaming: as in :mod:`parsers.own.qwen3_coder`: content released as soon as it cannot start a marker, each block
emitted whole once decided, streaming equal to one-shot for every chunking.
"""

from __future__ import annotations

from harness.formats import seed_oss as _fmt
from parsers.own.qwen3_coder import Dialect, XmlCallParser

SEED_OSS = Dialect(
    _fmt.SPEC, _fmt.FUNCTION_OPEN, ">", _fmt.FUNCTION_CLOSE, _fmt.PARAMETER_OPEN, _fmt.PARAMETER_CLOSE, padded=False
)


class SeedOssParser(XmlCallParser):
    """The Seed-OSS format (``<seed:tool_call>`` / ``<function=...>`` / ``<parameter=...>``, unpadded values)."""

    dialect = SEED_OSS
    limitations = (
        "Text at the start, before any ``</seed:think>``, block or explicit ``<seed:think>``, is held until one "
        "of them (or the end) decides whether it is reasoning or content: a plain answer streams in one piece.",
        "A block followed by other text is decided only at the end of the text.",
        "A value holding ``</parameter>`` followed by whitespace and ``<parameter=`` (or by ``</function>`` and "
        "a new ``<function=``) is cut there when the rest parses, as in Qwen3-Coder.",
        'Typing: under a schema that allows both, the string ``"None"`` and null, ``"True"`` and true, ``"5"`` '
        "and 5 are written alike and read as the non-string. Names and keys holding ``>`` cannot be written.",
    )


PARSERS = [SeedOssParser]  # registry entry (see harness/parse/registry.py)

"""The project's own MiniCPM5 XML tool-call parser: the reader of :mod:`parsers.own.qwen3_coder` with MiniCPM5's
markers, every call a bare function (no block around it), and CDATA values.

Format facts come from the real chat template (``openbmb-MiniCPM5-1B.jinja``, llama-cpp-python 0.3.36 sdist; see
:mod:`harness.formats.minicpm5` for the template lines)::

    <function name="NAME"><param name="KEY">VALUE</param></function>

Reading rules (Qwen3-Coder's bare-function rules, see :mod:`parsers.own.qwen3_coder`): a ``<function name="``
starts a call when the function parses whole and only whitespace, another function or the end follows (else its
text is content); a ``</param>`` ends a value only when whitespace and then ``<param name="`` or ``</function>``
follow and the rest parses, so a CDATA value may hold ``</param>``. A value that is a whole ``<![CDATA[...]]>``
is the string inside; any other value is typed by the tool's schema
(:func:`parsers.own._schema_types.typed_value`: Python literals understood). Reasoning: a prefix that leaves
``<think>`` open starts the text in reasoning, up to ``</think>``; a ``<think>`` block at the start is reasoning
too. Content is the rest, stripped; a trailing ``<|im_end|>`` is dropped.

Streaming: as in :mod:`parsers.own.qwen3_coder`: each call emitted whole once decided.
"""

from __future__ import annotations

from harness.formats import minicpm5 as _fmt
from parsers.own.qwen3_coder import Dialect, XmlCallParser, _Reader

MINICPM5 = Dialect(
    _fmt.SPEC,
    _fmt.FUNCTION_OPEN,
    '">',
    _fmt.FUNCTION_CLOSE,
    _fmt.PARAMETER_OPEN,
    _fmt.PARAMETER_CLOSE,
    padded=False,
    prefilled_think=True,
)


class _CdataReader(_Reader):
    """Qwen3-Coder's reader; a value that is one whole CDATA section is that section's text, untyped."""

    def _arguments(self, name: str, arguments: dict, pairs: list[tuple[str, str]]) -> None:
        for key, raw in pairs:
            if raw.startswith(_fmt.CDATA_OPEN) and raw.endswith(_fmt.CDATA_CLOSE) and len(raw) >= 12:
                arguments[key] = raw[len(_fmt.CDATA_OPEN) : -len(_fmt.CDATA_CLOSE)]
            else:
                super()._arguments(name, arguments, [(key, raw)])


class MiniCpm5Parser(XmlCallParser):
    """The MiniCPM5 format (bare ``<function name=...>`` calls with ``<param name=...>`` values)."""

    dialect = MINICPM5
    limitations = (
        "A function that does not parse whole, or is followed by prose (which the template never writes), is "
        "content: with no block opener there is nothing to surface.",
        'A value holding ``</param>`` followed by whitespace and ``<param name="`` (or ``</function>``) outside '
        "CDATA is cut there when the rest parses.",
        'Typing: under a schema that allows both, the string ``"None"`` and null, ``"True"`` and true, ``"5"`` '
        "and 5 are written alike and read as the non-string.",
    )

    def reader(self, tools: list | None, prefix: str, whole: bool) -> _Reader:
        return _CdataReader(self.dialect, tools, prefix)


PARSERS = [MiniCpm5Parser]  # registry entry (see harness/parse/registry.py)

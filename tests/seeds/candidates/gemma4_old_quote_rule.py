"""Seed 001's *old* Gemma 4 string rule, as a candidate parser: the project's own Gemma 4 parser with one change.

The C++ string scanner that ``shared/seeds/001_45cecc9e4bdddf32.txt`` fixes accepted a plain ``"`` or backtick as
the closer of a ``<|"|>``-opened string (the model sometimes writes one instead of ``<|"|>``) "whenever a ``,`` or a
closer followed". This reader does exactly that: inside a string, the first ``"`` or backtick followed at once by
``,``, ``}`` or ``]`` ends the string, before any later ``<|"|>``. Everything else is the own parser unchanged
(:mod:`parsers.own.gemma4`), so a sweep measures that rule alone. A reproduction of the described behaviour, not the
seed's C++ code (which is not public here). Use it as ``py:tests/seeds/candidates/gemma4_old_quote_rule.py:
OldQuoteRuleGemma4``.
"""

from __future__ import annotations

import re

from harness.formats.gemma4 import STRING_DELIM
from parsers.own.gemma4 import Gemma4Parser, _escape, _Reader

_PLAIN_CLOSER = re.compile(r'["`](?=[,}\]])')  # the old rule: a plain quote with ``,`` or a closer after it
_QUOTES = ('"', "`")
_DELIM_HEAD = '<|"'  # the one proper prefix of <|"|> that ends with a quote


class _OldRuleReader(_Reader):
    def _string(self) -> bool:
        buf, pos = self.buf, self.pos
        delim = buf.find(STRING_DELIM, pos)
        m = _PLAIN_CLOSER.search(buf, pos, len(buf) if delim == -1 else delim)
        if m is not None:
            self._arg(_escape(buf[pos : m.start()]) + '"')
            self.pos, self.step = m.end(), self._after
            return True
        held = buf[-1:] in _QUOTES and not buf.endswith(_DELIM_HEAD)  # a partial <|"|> is the own parser's to hold
        if delim == -1 and not self.final and held and len(buf) > pos:
            self._arg(_escape(buf[pos:-1]))  # a quote at the end of the chunk: the next character decides
            self.pos = len(buf) - 1
            return False
        return super()._string()


class OldQuoteRuleGemma4(Gemma4Parser):
    """The own Gemma 4 parser with seed 001's old plain-quote closer rule (module docstring)."""

    name = "candidate:gemma4-old-quote-rule"
    library = "seed-001-candidate"

    def reader(self, tools: list | None, prefix: str, whole: bool) -> _Reader:
        return _OldRuleReader(tools, prefix, self.eager and not whole)

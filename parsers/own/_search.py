"""The structural block search shared by the readers that decide a call block by parsing it whole (the XML
parameter formats of :mod:`parsers.own.qwen3_coder` and Kimi K3's :mod:`parsers.own.kimi_k3`).

A grammar rule is a generator method ``_NAME(*args)``: it yields the keys ``(NAME, *args)`` of the sub-results it
needs (``result = yield key``) and returns its own result, a :class:`Parse`, ``None`` (no parse) or
:data:`PENDING`. :meth:`RuleSearch.solve` drives the rules with an explicit stack (no recursion, however many
calls a block holds) and memoises each result by its key. Linear in the block for the shapes templates write:

- a parse's items form a chain (:func:`prepend` is O(1); :func:`parse_items` flattens it once);
- :meth:`RuleSearch.first` finds a value's candidate closers one at a time, so trying the first one costs only
  the distance to it;
- :meth:`RuleSearch.record` remembers the candidates whose continuation does not parse, or not cleanly, so the
  values of a block with no (clean) parse (text after the calls) do not each try every later closer again;
- the rules do not depend on where the block starts, so a reader may search several blocks of one buffer with
  one :class:`RuleSearch` (its memo is kept).
"""

from __future__ import annotations

from dataclasses import dataclass

PENDING = "pending"  # more text could change the answer


@dataclass(frozen=True)
class Parse:
    """A parse of the rest of a block: where the block ends, whether it ends cleanly, its items as a chain
    (``()`` or ``(tuple of items, chain)``: :func:`parse_items`) and where a later call of the block, cut off by the
    end of the text, starts (``-1``: none; it is dropped)."""

    end: int
    clean: bool
    chain: tuple = ()
    cut_at: int = -1


def prepend(items: tuple, result):
    """``result`` (a :class:`Parse`) with ``items`` before its own; None and :data:`PENDING` pass through."""
    if result is None or result is PENDING:
        return result
    return Parse(result.end, result.clean, (items, result.chain), result.cut_at)


def parse_items(parse: Parse) -> list:
    """The items of ``parse`` in order."""
    out: list = []
    chain = parse.chain
    while chain:
        head, chain = chain
        out.extend(head)
    return out


class RuleSearch:
    """Memoised grammar rules over ``buf`` (see the module docstring); ``final``: no more text will come."""

    def __init__(self, buf: str, final: bool):
        self.buf, self.final, self.n = buf, final, len(buf)
        self.memo: dict[tuple, object] = {}
        self._known: dict[tuple, dict[int, int]] = {}  # (context, settled) -> {candidate: search on from}

    def solve(self, root: tuple):
        """The result of rule ``root``."""
        memo = self.memo
        stack = [[root, self._rule(root), None]]
        while True:
            frame = stack[-1]
            try:
                request = frame[1].send(frame[2])
            except StopIteration as done:
                memo[frame[0]] = done.value
                stack.pop()
                if not stack:
                    return done.value
                stack[-1][2] = done.value
                continue
            if request in memo:
                frame[2] = memo[request]
            else:
                stack.append([request, self._rule(request), None])

    def _rule(self, key: tuple):
        return getattr(self, "_" + key[0])(*key[1:])

    def first(self, closer: str, c: int, hi: int, context: object = None, settled: bool = False) -> int | None:
        """The first offset ``>= c`` of ``closer`` that starts below ``hi``, or None. With ``context`` (the
        continuation's rule and arguments but the position), candidates known to lead to no parse there are
        jumped, and, when the value is ``settled`` (it has its fallback parse: only a clean one can still win),
        so are those known to lead to no clean parse (:meth:`record`); a run of them in one step the next time."""
        table = self._known.get((context, settled)) if context is not None else None
        end, resume, path = hi + len(closer) - 1, c, []
        while True:
            c = self.buf.find(closer, resume, end) if hi > resume else -1
            if c < 0 or not table or c not in table:
                break
            path.append(c)
            resume = table[c]
        for p in path:
            table[p] = resume  # type: ignore[index]  # path is empty without a table
        return c if c >= 0 else None

    def record(self, context: object, c: int, result) -> None:
        """Remember what candidate ``c`` led to in ``context`` (for :meth:`first`): no parse, or no clean one."""
        if result is None:
            self._known.setdefault((context, False), {})[c] = c + 1
        if result is None or not result.clean:
            self._known.setdefault((context, True), {})[c] = c + 1

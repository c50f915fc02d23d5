"""Streamed text back to the token ids a model wrote, for adapters whose library parses ids (vLLM's "encode" formats,
openai-harmony): each chunk's ids are released once no later text can change them."""

from __future__ import annotations

from collections.abc import Callable, Iterable


class MarkerTail:
    """``tail(text)``: the length of the longest end of ``text`` that is a proper start of one of ``markers`` (the
    special tokens' texts), i.e. what may still grow into a marker (``<|ca`` before ``ll|>``); 0 if none."""

    def __init__(self, markers: Iterable[str]) -> None:
        markers = list(markers)
        self._prefixes = {m[:i] for m in markers for i in range(1, len(m))}
        self._longest = max((len(m) for m in markers), default=0)

    def __call__(self, text: str) -> int:
        for k in range(min(self._longest - 1, len(text)), 0, -1):
            if text[-k:] in self._prefixes:
                return k
        return 0


def stable_ids(
    pending: str, encode: Callable[[str], list[int]], decode: Callable[[list[int]], str], held: int, final: bool
) -> tuple[list[int], int]:
    """The ids of the start of ``pending`` that no later text can change, and how many characters they cover.

    Unless ``final``, the last ``held`` characters (a :class:`MarkerTail`) and the last token (a longer text may
    tokenize it differently) wait; ids whose decoded text is not a start of ``pending`` (a character split across
    tokens) are dropped from the end until it is. ``([], 0)`` when nothing is certain yet."""
    head = pending if final else pending[: len(pending) - held]
    ids = encode(head)
    if not final:
        ids = ids[:-1]
    while ids:
        raw = decode(ids)
        if head.startswith(raw):
            return ids, len(raw)
        ids = ids[:-1]
    return [], 0

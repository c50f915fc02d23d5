"""Where generation stops: the end of a completion at its first stop token, for the adapters that replay a text
through an engine's generation loop (:mod:`parsers.reference.mlx_lm`, :mod:`parsers.reference.vllm_mlx`).
Standard library only (it runs inside the engines' virtualenvs)."""

from __future__ import annotations


class StopCut:
    """Ends the text at the first stop marker, as a stop token ends generation; holds back a chunk tail that may be
    the start of one (chunks are arbitrary, a real stop token is never split).

    ``stop_markers``: end-of-generation tokens, left out of the text (an eos token is never detokenized).
    ``kept_markers``: stop strings that end generation but stay in the text (vllm-mlx's ``stop`` sequences: the
    generated token that completes one is still emitted). ``stopped``: the marker that ended it, or None;
    ``ignored``: characters after it that were fed but never generated.
    """

    def __init__(self, stop_markers: tuple[str, ...], kept_markers: tuple[str, ...] = ()) -> None:
        self.stop_markers = stop_markers
        self.kept_markers = tuple(m for m in kept_markers if m not in stop_markers)
        self._held = ""
        self.stopped: str | None = None
        self.ignored = 0

    def feed(self, chunk: str) -> str:
        """The text of ``chunk`` that is certainly generated (empty once a marker has ended generation)."""
        if self.stopped is not None:
            self.ignored += len(chunk)
            return ""
        text = self._held + chunk
        markers = self.stop_markers + self.kept_markers
        hits = [(text.find(m), m) for m in markers if m in text]
        if hits:
            pos, marker = min(hits)
            self.stopped, self._held = marker, ""
            self.ignored += len(text) - pos - len(marker)
            return text[: pos + (len(marker) if marker in self.kept_markers else 0)]
        keep = max((n for m in markers for n in range(1, len(m)) if text.endswith(m[:n])), default=0)
        self._held = text[len(text) - keep :] if keep else ""
        return text[: len(text) - keep]

    def flush(self) -> str:
        """The held-back tail, at the end of generation (it was no marker after all)."""
        held, self._held = self._held, ""
        return held

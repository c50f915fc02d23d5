"""Result shapes every stage shares: a :class:`Score` (verdict, error type, detail, drift outcome), a
:class:`Record` (one line of ``results.jsonl``) and :class:`ResultsWriter`, which writes records as they are produced.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from harness.core.textio import open_text


@dataclass
class Record:
    """The result of one (case, parser, mode): one line of ``results.jsonl``. ``outcome`` is the outcome class
    on a drift case (:mod:`harness.score.outcomes`); it is left out of the JSON for other cases."""

    case_id: str
    slice: str
    kind: str
    parser: str
    mode: str
    verdict: str
    error_type: str | None
    detail: str
    got: dict | None
    elapsed_ms: float
    text_len: int
    tags: list[str] = field(default_factory=list)
    outcome: str | None = None

    def to_json(self) -> dict:
        data = dict(vars(self))
        if data["outcome"] is None:
            del data["outcome"]
        return data


def clip(text: str, limit: int = 300) -> str:
    """``text`` cut to ``limit`` characters, ending with "…" when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ResultsWriter:
    """Appends records to a JSON Lines file, flushing each line so an interrupted run loses nothing."""

    def __init__(self, path):
        self.path = path
        self._fh = open_text(path, "a")

    def write(self, record: Record, **extra) -> None:
        self._fh.write(json.dumps({**extra, **record.to_json()}, ensure_ascii=False) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


#: the verdicts that count as passing: ``soft_pass`` differs from ``pass`` only in surrounding whitespace.
PASSING = ("pass", "soft_pass")


@dataclass
class Score:
    """Verdict for one (case, parser, mode); ``detail`` is a one-line human explanation; ``outcome`` is the
    outcome class on a drift case (:mod:`harness.score.outcomes`), ``None`` on other cases."""

    verdict: str
    error_type: str | None = None
    detail: str = ""
    outcome: str | None = None

    @property
    def passed(self) -> bool:
        return self.verdict in PASSING

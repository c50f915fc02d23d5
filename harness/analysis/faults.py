"""Fault classes: failing records grouped by (parser, error type, mutator tag or slice), a handful of classes
instead of one row per case. :func:`harness.analysis.repros.cluster_repros` attaches a minimal repro to each.
The ``error``/``unavailable`` results of a parser the circuit breaker stopped are no fault of an input: left out."""

from __future__ import annotations

from collections import Counter

from harness.parse.calls import UNAVAILABLE

CLUSTER_MODE_ORDER = ("oneshot", "whole", "random", "tokens", "char", "prefix", "roundtrip")


def cluster_group(record: dict) -> str:
    """The third cluster key of a failing record: its case's ``mutator:NAME`` tag when it has one (drift cases
    made by a mutator), else its slice (``curated``, ``generated``, ``observed``, ...)."""
    return next((t for t in record.get("tags") or [] if t.startswith("mutator:")), record["slice"])


def cluster_failures(records: list[dict]) -> list[dict]:
    """Failing records (``fail``/``error``, not ``unavailable``) grouped by (parser, error type, :func:`cluster_group`).

    Returns one dict per cluster, most cases first (then parsers in record order): ``{"parser", "error_type",
    "group", "cases" (distinct), "records" (case × mode rows), "modes", "tags" ([(tag, cases)], the 3 commonest
    other tags), "example" (the record with the shortest text, cheapest mode first: :data:`CLUSTER_MODE_ORDER`)}``.
    """
    clusters: dict[tuple, list[dict]] = {}
    for r in records:
        if r["verdict"] in ("fail", "error") and r["error_type"] != UNAVAILABLE:
            clusters.setdefault((r["parser"], r["error_type"] or r["verdict"], cluster_group(r)), []).append(r)
    order = {p: i for i, p in enumerate(dict.fromkeys(r["parser"] for r in records))}
    out = []
    for (parser, error_type, group), hits in clusters.items():
        cases = {r["case_id"]: r for r in hits}
        tags = Counter(t for r in cases.values() for t in r.get("tags") or [] if t != group)
        example = min(hits, key=lambda r: (r["text_len"], mode_rank(r["mode"]), r["case_id"]))
        out.append(
            {
                "parser": parser,
                "error_type": error_type,
                "group": group,
                "cases": len(cases),
                "records": len(hits),
                "modes": sorted({r["mode"] for r in hits}, key=mode_rank),
                "tags": tags.most_common(3),
                "example": example,
            }
        )
    return sorted(out, key=lambda c: (-c["cases"], order[c["parser"]], c["error_type"], c["group"]))


def mode_rank(mode: str) -> int:
    """Position of ``mode`` in :data:`CLUSTER_MODE_ORDER` (unknown modes last)."""
    return CLUSTER_MODE_ORDER.index(mode) if mode in CLUSTER_MODE_ORDER else len(CLUSTER_MODE_ORDER)

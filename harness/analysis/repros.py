"""A minimal repro for each fault class of ``eval`` (:func:`harness.analysis.faults.cluster_failures`), found by
:func:`harness.analysis.minimize.minimize_case` with a passing parser of the same case as oracle."""

from __future__ import annotations

from harness.analysis.minimize import minimize_case
from harness.core.cases import Case
from harness.core.results import PASSING
from harness.formats import FormatSpec

CLUSTER_BUDGET = 300
"""Checks per fault class in ``eval`` (with :data:`CLUSTER_SECONDS`): small, so a default run stays quick."""
CLUSTER_SECONDS = 5.0


def cluster_repros(
    clusters: list[dict],
    cases: list[Case],
    records: list[dict],
    parsers: list,
    fmt: FormatSpec,
    template,
    shrunk: dict | None = None,
    seed: int = 0,
    timeout_s: float | None = None,
    budget: int = CLUSTER_BUDGET,
    seconds: float = CLUSTER_SECONDS,
) -> list[dict]:
    """Attach ``"repro"`` (the dict of :func:`minimize_case`) to each cluster of
    :func:`harness.analysis.faults.cluster_failures` and return the clusters.

    A generated example whose (parser, error type) hypothesis already shrank (``shrunk``, from
    ``evaluate._shrink_generated``) gets that example (method ``hypothesis``). Otherwise the example is
    minimized in its mode with ``budget`` checks and ``seconds``, with as oracle a parser that passed the same
    (case, mode) — the project's own parser first. ``budget <= 0``, a ``roundtrip`` failure or a parser no
    longer at hand leave the example as it is (method ``none``).
    """
    by_id = {c.id: c for c in cases}
    by_name = {p.name: p for p in parsers}
    passed: dict[tuple, list[str]] = {}
    for r in records:
        if r["verdict"] in PASSING:
            passed.setdefault((r["case_id"], r["mode"]), []).append(r["parser"])
    for cluster in clusters:
        ex = cluster["example"]
        case, parser = by_id.get(ex["case_id"]), by_name.get(cluster["parser"])
        if case is None:
            continue
        hypothesis = (shrunk or {}).get((cluster["parser"], cluster["error_type"]))
        if case.slice == "generated" and hypothesis:
            cluster["repro"] = {
                "text": hypothesis["text"],
                "prefix": case.prefix,
                "expected": hypothesis["expected"],
                "got": hypothesis["got"],
                "detail": "",
                "method": "hypothesis",
                "calls": None,
                "original_len": len(case.text),
            }
            continue
        if parser is None or budget <= 0 or ex["mode"] == "roundtrip":
            cluster["repro"] = {
                "text": case.text,
                "prefix": case.prefix,
                "expected": case.expected.to_json(),
                "got": ex["got"],
                "detail": ex["detail"],
                "method": "none",
                "calls": 0,
                "original_len": len(case.text),
            }
            continue
        others = sorted(
            (n for n in passed.get((case.id, ex["mode"]), []) if n != parser.name and n in by_name),
            key=lambda n: not n.startswith("toolcall-harness:"),
        )
        oracle = by_name[others[0]] if others else None
        drift = case.extra.get("drift") if isinstance(case.extra, dict) else None
        base_id = drift.get("base") if isinstance(drift, dict) else None
        base = by_id.get(base_id) if isinstance(base_id, str) else None
        cluster["repro"] = minimize_case(
            case,
            parser,
            fmt,
            ex["mode"],
            cluster["error_type"],
            template,
            budget,
            oracle,
            seed,
            timeout_s,
            seconds,
            base,
        )
    return clusters

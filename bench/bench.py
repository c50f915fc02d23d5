"""Throughput on this machine: cases per second for render, parse (one-shot and char streaming) and score.

Usage: ``make bench`` or ``.venv/bin/python bench/bench.py [--cases N] [--seed S]``. Prints one figure per
stage and parser; single process (the harness runs single-process), so figures are per core.
"""

from __future__ import annotations

import argparse
import time

from harness.corpus import build_corpus
from harness.catalog import get_model
from harness.formats import get_format
from harness.protocol import run_stream
from harness.scoring import score
from harness.templates import load_template
from parsers import create_parsers


def rate(count: int, seconds: float) -> str:
    return f"{count / seconds:10.1f} cases/s  ({count} in {seconds:.2f} s)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="gemma-4-e2b")
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    fmt = get_format(get_model(args.model).format)
    template = load_template(args.model)
    t0 = time.perf_counter()
    corpus = build_corpus(template, fmt, seed=args.seed, n_generated=args.cases, slices=("curated", "generated"))
    cases = corpus.cases
    print(f"corpus build (generate + render): {rate(len(cases), time.perf_counter() - t0)}")

    from harness.render import render_scenario
    from harness.edge_catalog import curated_scenarios

    scenarios = [s for s in curated_scenarios() if any(c.id == s.id for c in cases)]
    t0 = time.perf_counter()
    for s in scenarios:
        render_scenario(template, s, fmt)
    print(f"render only:                       {rate(len(scenarios), time.perf_counter() - t0)}")

    parsers, _ = create_parsers(None, fmt.name)
    for parser in parsers:
        t0 = time.perf_counter()
        results = []
        for case in cases:
            try:
                results.append((case, parser.parse(case.text, case.tools, case.prefix)))
            except Exception:
                pass
        print(f"parse one-shot   {parser.name:32s} {rate(len(cases), time.perf_counter() - t0)}")
        t0 = time.perf_counter()
        for case in cases:
            try:
                run_stream(parser, list(case.text), case.tools, case.prefix)
            except Exception:
                pass
        print(f"parse char-stream {parser.name:31s} {rate(len(cases), time.perf_counter() - t0)}")
        t0 = time.perf_counter()
        for case, got in results:
            score(case, got, fmt)
        print(f"score            {parser.name:32s} {rate(len(results), time.perf_counter() - t0)}")


if __name__ == "__main__":
    main()

"""Throughput on this machine: cases per second for render, parse (one-shot and char streaming) and score.

Usage: ``make bench`` or ``.venv/bin/python bench/bench.py [--cases N] [--seed S]``. Prints one figure per
stage and parser; single process (the harness runs single-process), so figures are per core.
"""

from __future__ import annotations

import argparse
import time

from harness.core.protocol import run_stream
from harness.corpus.build import build_corpus
from harness.formats import get_format
from harness.parse.registry import create_parsers
from harness.score.verdicts import score
from harness.template.catalog import get_model
from harness.template.sources import load_template


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
    report("corpus build (generate + render)", len(cases), time.perf_counter() - t0)

    from harness.corpus.curated import curated_scenarios
    from harness.template.render import render_scenario

    scenarios = [s for s in curated_scenarios() if any(c.id == s.id for c in cases)]
    t0 = time.perf_counter()
    for s in scenarios:
        render_scenario(template, s, fmt)
    report("render only (curated)", len(scenarios), time.perf_counter() - t0)

    parsers, _ = create_parsers(None, fmt.name)
    chars = sum(len(c.text) for c in cases)
    print(f"{len(cases)} cases, {chars} characters; failures to parse (exceptions) are counted, not skipped")
    for parser in parsers:
        results, errors = [], 0
        t0 = time.perf_counter()
        for case in cases:
            try:
                results.append((case, parser.parse(case.text, case.tools, case.prefix)))
            except Exception:
                errors += 1
        report(f"parse one-shot    {parser.name}", len(cases), time.perf_counter() - t0, chars, errors)
        errors = 0
        t0 = time.perf_counter()
        for case in cases:
            try:
                run_stream(parser, list(case.text), case.tools, case.prefix)
            except Exception:
                errors += 1
        report(f"parse char-stream {parser.name}", len(cases), time.perf_counter() - t0, chars, errors)
        t0 = time.perf_counter()
        for case, got in results:
            score(case, got, fmt)
        report(f"score             {parser.name}", len(results), time.perf_counter() - t0)


def report(label: str, count: int, seconds: float, chars: int = 0, errors: int = 0) -> None:
    line = f"{label:50s} {count / seconds:10.1f} cases/s ({count} in {seconds:.2f} s)"
    if chars:
        line += f", {chars / seconds / 1000:8.1f} k chars/s"
    if errors:
        line += f", {errors} raised"
    print(line)


if __name__ == "__main__":
    main()

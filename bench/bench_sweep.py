"""Speed of the random sweep (:mod:`harness.jobs.sweep`) for each in-process parser of a model's format.

Usage: ``.venv/bin/python bench/bench_sweep.py [--model gemma-4-e2b] [-n 1000] [--jobs 2]``. In this process
(one core), it times rendering alone (random scenario + real template) for ``n`` cases, then the whole sweep of
``n`` cases per parser (render + one-shot + char-by-char stream + truncations), printing cases/s by wall clock
and by this process' CPU time (the CPU figure does not depend on what else the machine runs), and extrapolates
a 200,000-case sweep over ``--jobs`` processes from the CPU figure: ``200000 / (cases per CPU-second × jobs)``.
Target: under 600 s for 200,000 cases of the project's own parser on 2 cores.
"""

from __future__ import annotations

import argparse
import time

from harness.corpus.random_calls import DEFAULT_CUTS, DEFAULT_FULL_EVERY, random_scenario
from harness.formats import get_format
from harness.jobs.sweep import _init_worker, _Job, run_batch
from harness.parse.registry import available_parsers
from harness.template.catalog import get_model
from harness.template.render import render_scenario
from harness.template.sources import load_template

TARGET_S = 600.0
FULL_N = 200_000


def timed(fn) -> tuple[float, float]:
    """``(wall seconds, CPU seconds of this process)`` of ``fn()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="gemma-4-e2b")
    ap.add_argument("-n", type=int, default=1000, help="cases per measurement (default 1000)")
    ap.add_argument("--jobs", type=int, default=2, help="processes assumed for the extrapolation (default 2)")
    args = ap.parse_args()
    fmt = get_format(get_model(args.model).format)
    template = load_template(args.model)
    print(
        f"{args.model} ({fmt.name}), {args.n} cases per figure, one process; extrapolation to {FULL_N} cases "
        f"on {args.jobs} processes from CPU time"
    )
    wall, cpu = timed(lambda: [render_scenario(template, random_scenario(0, i, fmt), fmt) for i in range(args.n)])
    print(f"  {'render only':32s} {args.n / wall:7.0f} cases/s wall {args.n / cpu:7.0f} cases/CPU-s")
    for name, factory in available_parsers(fmt.name).items():
        _init_worker(_Job(template, fmt, [factory()], 0, DEFAULT_CUTS, DEFAULT_FULL_EVERY, 10.0))
        run_batch((0, 20))  # warm-up: first-call imports and caches
        wall, cpu = timed(lambda: run_batch((0, args.n)))
        full = FULL_N / (args.n / cpu * args.jobs)
        verdict = "ok" if full < TARGET_S else "over"
        print(
            f"  {name:32s} {args.n / wall:7.0f} cases/s wall {args.n / cpu:7.0f} cases/CPU-s  → {FULL_N} cases "
            f"on {args.jobs} cores ≈ {full:5.0f} s (target {TARGET_S:.0f} s: {verdict})"
        )


if __name__ == "__main__":
    main()

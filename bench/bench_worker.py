"""Per-call overhead of the worker protocol against in-process calls on the same parser.

The project's own Gemma 4 parser runs in-process and behind ``python -m harness.engines.server parsers.own.gemma4``
(the same code); the difference per call is what the protocol costs: JSON encoding, two pipes, the worker's
loop and the client's reader thread. Three ways of calling the worker:

- sequential: one request, wait for its response, next request (``WorkerParser.parse``);
- pipelined one-shot: every request written before responses are read (``WorkerParser.parse_many``);
- pipelined streaming: a whole stream per exchange (``open``, a ``feed`` per chunk, ``finish``), as the
  runner drives streams (``WorkerParser.run_stream``); overhead per feed.

Target: under 50 microseconds per call pipelined. Usage: ``.venv/bin/python bench/bench_worker.py [--cases N]
[--repeat R]``; prints median figures over R repeats.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from harness.core.protocol import run_stream
from harness.corpus.build import build_corpus
from harness.engines.client import WorkerParser, WorkerSpec
from harness.formats import get_format
from harness.template.catalog import get_model
from harness.template.sources import load_template
from parsers.own.gemma4 import Gemma4Parser

ROOT = Path(__file__).resolve().parent.parent
TARGET_US = 50.0


def timed(fn, repeat: int) -> float:
    """Median seconds of ``fn()`` over ``repeat`` runs."""
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="gemma-4-e2b")
    ap.add_argument("--cases", type=int, default=300, help="generated cases (plus the curated ones)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    fmt = get_format(get_model(args.model).format)
    cases = build_corpus(
        load_template(args.model), fmt, seed=args.seed, n_generated=args.cases, slices=("curated", "generated")
    ).cases
    items = [(c.text, c.tools, c.prefix) for c in cases]
    own = Gemma4Parser()
    worker = WorkerParser(
        WorkerSpec(
            [sys.executable, "-m", "harness.engines.server", "parsers.own.gemma4"], {"PYTHONPATH": str(ROOT)}, "bench"
        ),
        "gemma4",
    )
    n = len(items)
    print(f"{n} cases, mean text {sum(len(t) for t, _, _ in items) / n:.0f} chars; median of {args.repeat} runs")

    inproc = timed(lambda: [own.parse(*item) for item in items], args.repeat)
    sequential = timed(lambda: [worker.parse(*item) for item in items], args.repeat)
    pipelined = timed(lambda: worker.parse_many(items), args.repeat)
    row("one-shot in-process", inproc, n)
    row("one-shot worker, sequential", sequential, n, inproc)
    row("one-shot worker, pipelined", pipelined, n, inproc)

    streams = [(list(text), tools, prefix) for text, tools, prefix in items[:100]]
    feeds = sum(len(chunks) + 2 for chunks, _, _ in streams)  # open + feeds + finish
    s_in = timed(lambda: [run_stream(own, ch, t, p) for ch, t, p in streams], args.repeat)
    s_worker = timed(lambda: [run_stream(worker, ch, t, p) for ch, t, p in streams], args.repeat)
    row("char streaming in-process (per call)", s_in, feeds)
    row("char streaming worker, pipelined (per call)", s_worker, feeds, s_in)
    worker.close()

    overhead = (pipelined - inproc) / n * 1e6
    stream_overhead = (s_worker - s_in) / feeds * 1e6
    verdict = "meets" if max(overhead, stream_overhead) < TARGET_US else "misses"
    print(
        f"pipelined overhead per call: one-shot {overhead:.1f} us, streaming {stream_overhead:.1f} us "
        f"({verdict} the {TARGET_US:.0f} us target)"
    )


def row(label: str, seconds: float, calls: int, baseline: float | None = None) -> None:
    per_call = seconds / calls * 1e6
    extra = f"  overhead {(seconds - baseline) / calls * 1e6:7.1f} us/call" if baseline is not None else ""
    print(f"{label:46s} {calls / seconds:10,.0f} calls/s  {per_call:8.1f} us/call{extra}")


if __name__ == "__main__":
    main()

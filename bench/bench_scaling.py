"""Linearity: the project's own parsers on 1k, 10k and 100k calls, and the worker line reader on 1 MB and 100 MB
lines, each figure beside the smallest size's, measured in one run.

Usage: ``make bench`` or ``.venv/bin/python bench/bench_scaling.py [--calls 1000,10000,100000] [--lines-mb 1,100]
[--formats qwen3_coder,...] [--prose]``.

- Parsers: for every format with an own parser whose first offline catalog template writes several calls in a
  turn, that template renders ``get_weather`` N times (the shape the issue measured: 1k / 4k / 16k calls took
  0.16 / 2.4 / 35.8 s in the Qwen3-Coder parser before); ``--prose`` appends a line of text after the calls (no
  parse of the block ends cleanly then: the corner that made values try every later closer). Each row gives the
  one-shot parse and the stream fed in 16-character chunks, in µs per call, and the ratio of each per-call
  figure to the smallest size's: about 1 is linear, a quadratic parser shows about 10 per tenfold size. The
  calls parsed are checked (a row that parses fewer says so).
- Lines: ``harness.engines.server.fd_line_blocks`` (both sides of the worker protocol) reads one line of N MB
  through a real pipe; MB/s and the ratio of seconds per MB to the smallest line's.

Target: every ratio under 3 (linear within noise). Figures are per core (one process, best of 2 runs).
"""

from __future__ import annotations

import argparse
import gc
import os
import threading
import time
from functools import partial

from bench_parsers import tool

from harness.core.errors import HarnessError
from harness.core.messages import ToolCall
from harness.core.protocol import run_stream
from harness.core.scenarios import Scenario
from harness.engines.server import fd_line_blocks
from harness.formats import get_format, known_formats
from harness.parse.registry import get_parser
from harness.template.render import render_scenario
from harness.template.sources import first_offline_template

ARGS = {"city": "Paris", "days": 3}
PROSE = "\nThose are all the calls."
CHUNK = 16
TARGET_RATIO = 3.0


def best_of(fn, runs: int = 2) -> tuple[float, object]:
    """Best wall seconds of ``runs`` calls of ``fn()`` (collected garbage first), and its last result."""
    best, result = float("inf"), None
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def parser_row(name: str, sizes: list[int], prose: bool) -> str:
    fmt = get_format(name)
    parser = get_parser(f"toolcall-harness:{name}", name)
    model, template = first_offline_template(name)
    if model is None:
        return f"{name:16s} skipped: {template}"
    declared = [tool("get_weather", ARGS)]
    cells, base, wrong = [], None, []
    for n in sizes:
        try:
            case = render_scenario(template, Scenario("bench-many", declared, [ToolCall("get_weather", ARGS)] * n), fmt)
        except HarnessError as exc:
            return f"{name:16s} skipped: {str(exc).split(':', 1)[-1].strip()}"
        text = case.text + (PROSE if prose else "")
        chunks = [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)]
        one, got = best_of(partial(parser.parse, text, case.tools, case.prefix))
        streamed, got_streamed = best_of(partial(run_stream, parser, chunks, case.tools, case.prefix))
        per_call = (one / n * 1e6, streamed / n * 1e6)
        base = base or per_call
        for label, message in (("one-shot", got), ("stream", got_streamed)):
            if len(message.tool_calls) != n:  # type: ignore[attr-defined]
                wrong.append(f"{label} {n}: {len(message.tool_calls)} calls")  # type: ignore[attr-defined]
        ratios = (per_call[0] / base[0], per_call[1] / base[1])
        cells.append(
            f"{n:>7,d}: {per_call[0]:6.1f} µs ×{ratios[0]:4.1f} | {per_call[1]:6.1f} µs ×{ratios[1]:4.1f}"
            + (" OVER" if max(ratios) > TARGET_RATIO else "")
        )
    note = f"  WRONG ({'; '.join(wrong)})" if wrong and not (prose and name == "minicpm5") else ""
    return f"{name:16s} " + "   ".join(cells) + note


def line_seconds(megabytes: int) -> float:
    """Seconds for ``fd_line_blocks`` to hand back one ``megabytes`` MB line written into a pipe."""
    data = b"x" * (megabytes << 20) + b"\n"
    r, w = os.pipe()

    def write() -> None:
        with os.fdopen(w, "wb") as pipe:
            pipe.write(data)

    writer = threading.Thread(target=write)
    writer.start()
    start = time.perf_counter()
    lines = [line for block in fd_line_blocks(r) for line in block]
    seconds = time.perf_counter() - start
    writer.join()
    os.close(r)
    assert [len(line) for line in lines] == [len(data) - 1]
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", default="1000,10000,100000", help="call counts (default 1000,10000,100000)")
    ap.add_argument("--lines-mb", default="1,100", help="line sizes in MB (default 1,100)")
    ap.add_argument("--formats", default=None, help="comma-separated formats (default: every own parser's)")
    ap.add_argument("--prose", action="store_true", help="a line of prose after the calls")
    args = ap.parse_args()
    sizes = [int(n) for n in args.calls.split(",")]
    print(
        f"own parsers, N calls{' then prose' if args.prose else ''}: µs per call, one-shot | streamed in "
        f"{CHUNK}-character chunks; ×R = per-call time over the {sizes[0]:,}-call figure (linear: about 1)"
    )
    for name in args.formats.split(",") if args.formats else known_formats():
        try:
            get_parser(f"toolcall-harness:{name}", name)
        except Exception:  # noqa: BLE001 - no own parser for this format
            continue
        print(parser_row(name, sizes, args.prose), flush=True)
    megabytes = [int(n) for n in args.lines_mb.split(",")]
    print("worker line reader (fd_line_blocks), one line through a pipe:")
    base = None
    for mb in megabytes:
        seconds = min(line_seconds(mb) for _ in range(2))
        base = base or seconds / mb
        ratio = seconds / mb / base
        print(
            f"  {mb:>4d} MB line: {seconds:7.3f} s, {mb / seconds:7.0f} MB/s, ×{ratio:4.1f}"
            + (" OVER" if ratio > TARGET_RATIO else "")
        )
    print(f"target: every ratio under {TARGET_RATIO:g}")


if __name__ == "__main__":
    main()

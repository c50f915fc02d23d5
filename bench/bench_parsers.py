"""Speed of the project's own parsers, one per format: a typical call one-shot and a long call streamed.

Usage: ``make bench`` or ``.venv/bin/python bench/bench_parsers.py [--repeat N]``. For every format with an
own parser, the first catalog model whose template loads offline renders two calls with its real template:

- typical: ``search_documents`` with nested filters, a quoted multi-line note and an array of objects
  (~300 characters); the figure is the best of 3 runs of ``--repeat`` one-shot parses, in µs per parse;
- long: ``save`` with 8,800 characters of text and 200 objects, streamed one character per chunk (about 12,000
  deltas); the figure is seconds for the whole stream, which would grow quadratically if a parser rescanned.

Targets (printed beside each figure): under 1,000 µs per typical parse, under 5 s per long stream. Formats
without an offline template are listed as skipped with the reason.
"""

from __future__ import annotations

import argparse
import time

from harness.core.messages import ToolCall
from harness.core.protocol import run_stream
from harness.core.scenarios import Scenario
from harness.formats import get_format, known_formats
from harness.parse.registry import get_parser
from harness.template.render import render_scenario
from harness.template.sources import first_offline_template

TYPICAL_TARGET_US = 1000.0
LONG_TARGET_S = 5.0

SEARCH_ARGS = {
    "query": "quarterly revenue by region",
    "filters": {"year": 2024, "tags": ["finance", "emea"], "draft": False, "owner": None},
    "limit": 25,
    "ratio": 0.75,
    "note": 'say "hi"\nline two, with {braces}',
    "sort": [{"field": "date", "desc": True}],
}
LONG_ARGS = {"text": "word, {x}: " * 800, "rows": [{"k": i} for i in range(200)]}


def tool(name: str, args: dict) -> dict:
    """An OpenAI-style declaration with no parameter schema beyond the names (every value an object field)."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": name,
            "parameters": {"type": "object", "properties": {key: {} for key in args}},
        },
    }


def best_us_per_parse(parser, case, repeat: int) -> float:
    parser.parse(case.text, case.tools, case.prefix)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(repeat):
            parser.parse(case.text, case.tools, case.prefix)
        best = min(best, (time.perf_counter() - start) / repeat * 1e6)
    return best


def stream_seconds(parser, case) -> tuple[float, bool]:
    """Seconds to stream ``case`` one character per chunk, and whether the calls equal the ground truth."""
    start = time.perf_counter()
    message = run_stream(parser, list(case.text), case.tools, case.prefix)
    seconds = time.perf_counter() - start
    got = [(c.name, c.arguments) for c in message.tool_calls]
    return seconds, got == [(c.name, c.arguments) for c in case.expected.tool_calls]


def mark(value: float, target: float) -> str:
    return "ok" if value < target else "OVER TARGET"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=500, help="one-shot parses per timing run (default 500)")
    args = ap.parse_args()
    print(f"{'format':14s} {'model':22s} {'typical chars':>13s} {'µs/parse':>9s}  {'long chars':>10s} {'stream s':>8s}")
    for name in known_formats():
        fmt = get_format(name)
        try:
            parser = get_parser(f"toolcall-harness:{name}", name)
        except Exception as exc:  # noqa: BLE001 - printed
            print(f"{name:14s} skipped: no own parser ({exc})")
            continue
        model, template = first_offline_template(name)
        if model is None:
            print(f"{name:14s} skipped: {template}")
            continue
        typical = render_scenario(
            template,
            Scenario(
                "bench-typical", [tool("search_documents", SEARCH_ARGS)], [ToolCall("search_documents", SEARCH_ARGS)]
            ),
            fmt,
        )
        long = render_scenario(
            template, Scenario("bench-long", [tool("save", LONG_ARGS)], [ToolCall("save", LONG_ARGS)]), fmt
        )
        us = best_us_per_parse(parser, typical, args.repeat)
        seconds, right = stream_seconds(parser, long)
        print(
            f"{name:14s} {model:22s} {len(typical.text):13d} {us:9.1f}  {len(long.text):10d} {seconds:8.2f}  "
            f"typical {mark(us, TYPICAL_TARGET_US)}, long {mark(seconds, LONG_TARGET_S)}"
            + ("" if right else ", STREAMED CALLS WRONG")
        )
    print(f"targets: typical < {TYPICAL_TARGET_US:.0f} µs per one-shot parse, long stream < {LONG_TARGET_S:.0f} s")


if __name__ == "__main__":
    main()

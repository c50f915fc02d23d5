"""What bounded rendering costs: one render in-process (transformers' ``render_jinja_template`` called directly)
against the same render through the render worker (:mod:`harness.template.bounded`), the worker's start-up, and a
model's corpus build (curated + generated slices), which renders every case 2-5 times.

Usage: ``.venv/bin/python bench/bench_render.py [--model gemma-4-e2b] [--cases 300]``. Figures are the best of
``--repeat`` runs, single process.
"""

from __future__ import annotations

import argparse
import time

from harness.corpus.build import build_corpus
from harness.formats import get_format
from harness.template import bounded, render
from harness.template.catalog import get_model
from harness.template.sources import load_template


def best(fn, repeat: int, number: int = 1) -> float:
    """Seconds per call of ``fn``: the best of ``repeat`` rounds of ``number`` calls."""
    rounds = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        rounds.append((time.perf_counter() - t0) / number)
    return min(rounds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="gemma-4-e2b")
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from transformers.utils.chat_template_utils import render_jinja_template

    template = load_template(args.model)
    fmt = get_format(get_model(args.model).format)
    history = [{"role": "user", "content": render.HISTORY_USER}]
    kwargs = {"bos_token": render.BOS, "eos_token": render.EOS, "enable_thinking": False, **fmt.template_vars}

    def in_process() -> None:
        render_jinja_template(
            conversations=[history], tools=None, chat_template=template.text, add_generation_prompt=True, **kwargs
        )

    t0 = time.perf_counter()
    render.render_messages(template, history, None, True, **kwargs)
    print(f"render worker start (imports transformers) + first render: {time.perf_counter() - t0:8.2f} s")
    in_process()  # compiled once (transformers caches the compiled template)
    inside = best(in_process, args.repeat, 500)
    worker = best(lambda: render.render_messages(template, history, None, True, **kwargs), args.repeat, 500)
    print(f"one render in-process:          {inside * 1e6:8.0f} us")
    print(f"one render in the worker:       {worker * 1e6:8.0f} us  (+{(worker - inside) * 1e6:.0f} us a render)")

    counted = [0]
    plain = render.render_messages

    def counting(*a, **k):
        counted[0] += 1
        return plain(*a, **k)

    render.render_messages = counting  # render_scenario looks it up at call time
    try:
        build = best(
            lambda: build_corpus(template, fmt, seed=0, n_generated=args.cases, slices=("curated", "generated")),
            args.repeat,
        )
    finally:
        render.render_messages = plain
    renders = counted[0] // args.repeat
    print(
        f"corpus build {args.model} (curated + {args.cases} generated): {build:6.2f} s, {renders} renders; "
        f"the worker's share: {renders * (worker - inside):.2f} s"
    )
    print(f"limits: {bounded.render_limits()}, memory headroom {bounded.MEMORY_HEADROOM_BYTES >> 20} MiB")


if __name__ == "__main__":
    main()

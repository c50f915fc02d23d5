"""The own parsers that decide a block by searching it (and the readers that hold a long block) do work linear in
the number of calls: counted, not timed. Every Python and C function call made while parsing N and 4N calls is
counted (``sys.setprofile``); a linear parser makes about 4 times as many for 4 times the calls, a parser that
rescans the rest of the text for each value or call about 16 times (before: 11 to 14 times one-shot for the
Qwen3-Coder, MiniMax-M2, Seed-OSS and MiniCPM5 parsers, 53 for MiniCPM5 with prose after the calls; Kimi K3 read
49 of 60 calls). Copying (a buffer or the rest of the text copied per call) makes no calls and is not counted:
seconds per call at 1k to 100k calls, and the worker line reader on 100 MB lines, are in
``bench/bench_scaling.py``."""

from __future__ import annotations

import sys
from functools import partial

import pytest

from harness.core.messages import ToolCall
from harness.core.protocol import run_stream
from harness.core.scenarios import Scenario
from harness.formats import get_format
from harness.parse.registry import get_parser
from harness.template.catalog import get_model
from harness.template.render import render_scenario
from harness.template.sources import load_template

ARGS = {"city": "Paris", "days": 3}
PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": PARAMETERS}}]
N = 60
PROSE = "\nThose are all the calls."  # after the calls no parse of the block ends cleanly
# Catalog models whose own parsers search blocks (qwen3_coder's reader, Kimi K3's) or hold long sections.
MODELS = ["qwen3-coder-30b-a3b", "minimax-m2", "seed-oss-36b", "minicpm5-1b", "kimi-k3", "minimax-m3", "command-r-plus"]


def operations(run) -> int:
    """How many Python and C function calls ``run()`` makes."""
    count = 0

    def profile(frame, event, arg) -> None:
        nonlocal count
        count += 1

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return count


@pytest.fixture(scope="module", params=MODELS)
def rendered(request):
    """``(parser, {n: (text, case)})``: ``get_weather`` called N and 4N times, rendered by the model's template."""
    fmt = get_format(get_model(request.param).format)
    template = load_template(request.param, offline=True)
    cases = {
        n: render_scenario(template, Scenario("many", TOOLS, [ToolCall("get_weather", ARGS)] * n), fmt)
        for n in (N, 4 * N)
    }
    return get_parser(f"toolcall-harness:{fmt.name}", fmt.name), cases


@pytest.mark.parametrize("prose", [False, True], ids=["calls", "calls-then-prose"])
@pytest.mark.parametrize("mode", ["one-shot", "stream"])
def test_work_grows_linearly_with_the_calls(rendered, mode, prose):
    parser, cases = rendered
    counts = {}
    for n, case in cases.items():
        text = case.text + (PROSE if prose else "")
        whole = parser.parse(text, case.tools, case.prefix)
        if mode == "one-shot":
            counts[n] = operations(partial(parser.parse, text, case.tools, case.prefix))
        else:  # the long block parks the reader (StepReader._park): the stream still equals the one-shot parse
            chunks = [text[i : i + 16] for i in range(0, len(text), 16)]
            counts[n] = operations(partial(run_stream, parser, chunks, case.tools, case.prefix))
            got = run_stream(parser, chunks, case.tools, case.prefix)
            assert (got.content, got.reasoning, got.tool_calls) == (whole.content, whole.reasoning, whole.tool_calls)
        if not (prose and parser.name.endswith("minicpm5")):  # MiniCPM5: prose after calls makes them content
            assert len(whole.tool_calls) == n
    ratio = counts[4 * N] / counts[N]
    assert ratio < 5, f"{parser.name} {mode}: {counts[N]} calls for {N} tool calls, {counts[4 * N]} for {4 * N}"

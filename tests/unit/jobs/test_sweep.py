"""The random sweep: reproducible cases, the same results for any number of processes, planted faults found
and minimized, hangs recorded. Real template (gemma-4-e2b), the project's real Gemma 4 parser."""

import json

import pytest

from harness.cli import main
from harness.core.guards import TimeLimitError
from harness.core.messages import Message
from harness.core.protocol import BufferedStream
from harness.core.scenarios import scenario_strings
from harness.corpus.random_calls import cut_positions, random_scenario
from harness.formats import get_format
from harness.jobs.sweep import run_sweep
from harness.report.sweep import SweepConfig
from harness.score.checks import CHECKS, truncation_leak
from parsers.own.gemma4 import Gemma4Parser

FMT = get_format("gemma4")


class FaultyGemma4(Gemma4Parser):
    """The real Gemma 4 parser with two planted faults: it raises on text holding an emoji, and it leaks the
    call closer into content when the text holds a backslash. Streams by buffering (one-shot at the end)."""

    name, library, incremental = "test:faulty-gemma4", "test", False

    def parse(self, text, tools=None, prefix=""):
        if "😀" in text:
            raise ValueError("planted fault: emoji")
        message = super().parse(text, tools, prefix)
        if "\\" in text and message.tool_calls:
            message.content = (message.content or "") + "<tool_call|>"
        return message

    def stream(self, tools=None, prefix=""):
        return BufferedStream(self, tools, prefix)


class HangingGemma4(Gemma4Parser):
    """The real Gemma 4 parser, stuck in a pure-Python loop on text holding 東京."""

    name, library, incremental = "test:hanging-gemma4", "test", False

    def parse(self, text, tools=None, prefix=""):
        while "東京" in text:
            pass
        return super().parse(text, tools, prefix)

    def stream(self, tools=None, prefix=""):
        return BufferedStream(self, tools, prefix)


def test_random_scenarios_are_reproducible_syntax_heavy_and_representable():
    first = [random_scenario(3, i, FMT) for i in range(400)]
    again = [random_scenario(3, i, FMT) for i in range(400)]
    assert [(s.calls, s.tools, s.content_after, s.reasoning) for s in first] == [
        (s.calls, s.tools, s.content_after, s.reasoning) for s in again
    ]
    assert [s.calls for s in first[:20]] != [random_scenario(4, i, FMT).calls for i in range(20)]
    assert all('<|"|>' not in text for s in first for text in scenario_strings(s))  # FormatSpec.unrepresentable
    tags = {t for s in first for t in s.tags}
    for shape in (
        "double-quote-in-string",
        "comma-in-string",
        "brace-in-string",
        "bracket-in-string",
        "colon-in-string",
        "backslash-in-string",
        "newline-in-string",
        "unicode",
        "marker-in-string",
        "nested-object",
        "parallel",
        "reasoning",
        "content-after",
        "null",
        "big-int",
    ):
        assert shape in tags, shape


def test_cut_positions_sample_or_cover_every_position():
    assert cut_positions(0, 50, 30, cuts=8, full_every=50) == list(range(30))
    sample = cut_positions(0, 7, 300, cuts=8, full_every=50)
    assert sample == cut_positions(0, 7, 300, cuts=8, full_every=50) == sorted(set(sample))
    assert len(sample) == 8 and all(0 <= k < 300 for k in sample)
    assert cut_positions(0, 7, 5, cuts=8) == [0, 1, 2, 3, 4]
    assert cut_positions(0, 7, 0) == []


def test_truncation_leak_allows_surfaced_call_text_only():
    cut = 'Sure.<|tool_call>call:f{a:<|"|>x'
    surfaced = Message(content='Sure.<|tool_call>call:f{a:<|"|>x')
    assert truncation_leak(cut, surfaced, FMT) is None
    assert truncation_leak("<|channel>", Message(content="<|channel>"), FMT) == "content contains '<|channel>'"
    assert truncation_leak(cut, Message(content="Sure.", reasoning='x<|"|>'), FMT) == "reasoning contains '<|\"|>'"


def _sweep(tmp_path, jobs, name, **kw):
    config = SweepConfig(
        parsers=["toolcall-harness", FaultyGemma4()], n=150, seed=11, jobs=jobs, out_dir=tmp_path / name, **kw
    )
    return run_sweep(config)


def test_sweep_is_the_same_for_any_jobs_and_finds_and_minimizes_planted_faults(tmp_path):
    one = _sweep(tmp_path, 1, "one", repros=0)
    two = _sweep(tmp_path, 2, "two", repros=6)
    assert (tmp_path / "one" / "failures.jsonl").read_bytes() == (tmp_path / "two" / "failures.jsonl").read_bytes()
    t1, t2 = one.totals, two.totals
    assert (t1.cases, t1.skipped, t1.cuts, t1.chars, t1.wrong, t1.types) == (
        t2.cases,
        t2.skipped,
        t2.cuts,
        t2.chars,
        t2.wrong,
        t2.types,
    )
    assert t1.cases + t1.skipped == 150 and t1.cases > 140
    assert t1.full_cases == 3  # cases 0, 50, 100 are cut at every position

    own = "toolcall-harness:gemma4"
    assert [two.rate(own, check) for check in (*CHECKS, None)] == [(0, t2.cases)] * 4
    faulty = FaultyGemma4.name
    assert t2.types[(faulty, "oneshot", "exception")] > 0
    assert t2.types[(faulty, "oneshot", "marker_leak")] > 0
    assert t2.types[(faulty, "truncation", "exception")] > 0
    summary = json.loads((tmp_path / "two" / "summary.json").read_text())
    assert summary["cases"] == t2.cases and summary["wrong"][own]["any"] == 0
    assert summary["wrong"][faulty]["oneshot"] == t2.wrong[(faulty, "oneshot")]
    lines = [json.loads(line) for line in (tmp_path / "two" / "failures.jsonl").read_text().split("\n") if line]
    assert lines and {line["parser"] for line in lines} == {faulty}
    assert len(lines) == sum(t2.wrong.values())  # fewer than --keep per group: every failure written

    repros = {(r["parser"], r["check"], r["error_type"]): r for r in two.repros}
    crash = repros[(faulty, "oneshot", "exception")]
    assert "😀" in crash["text"] and len(crash["text"]) < crash["original_len"] and len(crash["text"]) < 60
    with pytest.raises(ValueError, match="planted fault"):
        FaultyGemma4().parse(crash["text"])
    leak = repros[(faulty, "oneshot", "marker_leak")]
    assert "\\" in leak["text"] and len(leak["text"]) < 70
    assert "<tool_call|>" in leak["got"]["content"] and leak["expected"]["content"] is None
    assert Gemma4Parser().parse(leak["text"]).tool_calls  # still a well-formed call: only the planted fault fails
    cut = repros[(faulty, "truncation", "exception")]
    assert cut["text"] == "😀" and cut["method"] == "text" and cut["expected"] is None and cut["got"] is None
    report = (tmp_path / "two" / "report.md").read_text()
    assert "## Minimal repros" in report and f"{t2.wrong[(faulty, 'oneshot')]}/{t2.cases} wrong" in report


def test_a_hanging_parser_is_recorded_as_timeout_and_the_sweep_goes_on(tmp_path):
    hits = [i for i in range(40) if any("東京" in s for s in scenario_strings(random_scenario(5, i, FMT)))]
    assert hits, "seed 5 should put 東京 in some of the first 40 cases"
    result = run_sweep(
        SweepConfig(parsers=[HangingGemma4()], n=40, seed=5, jobs=2, timeout_s=0.2, out_dir=tmp_path / "hang")
    )
    assert result.totals.cases + result.totals.skipped == 40
    assert result.totals.types[(HangingGemma4.name, "oneshot", "timeout")] == len(hits)
    assert result.rate(HangingGemma4.name) == (len(hits), result.totals.cases)
    # a hang is not minimized: every failing check would cost the time limit
    assert {(r["error_type"], r["method"], r["calls"]) for r in result.repros} == {("timeout", "none", 0)}


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_time_limit_that_cannot_be_set_stops_the_sweep_instead_of_failing_every_case(tmp_path, jobs):
    """Before: ``timeout_s=inf`` made ``setitimer`` raise inside every call: "20/20 wrong (exception 20)" for a
    parser with no fault. Now the worker processes' error ends the run, and no failure line is written."""
    with pytest.raises(TimeLimitError, match="at most 86400 seconds, got inf"):
        run_sweep(SweepConfig(parsers=["own"], n=20, seed=0, jobs=jobs, timeout_s=float("inf"), out_dir=tmp_path))
    assert not (tmp_path / "failures.jsonl").exists() or (tmp_path / "failures.jsonl").read_text() == ""


def test_cli_sweep_prints_the_rate_and_writes_the_run(tmp_path, capsys):
    assert (
        main(
            [
                "sweep",
                "--model",
                "gemma-4-e2b",
                "--parser",
                "own",
                "-n",
                "40",
                "--jobs",
                "1",
                "--out",
                str(tmp_path / "cli"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "cases/s" in out and "oneshot    0/40 wrong" in out and "truncation 0/40 wrong" in out
    assert {p.name for p in (tmp_path / "cli").iterdir()} == {
        "failures.jsonl",
        "batches.jsonl",
        "summary.json",
        "report.md",
    }
    assert main(["sweep", "--parser", "no-such-parser", "-n", "1", "--out", str(tmp_path / "bad")]) == 2
    assert "error: unknown parser 'no-such-parser'" in capsys.readouterr().err

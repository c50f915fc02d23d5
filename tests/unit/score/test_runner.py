"""The runner records a parser that crashes or hangs as an error and goes on; records are written as produced."""

import json
import time

from harness.core.cases import Case
from harness.core.messages import Message, ToolCall
from harness.core.protocol import BufferedStream
from harness.core.results import ResultsWriter
from harness.formats import get_format
from harness.parse.modes import modes_for
from harness.score.runner import evaluate_case
from parsers.own.gemma4 import Gemma4Parser

FMT = get_format("gemma4")
CASE = Case(
    id="c1",
    format="gemma4",
    text='<|tool_call>call:f{a:<|"|>x<|"|>}<tool_call|>',
    expected=Message(tool_calls=[ToolCall("f", {"a": "x"})]),
    slice="curated",
)


class _Broken:
    """A parser under test that misbehaves on purpose (the harness must survive it)."""

    library, version, formats, incremental = "test", "0", ("gemma4",), False

    def __init__(self, how: str):
        self.name, self.how = f"broken-{how}", how

    def parse(self, text, tools=None, prefix=""):
        if self.how == "hang":
            while True:  # a pure-Python infinite loop, as a parser stuck in a bad regex-free loop would be
                pass
        raise RuntimeError("boom")

    def stream(self, tools=None, prefix=""):
        return BufferedStream(self, tools, prefix)


def test_a_crashing_parser_is_an_exception_verdict_in_every_mode():
    records = list(evaluate_case(CASE, _Broken("crash"), FMT, ["oneshot", "whole", "char"], seed=0, timeout_s=2))
    assert [(r.mode, r.verdict, r.error_type) for r in records] == [
        ("oneshot", "error", "exception"),
        ("whole", "error", "exception"),
        ("char", "error", "exception"),
    ]
    assert records[0].detail == "RuntimeError: boom"


def test_a_hanging_parser_times_out_and_the_run_goes_on():
    started = time.perf_counter()
    records = list(evaluate_case(CASE, _Broken("hang"), FMT, ["oneshot", "whole"], seed=0, timeout_s=0.3))
    assert [(r.verdict, r.error_type) for r in records] == [("error", "timeout"), ("error", "timeout")]
    assert time.perf_counter() - started < 5
    good = list(evaluate_case(CASE, Gemma4Parser(), FMT, ["oneshot"], seed=0, timeout_s=0.3))
    assert good[0].verdict == "pass"


def test_prefix_mode_applies_only_to_the_projects_own_incremental_parser():
    modes = ("oneshot", "char", "tokens", "prefix")
    assert modes_for(Gemma4Parser(), modes, FMT) == list(modes)
    assert modes_for(_Broken("crash"), modes, FMT) == ["oneshot", "char", "tokens"]


def test_records_are_on_disk_as_soon_as_written(tmp_path):
    path = tmp_path / "results.jsonl"
    writer = ResultsWriter(path)
    for record in evaluate_case(CASE, Gemma4Parser(), FMT, ["oneshot", "char"], seed=0):
        writer.write(record)
        lines = path.read_text().strip("\n").split("\n")  # read back before closing: flushed per line
        assert json.loads(lines[-1])["mode"] == record.mode
    writer.close()
    assert len(path.read_text().strip("\n").split("\n")) == 2

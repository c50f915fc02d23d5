"""The circuit breaker's rule (:class:`harness.parse.calls.Breaker`): cases in a row on which a result was a
timeout or crash break a parser; a case on which it only answered starts the count again; a case counts once however
many results it has. Its runs with real worker processes are in ``tests/e2e/test_dead_workers.py``."""

from __future__ import annotations

import json
import time

from harness.core.cases import load_cases
from harness.core.paths import OBSERVED_FILE
from harness.core.protocol import BufferedStream
from harness.core.results import Score
from harness.formats import get_format
from harness.parse.calls import UNAVAILABLE, Breaker
from harness.score.runner import evaluate_case
from parsers.own.gemma4 import Gemma4Parser

FMT = get_format("gemma4")

TIMEOUT = Score("error", "timeout", "worker timeout: no response within 1 s")
CRASH = Score("error", "crash", "worker crash: the worker closed its output; exit status 7")
PASS = Score("pass")


def feed(breaker: Breaker, results: list[tuple[object, Score]], parser: str = "p") -> list[bool]:
    return [breaker.observe(parser, case, result) for case, result in results]


def test_three_cases_in_a_row_break_the_parser_once_with_the_last_reason():
    breaker = Breaker(3)
    broke = feed(breaker, [("a", TIMEOUT), ("a", TIMEOUT), ("b", CRASH), ("b", CRASH), ("c", TIMEOUT), ("c", CRASH)])
    assert broke == [False, False, False, False, True, False]  # at the first result of the third case
    assert breaker.broke_on == {"p": "c"}
    assert "3 cases in a row" in breaker.reasons["p"] and "no response within 1 s" in breaker.reasons["p"]
    score = breaker.unavailable("p")
    assert score is not None and (score.verdict, score.error_type) == ("error", UNAVAILABLE)
    assert score.detail == breaker.reasons["p"] and breaker.unavailable("q") is None


def test_an_answer_starts_the_count_again_but_not_within_a_case_that_cost_a_timeout():
    breaker = Breaker(2)
    results = [("a", TIMEOUT), ("b", PASS), ("c", TIMEOUT), ("d", PASS), ("e", PASS), ("e", TIMEOUT)]
    assert not any(feed(breaker, results))  # b and d answered: each starts again; e is the first of a new run
    assert breaker.reasons == {}
    # f answered, then crashed: it counts, so g is the second case in a row
    assert feed(breaker, [("f", PASS), ("f", CRASH), ("g", TIMEOUT)]) == [False, False, True]


def test_a_worker_whose_one_shot_call_hangs_on_every_case_breaks_though_its_stream_answers():
    """Before: every case answered in its streamed mode, so the count started again on each one and a hanging
    one-shot call cost the time limit and a restart on all 20 cases (75 s for a 2 s limit)."""
    breaker = Breaker(3)
    results = [(case, score) for case in "abc" for score in (TIMEOUT, PASS)]
    assert feed(breaker, results) == [False, False, False, False, True, False]
    assert breaker.broke_on == {"p": "c"}


def test_only_timeouts_and_crashes_count():
    breaker = Breaker(2)
    others = [
        Score("error", "exception", "ValueError"),
        Score("error", "protocol", "not JSON"),
        Score("fail", "wrong_name"),
    ]
    for i, other in enumerate(others):
        assert feed(breaker, [(f"t{i}", TIMEOUT), (f"o{i}", other)]) == [False, False]
    assert breaker.reasons == {}


def test_parsers_are_counted_apart_and_zero_never_breaks():
    breaker = Breaker(2)
    feed(breaker, [("a", TIMEOUT)], "p")
    feed(breaker, [("a", PASS)], "q")
    assert feed(breaker, [("b", TIMEOUT)], "p") == [True] and "q" not in breaker.reasons
    never = Breaker(0)
    assert not any(feed(never, [(i, CRASH) for i in range(50)]))


def test_the_state_goes_through_json_for_a_resumed_sweep():
    breaker = Breaker(3)
    feed(breaker, [(1, TIMEOUT), (2, TIMEOUT)], "p")
    feed(breaker, [(1, CRASH), (2, CRASH), (3, CRASH)], "q")
    back = Breaker.from_json(json.loads(json.dumps(breaker.to_json())))
    assert back == breaker
    assert feed(back, [(3, TIMEOUT)], "p") == [True]  # the streak went on where it stopped


class _Hangs:
    """An in-process parser stuck in a pure-Python loop on every input (``SIGALRM`` interrupts it)."""

    name, library, version, formats, incremental = "hangs", "test", "0", ("gemma4",), False

    def parse(self, text, tools=None, prefix=""):
        while True:
            pass

    def stream(self, tools=None, prefix=""):
        return BufferedStream(self, tools, prefix)


def test_the_runner_stops_asking_a_broken_parser_and_keeps_the_healthy_one():
    cases = load_cases(OBSERVED_FILE)[:6]
    hangs, own, breaker = _Hangs(), Gemma4Parser(), Breaker(2)
    started = time.perf_counter()
    records = [
        r
        for case in cases
        for parser in (hangs, own)
        for r in evaluate_case(case, parser, FMT, ["oneshot", "char"], 0, 0.2, breaker=breaker)
    ]
    assert time.perf_counter() - started < 10  # 2 cases × 2 calls × 0.2 s, then no call: 6 cases would cost 12 × 0.2 s
    mine = [(r.case_id, r.mode, r.error_type) for r in records if r.parser == "hangs"]
    assert [t for _, _, t in mine] == ["timeout", "timeout", "timeout", UNAVAILABLE] + [UNAVAILABLE] * 8
    assert breaker.broke_on == {"hangs": ("observed", cases[1].id)}
    assert all(r.detail == breaker.reasons["hangs"] for r in records if r.error_type == UNAVAILABLE)
    assert [r.verdict for r in records if r.parser == own.name] == [
        r.verdict for case in cases for r in evaluate_case(case, own, FMT, ["oneshot", "char"], 0, 0.2)
    ]

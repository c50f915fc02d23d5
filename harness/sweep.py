"""The seeded random sweep: many random tool calls through the model's real chat template, every parser checked
one-shot, streamed character by character, and truncated.

``run_sweep(SweepConfig(model, parsers, n, seed, jobs))`` writes ``reports/<model>/sweep-<timestamp>-s<seed>/``:
``failures.jsonl`` (one line per wrong (case, parser, check), written as produced, in case order),
``summary.json`` (rewritten after every batch: counts so far, config, provenance, then the minimal repros) and
``report.md``; it prints cases/s and, per parser and check, the rate ``wrong/total``.

Cases. Case ``i`` comes from ``random.Random(f"{seed}:{i}")`` alone (:func:`random_scenario`), so a sweep
is the same for any ``--jobs`` and case ``i`` can be rebuilt from ``(seed, i)``. A scenario holds 1-3 calls
(names from real-looking and odd tool names), 0-4 arguments per call, values heavy in quotes, commas,
braces, brackets, colons, backslashes, newlines and tabs, unicode (CJK, emoji with ZWJ, RTL, combining
marks), strings that look like other types, numbers at the edges of int64 and double, booleans, null,
nested objects and arrays, and in about 1 string of 25 a protocol marker of this format or another one
(never a substring of ``FormatSpec.unrepresentable``); 15% have prose after the calls, 10% reasoning.
Keys are identifier-like (letters, digits, ``_``, ``-``, ``.``, space, non-ASCII): a key holding ``:``
or a marker is a format ambiguity (the Gemma 4 template writes keys raw), not a parser bug. Tools are
inferred from the calls (:func:`harness.edge_catalog.tools_for_calls`). Every case is rendered through the
real template (:func:`harness.render.render_scenario`; with the draw ~1.1 ms a case, more than half of a sweep
of the own parser, measured by ``bench/bench_sweep.py``: 871 vs 637 cases per CPU-second); one the template
cannot write is counted as ``skipped``.

Checks, per case and parser (:data:`CHECKS`):

- ``oneshot``: ``parser.parse`` equals the expected message (:func:`harness.scoring.score`).
- ``stream``: the text fed one character per chunk — every streaming prefix — with every delta checked for a
  whole protocol marker (:func:`harness.scoring.delta_leak`); the final message must equal the expected one
  and the one-shot result (a stream that needs retracting ends different: ``stream_diverges``).
- ``truncation``: ``parser.parse(text[:k])`` at cut positions ``k < len(text)`` must not raise, hang, or put a
  whole protocol marker in content or reasoning, except inside raw call text the parser surfaced (content
  from a ``call_open`` on that is verbatim in the cut text). A cut may fall inside a marker, so a trailing
  marker prefix is not checked. Positions: :data:`DEFAULT_CUTS` seeded random positions per case
  (``random.Random(f"{seed}:{i}:cuts")``) and every position on every ``full_every``-th case
  (``i % full_every == 0``, default :data:`DEFAULT_FULL_EVERY`).

A parser that raises is recorded (``exception``), one that runs past ``timeout_s`` per call is recorded
(``timeout``, via :func:`harness.runner.guarded`), and the sweep goes on. Runs in ``jobs`` processes (fork),
in batches of consecutive cases; results are merged in case order. Engine (out-of-process) parsers work but
are slow (one round trip per call).

After the sweep, the first failing case of each of the first ``repros`` (parser, check, error type) groups is
minimized (:func:`harness.minimize.minimize_sweep_failure`: one-shot and stream failures by structure reduction
re-rendered through the template, truncation failures by ddmin over the cut text) and printed with the
parser's output beside the expected one.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from rich.console import Console

from harness.edge_catalog import MARKER_TEXTS, shape_tags, tools_for_calls
from harness.errors import HarnessError, UnrepresentableError
from harness.formats import FormatSpec
from harness.model import Case, Message, Scenario, ToolCall
from harness.protocol import Delta, Parser, run_stream
from harness.runner import DEFAULT_TIMEOUT_S, alarm_limit, clip, guarded
from harness.scoring import Score, delta_leak, score

CHECKS = ("oneshot", "stream", "truncation")
DEFAULT_CUTS = 8
DEFAULT_FULL_EVERY = 50
DEFAULT_BATCH = 250
DEFAULT_KEEP = 1000
SWEEP_SLICE = "sweep"

# --- random scenarios ------------------------------------------------------------------------------------

_PIECES = (
    '"', "'", ",", ":", "{", "}", "[", "]", "\\", "\n", "\t", " ", "  ", "\\n", '\\"', "\\\\", "\r\n",
    "a", "b", "x", "word", "Paris", "0", "-1", "1e5", "null", "None", "true", "False", "{}", "[]", '{"a": 1}',
    "key: value", "a,b", "x=1", "(1, 2)", "é", "東京", "😀", "👨\u200d👩\u200d👧", "مرحبا", "שלום", "e\u0301",
    "\u00a0", "\u2028", "<", ">", "|", "=",
)
_WHOLE_STRINGS = ("", " ", "123", "1.10", "true", "null", "None", "NaN", "{}", "[1,2]", "  padded  ", "\\",
                  'print("hi, there")', 'np.genfromtxt("train.csv", delimiter=",")', "def f(x):\n    return {'x': x}\n")
_PLAIN_KEYS = ("query", "path", "city", "limit", "id", "x", "content", "sort_by", "units", "names", "options",
               "filter", "value", "text", "名前", "ID", "2fa")
_ODD_KEYS = ("max-results", "a.b", "first name", "ключ", "_private")
_PLAIN_TOOLS = ("search", "get_weather", "get_v2", "run_python", "write_file", "send_email", "lookup")
_ODD_TOOLS = ("manim-video", "web.search", "fs.read-file2", "Calc2", "x")
_SPECIAL_INTS = (0, -1, 1, 42, 2**31 - 1, -2**31, 2**53 + 1, 2**63 - 1, -2**63, 10**30)
_SPECIAL_FLOATS = (0.5, -2.25, 0.1, 1e-07, 6.02e23, 1e16, 3.14159, 5e-324, 1.7976931348623157e308, 1.0, -0.5)
_WORDS = ("Let", "me", "check", "that", "for", "you.", "Sure,", "done.", "Here", "are", "the", "results",
          "(2", "items)", "it's", '"quoted"', "naïve", "東京", "🙂", "e.g.", "a,b", "50%", "{ok}", "[1]")


def case_rng(seed: int, index: int, salt: str = "") -> random.Random:
    """The random generator of case ``index`` in a sweep of ``seed`` (``salt`` separates streams)."""
    return random.Random(f"{seed}:{index}{salt}")


def _marker_pool(fmt: FormatSpec) -> tuple[str, ...]:
    """Marker texts a string value may hold: this format's markers and other formats' ones, minus any that
    contains (or is part of) an unrepresentable substring."""
    pool = dict.fromkeys((*fmt.markers, *MARKER_TEXTS))
    return tuple(m for m in pool if not any(b in m or m in b for b in fmt.unrepresentable))


def _clean(text: str, forbid: tuple[str, ...]) -> str:
    while any(b in text for b in forbid):
        for b in forbid:
            text = text.replace(b, "")
    return text


def _string(rng: random.Random, markers: tuple[str, ...], forbid: tuple[str, ...]) -> str:
    roll = rng.random()
    if roll < 0.12:
        text = rng.choice(_WHOLE_STRINGS)
    elif roll < 0.18:
        text = "".join(rng.choice(_PIECES) for _ in range(rng.randint(30, 120)))
    else:
        text = "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 6)))
    if markers and rng.random() < 0.04:
        at = rng.randint(0, len(text))
        text = text[:at] + rng.choice(markers) + text[at:]
    return _clean(text, forbid)


def _identifier(rng: random.Random, plain: tuple, odd: tuple, p_plain: float, p_odd: float, first: str,
                max_tail: int) -> str:
    """A plain name (probability ``p_plain``), an odd one (``p_odd``), else a random identifier."""
    roll = rng.random()
    if roll < p_plain:
        return rng.choice(plain)
    if roll < p_plain + p_odd:
        return rng.choice(odd)
    return rng.choice(first) + "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789_")
                                       for _ in range(rng.randint(0, max_tail)))


def _key(rng: random.Random) -> str:
    return _identifier(rng, _PLAIN_KEYS, _ODD_KEYS, 0.7, 0.15, "abcdefghijklmnopqrstuvwxyz_", 10)


def _value(rng: random.Random, depth: int, markers, forbid) -> Any:
    roll = rng.random()
    if roll < 0.55:
        return _string(rng, markers, forbid)
    if roll < 0.64:
        return rng.choice(_SPECIAL_INTS) if rng.random() < 0.4 else rng.randint(-1000, 1000)
    if roll < 0.70:
        return rng.choice(_SPECIAL_FLOATS) if rng.random() < 0.5 else round(rng.uniform(-1000, 1000), rng.randint(1, 6))
    if roll < 0.75:
        return rng.random() < 0.5
    if roll < 0.78:
        return None
    if roll < 0.89 and depth < 3:
        return _object(rng, depth + 1, markers, forbid, rng.randint(0, 3))
    if depth < 3:
        kind = rng.random()  # arrays of one kind: schemas stay simple
        make = (lambda: _string(rng, markers, forbid)) if kind < 0.5 else \
            (lambda: rng.randint(-100, 100)) if kind < 0.7 else \
            (lambda: _object(rng, depth + 1, markers, forbid, rng.randint(1, 2)))
        return [make() for _ in range(rng.randint(0, 3))]
    return _string(rng, markers, forbid)


def _object(rng: random.Random, depth: int, markers, forbid, size: int) -> dict:
    out: dict = {}
    for _ in range(size):
        out[_key(rng)] = _value(rng, depth, markers, forbid)
    return out


def _name(rng: random.Random) -> str:
    return _identifier(rng, _PLAIN_TOOLS, _ODD_TOOLS, 0.75, 0.15, "abcdefghijklmnopqrstuvwxyz", 14)


def _prose(rng: random.Random) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 8)))


def random_scenario(seed: int, index: int, fmt: FormatSpec) -> Scenario:
    """Scenario ``index`` of a sweep with ``seed`` (see the module doc for the distribution); id
    ``sweep-{seed}-{index}``, ``seed`` the sweep seed, tags its shapes. Pure function of its arguments."""
    rng = case_rng(seed, index)
    markers, forbid = _marker_pool(fmt), tuple(fmt.unrepresentable)
    n_calls = 1 if rng.random() < 0.8 else rng.choice((2, 2, 2, 3))
    calls = [ToolCall(_name(rng), _object(rng, 0, markers, forbid, rng.randint(0, 4))) for _ in range(n_calls)]
    scenario = Scenario(
        id=f"sweep-{seed}-{index}", tools=tools_for_calls(calls), calls=calls,
        content_after=_prose(rng) if rng.random() < 0.15 else "",
        reasoning=_prose(rng) if rng.random() < 0.10 else None, seed=seed,
    )
    scenario.tags = shape_tags(scenario)
    return scenario


def cut_positions(seed: int, index: int, length: int, cuts: int = DEFAULT_CUTS,
                  full_every: int = DEFAULT_FULL_EVERY) -> list[int]:
    """Truncation points ``k`` (``text[:k]``, ``0 <= k < length``) of case ``index``: every position when
    ``index % full_every == 0``, else ``cuts`` distinct seeded random positions (all when fewer), sorted."""
    if length <= 0:
        return []
    if (full_every and index % full_every == 0) or length <= cuts:
        return list(range(length))
    return sorted(case_rng(seed, index, ":cuts").sample(range(length), cuts))


# --- checks ----------------------------------------------------------------------------------------------

@dataclass
class Failure:
    """One wrong (case, parser, check): a line of ``failures.jsonl``."""

    index: int
    parser: str
    check: str
    error_type: str
    detail: str
    text: str
    prefix: str
    expected: dict
    got: dict | None
    cut: int | None = None
    tags: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def truncation_leak(text: str, got: Message, fmt: FormatSpec) -> str | None:
    """The first whole marker in ``got``'s content or reasoning that is not inside surfaced raw call text
    (a span of the field starting at ``fmt.call_open`` that appears verbatim in ``text``); None if none."""
    for name in ("content", "reasoning"):
        value = getattr(got, name) or ""
        for marker in fmt.markers:
            start = value.find(marker)
            while start >= 0:
                opener = value.rfind(fmt.call_open, 0, start + len(fmt.call_open)) if fmt.call_open else -1
                if opener < 0 or value[opener:start + len(marker)] not in text:
                    return f"{name} contains {marker!r}"
                start = value.find(marker, start + 1)
    return None


def check_stream(case: Case, parser: Parser, fmt: FormatSpec, oneshot: Message | None,
                 timeout_s: float | None, chunks: list[str] | None = None) -> tuple[Message | None, Score]:
    """Stream ``chunks`` (default: one character each), leak-check every delta, score against the case and
    the one-shot result. Returns ``(streamed message or None, score)``."""
    leaks: list[str] = []

    def watch(delta: Delta) -> None:
        for text in (delta.content, delta.reasoning):
            if text and not leaks and delta_leak(text, fmt):
                leaks.append(text)

    pieces = list(case.text) if chunks is None else chunks
    got, error = guarded(lambda: run_stream(parser, pieces, case.tools, case.prefix, on_delta=watch), timeout_s)
    if error:
        return None, error
    return got, score(case, got, fmt, oneshot=oneshot, leaked_delta=leaks[0] if leaks else None)


def check_truncation(case: Case, parser: Parser, fmt: FormatSpec, k: int,
                     timeout_s: float | None) -> tuple[Message | None, Score]:
    """Parse ``case.text[:k]`` one-shot: error on exception/timeout, ``marker_leak`` per :func:`truncation_leak`."""
    cut = case.text[:k]
    got, error = guarded(lambda: parser.parse(cut, case.tools, case.prefix), timeout_s)
    if error:
        return None, error
    leak = truncation_leak(cut, got, fmt)
    return got, Score("fail", "marker_leak", leak) if leak else Score("pass")


def check_case(case: Case, index: int, parser: Parser, fmt: FormatSpec, cuts: list[int],
               timeout_s: float | None) -> Iterator[Failure]:
    """Run every check of :data:`CHECKS` on one case; yield a :class:`Failure` for each wrong one (truncation:
    the first failing cut)."""
    limit = alarm_limit(parser, timeout_s)
    expected = case.expected.to_json()

    def failure(check: str, result: Score, got: Message | None, cut: int | None = None, text: str = case.text):
        return Failure(index, parser.name, check, result.error_type or result.verdict, clip(result.detail), text,
                       case.prefix, expected, got.to_json() if got is not None else None, cut, case.tags)

    oneshot, error = guarded(lambda: parser.parse(case.text, case.tools, case.prefix), limit)
    result = error or score(case, oneshot, fmt)
    if not result.passed:
        yield failure("oneshot", result, oneshot)
    streamed, result = check_stream(case, parser, fmt, oneshot, limit)
    if not result.passed:
        yield failure("stream", result, streamed)
    for k in cuts:
        got, result = check_truncation(case, parser, fmt, k, limit)
        if not result.passed:
            yield failure("truncation", result, got, k, case.text[:k])
            break


# --- batches (run in worker processes) -------------------------------------------------------------------

@dataclass
class _Job:
    """What every worker needs, built once per process."""

    template: Any
    fmt: FormatSpec
    parsers: list[Parser]
    seed: int
    cuts: int
    full_every: int
    timeout_s: float | None


_JOB: _Job | None = None


def _init_worker(job: _Job) -> None:
    global _JOB
    _JOB = job


def _init_child(job: _Job) -> None:
    """Worker process setup: Ctrl-C is the parent's to handle (it stops handing out batches)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _init_worker(job)


@dataclass
class BatchResult:
    """Outcome of a batch of consecutive cases: ``wrong[(parser, check)]`` counts cases, ``types[(parser,
    check, error type)]`` too, ``any_wrong[parser]`` cases wrong in some check; ``failures`` in case order."""

    cases: int = 0
    skipped: int = 0
    cuts: int = 0
    full_cases: int = 0
    chars: int = 0
    wrong: Counter = field(default_factory=Counter)
    types: Counter = field(default_factory=Counter)
    any_wrong: Counter = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)

    def add(self, other: "BatchResult") -> None:
        for name in ("cases", "skipped", "cuts", "full_cases", "chars"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.wrong.update(other.wrong)
        self.types.update(other.types)
        self.any_wrong.update(other.any_wrong)


def sweep_case(job: _Job, index: int) -> tuple[Case | None, BatchResult]:
    """Build, render and check case ``index``; the case is None when the template cannot write it."""
    from harness.render import render_scenario

    out = BatchResult()
    try:
        case = render_scenario(job.template, random_scenario(job.seed, index, job.fmt), job.fmt, slice=SWEEP_SLICE)
    except UnrepresentableError:
        out.skipped = 1
        return None, out
    cuts = cut_positions(job.seed, index, len(case.text), job.cuts, job.full_every)
    out.cases, out.cuts, out.chars = 1, len(cuts), len(case.text)
    out.full_cases = int(len(cuts) == len(case.text))
    for parser in job.parsers:
        failures = list(check_case(case, index, parser, job.fmt, cuts, job.timeout_s))
        for f in failures:
            out.wrong[(f.parser, f.check)] += 1
            out.types[(f.parser, f.check, f.error_type)] += 1
        out.any_wrong[parser.name] += bool(failures)
        out.failures += failures
    return case, out


def run_batch(bounds: tuple[int, int]) -> BatchResult:
    """Check cases ``range(*bounds)`` with the worker's job (see :func:`_init_worker`)."""
    total = BatchResult()
    for index in range(*bounds):
        _, result = sweep_case(_JOB, index)
        total.add(result)
        total.failures += result.failures
    return total


def _batches(n: int, size: int) -> list[tuple[int, int]]:
    return [(start, min(n, start + size)) for start in range(0, n, size)]


def _results(job: _Job, n: int, jobs: int, batch: int) -> Iterator[BatchResult]:
    """Batch results in case order, computed in ``jobs`` forked processes (in this one when ``jobs == 1``)."""
    bounds = _batches(n, batch)
    if jobs <= 1:
        _init_worker(job)
        yield from map(run_batch, bounds)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork"),
                               initializer=_init_child, initargs=(job,))
    try:
        yield from pool.map(run_batch, bounds)
    finally:  # on Ctrl-C: drop the batches not started, let the running ones end
        pool.shutdown(wait=True, cancel_futures=True)


# --- the run ---------------------------------------------------------------------------------------------

@dataclass
class SweepConfig:
    """Settings of ``toolcall-harness sweep``. ``parsers``: names as for ``eval`` (in-process parsers meet the
    speed target) or parser instances; ``n``: cases; ``jobs``: processes (default ``os.cpu_count()``);
    ``cuts`` / ``full_every``: truncation sampling; ``keep``: failure lines written per (parser, check, error
    type) — counts stay exact; ``repros``: groups whose first failure is minimized; ``budget``: checks per
    minimization."""

    model: str = "gemma-4-e2b"
    parsers: list = field(default_factory=lambda: ["toolcall-harness"])
    n: int = 2000
    seed: int = 0
    jobs: int | None = None
    out_dir: Path | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    cuts: int = DEFAULT_CUTS
    full_every: int = DEFAULT_FULL_EVERY
    batch: int = DEFAULT_BATCH
    keep: int = DEFAULT_KEEP
    repros: int = 10
    budget: int = 300
    console: Console = field(default_factory=Console)


@dataclass
class SweepResult:
    """What :func:`run_sweep` returns: the run directory, the merged counts and the minimized repros."""

    run_dir: Path
    totals: BatchResult
    parsers: list[str]
    elapsed_s: float
    repros: list[dict]

    def rate(self, parser: str, check: str | None = None) -> tuple[int, int]:
        """``(wrong, total)`` cases for ``parser`` in ``check`` (None: in any check)."""
        wrong = self.totals.any_wrong[parser] if check is None else self.totals.wrong[(parser, check)]
        return wrong, self.totals.cases


def run_sweep(config: SweepConfig) -> SweepResult:
    """Run the sweep (module doc); returns a :class:`SweepResult`. Raises ``HarnessError`` for an unknown
    model or parser, a parser that cannot run here, or a template that does not load."""
    from harness.catalog import get_model
    from harness.formats import get_format
    from harness.templates import load_template
    from parsers import create_parsers

    console = config.console
    entry = get_model(config.model)
    fmt = get_format(entry.format)
    names = [p for p in config.parsers if isinstance(p, str)]
    parsers, unavailable = create_parsers(names, fmt.name, install_missing=False,
                                          log=lambda line: console.print(line, markup=False, highlight=False)) \
        if names else ([], {})
    parsers += [p for p in config.parsers if not isinstance(p, str)]  # instances as given (tests, plug-ins)
    if not parsers:
        raise HarnessError("sweep: no parser given")
    if unavailable:
        raise HarnessError("parser unavailable: " + "; ".join(f"{k}: {v}" for k, v in unavailable.items()))
    if any(getattr(p, "out_of_process", False) for p in parsers) and (config.jobs or 1) != 1:
        raise HarnessError("engine (out-of-process) parsers run with --jobs 1 only")
    template = load_template(config.model)
    jobs = config.jobs or os.cpu_count() or 1
    started_at = dt.datetime.now().astimezone()
    run_dir = config.out_dir or Path("reports") / config.model / (
        f"sweep-{started_at.strftime('%Y%m%d-%H%M%S')}-s{config.seed}")
    run_dir.mkdir(parents=True, exist_ok=True)
    names = [p.name for p in parsers]
    job = _Job(template, fmt, parsers, config.seed, config.cuts, config.full_every, config.timeout_s)
    info = {"model": config.model, "format": fmt.name, "template": template.provenance, "parsers": names,
            "seed": config.seed, "n": config.n, "jobs": jobs, "cuts_per_case": config.cuts,
            "every_position_every": config.full_every, "timeout_s": config.timeout_s,
            "started": started_at.isoformat(timespec="seconds")}
    console.print(f"sweep: {config.n} cases of {config.model} ({fmt.name}), seed {config.seed}, {jobs} jobs; "
                  f"parsers: {', '.join(names)}; truncation: {config.cuts} seeded random cuts per case, every "
                  f"position on every {config.full_every}th case; writing {run_dir}", markup=False, highlight=False)
    totals, started = BatchResult(), time.perf_counter()
    kept: Counter = Counter()
    first: dict[tuple[str, str, str], Failure] = {}
    try:
        with open(run_dir / "failures.jsonl", "w", encoding="utf-8") as out:
            for result in _results(job, config.n, jobs, config.batch):
                totals.add(result)
                for f in result.failures:
                    key = (f.parser, f.check, f.error_type)
                    first.setdefault(key, f)
                    kept[key] += 1
                    if kept[key] <= config.keep:
                        out.write(json.dumps(f.to_json(), ensure_ascii=False) + "\n")
                out.flush()
                _write_summary(run_dir, info, totals, names, time.perf_counter() - started, [])
    except KeyboardInterrupt:
        console.print(f"interrupted after {totals.cases} cases: counts so far in {run_dir / 'summary.json'}")
        raise
    elapsed = time.perf_counter() - started
    repros = _minimize_first(first, config, job, console)
    result = SweepResult(run_dir, totals, names, elapsed, repros)
    _write_summary(run_dir, info, totals, names, elapsed, repros)
    print_sweep(console, result, config)
    (run_dir / "report.md").write_text(sweep_markdown(result, info), encoding="utf-8")
    return result


def _minimize_first(first: dict, config: SweepConfig, job: _Job, console: Console) -> list[dict]:
    """Minimal repros of the first failure of up to ``config.repros`` (parser, check, error type) groups, in
    parser and check order. A stream group whose first failure is the one-shot group's (the stream only
    repeats the one-shot result) is not minimized twice."""
    from harness.minimize import minimize_sweep_failure

    order = {name: i for i, name in enumerate(p.name for p in job.parsers)}
    groups = sorted(first.items(), key=lambda item: (order[item[0][0]], CHECKS.index(item[0][1]), item[1].index))
    groups = [(key, f) for key, f in groups
              if not (key[1] == "stream" and getattr(first.get((key[0], "oneshot", key[2])), "index", None) == f.index)]
    groups = groups[: config.repros]
    if groups:
        console.print(f"minimizing the first failure of {len(groups)} group(s) (budget {config.budget} checks each)",
                      markup=False, highlight=False)
    by_name = {p.name: p for p in job.parsers}
    repros = []
    for (parser_name, check, error_type), failure in groups:
        repro = minimize_sweep_failure(failure, by_name[parser_name], job.template, job.fmt, config.seed,
                                       config.timeout_s, config.budget)
        repros.append({"parser": parser_name, "check": check, "error_type": error_type, "index": failure.index,
                       **repro})
    return repros


def _write_summary(run_dir: Path, info: dict, totals: BatchResult, names: list[str], elapsed: float,
                   repros: list[dict]) -> None:
    rates = {name: {"any": totals.any_wrong[name],
                    **{check: totals.wrong[(name, check)] for check in CHECKS},
                    "error_types": {f"{c}:{e}": n for (p, c, e), n in sorted(totals.types.items()) if p == name}}
             for name in names}
    data = {**info, "cases": totals.cases, "skipped": totals.skipped, "cuts": totals.cuts,
            "every_position_cases": totals.full_cases, "elapsed_s": round(elapsed, 2),
            "cases_per_s": round(totals.cases / elapsed, 1) if elapsed > 0 else None,
            "wrong": rates, "repros": repros}
    tmp = run_dir / "summary.json.tmp"
    tmp.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    tmp.replace(run_dir / "summary.json")


def _rate_lines(result: SweepResult) -> Iterator[tuple[str, str, str]]:
    """``(parser, check, "wrong/total wrong (types)")`` rows, ``any`` last."""
    t = result.totals
    for name in result.parsers:
        for check in (*CHECKS, None):
            wrong, total = result.rate(name, check)
            kinds = Counter({e: n for (p, c, e), n in t.types.items() if p == name and (check is None or c == check)})
            text = f"{wrong}/{total} wrong"
            if kinds and check is not None:
                text += " (" + ", ".join(f"{e} {n}" for e, n in kinds.most_common()) + ")"
            yield name, check or "any", text


def print_sweep(console: Console, result: SweepResult, config: SweepConfig) -> None:
    """Print speed, per parser and check the ``wrong/total`` rate, and the minimal repros."""
    t = result.totals
    speed = t.cases / result.elapsed_s if result.elapsed_s > 0 else 0.0
    console.print(f"{t.cases} cases in {result.elapsed_s:.1f} s ({speed:.0f} cases/s); {t.skipped} skipped "
                  f"(the template cannot write them); {t.chars} characters streamed one at a time; {t.cuts} "
                  f"truncations ({config.cuts} seeded random cuts per case, every position on {t.full_cases} cases)",
                  markup=False, highlight=False)
    for name, check, text in _rate_lines(result):
        console.print(f"  {name:32s} {check:10s} {text}", markup=False, highlight=False)
    from harness.report import flat

    for repro in result.repros:
        console.print(f"minimal repro: {repro['parser']} {repro['check']} {repro['error_type']} (case "
                      f"{repro['index']}, {repro['method']}, {repro['original_len']} → {len(repro['text'])} chars, "
                      f"{repro['calls']} checks): {clip(flat(repro['detail']), 200)}", markup=False, highlight=False)
        expected, got = _shown(repro)
        console.print(f"    text:     {repro['text']!r}"[:500], markup=False, highlight=False)
        console.print(f"    expected: {expected}"[:500], markup=False, highlight=False)
        console.print(f"    got:      {got}"[:500], markup=False, highlight=False)
    console.print(f"wrote {result.run_dir}/: failures.jsonl, summary.json, report.md", markup=False, highlight=False)


def _shown(repro: dict) -> tuple[str, str]:
    """``(expected, got)`` of a repro as one-line text (a truncation has no expected message; None got: raised)."""
    expected = json.dumps(repro["expected"], ensure_ascii=False) if repro["expected"] is not None else \
        "no exception, hang or marker leak (truncated text)"
    got = json.dumps(repro["got"], ensure_ascii=False) if repro["got"] is not None else "raised or timed out"
    return expected, got


def sweep_markdown(result: SweepResult, info: dict) -> str:
    """``report.md`` of a sweep: settings, the rate table and the minimal repros."""
    from harness.report import flat

    t = result.totals
    lines = [f"# Random sweep: {info['model']} ({info['format']})", "",
             f"{t.cases} cases (seed {info['seed']}, {t.skipped} skipped), {result.elapsed_s:.1f} s with "
             f"{info['jobs']} jobs; template `{info['template'].get('file')}` sha256 "
             f"`{info['template'].get('sha256')}`.", "",
             f"Checks: `oneshot` (parse vs expected), `stream` (one character per chunk, every delta leak-checked, "
             f"final message vs expected and one-shot), `truncation` ({info['cuts_per_case']} seeded random cuts "
             f"per case, every position on every {info['every_position_every']}th case: {t.cuts} cuts; no "
             f"exception, hang or marker leak).", "",
             "| parser | check | wrong/total |", "|---|---|---|"]
    lines += [f"| `{name}` | {check} | {text} |" for name, check, text in _rate_lines(result)]
    lines += ["", "## Minimal repros", ""]
    for repro in result.repros:
        lines += [f"- **{repro['parser']}** {repro['check']} **{repro['error_type']}** (case {repro['index']}, "
                  f"{repro['method']}, {repro['original_len']} → {len(repro['text'])} chars): {flat(repro['detail'])}",
                  "",
                  "  ```text", "  " + repro["text"].replace("\n", "\n  "), "  ```",
                  f"  - expected: `{_shown(repro)[0]}`", f"  - got: `{_shown(repro)[1]}`", ""]
    if not result.repros:
        lines.append("No failures.")
    return "\n".join(lines) + "\n"

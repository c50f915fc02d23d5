"""The seeded random sweep: many random tool calls through the model's real chat template, every parser checked
one-shot, streamed character by character, and truncated.

``run_sweep(SweepConfig(model, parsers, n, seed, jobs))`` writes ``reports/<model>/sweep-<timestamp>-s<seed>/``:
``failures.jsonl`` (one line per wrong (case, parser, check), written as produced, in case order),
``batches.jsonl`` (one line per batch merged: its counts, first failures and circuit breaker, so that
``--resume`` continues a killed sweep: :mod:`harness.jobs.resume`), ``summary.json`` (written at the start, then
after every batch: counts so far, config, provenance, then the minimal repros) and ``report.md``; it prints
cases/s and, per parser and check, the rate ``wrong/total``. A non-empty ``--out`` is refused unless resumed or
forced.

Cases. Case ``i`` comes from ``random.Random(f"{seed}:{i}")`` alone (:func:`random_scenario`), so a sweep
is the same for any ``--jobs`` and case ``i`` can be rebuilt from ``(seed, i)``. A scenario holds 1-3 calls
(names from real-looking and odd tool names), 0-4 arguments per call, values heavy in quotes, commas,
braces, brackets, colons, backslashes, newlines and tabs, unicode (CJK, emoji with ZWJ, RTL, combining
marks), strings that look like other types, numbers at the edges of int64 and double, booleans, null,
nested objects and arrays, and in about 1 string of 25 a protocol marker of this format or another one
(never a substring of ``FormatSpec.unrepresentable``); 15% have prose after the calls, 10% reasoning.
Keys are identifier-like (letters, digits, ``_``, ``-``, ``.``, space, non-ASCII): a key holding ``:``
or a marker is a format ambiguity (the Gemma 4 template writes keys raw), not a parser bug. Tools are
inferred from the calls (:func:`harness.core.scenarios.tools_for_calls`). Every case is rendered through the
real template (:func:`harness.template.render.render_scenario`; with the draw ~1.1 ms a case, more than half of a sweep
of the own parser, measured by ``bench/bench_sweep.py``: 871 vs 637 cases per CPU-second); one the template
cannot write is counted as ``skipped``.

Checks, per case and parser (:data:`CHECKS`):

- ``oneshot``: ``parser.parse`` equals the expected message (:func:`harness.score.verdicts.score`).
- ``stream``: the text fed one character per chunk — every streaming prefix — with every delta checked for a
  whole protocol marker (:func:`harness.score.verdicts.delta_leak`); the final message must equal the expected one
  and the one-shot result (a stream that needs retracting ends different: ``stream_diverges``).
- ``truncation``: ``parser.parse(text[:k])`` at cut positions ``k < len(text)`` must not raise, hang, or put a
  whole protocol marker in content or reasoning, except inside raw call text the parser surfaced (content
  from a ``call_open`` on that is verbatim in the cut text). A cut may fall inside a marker, so a trailing
  marker prefix is not checked. Positions: :data:`DEFAULT_CUTS` seeded random positions per case
  (``random.Random(f"{seed}:{i}:cuts")``) and every position on every ``full_every``-th case
  (``i % full_every == 0``, default :data:`DEFAULT_FULL_EVERY`).

A parser that raises is recorded (``exception``), one that runs past ``timeout_s`` per call is recorded
(``timeout``, via :func:`harness.parse.calls.guarded`), and the sweep goes on; after ``break_after`` cases in a row
with a timeout or crash the parser is not asked again (:class:`harness.parse.calls.Breaker`, one per process) and
the cases left count as ``unavailable`` for it, not in its totals. Runs in ``jobs`` processes (fork),
in batches of consecutive cases; results are merged in case order. Engine (out-of-process) parsers work but
are slow (one round trip per call).

After the sweep, the first failing case of each of the first ``repros`` (parser, check, error type) groups is
minimized (:func:`harness.analysis.minimize.minimize_sweep_failure`: one-shot and stream failures by structure reduction
re-rendered through the template, truncation failures by ddmin over the cut text) and printed with the
parser's output beside the expected one.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from harness.analysis.minimize import minimize_sweep_failure
from harness.core.cases import Case
from harness.core.errors import HarnessError, UnrepresentableError
from harness.core.jsonl import read_objects
from harness.core.paths import REPORTS_DIR, claim_out_dir, new_run_dir
from harness.core.protocol import Parser
from harness.core.textio import open_text, write_text
from harness.corpus.random_calls import cut_positions, random_scenario
from harness.engines.client import runs_out_of_process
from harness.formats import FormatSpec, get_format
from harness.jobs.resume import check_settings, dropped_tail, kept_batches
from harness.parse.calls import UNAVAILABLE, Breaker
from harness.parse.registry import create_parsers
from harness.report.sweep import BatchResult, SweepConfig, SweepResult, print_sweep, sweep_markdown
from harness.score.checks import CHECKS, Failure, check_case
from harness.template.catalog import get_model
from harness.template.render import check_writes_calls, render_scenario
from harness.template.sources import load_template

SWEEP_SLICE = "sweep"
FAILURES, JOURNAL, SUMMARY = "failures.jsonl", "batches.jsonl", "summary.json"
#: the settings in ``summary.json`` a resumed sweep must share, and the flag of each
SWEEP_FLAGS = {
    "model": "--model",
    "parsers": "--parsers",
    "seed": "--seed",
    "values": "--values",
    "n": "--cases",
    "cuts_per_case": "--cuts",
    "every_position_every": "--full-every",
    "timeout_s": "--timeout",
    "keep": "--keep",
    "repro_groups": "--repros",
    "budget": "--budget",
    "batch": "the batch size",
    "break_after": "--break-after",
}

# --- random scenarios ------------------------------------------------------------------------------------


# --- checks ----------------------------------------------------------------------------------------------


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
    values: str = "mixed"
    breaker: Breaker = field(default_factory=Breaker)


_JOB: _Job | None = None


def _init_worker(job: _Job) -> None:
    global _JOB
    _JOB = job


def _init_child(job: _Job) -> None:
    """Worker process setup: Ctrl-C is the parent's to handle (it stops handing out batches)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _init_worker(job)


def sweep_case(job: _Job, index: int) -> tuple[Case | None, BatchResult]:
    """Build, render and check case ``index``; the case is None when the template cannot write it."""
    out = BatchResult()
    try:
        case = render_scenario(
            job.template, random_scenario(job.seed, index, job.fmt, job.values), job.fmt, slice=SWEEP_SLICE
        )
    except UnrepresentableError:
        out.skipped = 1
        return None, out
    cuts = cut_positions(job.seed, index, len(case.text), job.cuts, job.full_every)
    out.cases, out.cuts, out.chars = 1, len(cuts), len(case.text)
    out.full_cases = int(len(cuts) == len(case.text))
    for parser in job.parsers:
        failures = list(check_case(case, index, parser, job.fmt, cuts, job.timeout_s, job.breaker))
        if failures and failures[0].check == "oneshot" and failures[0].error_type == UNAVAILABLE:
            out.unavailable[parser.name] += 1  # broken before this case: not asked
            continue
        failures = [f for f in failures if f.error_type != UNAVAILABLE]
        for f in failures:
            out.wrong[(f.parser, f.check)] += 1
            out.types[(f.parser, f.check, f.error_type)] += 1
        out.any_wrong[parser.name] += bool(failures)
        out.failures += failures
    return case, out


def run_batch(bounds: tuple[int, int]) -> BatchResult:
    """Check cases ``range(*bounds)`` with the worker's job (see :func:`_init_worker`)."""
    if _JOB is None:
        raise RuntimeError("run_batch: the worker has no job (_init_worker was not called)")
    total = BatchResult()
    for index in range(*bounds):
        _, result = sweep_case(_JOB, index)
        total.add(result)
        total.failures += result.failures
    total.breaker = _JOB.breaker.to_json()
    return total


def _batches(n: int, size: int) -> list[tuple[int, int]]:
    return [(start, min(n, start + size)) for start in range(0, n, size)]


def _results(job: _Job, n: int, jobs: int, batch: int, start: int = 0) -> Iterator[BatchResult]:
    """Batch results in case order from case ``start`` (a batch boundary), computed in ``jobs`` forked processes
    (in this one when ``jobs == 1``)."""
    bounds = [b for b in _batches(n, batch) if b[0] >= start]
    if jobs <= 1:
        _init_worker(job)
        yield from map(run_batch, bounds)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(
        max_workers=jobs, mp_context=multiprocessing.get_context("fork"), initializer=_init_child, initargs=(job,)
    )
    try:
        yield from pool.map(run_batch, bounds)
    finally:  # on Ctrl-C: drop the batches not started, let the running ones end
        pool.shutdown(wait=True, cancel_futures=True)


# --- the run ---------------------------------------------------------------------------------------------


def run_sweep(config: SweepConfig) -> SweepResult:
    """Run the sweep (module doc); returns a :class:`SweepResult`. Raises ``HarnessError`` for an unknown
    model or parser, a parser that cannot run here, or a template that does not load."""
    console = config.console
    if config.out_dir is not None and not config.resume:  # another run's files: refused before any work
        claim_out_dir(config.out_dir, config.force)
    entry = get_model(config.model)
    fmt = get_format(entry.format)
    names = [p for p in config.parsers if isinstance(p, str)]
    parsers, unavailable = (
        create_parsers(
            names, fmt.name, install_missing=False, log=lambda line: console.print(line, markup=False, highlight=False)
        )
        if names
        else ([], {})
    )
    parsers += [p for p in config.parsers if not isinstance(p, str)]  # instances as given (tests, plug-ins)
    if not parsers:
        raise HarnessError("sweep: no parser given")
    if unavailable:
        raise HarnessError("parser unavailable: " + "; ".join(f"{k}: {v}" for k, v in unavailable.items()))
    if any(runs_out_of_process(p) for p in parsers) and (config.jobs or 1) != 1:
        raise HarnessError("engine (out-of-process) parsers run with --jobs 1 only")
    template = load_template(config.model)
    no_calls = check_writes_calls(template, fmt)
    if no_calls:
        raise HarnessError(f"sweep: {no_calls}")
    jobs = config.jobs or os.cpu_count() or 1
    started_at = dt.datetime.now().astimezone()
    names = [p.name for p in parsers]
    info = {
        "model": config.model,
        "format": fmt.name,
        "template": template.provenance,
        "parsers": names,
        "seed": config.seed,
        "values": config.values,
        "n": config.n,
        "jobs": jobs,
        "cuts_per_case": config.cuts,
        "every_position_every": config.full_every,
        "timeout_s": config.timeout_s,
        "keep": config.keep,
        "repro_groups": config.repros,
        "budget": config.budget,
        "batch": config.batch,
        "break_after": config.break_after,
        "started": started_at.isoformat(timespec="seconds"),
        "resumed": [],
    }
    run_dir, previous = _sweep_dir(config, info, started_at)
    job = _Job(template, fmt, parsers, config.seed, config.cuts, config.full_every, config.timeout_s, config.values)
    job.breaker = Breaker(config.break_after)
    console.print(
        f"sweep: {config.n} cases of {config.model} ({fmt.name}), seed {config.seed}, values {config.values}, "
        f"{jobs} jobs; "
        f"parsers: {', '.join(names)}; truncation: {config.cuts} seeded random cuts per case, every "
        f"position on every {config.full_every}th case; writing {run_dir}",
        markup=False,
        highlight=False,
    )
    totals, started, base = BatchResult(), time.perf_counter(), 0.0
    first: dict[tuple[str, str, str], Failure] = {}
    if previous is not None:  # resumed: the batches merged before, as the journal holds them
        info.update(started=previous["started"], resumed=[*previous.get("resumed", []), info["started"]])
        for note in filter(None, (dropped_tail(run_dir / name) for name in (JOURNAL, FAILURES))):
            console.print(note, markup=False, highlight=False)
        batches = kept_batches(run_dir / JOURNAL, run_dir / FAILURES)
        try:
            for batch in batches:
                totals.add(BatchResult.from_counts(batch["counts"]))
                for data in batch["first"]:
                    f = Failure(**data)
                    first.setdefault((f.parser, f.check, f.error_type), f)
            if batches:
                job.breaker, base = Breaker.from_json(batches[-1]["breaker"]), float(batches[-1]["elapsed_s"])
        except (KeyError, TypeError, ValueError) as exc:
            raise HarnessError(
                f"{run_dir / JOURNAL}: not a sweep's batch journal ({type(exc).__name__}: {exc})"
            ) from None
        done = batches[-1]["end"] if batches else 0
        console.print(f"resuming: {done} of {config.n} cases done", markup=False, highlight=False)
    else:
        write_text(run_dir / FAILURES, "")
        write_text(run_dir / JOURNAL, "")
        done = 0
    _write_summary(run_dir, info, totals, names, base, [], job.breaker.to_json())
    kept = Counter(totals.types)  # failures so far per (parser, check, error type): lines written up to --keep
    try:
        with open_text(run_dir / FAILURES, "a") as out, open_text(run_dir / JOURNAL, "a") as journal:
            for result in _results(job, config.n, jobs, config.batch, done):
                totals.add(result)
                done = min(config.n, done + config.batch)
                new = []
                for f in result.failures:
                    key = (f.parser, f.check, f.error_type)
                    if key not in first:
                        first[key] = f
                        new.append(f.to_json())
                    kept[key] += 1
                    if kept[key] <= config.keep:
                        out.write(json.dumps(f.to_json(), ensure_ascii=False) + "\n")
                out.flush()
                elapsed = base + time.perf_counter() - started
                line = {"end": done, "counts": result.counts(), "first": new, "breaker": result.breaker}
                journal.write(json.dumps({**line, "elapsed_s": round(elapsed, 3)}, ensure_ascii=False) + "\n")
                journal.flush()
                _write_summary(run_dir, info, totals, names, elapsed, [], result.breaker)
    except KeyboardInterrupt:
        console.print(
            f"interrupted after {totals.cases} cases: counts so far in {run_dir / SUMMARY}; continue with --resume "
            f"{run_dir} and the same flags",
            markup=False,
            highlight=False,
        )
        raise
    elapsed = base + time.perf_counter() - started
    breaker = _merged_breaker(run_dir / JOURNAL, config.break_after)
    repros = _minimize_first({k: f for k, f in first.items() if k[0] not in breaker.reasons}, config, job, console)
    swept = SweepResult(run_dir, totals, names, elapsed, repros, dict(breaker.reasons))
    print_sweep(console, swept, config)
    write_text(run_dir / "report.md", sweep_markdown(swept, info))
    _write_summary(run_dir, info, totals, names, elapsed, repros, breaker.to_json(), finished=True)
    return swept


def _sweep_dir(config: SweepConfig, info: dict, started_at: dt.datetime) -> tuple[Path, dict | None]:
    """The sweep's folder and, when it resumes one, the ``summary.json`` it started with (its settings checked
    against ``info``). A folder to resume that is empty or missing starts the sweep there."""
    stamp = f"sweep-{started_at.strftime('%Y%m%d-%H%M%S')}-s{config.seed}"
    out = config.out_dir
    if out is None:
        return new_run_dir(REPORTS_DIR / config.model, stamp), None
    if not config.resume or not out.is_dir() or not any(out.iterdir()):
        return claim_out_dir(out, config.force or config.resume), None
    path = out / SUMMARY
    if not path.is_file():
        raise HarnessError(f"{out}: nothing to resume (no {SUMMARY}: not a sweep's folder)")
    try:
        previous = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HarnessError(f"{path}: cannot be read ({exc})") from None
    if not isinstance(previous, dict) or "started" not in previous:
        raise HarnessError(f"{path}: not a sweep's summary")
    if previous.get("finished"):
        raise HarnessError(f"{out}: the sweep finished; nothing to resume")
    check_settings(path, previous, info, SWEEP_FLAGS)
    return out, previous


def _merged_breaker(journal: Path, after: int) -> Breaker:
    """The parsers broken in any batch of the sweep (``--jobs N``: each process has its own breaker)."""
    merged = Breaker(after)
    for _, line in read_objects(journal, HarnessError, "batch", allow_nan=True):
        state = Breaker.from_json(line["breaker"])
        for name, reason in state.reasons.items():
            merged.reasons.setdefault(name, reason)
            merged.broke_on.setdefault(name, state.broke_on[name])
    return merged


def _minimize_first(first: dict, config: SweepConfig, job: _Job, console: Console) -> list[dict]:
    """Minimal repros of the first failure of up to ``config.repros`` (parser, check, error type) groups, in
    parser and check order. A stream group whose first failure is the one-shot group's (the stream only
    repeats the one-shot result) is not minimized twice."""
    order = {name: i for i, name in enumerate(p.name for p in job.parsers)}
    groups = sorted(first.items(), key=lambda item: (order[item[0][0]], CHECKS.index(item[0][1]), item[1].index))
    groups = [
        (key, f)
        for key, f in groups
        if not (key[1] == "stream" and getattr(first.get((key[0], "oneshot", key[2])), "index", None) == f.index)
    ]
    groups = groups[: config.repros]
    if groups:
        console.print(
            f"minimizing the first failure of {len(groups)} group(s) (budget {config.budget} checks each)",
            markup=False,
            highlight=False,
        )
    by_name = {p.name: p for p in job.parsers}
    repros = []
    for (parser_name, check, error_type), failure in groups:
        repro = minimize_sweep_failure(
            failure,
            by_name[parser_name],
            job.template,
            job.fmt,
            config.seed,
            config.timeout_s,
            config.budget,
            config.values,
        )
        repros.append(
            {"parser": parser_name, "check": check, "error_type": error_type, "index": failure.index, **repro}
        )
    return repros


def _write_summary(
    run_dir: Path,
    info: dict,
    totals: BatchResult,
    names: list[str],
    elapsed: float,
    repros: list[dict],
    breaker: dict | None,
    finished: bool = False,
) -> None:
    """``summary.json``, replaced in one rename: ``info``, the counts so far, the parsers broken (``{parser:
    {reason, case, unavailable}}``), the repros; ``finished`` once the sweep has written every file."""
    state = Breaker.from_json(breaker) if breaker is not None else Breaker()
    rates = {
        name: {
            "any": totals.any_wrong[name],
            **{check: totals.wrong[(name, check)] for check in CHECKS},
            "error_types": {f"{c}:{e}": n for (p, c, e), n in sorted(totals.types.items()) if p == name},
        }
        for name in names
    }
    data = {
        **info,
        "cases": totals.cases,
        "skipped": totals.skipped,
        "cuts": totals.cuts,
        "every_position_cases": totals.full_cases,
        "elapsed_s": round(elapsed, 2),
        "cases_per_s": round(totals.cases / elapsed, 1) if elapsed > 0 else None,
        "wrong": rates,
        "broken": {
            name: {"reason": reason, "case": state.broke_on.get(name), "unavailable": totals.unavailable[name]}
            for name, reason in state.reasons.items()
        },
        "repros": repros,
        "finished": finished,
    }
    tmp = run_dir / "summary.json.tmp"
    write_text(tmp, json.dumps(data, ensure_ascii=False, indent=1))
    tmp.replace(run_dir / SUMMARY)

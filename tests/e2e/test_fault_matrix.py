"""The fault matrix (issue 15): ``toolcall-harness eval``, the real CLI in a subprocess, against each way a worker or
a server fails, and one invariant for every run:

1. **bounded**: it ends within :data:`SLOWER` times the run without a fault (run alone first: what this machine
   takes for a healthy run) plus what its fault may cost under the configured limits (``--timeout``,
   ``--break-after``, ``--request-deadline``: :attr:`Fault.cost_s`), and its peak memory stays within
   :data:`MEMORY_MIB` of the run without a fault;
2. **nothing lost, nothing twice**: every case × mode of every parser that runs, the healthy own parser and the
   faulty worker alike, is recorded exactly once in ``results.jsonl``, every capture prompt once per parser;
3. **classified, with its reason**: the faulty party's records have only the outcomes the fault explains
   (:attr:`Fault.outcomes`) and each names it (:attr:`Fault.reason`, in the record as written); a worker that
   cannot start is ``unavailable`` in ``run.json`` with the reason; a parser the circuit breaker stopped is in
   ``run.json`` ``broken``; the healthy parser's results are untouched (no ``error``);
4. **the exit status says what happened**: 0, the run finished and recorded everything; 2, nothing could run
   (one ``error:`` line, no traceback).

Worker faults use ``tests/engines/workers/faulty_worker.py`` (a ``cmd:`` parser beside ``own``), server faults the
``openai`` backend against :mod:`hostile_http` (a real HTTP server in a thread here) or a port nobody listens on.
The runs go three at a time (most of a fault's cost is waiting). Measured on 2 cores shared with other work (load
average 8-12): 16 runs in 221-319 s of wall time and 109 s of CPU (user and system, every process), about 3.4 s of
each run's CPU in importing torch (the registry builds mlx-lm's reference parser even for ``--parsers own``).
Before the fixes of this matrix: the stderr flood's run peaked at 1,294 MiB (410 without a fault), and a dead
server's untried prompts (3 of 8) had no record.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from hostile_http import serving

from harness.capture.backends._budget import BASE_BYTES
from harness.capture.run import MAX_FAILURES_IN_A_ROW, load_prompts
from harness.core.jsonl import read_objects
from harness.parse.calls import DEFAULT_BREAK_AFTER, UNAVAILABLE

ROOT = Path(__file__).resolve().parents[2]
FAULTY = f"cmd:{sys.executable} {ROOT / 'tests' / 'engines' / 'workers' / 'faulty_worker.py'}"
OWN = "toolcall-harness:gemma4"
WORKER = "toolcall-harness==0.1.0:gemma4"  # what the faulty worker's hello names

TIMEOUT_S = 2  # --timeout (a worker's restart gets as long: the faulty worker starts in 0.3 s alone)
DEADLINE_S = 1  # --request-deadline
MODES = ("oneshot", "char")
SUITES, PER_SUITE = ("no-tool", "nested-args"), 4  # 8 prompts: a dead server stops the capture after 5
MAX_TOKENS, BYTES_PER_TOKEN = 4, 100
RESTART_S = 3  # what one restart of the faulty worker may take on loaded cores (it starts in about 0.3 s)
FLOOD = 16 << 20  # bytes of stderr on one line per parse and finish: 320 MiB in all
SLOWER = 6  # a run three at a time on 2 cores took up to 4.6 times one alone (load average 12: shared cores)
MEMORY_MIB = 256  # peak memory over the run without a fault (before: the flood's run took 935 MiB more)
CASES = 10  # the observed slice of gemma-4-e2b
WORKER_RESULTS = CASES * len(MODES)
BREAKING_RESULTS = 2 * DEFAULT_BREAK_AFTER - 1  # both modes of the first cases, the one-shot of the last
ATTEMPTED = MAX_FAILURES_IN_A_ROW  # prompts a dead server is asked before the capture stops

COMMON = ("--model", "gemma-4-e2b", "--slices", "observed", "--modes", ",".join(MODES), "--no-shrink")
COMMON += ("--timeout", str(TIMEOUT_S))
CAPTURE = ("--parsers", "own", "--backend", "openai", "--suites", ",".join(SUITES))
CAPTURE += ("--capture-limit", str(PER_SUITE), "--max-tokens", str(MAX_TOKENS), "--concurrency", "1")
CAPTURE += ("--request-deadline", str(DEADLINE_S), "--max-bytes-per-token", str(BYTES_PER_TOKEN))
CAPTURE_ERROR = {("error", "capture_error")}


@dataclass(frozen=True)
class Fault:
    """One row of the matrix. ``flags``: the eval flags after :data:`COMMON` (``{server}``: the hostile server's
    URL, ``{refused}``: a URL nobody listens on). ``party``: whose records the fault shows in (``WORKER``,
    ``"capture"`` for the capture slice, None: nobody's). ``outcomes``: the ``(verdict, error_type)`` those records
    may have (None: the own parser's, record by record). ``reason``: what each of them, as written, names.
    ``unavailable``: a substring of the ``run.json`` reason of a worker that cannot start. ``broken``: the circuit
    breaker stops the worker. ``cost_s``: what the fault may add to the run's time under the configured limits."""

    id: str
    flags: tuple[str, ...]
    party: str | None = WORKER
    outcomes: frozenset | None = None
    reason: str | None = None
    unavailable: str | None = None
    broken: bool = False
    cost_s: float = 0.0
    exit: int = 0
    captures: bool = False


def worker(*flags: str) -> tuple[str, ...]:
    return ("--parsers", f"own,{FAULTY} {' '.join(flags)}".rstrip(), "--no-capture")


def server(path: str) -> tuple[str, ...]:
    return (*CAPTURE, "--base-url", "{server}/" + path)


#: a failing result costs the time limit (hang) or nothing (crash), then a restart
BREAKS_S = BREAKING_RESULTS * (TIMEOUT_S + RESTART_S)
#: each prompt a dead server is asked costs at most its deadline; one more for GET /v1/models (versions)
SERVER_S = (ATTEMPTED + 1) * DEADLINE_S

FAULTS = [
    Fault("no fault", worker()),
    Fault("worker crash", worker("--always", "CRASH"), outcomes=frozenset({("error", "crash"), ("error", UNAVAILABLE)}),
          reason="exit status 7", broken=True, cost_s=BREAKS_S),
    Fault("worker hang", worker("--always", "HANG"), outcomes=frozenset({("error", "timeout"), ("error", UNAVAILABLE)}),
          reason=f"no response within {TIMEOUT_S} s", broken=True, cost_s=BREAKS_S),
    Fault("worker garbage", worker("--always", "GARBAGE"), outcomes=frozenset({("error", "protocol")}),
          reason="not a JSON line: this is not json {", cost_s=WORKER_RESULTS * RESTART_S),
    Fault("worker wrong id", worker("--always", "WRONGID"), outcomes=frozenset({("error", "protocol")}),
          reason="expected the response to request ", cost_s=WORKER_RESULTS * RESTART_S),
    Fault("worker early exit", worker("--fail-start"), party=None,
          unavailable="failed to start: the worker closed its output; exit status 5; stderr: cannot load"),
    Fault("worker early exit, alone", ("--parsers", f"{FAULTY} --fail-start", "--no-capture"), party=None, exit=2,
          reason="error: no parser can run: "),
    Fault("worker stderr flood", worker("--stderr-flood", str(FLOOD)), cost_s=5),
    Fault("worker surrogate", worker("--surrogate"), reason="\\ud800",
          outcomes=frozenset({("fail", "wrong_content"), ("surfaced", None)})),
    Fault("server refused", (*CAPTURE, "--base-url", "{refused}"), party="capture", outcomes=CAPTURE_ERROR,
          reason="connection error (ConnectError: ", cost_s=SERVER_S, captures=True),
    Fault("server 500", server("500"), party="capture", outcomes=CAPTURE_ERROR,
          reason="HTTP 500 from POST /500/v1/completions: busy", cost_s=SERVER_S, captures=True),
    Fault("server 429", server("429"), party="capture", outcomes=CAPTURE_ERROR,
          reason="HTTP 429 from POST /429/v1/completions: busy", cost_s=SERVER_S, captures=True),
    Fault("server truncated SSE", server("truncated"), party="capture", outcomes=CAPTURE_ERROR,
          reason="truncated stream after 1 pieces: connection lost", cost_s=SERVER_S, captures=True),
    Fault("server pings forever", server("ping"), party="capture", outcomes=CAPTURE_ERROR,
          reason=f"deadline: the request ran past its {DEADLINE_S} s (--request-deadline)", cost_s=SERVER_S,
          captures=True),
    Fault("server endless stream", server("endless"), party="capture", outcomes=CAPTURE_ERROR,
          reason=f"response too large: more than {BASE_BYTES + MAX_TOKENS * BYTES_PER_TOKEN} bytes", cost_s=SERVER_S,
          captures=True),
    Fault("server huge error body", server("huge-500"), party="capture", outcomes=CAPTURE_ERROR,
          reason="(the body is over 65536 bytes; the rest was not read)", cost_s=SERVER_S, captures=True),
]  # fmt: skip

#: runs its command (the rest of the line) and writes the peak resident memory of its processes (KiB) to argv[1]
PEAK = (
    "import resource, subprocess, sys; rc = subprocess.call(sys.argv[2:]); "
    "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)); sys.exit(rc)"
)


@dataclass
class Run:
    """One eval of the matrix: its process, wall time, peak memory (MiB) and folders."""

    proc: subprocess.CompletedProcess
    seconds: float
    peak_mib: float
    out: Path


def free_port() -> int:
    with socket.socket() as sock:  # free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_eval(fault: Fault, work: Path, urls: dict[str, str]) -> Run:
    """``eval`` with ``fault``'s flags in its own folder (the capture files go under it: ``reports/`` is relative)."""
    work.mkdir(parents=True)
    flags = [flag.format(**urls) for flag in fault.flags]
    command = [sys.executable, "-m", "harness.cli", "eval", *COMMON, *flags, "--out", str(work / "run")]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", PEAK, str(work / "peak"), *command],
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        timeout=600,
    )
    seconds = time.perf_counter() - started
    return Run(proc, seconds, int((work / "peak").read_text()) / 1024, work / "run")


@pytest.fixture(scope="module")
def matrix(request, tmp_path_factory) -> dict[str, Run]:
    """The runs of the faults this session selected (all, unless ``-k`` picks some), the fault-free one first
    (the memory baseline), then three at a time."""
    selected = {
        item.callspec.params["fault"].id
        for item in request.session.items
        if item.originalname == "test_fault_matrix" and hasattr(item, "callspec")
    }
    faults = [FAULTS[0]] + [f for f in FAULTS[1:] if f.id in selected]
    root = tmp_path_factory.mktemp("matrix")
    with serving() as url:
        urls = {"server": url, "refused": f"http://127.0.0.1:{free_port()}"}
        started = time.perf_counter()
        runs = {faults[0].id: run_eval(faults[0], root / "0", urls)}
        with ThreadPoolExecutor(3) as pool:
            done = pool.map(lambda pair: run_eval(pair[1], root / str(pair[0]), urls), enumerate(faults[1:], 1))
            runs.update(zip((f.id for f in faults[1:]), done, strict=True))
    print(f"\nfault matrix: {len(runs)} runs in {time.perf_counter() - started:.1f} s")
    for fault_id, run in runs.items():
        print(f"  {fault_id:26} exit {run.proc.returncode}  {run.seconds:5.1f} s  {run.peak_mib:6.0f} MiB")
    return runs


def records(run_dir: Path) -> list[tuple[str, dict]]:
    """``(line as written, record)`` of ``results.jsonl``, read strictly as UTF-8 (an unescaped surrogate would
    not decode)."""
    path = run_dir / "results.jsonl"
    if not path.exists():
        return []
    lines = path.read_bytes().decode("utf-8").splitlines()
    return list(zip(lines, [data for _, data in read_objects(path, ValueError)], strict=True))


def expected_keys(run_dir: Path, captures: bool) -> Counter:
    """Each ``(slice, case id, mode)`` a parser of the run must have once: the run's corpus × the modes, plus the
    capture prompts (mode ``capture``: every one of them failed)."""
    corpus = [data for _, data in read_objects(run_dir / "corpus.jsonl", ValueError)]
    assert len(corpus) == CASES
    keys = Counter(("observed", case["id"], mode) for case in corpus for mode in MODES)
    if captures:
        keys.update((f"capture:{p.suite}", p.id, "capture") for p in load_prompts(SUITES, PER_SUITE))
    return keys


@pytest.mark.parametrize("fault", FAULTS, ids=[f.id for f in FAULTS])
def test_fault_matrix(matrix, fault):
    run = matrix[fault.id]
    proc = run.proc
    # 4. the exit status says what happened; never a traceback
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == fault.exit, proc.stderr[-3000:]
    # 1. bounded, in time and memory
    healthy = matrix[FAULTS[0].id]
    assert run.seconds < SLOWER * healthy.seconds + fault.cost_s, f"{run.seconds:.1f} s; alone {healthy.seconds:.1f} s"
    assert run.peak_mib < healthy.peak_mib + MEMORY_MIB, f"{run.peak_mib:.0f} MiB"
    if fault.exit:
        (line,) = proc.stderr.splitlines()
        assert line.startswith(fault.reason), line
        assert records(run.out) == []
        return
    # 2. every case of every parser that ran, exactly once
    got = records(run.out)
    by_parser: dict[str, list[tuple[str, dict]]] = {}
    for line, record in got:
        by_parser.setdefault(record["parser"], []).append((line, record))
    assert set(by_parser) == ({OWN, WORKER} if fault.party == WORKER else {OWN})
    keys = expected_keys(run.out, fault.captures)
    for name, rows in by_parser.items():
        assert Counter((r["slice"], r["case_id"], r["mode"]) for _, r in rows) == keys, name
    # 3. classified with its reason; the healthy parser untouched
    own = [r for _, r in by_parser[OWN]]
    assert all(r["verdict"] in ("pass", "surfaced") for r in own if not r["slice"].startswith("capture:"))
    party = by_parser.get(WORKER, []) if fault.party == WORKER else []
    if fault.party == "capture":
        party = [(line, r) for line, r in by_parser[OWN] if r["slice"].startswith("capture:")]
    if fault.outcomes is None and party:  # judged like the own parser: the fault is not in its answers
        like_own = {(r["case_id"], r["mode"]): (r["verdict"], r["error_type"]) for r in own}
        assert {(r["case_id"], r["mode"]): (r["verdict"], r["error_type"]) for _, r in party} == like_own
    if fault.outcomes is not None:
        assert party and {(r["verdict"], r["error_type"]) for _, r in party} <= fault.outcomes
    if fault.reason is not None:
        assert all(fault.reason in line for line, _ in party), next(r for line, r in party if fault.reason not in line)
    log = json.loads((run.out / "run.json").read_text(encoding="utf-8"))
    if fault.unavailable is not None:
        ((name, reason),) = log["unavailable"].items()
        assert name.startswith(FAULTY) and fault.unavailable in reason, reason
    else:
        assert log["unavailable"] == {}
    assert set(log["broken"]) == ({WORKER} if fault.broken else set())
    if fault.broken:
        unavailable = [r for _, r in party if r["error_type"] == UNAVAILABLE]
        assert len(party) - len(unavailable) == BREAKING_RESULTS and log["broken"][WORKER]["unavailable"] == len(
            unavailable
        )
    if fault.captures:
        capture = log["capture"]
        assert capture["prompts"] == capture["errors"] == len(SUITES) * PER_SUITE and capture["generated"] == ATTEMPTED
        not_attempted = [r for _, r in party if r["detail"].startswith("not attempted: capture stopped after")]
        assert len(not_attempted) == len(SUITES) * PER_SUITE - ATTEMPTED

"""Run the fuzz targets of ``fuzz/targets.py`` under atheris (libFuzzer, coverage-guided): ``make fuzz SECONDS=N``.

Usage: ``python fuzz/run.py [--seconds N] [--targets a,b] [--list] [--seeds-only]``; ``--replay TARGET FILE...``
runs inputs through a target's check without atheris (a crash file, say).

Each target runs in its own process (``python fuzz/run.py --child TARGET -- <libFuzzer flags>``) for ``N / count``
seconds (at least 1), one after another on one core, with:

- its corpus in ``<cache>/fuzz/corpus/<target>/`` (kept between runs, so a run goes on from where the last one
  stopped; ``<cache>`` is :func:`harness.core.paths.cache_dir`), first filled from ``<cache>/fuzz/seeds/<target>/``:
  seeds made once (:func:`write_seeds`) from real texts (each format's curated, drift, generated and observed cases
  rendered by its offline template; the shipped suites; capture and case files written by the harness' writers; the
  worker server's replies);
- for the readers, a JSON-aware mutation beside libFuzzer's byte mutations (``fuzz/mutate.py``);
- a dictionary of the format's markers or the seeds' JSON keys (``-dict``), ``-timeout`` :data:`targets.TIMEOUT_S`
  per input and a 2 GB memory limit;
- crashes, timeouts and out-of-memory inputs written to ``reports/fuzz/crashes/<target>/`` (libFuzzer's
  ``-artifact_prefix``), each with the check's message in ``<file>.txt``; after one the target starts again with
  the time left (up to 4 times), so one shallow crash does not end its run.

It prints, and writes to ``reports/fuzz/summary.md``, a table per target: executions, coverage (``cov``: edges,
``ft``: features) at the end, corpus size, and the crash file if any. Exit status 1 when a target crashed.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CRASHES = ROOT / "reports" / "fuzz" / "crashes"
SUMMARY = ROOT / "reports" / "fuzz" / "summary.md"
STATS = re.compile(r"^#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+)(?: corp: (\d+)/)?", re.M)


def child(target: str, flags: list[str]) -> None:
    """Fuzz ``target`` in this process (the harness imported under atheris' instrumentation)."""
    import atheris

    sys.path.insert(0, str(HERE))
    with atheris.instrument_imports(include=["harness", "parsers", "targets"]):
        import targets

        check = targets.make_check(target)  # the registry imports the parser modules here: instrumented too
    if target in targets.READERS:  # JSON data: mutate its structure too (fuzz/mutate.py)
        import mutate

        def mutator(data: bytes, max_size: int, seed: int) -> bytes:
            return mutate.mutate_json(data, max_size, seed, atheris.Mutate)

        atheris.Setup([sys.argv[0], *flags], check, custom_mutator=mutator)
    else:
        atheris.Setup([sys.argv[0], *flags], check)
    atheris.Fuzz()


def fuzz_dir(kind: str, target: str) -> Path:
    from harness.core.paths import cache_dir

    return cache_dir() / "fuzz" / kind / target


def write_seeds(target: str) -> Path:
    """``<cache>/fuzz/seeds/<target>/`` filled once (module docstring); returns it."""
    import seeds

    folder = fuzz_dir("seeds", target)
    if folder.is_dir() and any(folder.iterdir()):
        return folder
    partial = folder.with_name(folder.name + ".partial")
    partial.mkdir(parents=True, exist_ok=True)
    for i, data in enumerate(seeds.seeds(target)):
        (partial / f"seed-{i:04d}").write_bytes(data)
    partial.rename(folder)
    return folder


def write_dictionary(target: str) -> Path | None:
    import seeds

    words = seeds.dictionary(target)
    if not words:
        return None
    path = fuzz_dir("dict", target).with_suffix(".dict")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f'"{w}"\n' for w in words), encoding="ascii")
    return path


def run_target(target: str, seconds: int, restarts: int = 4) -> dict:
    """Fuzz ``target`` for ``seconds`` in a child process, started again after a crash (up to ``restarts`` times,
    the corpus kept) while time is left; its figures and crashes (module docstring)."""
    seed_dir = write_seeds(target)
    corpus = fuzz_dir("corpus", target)
    corpus.mkdir(parents=True, exist_ok=True)
    crashes = CRASHES / target
    crashes.mkdir(parents=True, exist_ok=True)
    dictionary = write_dictionary(target)
    import targets

    start, found, executions, last, logs = time.monotonic(), [], 0, ("0", "0", "0", ""), []
    for _ in range(restarts + 1):
        left = seconds - (time.monotonic() - start)
        if left < 2:
            break
        before = set(crashes.iterdir())
        flags = [
            f"-max_total_time={int(left)}",
            f"-timeout={targets.TIMEOUT_S}",
            "-rss_limit_mb=2048",
            f"-artifact_prefix={crashes}/",
            "-print_final_stats=1",
            *([f"-dict={dictionary}"] if dictionary else []),
        ]
        command = [sys.executable, str(HERE / "run.py"), "--child", target, "--", *flags, str(corpus), str(seed_dir)]
        proc = subprocess.run(command, capture_output=True, text=True, errors="replace", cwd=ROOT)
        log = proc.stdout + proc.stderr
        logs.append(log)
        stats = STATS.findall(log)
        runs = re.search(r"stat::number_of_executed_units: (\d+)", log)
        executions += int(runs.group(1)) if runs else int(stats[-1][0]) if stats else 0
        last = stats[-1] if stats else last
        new = sorted(p for p in set(crashes.iterdir()) - before if p.name.startswith(("crash-", "timeout-", "oom-")))
        for path in new:
            (path.parent / (path.name + ".txt")).write_text(_tail(log), encoding="utf-8")
        found += new
        if proc.returncode == 0 or not new:
            break
    (crashes / "last.log").write_text("\n".join(logs), encoding="utf-8")
    return {
        "target": target,
        "seconds": round(time.monotonic() - start),
        "executions": executions,
        "cov": int(last[1]),
        "ft": int(last[2]),
        "corpus": len(list(corpus.iterdir())),
        "crash": ", ".join(str(p.relative_to(ROOT)) for p in found),
    }


def _tail(log: str, lines: int = 40) -> str:
    """The part of a libFuzzer log that explains a crash: from atheris' exception banner on, or the last lines."""
    at = log.find("=== Uncaught Python exception")
    return log[at:] if at >= 0 else "\n".join(log.splitlines()[-lines:])


def table(rows: list[dict]) -> str:
    head = "| target | seconds | executions | cov | ft | corpus | crash |\n|---|---:|---:|---:|---:|---:|---|\n"
    return head + "".join(
        f"| {r['target']} | {r['seconds']} | {r['executions']:,} | {r['cov']:,} | {r['ft']:,} | {r['corpus']:,} | "
        f"{r['crash'] or '-'} |\n"
        for r in rows
    )


def replay(target: str, files: list[str]) -> int:
    """Run ``files`` through ``target``'s check; print each outcome; 1 when one fails."""
    import targets

    check, failed = targets.make_check(target), 0
    for name in files:
        try:
            check(Path(name).read_bytes())
            print(f"{name}: ok")
        except Exception as exc:  # noqa: BLE001 - reported, that is the point
            failed = 1
            print(f"{name}: {type(exc).__name__}: {exc}")
    return failed


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[4:] if sys.argv[3:4] == ["--"] else sys.argv[3:])
        return 0
    sys.path.insert(0, str(HERE))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=int, default=390, help="total for all targets, split evenly (default 390)")
    ap.add_argument("--targets", default="", help="comma-separated target names (default: all; see --list)")
    ap.add_argument("--list", action="store_true", help="print the target names")
    ap.add_argument("--seeds-only", action="store_true", help="write the seed folders, fuzz nothing")
    ap.add_argument("--replay", nargs="+", metavar=("TARGET", "FILE"), help="run files through a target's check")
    args = ap.parse_args()
    import targets

    if args.replay:
        return replay(args.replay[0], args.replay[1:])
    names = targets.target_names()
    if args.list:
        print("\n".join(names))
        return 0
    chosen = [n.strip() for n in args.targets.split(",") if n.strip()] or names
    unknown = [n for n in chosen if n not in names]
    if unknown:
        print(f"error: unknown fuzz target(s) {', '.join(unknown)}; known: {', '.join(names)}", file=sys.stderr)
        return 2
    if args.seeds_only:
        for name in chosen:
            print(f"{name}: {len(list(write_seeds(name).iterdir()))} seeds")
        return 0
    try:
        import atheris  # noqa: F401 - only checked here; the children import it
    except ImportError:
        print("error: atheris is not installed: pip install -e '.[fuzz]' (make fuzz does it)", file=sys.stderr)
        return 2
    each = max(1, args.seconds // len(chosen))
    rows = []
    for name in chosen:
        row = run_target(name, each)
        rows.append(row)
        print(
            f"{name}: {row['executions']:,} executions in {row['seconds']} s, cov {row['cov']:,} ft {row['ft']:,}, "
            f"corpus {row['corpus']:,}" + (f", CRASH {row['crash']}" if row["crash"] else ""),
            flush=True,
        )
    SUMMARY.parent.mkdir(parents=True, exist_ok=True)
    SUMMARY.write_text(f"# Fuzz run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n\n{table(rows)}")
    print(table(rows), end="")
    return 1 if any(r["crash"] for r in rows) else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())

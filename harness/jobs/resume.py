"""Continuing a killed ``eval`` or ``sweep`` (``--resume RUN_DIR``): its final files equal an uninterrupted run's.

Both write their records as produced, a line each, flushed; after ``kill -9`` a file ends with whole lines and at
most one torn last line, which is dropped (:func:`harness.core.jsonl.drop_torn_tail`). The settings of the command
that resumes must be the run's, recorded when it started (eval: ``run.json``'s ``settings``; sweep:
``summary.json``): a difference is one error line naming the flags (:func:`check_settings`).

- eval: the records are a prefix of the run's sequence of units, one (case, parser) with one record per mode
  (:func:`harness.score.runner.record_modes`); :func:`kept_records` keeps the whole units, and the run goes on
  with the next one, its circuit breaker replayed from the records kept.
- sweep: ``batches.jsonl`` holds one line per batch merged (its counts, first failures and the breaker's state);
  :func:`kept_batches` reads them, and ``failures.jsonl`` keeps the lines of those batches only.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from pathlib import Path

from harness.core.cases import Case
from harness.core.errors import HarnessError
from harness.core.jsonl import drop_torn_tail, read_objects, text_objects
from harness.core.protocol import Parser
from harness.core.results import Score
from harness.core.textio import write_text
from harness.parse.calls import Breaker
from harness.report.runlog import RunLogError, read_records

#: eval's settings (``EvalConfig`` fields) and the flag each comes from, as an error names them
EVAL_FLAGS = {
    "model": "--model",
    "model_dir": "--model-dir",
    "gguf": "--gguf",
    "parsers": "--parsers",
    "modes": "--modes",
    "slices": "--slices",
    "seed": "--seed",
    "n_generated": "--cases",
    "timeout_s": "--timeout",
    "shrink": "--no-shrink",
    "break_after": "--break-after",
    "policy": "--policy",
    "capture": "the capture flags",
    "no_capture": "--no-capture",
}


def as_json(value) -> object:
    """``value`` as the JSON it is recorded as (dataclasses as objects, tuples as lists, paths as strings)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    return json.loads(json.dumps(value, default=str))


def eval_settings(config) -> dict:
    """The settings of an :class:`harness.jobs.evaluate.EvalConfig` that its records depend on, as JSON."""
    values = {name: getattr(config, name) for name in EVAL_FLAGS}
    values["policy"] = config.policy.to_json()
    return {name: as_json(value) for name, value in values.items()}


def check_settings(where: Path, recorded: dict, now: dict, flags: dict[str, str]) -> None:
    """Raise :class:`HarnessError` (one line, naming ``where`` and each differing flag with the run's value and the
    one given now) unless ``now`` equals ``recorded`` on every key of ``flags``."""
    differ = [
        f"{flags[name]} {_shown(recorded.get(name))} (now {_shown(now.get(name))})"
        for name in flags
        if recorded.get(name) != now.get(name)
    ]
    if differ:
        raise HarnessError(
            f"{where}: the run was started with other settings: {'; '.join(differ)}; resume with the run's flags"
        )


def check_same(where: Path, what: str, recorded: object, now: object) -> None:
    """Raise :class:`HarnessError` naming ``where`` when the run's ``what`` differs from what this command built."""
    if recorded != now:
        raise HarnessError(
            f"{where}: the run's {what} ({_shown(recorded)}) differs from this command's ({_shown(now)}): "
            "it cannot be resumed here"
        )


def check_run_corpus(path: Path, cases: list[Case]) -> None:
    """Raise :class:`HarnessError` when the run's ``corpus.jsonl`` (present) is not the corpus built now, line for
    line (a changed template, catalog or generator would mix two corpora in one run)."""
    lines = path.read_text(encoding="utf-8").split("\n")[:-1]
    built = [case.to_line() for case in cases]
    if lines != built:
        first = next(
            (i for i, (a, b) in enumerate(zip(lines, built, strict=False)) if a != b), min(len(lines), len(built))
        )
        raise HarnessError(
            f"{path}:{first + 1}: the run's corpus ({len(lines)} cases) differs from the one built now "
            f"({len(built)} cases): it cannot be resumed here"
        )


def dropped_tail(path: Path) -> str | None:
    """A note on the torn last line dropped from ``path`` (:func:`drop_torn_tail`), or None when there was none."""
    torn = drop_torn_tail(path)
    return None if torn is None else f"{path}: dropped a torn last line ({len(torn)} characters, written when killed)"


def kept_records(
    path: Path, units: Iterable[tuple[Case, Parser, list[str]]], breaker: Breaker
) -> tuple[list[dict], int]:
    """Keep the records of ``path`` (``results.jsonl``, torn tail already dropped) that make whole units, in the
    run's order ``units`` (``(case, parser, modes with a record)``); rewrite the file with them. Returns the records
    and how many units they complete; ``breaker`` has seen them. The records after the last whole unit (a unit cut
    short, the captures' records) are dropped: they are produced again. Raises :class:`RunLogError` for a record
    that is not the run's next one."""
    records = read_records(path) if path.exists() else []
    lines = _lines(path.read_text(encoding="utf-8")) if records else []
    kept = done = 0
    for case, parser, modes in units:
        chunk = records[kept : kept + len(modes)]
        _check_next(path, kept, [(r["case_id"], r["parser"], r["mode"]) for r in chunk], case.id, parser.name, modes)
        if len(chunk) < len(modes):
            break
        for r in chunk:
            breaker.observe(r["parser"], (r["slice"], r["case_id"]), Score(r["verdict"], r["error_type"], r["detail"]))
        kept += len(modes)
        done += 1
    else:
        extra = next((i for i in range(kept, len(records)) if not records[i]["slice"].startswith("capture:")), None)
        if extra is not None:
            raise RunLogError(
                f"{path}:{extra + 1}: a record after the run's last one: the file does not belong to this run"
            )
    _rewrite(path, lines[:kept])
    return records[:kept], done


def _check_next(path: Path, before: int, got: list[tuple], case_id: str, parser: str, modes: list[str]) -> None:
    for i, (found, mode) in enumerate(zip(got, modes, strict=False)):
        if found != (case_id, parser, mode):
            raise RunLogError(
                f"{path}:{before + i + 1}: record {found} is not this run's next one {(case_id, parser, mode)}: "
                "the file does not belong to this run"
            )


def kept_batches(journal: Path, failures: Path) -> list[dict]:
    """The lines of a sweep's ``batches.jsonl`` (torn tail already dropped), and ``failures.jsonl`` cut to the
    failures of those batches (the cases before the last one's ``end``). Raises :class:`RunLogError` naming the line
    of either file that is not what the sweep writes."""
    batches = []
    for where, data in read_objects(journal, RunLogError, "batch", allow_nan=True) if journal.exists() else ():
        if not isinstance(data.get("end"), int) or not isinstance(data.get("counts"), dict):
            raise RunLogError(f"{where}: not a sweep batch (fields 'end' and 'counts')")
        batches.append(data)
    end = batches[-1]["end"] if batches else 0
    text = failures.read_text(encoding="utf-8") if failures.exists() else ""
    kept = []
    for (where, data), line in zip(
        text_objects(text, str(failures), RunLogError, "failure", allow_nan=True), _lines(text), strict=True
    ):
        if not isinstance(data.get("index"), int):
            raise RunLogError(f"{where}: not a sweep failure (field 'index')")
        if data["index"] < end:
            kept.append(line)  # as written
    _rewrite(failures, kept)
    return batches


def _rewrite(path: Path, lines: list[str]) -> None:
    """Replace ``path`` with ``lines`` through a temporary file and a rename (a kill leaves the old or the new)."""
    tmp = path.with_name(path.name + ".tmp")
    write_text(tmp, "".join(line + "\n" for line in lines))
    tmp.replace(path)


def _lines(text: str) -> list[str]:
    """The non-blank lines of JSON Lines ``text``, as :func:`harness.core.jsonl.text_objects` reads them."""
    return [line for line in text.split("\n") if line.strip()]


def _shown(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else text[:79] + "…"

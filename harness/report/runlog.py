"""The run log: what one ``eval`` run produced, typed, and the run folder that holds it.

A run folder holds ``run.json`` (:class:`Provenance`, the run's slices and modes, the own parsers' known
limitations, hypothesis-shrunk examples, fault classes with minimal repros, the capture summary and the captured
texts), ``results.jsonl`` (the records: one JSON object per case × parser × mode, written while the run goes, so
an interrupted run keeps every line) and ``corpus.jsonl`` (the cases, :func:`harness.core.cases.load_cases`).
:meth:`RunLog.load` reads the three back; every report renders a :class:`RunLog` and nothing else.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path

from harness.core.cases import Case, load_cases
from harness.core.errors import HarnessError
from harness.core.jsonl import read_objects
from harness.core.results import Record
from harness.core.textio import write_text
from harness.score.policy import Policy

LOG_VERSION = 1
CAPTURE_PREFIX = "capture:"  # slice prefix of records scored on captured output
VERDICTS = ("pass", "soft_pass", "fail", "surfaced", "error")
RUN_FILE, RESULTS_FILE, CORPUS_FILE = "run.json", "results.jsonl", "corpus.jsonl"


class RunLogError(HarnessError):
    """A run folder that cannot be read back: the message names the file (and line or field)."""


@dataclass(frozen=True)
class Provenance:
    """Where a run's figures come from; these are ``run.json``'s keys, in its order.

    ``template``: the template's provenance (``source, file, location, sha256, fallback[, fallback_note]``);
    ``tokenizer``: the ``tokens`` mode's vocabulary or None; ``versions``: ``{library: version}``; ``seeds``:
    ``{name: seed}``; ``corpus``: cases per slice; ``skipped``: ``[(scenario id, reason)]`` the template cannot
    write; ``unsupported``: ``[(peer case id, reason)]`` a peer suite holds that the harness cannot judge;
    ``policy``: the judging policy (:class:`harness.score.policy.Policy` as JSON); ``peers``: ``{suite: {version,
    sha256}}`` of the peer suites the corpus read; ``grammar``: the grammar oracle's counts
    (:func:`harness.analysis.grammar.check_corpus`; ``None`` for a format without a grammar); ``workers``: ``{parser:
    {command, engine_env, recipe_key, restarts, hello}}`` for out-of-process parsers; ``unavailable``: ``{parser:
    reason}``; ``parsers``: ``{name: {library, version}}`` in run order; ``settings``: the run's flags
    (:func:`harness.jobs.resume.eval_settings`), checked when it resumes; ``resumed``: when it was resumed (ISO 8601;
    ``duration_s`` is then the last session's); ``broken``: ``{parser: {reason, case, unavailable}}`` for the parsers
    the circuit breaker stopped (:class:`harness.parse.calls.Breaker`), with the case it broke on and how many
    results were not asked for.
    """

    model: str
    format: str
    run_id: str
    started: str  # ISO 8601, seconds, with the UTC offset
    duration_s: float
    template: dict
    versions: dict
    seeds: dict
    corpus: dict
    tokenizer: dict | None = None
    commit: str = "unknown commit"
    skipped: list = field(default_factory=list)
    workers: dict = field(default_factory=dict)
    unavailable: dict = field(default_factory=dict)
    parsers: dict = field(default_factory=dict)
    unsupported: list = field(default_factory=list)
    policy: dict = field(default_factory=dict)
    peers: dict = field(default_factory=dict)
    grammar: dict | None = None
    settings: dict = field(default_factory=dict)
    resumed: list = field(default_factory=list)
    broken: dict = field(default_factory=dict)

    @property
    def judging_policy(self) -> Policy:
        """``policy`` as a :class:`~harness.score.policy.Policy` (a run written before policies: the default)."""
        return Policy.from_json(self.policy or None)


@dataclass(frozen=True)
class Shrunk:
    """Hypothesis' shrunk minimal generated example for one (parser, error type); ``got`` None = raised."""

    parser: str
    error_type: str
    text: str
    seed: int
    expected: dict
    got: dict | None


@dataclass(frozen=True)
class FaultClass:
    """Failing records of one (parser, error type, group): ``group`` is the ``mutator:NAME`` tag or the slice.

    ``cases``: distinct failing cases; ``records``: case × mode results; ``tags``: the 3 commonest other tags
    with their case counts; ``example``: the record with the shortest text; ``repro``: the minimal input
    (:func:`harness.analysis.minimize.minimize_case`'s dict: ``text, prefix, expected, got, detail, method,
    calls, original_len``), None when not minimized."""

    parser: str
    error_type: str
    group: str
    cases: int
    records: int
    modes: tuple[str, ...]
    tags: tuple[tuple[str, int], ...]
    example: dict
    repro: dict | None = None

    @classmethod
    def from_json(cls, data: dict) -> FaultClass:
        """From a cluster dict (:func:`harness.analysis.faults.cluster_failures`, or ``run.json``)."""
        tags = tuple((tag, count) for tag, count in data["tags"])
        return cls(**{**data, "modes": tuple(data["modes"]), "tags": tags, "repro": data.get("repro")})

    def to_json(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass
class RunLog:
    """One run: provenance, the records and cases, and what the analysis found.

    ``records``: ``results.jsonl`` lines in the order written (corpus slices, then ``capture:SUITE`` slices);
    ``slices`` and ``modes``: what the run asked for, in its order; ``limitations``: the own parsers' known
    limitations (empty when no own parser ran); ``capture``: the capture summary (``{}`` when nothing was
    captured; keys as :func:`harness.jobs.eval_capture.capture_slice` writes them); ``capture_texts``: ``{prompt
    id: captured raw text or None}``; ``comparison``: what ``toolcall-harness compare`` found between the run's two
    parsers (:func:`harness.jobs.compare.run_compare` writes it; ``{}`` for an ``eval`` run)."""

    run_dir: Path
    provenance: Provenance
    slices: tuple[str, ...]
    modes: tuple[str, ...]
    records: list[dict] = field(default_factory=list)
    cases: list[Case] = field(default_factory=list)
    limitations: tuple[str, ...] = ()
    shrunk: tuple[Shrunk, ...] = ()
    fault_classes: tuple[FaultClass, ...] = ()
    capture: dict = field(default_factory=dict)
    capture_texts: dict = field(default_factory=dict)
    comparison: dict = field(default_factory=dict)

    @property
    def parsers(self) -> list[str]:
        """The parsers that ran, in run order."""
        return list(self.provenance.parsers)

    @property
    def corpus_records(self) -> list[dict]:
        """Records of the corpus slices (curated, generated, observed, drift)."""
        return [r for r in self.records if not r["slice"].startswith(CAPTURE_PREFIX)]

    @property
    def capture_records(self) -> list[dict]:
        """Records scored on captured output (slices ``capture:SUITE``)."""
        return [r for r in self.records if r["slice"].startswith(CAPTURE_PREFIX)]

    @property
    def texts(self) -> dict[str, str]:
        """``{case id: raw text}`` of the corpus."""
        return {c.id: c.text for c in self.cases}

    def to_json(self) -> dict:
        """``run.json``: the provenance keys (as before the run log existed), then the rest of the log."""
        p = self.provenance
        return {
            **{name: getattr(p, name) for name in _PROVENANCE_HEAD},
            **{name: getattr(p, name) for name in _PROVENANCE_LATER},
            "capture": self.capture,
            "limitations": list(self.limitations),
            "parsers": p.parsers,
            "slices": list(self.slices),
            "modes": list(self.modes),
            "shrunk": [vars(s) for s in self.shrunk],
            "fault_classes": [c.to_json() for c in self.fault_classes],
            "capture_texts": self.capture_texts,
            **({"comparison": self.comparison} if self.comparison else {}),
            "log_version": LOG_VERSION,
        }

    def save(self) -> Path:
        """Write ``run.json`` into :attr:`run_dir` (``results.jsonl`` and ``corpus.jsonl`` are written while the
        run goes), replacing the started run's (:func:`start_run`) in one rename; returns its path. Raises
        ``OSError`` when it cannot be written."""
        return _replace_json(self.run_dir / RUN_FILE, self.to_json())

    @classmethod
    def load(cls, run_dir: str | Path) -> RunLog:
        """Read a run folder back. Raises :class:`RunLogError` (or :class:`harness.core.cases.CaseFileError`)
        naming the file and line or field: a missing folder or file, a ``run.json`` that is not JSON or lacks
        a field, a ``results.jsonl`` line that is not a result."""
        run_dir = Path(run_dir)
        if not run_dir.is_dir():
            raise RunLogError(f"{run_dir}: no such run folder")
        path = run_dir / RUN_FILE
        if not path.is_file() and (run_dir / RESULTS_FILE).is_file():
            raise RunLogError(
                f"{run_dir}: no {RUN_FILE}: the run did not finish (interrupted?); its records so far are in "
                f"{RESULTS_FILE}"
            )
        if not path.is_file():
            raise RunLogError(f"{run_dir}: not a run folder (no {RUN_FILE})")
        data = _read_run_json(path)
        if data.get("partial"):
            raise RunLogError(
                f"{run_dir}: the run did not finish (interrupted?); its records so far are in {RESULTS_FILE}: "
                f"continue it with `toolcall-harness eval --resume {run_dir}` and the run's flags"
            )
        try:
            head = {name: data[name] for name in _PROVENANCE_HEAD} | {"parsers": data["parsers"]}
            head |= {name: data[name] for name in _PROVENANCE_LATER if name in data}  # absent in older runs
            rest = {name: data[name] for name in _LOG_KEYS}
        except KeyError as exc:
            raise RunLogError(
                f"{path}: field {exc.args[0]!r} missing (written before run logs existed? run eval again)"
            ) from None
        for name, kind in (("slices", list), ("modes", list), ("shrunk", list), ("fault_classes", list)):
            _check(isinstance(rest[name], kind), path, name, "a list")
        _check(isinstance(rest["capture"], dict), path, "capture", "an object")
        _check(isinstance(rest["capture_texts"], dict), path, "capture_texts", "an object")
        _check(isinstance(rest["limitations"], list), path, "limitations", "a list")
        comparison = data.get("comparison", {})  # only a compare run has one
        _check(isinstance(comparison, dict), path, "comparison", "an object")
        try:
            provenance = Provenance(**head)
            shrunk = tuple(Shrunk(**s) for s in rest["shrunk"])
        except TypeError as exc:
            raise RunLogError(f"{path}: {exc}") from None
        faults = []
        for i, item in enumerate(rest["fault_classes"]):
            try:
                faults.append(FaultClass.from_json(item))
            except (TypeError, KeyError, ValueError) as exc:
                raise RunLogError(f"{path}: field 'fault_classes[{i}]': {exc}") from None
        return cls(
            run_dir=run_dir,
            provenance=provenance,
            slices=tuple(rest["slices"]),
            modes=tuple(rest["modes"]),
            records=read_records(_existing(run_dir / RESULTS_FILE)),
            cases=load_cases(_existing(run_dir / CORPUS_FILE)),
            limitations=tuple(rest["limitations"]),
            shrunk=shrunk,
            fault_classes=tuple(faults),
            capture=rest["capture"],
            capture_texts=rest["capture_texts"],
            comparison=comparison,
        )


_PROVENANCE_HEAD = (
    "model",
    "format",
    "run_id",
    "started",
    "duration_s",
    "template",
    "tokenizer",
    "versions",
    "commit",
    "seeds",
    "corpus",
    "skipped",
    "workers",
    "unavailable",
)
#: provenance keys added after log version 1 (a run folder written before them reads their defaults)
_PROVENANCE_LATER = ("unsupported", "policy", "peers", "grammar", "settings", "resumed", "broken")
_LOG_KEYS = ("capture", "limitations", "slices", "modes", "shrunk", "fault_classes", "capture_texts")
_RECORD_FIELDS = tuple(f.name for f in fields(Record) if f.name != "outcome")


def start_run(run_dir: Path, head: dict, exclusive: bool) -> None:
    """Write the ``run.json`` of a run that has started: ``head`` (``run_id``, ``started``, ``settings``,
    ``parsers``...) with ``"partial": true``, which :meth:`RunLog.save` replaces when the run ends. ``exclusive``:
    fail when the folder already has one (two runs started on the same ``--out`` at once), raising
    :class:`RunLogError`. Raises ``OSError`` when it cannot be written."""
    path = run_dir / RUN_FILE
    if exclusive:
        try:
            path.open("x").close()
        except FileExistsError:
            raise RunLogError(f"{run_dir}: another run has started in this folder") from None
    _replace_json(path, {**head, "partial": True, "log_version": LOG_VERSION})


def started_run(run_dir: Path) -> dict:
    """The ``run.json`` of a started, unfinished run in ``run_dir`` (:func:`start_run`), for ``--resume``.
    Raises :class:`RunLogError` for a folder that is not a run's, or whose run finished."""
    path = run_dir / RUN_FILE
    if not path.is_file():
        raise RunLogError(f"{run_dir}: nothing to resume (no {RUN_FILE}: not a run folder of this version's eval)")
    data = _read_run_json(path)
    if not data.get("partial"):
        raise RunLogError(
            f"{run_dir}: the run finished; nothing to resume (`toolcall-harness report {run_dir}` writes its "
            "reports again)"
        )
    for name, kind in (("run_id", str), ("started", str), ("settings", dict), ("parsers", list)):
        _check(isinstance(data.get(name), kind), path, name, f"a {kind.__name__}")
    return data


def _replace_json(path: Path, data: dict) -> Path:
    """Write ``data`` as indented JSON to ``path`` through a temporary file and a rename (never half written)."""
    tmp = path.with_name(path.name + ".tmp")
    write_text(tmp, json.dumps(data, ensure_ascii=False, indent=1, default=str) + "\n")
    tmp.replace(path)
    return path


def read_records(path: Path) -> list[dict]:
    """The records of a ``results.jsonl``, checked: each line a JSON object with every :class:`Record` field and
    a known verdict. Raises :class:`RunLogError` naming ``file:line``."""
    records = []
    try:
        for where, data in read_objects(path, RunLogError, "result", allow_nan=True):
            missing = [name for name in _RECORD_FIELDS if name not in data]
            if missing:
                raise RunLogError(f"{where}: field {missing[0]!r} missing")
            if data["verdict"] not in VERDICTS:
                raise RunLogError(f"{where}: field 'verdict' is {data['verdict']!r}, not one of {', '.join(VERDICTS)}")
            records.append(data)
    except UnicodeDecodeError as exc:
        raise RunLogError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    return records


def _read_run_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RunLogError(f"{path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise RunLogError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise RunLogError(f"{path}:{exc.lineno}: not JSON ({exc.msg}, column {exc.colno})") from None
    if not isinstance(data, dict):
        raise RunLogError(f"{path}: must hold a JSON object")
    return data


def _existing(path: Path) -> Path:
    if not path.is_file():
        raise RunLogError(f"{path}: missing (not a complete run folder)")
    return path


def _check(ok: bool, path: Path, name: str, what: str) -> None:
    if not ok:
        raise RunLogError(f"{path}: field {name!r} must be {what}")

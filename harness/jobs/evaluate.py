"""The main job: real template → rendered corpus → every parser, one-shot and streaming → reports.

``run_eval(EvalConfig(...), progress)`` returns the run's :class:`~harness.report.runlog.RunLog`, saved in
``reports/<model>/<run-id>/``: ``corpus.jsonl`` (the cases, to re-check with ``toolcall-harness check``),
``results.jsonl`` (one line per case × parser × mode, written as produced) and ``run.json`` (provenance:
template, seeds, versions, parsers with library and version; fault classes, capture summary, ...), with the
report files rendered from the log (:func:`harness.report.files.write_reports`: ``report.md``, ``summary.csv``,
``report.html``). It prints nothing; the CLI renders the log (:func:`harness.report.terminal.show_run`).
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import platform
import shlex
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import cast

from harness.analysis.faults import cluster_failures
from harness.analysis.grammar import check_corpus
from harness.analysis.repros import CLUSTER_BUDGET, cluster_repros
from harness.assets.tokenizers import tokenizer_provenance
from harness.capture.run import CaptureSettings
from harness.core.cases import SLICES, Case, write_cases
from harness.core.errors import HarnessError, TemplateNotFoundError, UnrepresentableError
from harness.core.guards import check_interrupted
from harness.core.paths import REPORTS_DIR, claim_out_dir, new_run_dir
from harness.core.protocol import Parser
from harness.core.results import ResultsWriter
from harness.corpus.build import build_corpus
from harness.corpus.generated import minimal_failing
from harness.engines.client import runs_out_of_process
from harness.formats import get_format
from harness.jobs.eval_capture import capture_slice, plan_capture
from harness.jobs.resume import (
    EVAL_FLAGS,
    check_run_corpus,
    check_same,
    check_settings,
    dropped_tail,
    eval_settings,
    kept_records,
)
from harness.parse.calls import DEFAULT_BREAK_AFTER, UNAVAILABLE, Breaker, alarm_limit, guarded, judged
from harness.parse.limitations import known_limitations
from harness.parse.modes import DEFAULT_MODES, DEFAULT_TIMEOUT_S, ONESHOT, ROUNDTRIP, TOKENIZED_FORMATS, modes_for
from harness.parse.registry import create_parsers
from harness.report.files import write_reports
from harness.report.progress import BarAdvance, BarStart, BarStop, Note, ProgressCallback, silent
from harness.report.runlog import (
    CORPUS_FILE,
    RESULTS_FILE,
    RUN_FILE,
    FaultClass,
    Provenance,
    RunLog,
    Shrunk,
    start_run,
    started_run,
)
from harness.score.policy import DEFAULT_POLICY, Policy
from harness.score.roundtrip import roundtrip_check
from harness.score.runner import evaluate_case, record_modes
from harness.score.verdicts import score
from harness.template.catalog import get_model
from harness.template.render import render_scenario
from harness.template.sources import load_template

LIBRARIES = (
    "toolcall-harness",
    "transformers",
    "mlx-lm",
    "mlx",
    "jinja2",
    "hypothesis",
    "tokenizers",
    "huggingface_hub",
    "gguf",
)


@dataclass
class EvalConfig:
    """Settings of one evaluation run (CLI flags of ``toolcall-harness eval``)."""

    model: str = "gemma-4-e2b"
    parsers: list[str] | None = None  # None: every available parser for the model's format
    modes: tuple[str, ...] = DEFAULT_MODES
    slices: tuple[str, ...] = SLICES
    seed: int = 0
    n_generated: int = 300
    model_dir: str | None = None
    gguf: str | None = None
    out_dir: Path | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    shrink: bool = True
    install_missing: bool = True  # build engines named in ``parsers`` that are not built yet
    capture: CaptureSettings | None = None  # None: the catalog row's capture_backend, if any
    no_capture: bool = False  # skip capturing even when the catalog names a backend
    policy: Policy = DEFAULT_POLICY  # the judging policy (harness.score.policy)
    break_after: int = DEFAULT_BREAK_AFTER  # the circuit breaker (harness.parse.calls.Breaker); 0: never
    resume: bool = False  # continue the unfinished run in ``out_dir`` (harness.jobs.resume)
    force: bool = False  # write into a non-empty ``out_dir``, replacing its run's files
    require_all: bool = False  # a named parser that cannot run is an error before any work, not a warning


def library_versions() -> dict[str, str]:
    """Installed versions of the libraries a report depends on (``missing`` when not installed)."""
    versions = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "missing"
    return versions


def harness_commit() -> str:
    """``git describe`` of the harness checkout (``-dirty`` with uncommitted changes), or ``not a git checkout``."""
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=Path(__file__).resolve().parent.parent,
        )
    except (OSError, subprocess.SubprocessError):
        return "not a git checkout"
    return f"commit {out.stdout.strip()}" if out.returncode == 0 else "not a git checkout"


def run_eval(config: EvalConfig, progress: ProgressCallback = silent) -> RunLog:
    """Run the main job and return its log, saved in the run folder with the report files written.

    Prints nothing: notes and progress go to ``progress`` (:mod:`harness.report.progress` events). Raises
    ``HarnessError`` subclasses for bad input, a non-empty ``out_dir`` (unless ``force`` or ``resume``) and a
    resumed run whose settings, parsers or corpus differ; on ``KeyboardInterrupt`` (or a kill) the records produced
    so far stay in ``results.jsonl``, and ``resume`` continues from them."""
    started, started_at = time.perf_counter(), dt.datetime.now().astimezone()
    settings = eval_settings(config)
    head = _resumed_head(config, settings)
    if head is None and config.out_dir is not None:  # a folder holding another run's files: refused before any work
        claim_out_dir(config.out_dir, config.force or config.resume)
    entry = get_model(config.model)
    fmt = get_format(entry.format)
    plan = plan_capture(config, entry, fmt)  # bad suites, few-shot or capture files fail before any work
    # Unknown names fail before any work; engines not built yet are built now (or reported unavailable).
    parsers, unavailable = create_parsers(
        config.parsers, fmt.name, install_missing=config.install_missing, log=lambda line: progress(Note(line))
    )
    if not parsers:
        raise HarnessError("no parser can run: " + "; ".join(f"{k}: {v}" for k, v in unavailable.items()))
    if config.require_all and unavailable:
        _close(parsers)
        raise HarnessError("; ".join(f"parser {k} could not run: {v}" for k, v in unavailable.items()))
    try:
        template = load_template(config.model, model_dir=config.model_dir, gguf=config.gguf)
    except TemplateNotFoundError as exc:
        # A model with no offline template (FunctionGemma) still runs its observed cases; anything else fails.
        if entry.offline_template or config.model_dir or config.gguf or "observed" not in config.slices:
            raise
        template, config = None, replace(config, slices=("observed",))
        progress(Note(f"no template: {exc}", warning=True))
        progress(
            Note(
                "the curated, generated and drift slices are skipped (they are rendered through the template); "
                "only the observed cases run",
                warning=True,
            )
        )
    if template is not None:
        t = template.provenance
        fallback = f"fallback: {t.get('fallback_note', '')}" if t.get("fallback") else ""
        progress(Note(f"template: {t['source']} {t['file']} sha256 {t['sha256'][:12]}…", warning_tail=fallback))
    corpus = build_corpus(template, fmt, seed=config.seed, n_generated=config.n_generated, slices=config.slices)
    check_interrupted()
    for note in corpus.notes:
        progress(Note(note, warning=True))
    if not corpus.cases and plan is None:
        _close(parsers)
        raise HarnessError(
            f"nothing to run: the {', '.join(config.slices)} slice(s) of {config.model} hold no case"
            + (f" ({len(corpus.skipped)} scenarios the template cannot write)" if corpus.skipped else "")
        )
    for name, reason in unavailable.items():
        progress(Note(f"parser {name} unavailable: {reason}", warning=True))

    if corpus.cases and not any(modes_for(parser, config.modes, fmt) for parser in parsers):
        _close(parsers)
        raise HarnessError(
            f"no mode of {', '.join(config.modes)} applies to {', '.join(p.name for p in parsers)} "
            f"on format {fmt.name} ('prefix' is for the project's own incremental parsers, 'tokens' "
            f"for formats with a real vocabulary: {', '.join(sorted(TOKENIZED_FORMATS))})"
        )
    names = [p.name for p in parsers]
    if head is not None:
        run_dir, run_id = cast(Path, config.out_dir), str(head["run_id"])
        check_same(run_dir / RUN_FILE, "parsers", head["parsers"], names)
        if (run_dir / CORPUS_FILE).exists():
            check_run_corpus(run_dir / CORPUS_FILE, corpus.cases)
    else:
        run_dir, run_id = _claim_run_dir(config, started_at)
        start_run(
            run_dir,
            {
                "run_id": run_id,
                "started": started_at.isoformat(timespec="seconds"),
                "settings": settings,
                "parsers": names,
            },
            exclusive=not config.force,
        )
        (run_dir / RESULTS_FILE).unlink(missing_ok=True)  # a run folder holds one run: its log starts empty
    if not (run_dir / CORPUS_FILE).exists() or head is None:
        write_cases(run_dir / (CORPUS_FILE + ".tmp"), corpus.cases)
        (run_dir / (CORPUS_FILE + ".tmp")).replace(run_dir / CORPUS_FILE)
    skipped = (
        f" ({len(corpus.skipped)} scenarios the template cannot write skipped: see report.md)" if corpus.skipped else ""
    )
    progress(
        Note(
            "corpus: "
            + ", ".join(f"{s} {corpus.count(s)}" for s in config.slices)
            + f" cases{skipped}; parsers: {', '.join(p.name for p in parsers)}; writing {run_dir}"
        )
    )

    breaker = Breaker(config.break_after)
    try:
        records = _run_all(
            corpus.cases, parsers, fmt, config, run_dir / RESULTS_FILE, template, progress, breaker, head is not None
        )
        healthy = [p for p in parsers if p.name not in breaker.reasons]  # a broken parser is not asked again
        shrunk = _shrink_generated(records, healthy, template, fmt, config) if config.shrink else {}
        clusters = cluster_repros(
            cluster_failures(records),
            corpus.cases,
            records,
            healthy,
            fmt,
            template,
            shrunk,
            config.seed,
            config.timeout_s,
            CLUSTER_BUDGET if config.shrink else 0,
        )
        capture_records, capture_info, capture_texts = capture_slice(
            config, entry, fmt, template, parsers, run_dir, plan, progress, breaker
        )
    except KeyboardInterrupt:
        progress(
            Note(
                f"interrupted: the records produced so far are in {run_dir / RESULTS_FILE}; continue with "
                f"--resume {run_dir} and the same flags"
            )
        )
        _close(parsers)
        raise

    provenance = Provenance(
        model=config.model,
        format=fmt.name,
        run_id=run_id,
        started=str(head["started"]) if head is not None else started_at.isoformat(timespec="seconds"),
        duration_s=time.perf_counter() - started,
        template=template.provenance if template is not None else _NO_TEMPLATE,
        tokenizer=_tokenizer_provenance(fmt.name) if "tokens" in config.modes else None,
        versions=library_versions(),
        commit=harness_commit(),
        seeds={"run_seed": config.seed, "hypothesis_seed": config.seed, "random_split_seed": config.seed},
        corpus={s: corpus.count(s) for s in config.slices},
        skipped=corpus.skipped,
        unsupported=list(corpus.unsupported),
        policy=config.policy.to_json(),
        peers=_peer_provenance(corpus.cases),
        grammar=check_corpus(corpus.cases, fmt),
        workers=_worker_provenance(parsers),
        unavailable=unavailable,
        parsers={p.name: {"library": p.library, "version": str(p.version)} for p in parsers},
        settings=settings,
        resumed=[*head.get("resumed", []), started_at.isoformat(timespec="seconds")] if head is not None else [],
        broken=broken_parsers(breaker, records + capture_records),
    )
    log = RunLog(
        run_dir=run_dir,
        provenance=provenance,
        slices=tuple(config.slices),
        modes=tuple(config.modes),
        records=records + capture_records,
        cases=corpus.cases,
        limitations=own_limitations(parsers, fmt),
        shrunk=tuple(Shrunk(parser, error_type, **example) for (parser, error_type), example in shrunk.items()),
        fault_classes=tuple(FaultClass.from_json(c) for c in clusters),
        capture=capture_info,
        capture_texts=capture_texts,
    )
    _close(parsers)
    write_reports(log)
    log.save()  # last: a run.json that is not ``partial`` means every file of the run is written
    return log


def broken_parsers(breaker: Breaker, records: list[dict]) -> dict:
    """``{parser: {reason, case, unavailable}}`` for the parsers ``breaker`` stopped: the reason, the case of the
    result that broke it (``slice/case id``) and how many of its results are ``error``/``unavailable``."""
    return {
        name: {
            "reason": reason,
            "case": "/".join(cast(tuple, breaker.broke_on[name])),
            "unavailable": sum(r["parser"] == name and r["error_type"] == UNAVAILABLE for r in records),
        }
        for name, reason in breaker.reasons.items()
    }


def _resumed_head(config: EvalConfig, settings: dict) -> dict | None:
    """The started run's ``run.json`` when ``config.resume`` asks to continue one, its settings checked against
    ``settings``; None for a new run (a folder to resume that is empty or missing starts one there)."""
    if not config.resume:
        return None
    run_dir = cast(Path, config.out_dir)
    if not run_dir.is_dir() or not any(run_dir.iterdir()):
        return None
    head = started_run(run_dir)
    check_settings(run_dir / RUN_FILE, head["settings"], settings, EVAL_FLAGS)
    return head


def _claim_run_dir(config: EvalConfig, started_at: dt.datetime) -> tuple[Path, str]:
    """The folder and id of a new run: ``--out`` (refused when it holds anything, unless ``force``), else a fresh
    ``reports/<model>/<timestamp>-s<seed>[-N]`` whose name is the run id."""
    stamp = started_at.strftime("%Y%m%d-%H%M%S") + f"-s{config.seed}"
    if config.out_dir is not None:
        return claim_out_dir(config.out_dir, config.force or config.resume), stamp
    run_dir = new_run_dir(REPORTS_DIR / config.model, stamp)
    return run_dir, run_dir.name


def own_limitations(parsers: list[Parser], fmt) -> tuple[str, ...]:
    """Known limitations of the run's own parsers (library ``toolcall-harness``): a parser's ``limitations``
    tuple, else the one its format's own parser states (:func:`harness.parse.limitations.known_limitations`);
    empty when no own parser ran."""
    items: list[str] = []
    for parser in parsers:
        if parser.library == "toolcall-harness":
            stated = getattr(parser, "limitations", None)
            items += list(stated) if stated is not None else known_limitations(fmt.name)
    return tuple(dict.fromkeys(items))


_NO_TEMPLATE = {
    "source": "none",
    "file": "-",
    "location": "-",
    "sha256": "-",
    "fallback": True,
    "fallback_note": "no template could be loaded and the catalog has none offline: only the observed cases ran",
}


def _close(parsers: list[Parser]) -> None:
    """Stop the worker processes of out-of-process parsers."""
    for parser in parsers:
        if runs_out_of_process(parser):
            parser.close()


def _run_all(
    cases: list[Case],
    parsers: list[Parser],
    fmt,
    config: EvalConfig,
    results_path: Path,
    template,
    progress,
    breaker: Breaker,
    resume: bool,
) -> list[dict]:
    """Every case × parser × mode, one unit (case, parser) after another; each record is written to
    ``results_path`` as produced. ``resume``: the whole units already in the file are kept and not run again
    (:func:`harness.jobs.resume.kept_records`), and ``breaker`` has seen them."""
    plan = [(parser, modes_for(parser, config.modes, fmt)) for parser in parsers]
    check = roundtrip_check(template, fmt) if ROUNDTRIP in config.modes and template is not None else None
    units = [(case, parser, record_modes(case, modes, check)) for case in cases for parser, modes in plan]
    records: list[dict] = []
    done = 0
    if resume:
        note = dropped_tail(results_path)
        if note:
            progress(Note(note, warning=True))
        records, done = kept_records(results_path, units, breaker)
        progress(Note(f"resuming: {done} of {len(units)} (case, parser) units kept ({len(records)} records)"))
        for name in breaker.reasons:
            _close([p for p in parsers if p.name == name])
    progress(BarStart("parsing", sum(len(modes) for _, _, modes in units[done:]), rate=True))
    try:
        with ResultsWriter(results_path) as writer:
            for case, parser, modes in units[done:]:
                check_interrupted()
                for record in evaluate_case(
                    case, parser, fmt, modes, config.seed, config.timeout_s, check, config.policy, breaker
                ):
                    writer.write(record)
                    records.append(record.to_json())
                    progress(BarAdvance("parsing"))
    finally:
        progress(BarStop("parsing"))
    for name, reason in breaker.reasons.items():
        progress(Note(f"parser {name} {reason}: its remaining results are error/unavailable", warning=True))
    return records


def _shrink_generated(records, parsers, template, fmt, config) -> dict:
    """For each (parser, error type) failing one-shot on generated cases, hypothesis' shrunk minimal example.

    Returns ``{(parser name, error type): {"text", "seed", "expected", "got"}}``.
    """
    targets = dict.fromkeys(
        (r["parser"], r["error_type"])
        for r in records
        if r["slice"] == "generated" and r["mode"] == ONESHOT and r["verdict"] in ("fail", "error")
    )
    by_name = {p.name: p for p in parsers}
    shrunk = {}
    for parser_name, error_type in targets:
        parser = by_name.get(parser_name)
        if parser is None:  # broken: not asked again
            continue

        def fails_alike(s, parser: Parser = parser, error_type: str | None = error_type) -> bool:
            return _oneshot_outcome(s, parser, template, fmt, config)[0] == error_type

        found = minimal_failing(fails_alike, seed=config.seed, forbid=fmt.unrepresentable)
        if found is None:
            continue
        _, case, got = _oneshot_outcome(found, parser, template, fmt, config)
        shrunk[(parser_name, error_type)] = {
            "text": case.text,
            "seed": config.seed,
            "expected": case.expected.to_json(),
            "got": got.to_json() if got else None,
        }
    return shrunk


def _oneshot_outcome(scenario, parser, template, fmt, config):
    """Render ``scenario`` and parse it one-shot: ``(error type or None, case, parser output)``.

    A scenario the format cannot express gives ``(None, None, None)``.
    """
    try:
        case = render_scenario(template, scenario, fmt, slice="generated")
    except UnrepresentableError:
        return None, None, None
    got, error = guarded(
        lambda: parser.parse(case.text, case.tools, case.prefix), alarm_limit(parser, config.timeout_s)
    )
    return judged(got, error, lambda m: score(case, m, fmt, policy=config.policy)).error_type, case, got


def _peer_provenance(cases: list[Case]) -> dict:
    """``{suite: {version, sha256}}`` of the peer suites the cases come from (their ``extra["peer"]``)."""
    out: dict[str, dict] = {}
    for case in cases:
        peer = case.extra.get("peer")
        if isinstance(peer, dict) and peer.get("suite") not in out:
            out[str(peer.get("suite"))] = {"version": peer.get("version"), "sha256": peer.get("sha256")}
    return out


def _worker_provenance(parsers: list[Parser]) -> dict:
    """``{parser name: {command, engine_env, recipe_key, restarts, hello[, source]}}`` for the out-of-process parsers;
    ``source`` for an engine built from a source tree or wheel: path, commit, dirty, how it is installed."""
    out = {}
    for parser in parsers:
        if not runs_out_of_process(parser):
            continue
        spec = parser.spec
        engine_env = spec.env.get("TOOLCALL_HARNESS_ENGINE_ENV", "")
        out[parser.name] = {
            "command": shlex.join(spec.argv),
            "engine_env": engine_env,
            "recipe_key": engine_env.rsplit("-", 1)[-1] if engine_env else "",
            "restarts": parser.restarts,
            "hello": parser.hello,
            **({"source": spec.source} if spec.source else {}),
        }
    return out


def _tokenizer_provenance(fmt_name: str) -> dict | None:
    vocabulary = get_format(fmt_name).vocabulary
    if vocabulary is None:
        return None
    return tokenizer_provenance(vocabulary)

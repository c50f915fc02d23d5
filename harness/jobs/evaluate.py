"""The main job: real template → rendered corpus → every parser, one-shot and streaming → reports.

``run_eval(EvalConfig(...))`` writes ``reports/<model>/<run-id>/`` with ``corpus.jsonl`` (the cases, to
re-check with ``toolcall-harness check``), ``results.jsonl`` (one line per case × parser × mode, written as
produced), ``summary.csv``, ``report.md``, ``report.html`` (plots, :mod:`harness.report.html`) and
``run.json`` (the provenance: template, seeds, versions, parsers with library and version), and prints the
pass-rate table.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import json
import platform
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeRemainingColumn
from rich.text import Text

from harness.analysis.minimize import CLUSTER_BUDGET, cluster_repros
from harness.capture.run import CaptureSettings
from harness.core.cases import SLICES, Case, write_cases
from harness.core.errors import HarnessError, TemplateNotFoundError
from harness.core.guards import check_interrupted
from harness.core.paths import REPORTS_DIR
from harness.core.protocol import Parser
from harness.core.results import ResultsWriter
from harness.corpus.build import build_corpus
from harness.formats import get_format
from harness.jobs.eval_capture import capture_slice, plan_capture
from harness.parse.calls import alarm_limit, guarded
from harness.parse.limitations import known_limitations
from harness.parse.modes import DEFAULT_MODES, DEFAULT_TIMEOUT_S, ONESHOT, ROUNDTRIP, TOKENIZED_FORMATS, modes_for
from harness.report import tables as report
from harness.report.html import write_report_html
from harness.score.roundtrip import applies, roundtrip_check
from harness.score.runner import evaluate_case
from harness.score.verdicts import score
from harness.template.catalog import get_model
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
    console: Console = field(default_factory=Console)
    install_missing: bool = True  # build engines named in ``parsers`` that are not built yet
    capture: CaptureSettings | None = None  # None: the catalog row's capture_backend, if any
    no_capture: bool = False  # skip capturing even when the catalog names a backend


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
    import subprocess

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


def run_eval(config: EvalConfig) -> Path:
    """Run the main job; returns the run directory. Raises ``HarnessError`` subclasses for bad input."""
    from harness.parse.registry import create_parsers

    console = config.console
    started, started_at = time.perf_counter(), dt.datetime.now().astimezone()
    entry = get_model(config.model)
    fmt = get_format(entry.format)
    plan = plan_capture(config, entry, fmt)  # bad suites, few-shot or capture files fail before any work
    # Unknown names fail before any work; engines not built yet are built now (or reported unavailable).
    parsers, unavailable = create_parsers(
        config.parsers,
        fmt.name,
        install_missing=config.install_missing,
        log=lambda line: console.print(line, markup=False, highlight=False),
    )
    if not parsers:
        raise HarnessError("no parser can run: " + "; ".join(f"{k}: {v}" for k, v in unavailable.items()))
    try:
        template = load_template(config.model, model_dir=config.model_dir, gguf=config.gguf)
    except TemplateNotFoundError as exc:
        # A model with no offline template (FunctionGemma) still runs its observed cases; anything else fails.
        if entry.offline_template or config.model_dir or config.gguf or "observed" not in config.slices:
            raise
        template, config = None, replace(config, slices=("observed",))
        console.print(f"[yellow]no template: {escape(str(exc))}[/yellow]")
        console.print(
            "[yellow]the curated, generated and drift slices are skipped (they are rendered through the "
            "template); only the observed cases run[/yellow]"
        )
    if template is not None:
        console.print(
            f"template: {template.provenance['source']} {template.provenance['file']} "
            f"sha256 {template.provenance['sha256'][:12]}…"
            + (
                f"  [yellow]fallback: {template.provenance.get('fallback_note', '')}[/yellow]"
                if template.provenance.get("fallback")
                else ""
            )
        )
    corpus = build_corpus(template, fmt, seed=config.seed, n_generated=config.n_generated, slices=config.slices)
    check_interrupted()
    for name, reason in unavailable.items():
        console.print(f"[yellow]parser {escape(name)} unavailable: {escape(reason)}[/yellow]")

    if corpus.cases and not any(modes_for(parser, config.modes, fmt) for parser in parsers):
        _close(parsers)
        raise HarnessError(
            f"no mode of {', '.join(config.modes)} applies to {', '.join(p.name for p in parsers)} "
            f"on format {fmt.name} ('prefix' is for the project's own incremental parsers, 'tokens' "
            f"for formats with a real vocabulary: {', '.join(sorted(TOKENIZED_FORMATS))})"
        )
    run_id = started_at.strftime("%Y%m%d-%H%M%S") + f"-s{config.seed}"
    run_dir = config.out_dir or REPORTS_DIR / config.model / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    write_cases(run_dir / "corpus.jsonl", corpus.cases)
    skipped = (
        f" ({len(corpus.skipped)} scenarios the template cannot write skipped: see report.md)" if corpus.skipped else ""
    )
    console.print(
        "corpus: "
        + ", ".join(f"{s} {corpus.count(s)}" for s in config.slices)
        + f" cases{skipped}; parsers: {', '.join(p.name for p in parsers)}; writing {run_dir}",
        markup=False,
        highlight=False,
    )

    try:
        records = _run_all(corpus.cases, parsers, fmt, config, run_dir / "results.jsonl", template)
        shrunk = _shrink_generated(records, parsers, template, fmt, config) if config.shrink else {}
        clusters = cluster_repros(
            report.cluster_failures(records),
            corpus.cases,
            records,
            parsers,
            fmt,
            template,
            shrunk,
            config.seed,
            config.timeout_s,
            CLUSTER_BUDGET if config.shrink else 0,
        )
        capture_records, capture_info, capture_texts = capture_slice(
            config, entry, fmt, template, parsers, run_dir, plan
        )
    except KeyboardInterrupt:
        console.print(f"interrupted: the records produced so far are in {run_dir / 'results.jsonl'}")
        _close(parsers)
        raise

    info = {
        "model": config.model,
        "format": fmt.name,
        "run_id": run_id,
        "started": started_at.isoformat(timespec="seconds"),
        "duration_s": time.perf_counter() - started,
        "template": template.provenance if template is not None else _NO_TEMPLATE,
        "tokenizer": _tokenizer_provenance(fmt.name) if "tokens" in config.modes else None,
        "versions": library_versions(),
        "commit": harness_commit(),
        "seeds": {"run_seed": config.seed, "hypothesis_seed": config.seed, "random_split_seed": config.seed},
        "corpus": {s: corpus.count(s) for s in config.slices},
        "skipped": corpus.skipped,
        "workers": _worker_provenance(parsers),
        "unavailable": unavailable,
        "capture": capture_info,
        "limitations": known_limitations(fmt.name) if any(p.library == "toolcall-harness" for p in parsers) else [],
        "parsers": {p.name: {"library": p.library, "version": str(p.version)} for p in parsers},
    }
    (run_dir / "run.json").write_text(
        json.dumps(info, ensure_ascii=False, indent=1, default=str) + "\n", encoding="utf-8"
    )
    _close(parsers)
    _write_reports(run_dir, info, records, corpus.cases, shrunk, [p.name for p in parsers], config)
    report.print_clusters(console, clusters)
    report.append_clusters_md(run_dir / "report.md", clusters)
    if capture_info.get("skipped"):
        with open(run_dir / "report.md", "a", encoding="utf-8") as fh:
            fh.write(
                f"\n## captured output\n\nCapture with {capture_info['backend']} skipped: {capture_info['skipped']}\n"
            )
    if capture_records or capture_info.get("stats"):
        report.print_capture(config.console, capture_info, capture_records, capture_texts)
        report.append_capture_md(run_dir / "report.md", capture_info, capture_records, capture_texts)
        report.write_summary_csv(report.summarize(records + capture_records), run_dir / "summary.csv")
    write_report_html(
        run_dir / "report.html", info, records + capture_records, corpus.cases, [p.name for p in parsers], capture_texts
    )
    console.print(
        f"wrote {run_dir / 'report.html'}: plots and searchable failing cases (opens offline in a browser)",
        markup=False,
        highlight=False,
    )
    return run_dir


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
        if getattr(parser, "out_of_process", False):
            parser.close()


class RateColumn(ProgressColumn):
    """Results per second (case × parser × mode), blank until rich has measured a rate."""

    def render(self, task) -> Text:
        return Text(f"{task.speed:,.0f}/s" if task.speed else "", style="progress.data.speed")


def _run_all(
    cases: list[Case], parsers: list[Parser], fmt, config: EvalConfig, results_path: Path, template
) -> list[dict]:
    records: list[dict] = []
    plan = [(parser, modes_for(parser, config.modes, fmt)) for parser in parsers]
    check = roundtrip_check(template, fmt) if ROUNDTRIP in config.modes and template is not None else None
    total = sum(len(m) - (ROUNDTRIP in m and (check is None or not applies(c))) for c in cases for _, m in plan)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), RateColumn(), TimeRemainingColumn())
    with (
        ResultsWriter(results_path) as writer,
        Progress(*columns, console=config.console, transient=True, disable=not config.console.is_terminal) as progress,
    ):
        task = progress.add_task("parsing", total=total)
        for case in cases:
            check_interrupted()
            for parser, modes in plan:
                for record in evaluate_case(case, parser, fmt, modes, config.seed, config.timeout_s, check):
                    writer.write(record)
                    records.append(record.to_json())
                    progress.advance(task)
    return records


def _shrink_generated(records, parsers, template, fmt, config) -> dict:
    """For each (parser, error type) failing one-shot on generated cases, hypothesis' shrunk minimal example.

    Returns ``{(parser name, error type): {"text", "seed", "expected", "got"}}``.
    """
    from harness.corpus.generated import minimal_failing

    targets = dict.fromkeys(
        (r["parser"], r["error_type"])
        for r in records
        if r["slice"] == "generated" and r["mode"] == ONESHOT and r["verdict"] in ("fail", "error")
    )
    by_name = {p.name: p for p in parsers}
    shrunk = {}
    for parser_name, error_type in targets:
        parser = by_name[parser_name]
        found = minimal_failing(
            lambda s: _oneshot_outcome(s, parser, template, fmt, config)[0] == error_type,
            seed=config.seed,
            forbid=fmt.unrepresentable,
        )
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
    from harness.core.errors import UnrepresentableError
    from harness.template.render import render_scenario

    try:
        case = render_scenario(template, scenario, fmt, slice="generated")
    except UnrepresentableError:
        return None, None, None
    got, error = guarded(
        lambda: parser.parse(case.text, case.tools, case.prefix), alarm_limit(parser, config.timeout_s)
    )
    return (error or score(case, got, fmt)).error_type, case, got


def _worker_provenance(parsers: list[Parser]) -> dict:
    """``{parser name: {command, engine_env, recipe_key, restarts, hello}}`` for the out-of-process parsers."""
    import shlex

    out = {}
    for parser in parsers:
        if not getattr(parser, "out_of_process", False):
            continue
        spec = parser.spec
        engine_env = spec.env.get("TOOLCALL_HARNESS_ENGINE_ENV", "")
        out[parser.name] = {
            "command": shlex.join(spec.argv),
            "engine_env": engine_env,
            "recipe_key": engine_env.rsplit("-", 1)[-1] if engine_env else "",
            "restarts": parser.restarts,
            "hello": parser.hello,
        }
    return out


def _tokenizer_provenance(fmt_name: str) -> dict | None:
    vocabulary = get_format(fmt_name).vocabulary
    if vocabulary is None:
        return None
    from harness.assets.tokenizers import tokenizer_provenance

    return tokenizer_provenance(vocabulary)


def _write_reports(
    run_dir: Path,
    info: dict,
    records: list[dict],
    cases: list[Case],
    shrunk: dict,
    parser_names: list[str],
    config: EvalConfig,
) -> None:
    console = config.console
    summary = report.summarize(records)
    slices = list(config.slices)
    modes = list(config.modes)
    for table in report.pass_tables(summary, parser_names, slices, modes, title=f"{info['model']}: passed/total"):
        console.print(table)
    console.print(report.LEGEND, markup=False, highlight=False)
    drift_tables = report.outcome_tables(records, parser_names)
    for table in drift_tables:
        console.print(table)
    if drift_tables:
        console.print(report.OUTCOME_LEGEND, markup=False, highlight=False)
    if info.get("limitations"):
        console.print(
            f"known limitations of the project's {info['format']} parser: {len(info['limitations'])} "
            f"(listed in report.md, from parsers/{info['format']}.py)",
            markup=False,
            highlight=False,
        )
    comparisons = report.flip_tables(records, parser_names)
    report.print_flips(console, comparisons, modes)
    failures = report.top_failures(records, {c.id: c.text for c in cases})
    report.print_failures(console, failures, shrunk)
    report.write_summary_csv(summary, run_dir / "summary.csv")
    report.write_report_md(
        run_dir / "report.md",
        info,
        summary,
        failures,
        shrunk,
        parser_names,
        slices,
        modes,
        report.failing_cases(records),
        comparisons,
    )
    report.append_outcomes_md(run_dir / "report.md", records, parser_names)
    console.print(f"wrote {run_dir}/: report.md, summary.csv, results.jsonl, corpus.jsonl")

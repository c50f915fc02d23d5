"""The capture stage of ``eval``: plan it before any work (suites, few-shot turns, capture files checked up
front), then capture with the configured backend — or take captures read from files — and score every parser on
the answers, writing results as they are produced. The building blocks live in :mod:`harness.capture.run`; this
module only sequences them for a run and explains a capture that cannot start.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.capture.backends import BackendError, known_backends
from harness.capture.records import Capture
from harness.capture.run import (
    CaptureSettings,
    capture_key,
    capture_stats,
    capture_with,
    latest_captures,
    load_examples,
    load_prompts,
    open_backend,
)
from harness.capture.weights import WeightsNotFound
from harness.core.errors import CatalogError, HarnessError
from harness.core.paths import REPORTS_DIR
from harness.core.protocol import Parser
from harness.core.results import ResultsWriter
from harness.parse.calls import Breaker
from harness.report.progress import BarAdvance, BarStart, BarStop, Note, ProgressCallback, silent
from harness.report.runlog import RESULTS_FILE
from harness.score.captures import score_captures
from harness.template.catalog import catalog_path


def capture_settings(config, entry) -> CaptureSettings | None:
    """The run's capture settings (``config``: an :class:`harness.jobs.evaluate.EvalConfig`): its own, else the
    catalog row's ``capture_backend`` and ``capture_examples``; None when there is nothing to capture."""
    if config.no_capture:
        return None
    if config.capture is not None:
        return config.capture
    if entry.capture_backend and entry.capture_backend not in known_backends():
        raise CatalogError(
            f"{catalog_path()}: [models.{entry.name}]: field 'capture_backend' is "
            f"{entry.capture_backend!r}, not a backend ({', '.join(known_backends())})"
        )
    return (
        CaptureSettings(backend=entry.capture_backend, examples=entry.capture_examples or None)
        if entry.capture_backend
        else None
    )


@dataclass
class CapturePlan:
    """What the capture stage will do, checked before any other work: settings, prompts, few-shot turns and,
    when re-scoring, the captures read from the given files."""

    settings: CaptureSettings
    prompts: list
    examples: list | None
    captures: list | None = None
    torn: list[str] = field(default_factory=list)  # torn last lines of the capture files, skipped


def plan_capture(config, entry, fmt) -> CapturePlan | None:
    """Read and check suites, few-shot file and capture files up front, so bad input fails before the corpus
    runs. Raises :class:`HarnessError` naming the file."""
    settings = capture_settings(config, entry)
    if settings is None:
        return None
    prompts = load_prompts(settings.suites, settings.limit)
    examples = load_examples(settings.examples) if settings.examples else None
    plan = CapturePlan(settings, prompts, examples)
    if settings.files:
        known = {p.id for p in prompts}
        plan.captures = latest_captures(settings.files, plan.torn)
        for capture in plan.captures:
            where = f"{', '.join(map(str, settings.files))}: capture of prompt {capture.prompt_id!r}"
            if capture.format != fmt.name:
                raise HarnessError(f"{where} is format {capture.format!r}, but {config.model} is {fmt.name!r}")
            if capture.prompt_id not in known:
                raise HarnessError(
                    f"{where} ({capture.suite}): no such prompt in the suites given "
                    f"({', '.join(settings.suites) or 'all shipped'}; --capture-limit "
                    f"{settings.limit})"
                )
    return plan


def not_attempted(prompts: list, captures: list[Capture], stopped: str, fmt: str, backend: str, model: dict):
    """``captures`` in prompt order with a stand-in for each prompt a stopped capture did not attempt: a capture
    whose error is ``not attempted: <stopped>``, so every prompt is scored (``error``/``capture_error``) and
    counted. The stand-ins are not written to the capture file: the next run tries those prompts again."""
    by_id = {c.prompt_id: c for c in captures}
    return [
        by_id.get(p.id) or Capture(p.id, p.suite, fmt, backend, model, error=f"not attempted: {stopped}")
        for p in prompts
    ]


def capture_slice(
    config,
    entry,
    fmt,
    template,
    parsers: list[Parser],
    run_dir: Path,
    plan: CapturePlan | None,
    progress: ProgressCallback = silent,
    breaker: Breaker | None = None,
):
    """Capture the suites with the configured backend (or take the captures read from files) and score every
    parser on them (``breaker``: the run's circuit breaker); results go to ``results.jsonl`` as produced, notes and
    the capture's progress to ``progress``. Returns ``(records, info, {prompt id: raw text})``; a backend that cannot
    start (no weights, library missing, bad grammar) is explained in ``info["skipped"]`` and the run goes on."""
    if plan is None:
        return [], {}, {}
    settings, prompts = plan.settings, plan.prompts
    info: dict = {
        "backend": settings.backend,
        "suites": sorted({p.suite for p in prompts}),
        "prompts": len(prompts),
        "sampling": settings.sampling.to_json(),
        "forced": settings.force,
        "options": settings.recorded_options(),
    }
    if plan.captures is not None:
        captures = plan.captures
        info["files"] = [str(f) for f in settings.files]
        for note in plan.torn:
            progress(Note(note, warning=True))
        if not captures:
            progress(Note(f"no captures in {', '.join(info['files'])}", warning=True))
    elif template is None:
        progress(Note("capture skipped: there is no template to render the prompts with", warning=True))
        return [], {**info, "skipped": "no template to render the prompts with"}, {}
    else:
        try:
            backend = open_backend(settings, entry, gguf=config.gguf, model_dir=config.model_dir)
        except (WeightsNotFound, BackendError) as exc:
            progress(Note(f"capture skipped: {exc}", warning=True))
            progress(Note("the rendered and observed slices ran without it", warning=True))
            return [], {**info, "skipped": str(exc)}, {}
        out = settings.out_dir or REPORTS_DIR / config.model / "captures"
        path = out / capture_key(backend.name, backend.weights.sha256)
        progress(
            Note(
                f"capture: {backend.name} {backend.weights.path} ({backend.weights.source}), "
                f"{len(prompts)} prompts → {path}"
            )
        )
        versions = backend.versions()
        progress(BarStart("capturing", len(prompts)))
        try:
            run = capture_with(
                settings,
                prompts,
                backend,
                template,
                fmt,
                path,
                examples=plan.examples,
                on_capture=lambda capture: progress(BarAdvance("capturing")),
            )
        finally:
            progress(BarStop("capturing"))
        backend.close()
        captures = run.captures
        info.update(
            file=str(path),
            model=backend.weights.to_json(),
            versions=versions,
            reused=run.reused,
            generated=run.generated,
            stopped=run.stopped,
        )
        if run.stopped:
            progress(Note(run.stopped, warning=True))
            captures = not_attempted(prompts, captures, run.stopped, fmt.name, backend.name, info["model"])
        for note in run.torn:
            progress(Note(note, warning=True))
    info["stats"] = capture_stats(captures, fmt)
    failed = [c for c in captures if c.error is not None]
    info["errors"] = len(failed)
    if failed:
        progress(
            Note(f"{len(failed)} capture error(s); first ({failed[0].prompt_id}): {failed[0].error}", warning=True)
        )
    with ResultsWriter(run_dir / RESULTS_FILE) as writer:
        records = score_captures(
            captures,
            {p.id: p for p in prompts},
            parsers,
            fmt,
            writer,
            timeout_s=config.timeout_s,
            server_name=settings.server_name,
            breaker=breaker,
        )
    return records, info, {c.prompt_id: c.text for c in captures}

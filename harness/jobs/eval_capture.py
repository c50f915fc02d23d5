"""The capture stage of ``eval``: plan it before any work (suites, few-shot turns, capture files checked up
front), then capture with the configured backend — or take captures read from files — and score every parser on
the answers, writing results as they are produced. The building blocks live in :mod:`harness.capture.run`; this
module only sequences them for a run and explains a capture that cannot start.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from harness.capture.backends import known_backends
from harness.capture.run import (
    CaptureSettings,
    capture_key,
    capture_stats,
    latest_captures,
    load_examples,
    load_prompts,
    open_backend,
    run_capture,
)
from harness.core.errors import CatalogError, HarnessError
from harness.core.protocol import Parser
from harness.core.results import ResultsWriter
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
        plan.captures = latest_captures(settings.files)
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


def capture_slice(config, entry, fmt, template, parsers: list[Parser], run_dir: Path, plan: CapturePlan | None):
    """Capture the suites with the configured backend (or take the captures read from files) and score every
    parser on them; results go to ``results.jsonl`` as produced. Returns ``(records, info, {prompt id: raw
    text})``; a backend that
    cannot start (no weights, library missing, bad grammar) is explained in ``info["skipped"]`` and the run
    goes on."""
    from harness.capture.backends import BackendError
    from harness.capture.weights import WeightsNotFound

    if plan is None:
        return [], {}, {}
    settings, prompts, console = plan.settings, plan.prompts, config.console
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
        if not captures:
            console.print(f"[yellow]no captures in {escape(', '.join(info['files']))}[/yellow]")
    elif template is None:
        console.print("[yellow]capture skipped: there is no template to render the prompts with[/yellow]")
        return [], {**info, "skipped": "no template to render the prompts with"}, {}
    else:
        try:
            backend = open_backend(settings, entry, gguf=config.gguf, model_dir=config.model_dir)
        except (WeightsNotFound, BackendError) as exc:
            console.print(f"[yellow]capture skipped: {escape(str(exc))}[/yellow]")
            console.print("[yellow]the rendered and observed slices ran without it[/yellow]")
            return [], {**info, "skipped": str(exc)}, {}
        from harness.core.paths import REPORTS_DIR

        out = settings.out_dir or REPORTS_DIR / config.model / "captures"
        path = out / capture_key(backend.name, backend.weights.sha256)
        console.print(
            f"capture: {backend.name} {backend.weights.path} ({backend.weights.source}), "
            f"{len(prompts)} prompts → {path}",
            markup=False,
            highlight=False,
        )
        versions = backend.versions()
        with _progress(console, "capturing", len(prompts)) as advance:
            run = run_capture(
                prompts,
                backend,
                template,
                fmt,
                path,
                sampling=settings.sampling,
                force=settings.force,
                options=settings.recorded_options(),
                examples=plan.examples,
                on_capture=lambda capture: advance(),
            )
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
            console.print(f"[yellow]{escape(run.stopped)}[/yellow]")
    info["stats"] = capture_stats(captures, fmt)
    failed = [c for c in captures if c.error is not None]
    info["errors"] = len(failed)
    if failed:
        console.print(
            f"[yellow]{len(failed)} capture error(s); first ({escape(failed[0].prompt_id)}): "
            f"{escape(failed[0].error)}[/yellow]"
        )
    with ResultsWriter(run_dir / "results.jsonl") as writer:
        records = score_captures(
            captures,
            {p.id: p for p in prompts},
            parsers,
            fmt,
            writer,
            timeout_s=config.timeout_s,
            server_name=settings.server_name,
        )
    return records, info, {c.prompt_id: c.text for c in captures}


class _progress:
    """A transient progress bar on terminals (silent in CI logs); the context value advances it by one."""

    def __init__(self, console: Console, label: str, total: int) -> None:
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
        self.bar = Progress(*columns, console=console, transient=True, disable=not console.is_terminal)
        self.label, self.total = label, total

    def __enter__(self):
        self.bar.__enter__()
        task = self.bar.add_task(self.label, total=self.total)
        return lambda: self.bar.advance(task)

    def __exit__(self, *exc):
        return self.bar.__exit__(*exc)

"""``toolcall-harness eval --all-models``: the main job for every catalog model, one table per format family.

Each model runs as ``eval`` would (its own run directory under ``reports/all-models/<run-id>/<model>/``, its
per-model ``report.md``, ``report.html`` and ``results.jsonl``), quietly. Models of a family whose template is
byte-identical to one already run (same sha256) are skipped, so a family's counts never hold the same case
twice. The family table sums the runs: rows = parsers (with versions), columns = slice × {one-shot, round trip,
streaming (every chunking together), prefix}. ``reports/all-models/<run-id>/report.md`` holds the tables and,
per model, the template, the run directory and what was skipped or failed; ``index.html`` beside it is the matrix
page, families × parsers (:mod:`harness.report.matrix`). A model whose run fails (no template anywhere, a
template that does not render) is reported with its error and the other models go on.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

from harness.core.errors import HarnessError, TemplateNotFoundError
from harness.core.paths import REPORTS_DIR, claim_out_dir, new_run_dir
from harness.jobs.evaluate import run_eval
from harness.report.families import write_families_md
from harness.report.matrix import write_matrix_html
from harness.report.progress import Note, ProgressCallback, silent
from harness.template.catalog import list_models
from harness.template.sources import load_template


@dataclass
class AllModelsRun:
    """What ``--all-models`` produced: the folder holding every run, the run id, ``families`` (``{format:
    records of its models' runs}``, in catalog order) and ``notes`` (one Markdown bullet per model)."""

    root: Path
    run_id: str
    families: dict[str, list[dict]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    runs: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # format -> [(model, report.html)]
    versions: dict[str, str] = field(default_factory=dict)  # library -> version, as the runs recorded them
    not_run: dict[str, str] = field(default_factory=dict)  # format -> why its first model did not run


def run_all_models(config, out_root: Path | None = None, progress: ProgressCallback = silent) -> AllModelsRun:
    """Run ``config`` (an :class:`harness.jobs.evaluate.EvalConfig`; its ``model`` is ignored) for every catalog
    model and write the family report (``report.md`` in the returned folder). Prints nothing: one note per
    model goes to ``progress``; render the result with :func:`harness.report.families.family_tables`."""
    stamp = dt.datetime.now().astimezone().strftime("%Y%m%d-%H%M%S") + f"-s{config.seed}"
    if out_root is not None:
        root, run_id = claim_out_dir(out_root, config.force), stamp
    else:
        root = new_run_dir(REPORTS_DIR / "all-models", stamp)
        run_id = root.name
    result = AllModelsRun(root, run_id)
    seen_templates: dict[str, str] = {}
    for entry in list_models():
        run_dir = result.root / entry.name
        progress(Note(f"{entry.format:14s} {entry.name} ..."))
        try:
            sha = _template_sha(entry.name)
            if sha in seen_templates:
                result.notes.append(
                    f"- `{entry.name}`: same template as `{seen_templates[sha]}` (sha256 {sha[:12]}), not run again"
                )
                continue
            log = run_eval(dataclasses.replace(config, model=entry.name, out_dir=run_dir, no_capture=True))
        except HarnessError as exc:
            result.notes.append(f"- `{entry.name}`: not run: {exc}")
            result.not_run.setdefault(entry.format, f"{entry.name}: {exc}")
            progress(Note(f"  not run: {exc}", warning=True))
            continue
        seen_templates[sha] = entry.name
        result.families.setdefault(entry.format, []).extend(log.records)
        result.runs.setdefault(entry.format, []).append((entry.name, f"{entry.name}/report.html"))
        for info in log.provenance.parsers.values():
            result.versions.setdefault(info["library"], str(info["version"]))
        result.notes.append(
            f"- `{entry.name}`: {len(log.records)} results, template sha256 {sha[:12]}, run `{run_dir}`"
        )
    write_families_md(result.root / "report.md", run_id, result.families, result.notes)
    not_run = {fmt: why for fmt, why in result.not_run.items() if fmt not in result.families}
    write_matrix_html(
        result.root / "index.html",
        run_id,
        result.families,
        result.runs,
        config.policy.describe(),
        result.versions,
        not_run,
    )
    return result


def _template_sha(model: str) -> str:
    """The sha256 of the model's template, or ``"none:MODEL"`` when no source has one (the run then scores
    only the observed cases, as ``eval`` does)."""
    try:
        return load_template(model, model_dir=None, gguf=None).provenance["sha256"]
    except TemplateNotFoundError:
        return f"none:{model}"

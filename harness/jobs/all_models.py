"""``toolcall-harness eval --all-models``: the main job for every catalog model, one table per format family.

Each model runs as ``eval`` would (its own run directory under ``reports/all-models/<run-id>/<model>/``, its
per-model ``report.md``, ``report.html`` and ``results.jsonl``), quietly. Models of a family whose template is
byte-identical to one already run (same sha256) are skipped, so a family's counts never hold the same case
twice. The family table sums the runs: rows = parsers (with versions), columns = slice × {one-shot, round trip,
streaming (every chunking together), prefix}. ``reports/all-models/<run-id>/report.md`` holds the tables and,
per model, the template, the run directory and what was skipped or failed. A model whose run fails (no template
anywhere, a template that does not render) is reported with its error and the other models go on.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import json
from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.core.cases import SLICES
from harness.core.errors import HarnessError
from harness.template.catalog import list_models

STREAMING = ("whole", "char", "random", "tokens")
GROUPS = (("oneshot", ("oneshot",)), ("roundtrip", ("roundtrip",)), ("streaming", STREAMING), ("prefix", ("prefix",)))


def run_all_models(config, out_root: Path | None = None) -> Path:
    """Run ``config`` (an :class:`harness.jobs.evaluate.EvalConfig`; its ``model`` is ignored) for every catalog
    model; print one table per format family; return the folder holding every run."""
    from harness.jobs.evaluate import REPORTS_DIR, run_eval

    console = config.console
    run_id = dt.datetime.now().astimezone().strftime("%Y%m%d-%H%M%S") + f"-s{config.seed}"
    root = out_root or REPORTS_DIR / "all-models" / run_id
    root.mkdir(parents=True, exist_ok=True)
    families: dict[str, list[dict]] = {}
    notes: list[str] = []
    seen_templates: dict[str, str] = {}
    for entry in list_models():
        quiet = Console(file=io.StringIO(), width=200)
        run_dir = root / entry.name
        console.print(f"{entry.format:14s} {entry.name} ...", markup=False, highlight=False)
        try:
            sha = _template_sha(entry.name, config)
            if sha in seen_templates:
                notes.append(
                    f"- `{entry.name}`: same template as `{seen_templates[sha]}` (sha256 {sha[:12]}), not run again"
                )
                continue
            run_eval(dataclasses.replace(config, model=entry.name, out_dir=run_dir, console=quiet, no_capture=True))
        except HarnessError as exc:
            notes.append(f"- `{entry.name}`: not run: {exc}")
            console.print(f"  [yellow]not run: {exc}[/yellow]", highlight=False)
            continue
        seen_templates[sha] = entry.name
        records = _read(run_dir / "results.jsonl")
        families.setdefault(entry.format, []).extend(records)
        notes.append(f"- `{entry.name}`: {len(records)} results, template sha256 {sha[:12]}, run `{run_dir}`")
    tables = {fmt: family_grid(records) for fmt, records in families.items()}
    for fmt, (columns, rows) in tables.items():
        console.print(_rich_table(fmt, columns, rows))
    _write_md(root / "report.md", run_id, tables, notes)
    console.print(f"wrote {root}/report.md and one run folder per model (its report.md and report.html)")
    return root


def _template_sha(model: str, config) -> str:
    """The sha256 of the model's template, or ``"none:MODEL"`` when no source has one (the run then scores
    only the observed cases, as ``eval`` does)."""
    from harness.core.errors import TemplateNotFoundError
    from harness.template.sources import load_template

    try:
        return load_template(model, model_dir=None, gguf=None).provenance["sha256"]
    except TemplateNotFoundError:
        return f"none:{model}"


def _read(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]


def family_grid(records: list[dict]) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """``(columns, [(parser, cells)])`` for one family: columns ``slice mode-group`` present in the records,
    cells ``passed/total`` summed over the family's runs (observed cases, the same for every template, once)."""
    frame = pd.DataFrame(records, columns=["parser", "slice", "mode", "verdict", "case_id"])
    # observed cases do not depend on the template: count each once per family
    observed = frame.slice == "observed"
    frame = pd.concat([frame[~observed], frame[observed].drop_duplicates(["parser", "mode", "case_id"])])
    columns, keys = [], []
    for slice_name in SLICES:
        for group, modes in GROUPS:
            if ((frame.slice == slice_name) & frame["mode"].isin(modes)).any():
                columns.append(f"{slice_name} {group}")
                keys.append((slice_name, modes))
    rows = []
    for parser in dict.fromkeys(frame.parser):
        mine = frame[frame.parser == parser]
        cells = []
        for slice_name, modes in keys:
            hit = mine[(mine.slice == slice_name) & mine["mode"].isin(modes)]
            cells.append(f"{int((hit.verdict == 'pass').sum())}/{len(hit)}" if len(hit) else "-")
        rows.append((parser, cells))
    return columns, rows


def _rich_table(fmt: str, columns: list[str], rows: list) -> Table:
    table = Table(title=f"{fmt} family: passed/total", title_justify="left")
    table.add_column("parser", no_wrap=True)
    for column in columns:
        table.add_column(column.replace(" ", "\n"), justify="right")
    for parser, cells in rows:
        table.add_row(Text(parser), *cells)
    return table


def _write_md(path: Path, run_id: str, tables: dict, notes: list[str]) -> None:
    lines = [
        f"# Every catalog model, one table per format family (run `{run_id}`)",
        "",
        "Cells: passed/total summed over the family's distinct templates; streaming = every chunking "
        "(whole, char, random, tokens) together.",
        "",
    ]
    for fmt, (columns, rows) in tables.items():
        lines += [f"## {fmt}", "", "| parser | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
        lines += [f"| `{parser}` | " + " | ".join(cells) + " |" for parser, cells in rows]
        lines.append("")
    lines += ["## Models", ""] + notes + [""]
    path.write_text("\n".join(lines), encoding="utf-8")

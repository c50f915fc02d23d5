"""``eval --all-models``: one table per format family, summed over the family's distinct templates, as a terminal
table and ``report.md``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.core.cases import SLICES
from harness.core.textio import write_text

if TYPE_CHECKING:  # pandas loads when a table is built, not when the CLI starts
    pass

STREAMING = ("whole", "char", "random", "tokens")
GROUPS = (("oneshot", ("oneshot",)), ("roundtrip", ("roundtrip",)), ("streaming", STREAMING), ("prefix", ("prefix",)))


def family_grid(records: list[dict]) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """``(columns, [(parser, cells)])`` for one family: columns ``slice mode-group`` present in the records,
    cells ``passed/total`` summed over the family's runs (observed cases, the same for every template, once)."""
    import pandas as pd

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


def family_tables(families: dict[str, list[dict]]) -> list[Table]:
    """One rich table per format family (``{format: records of its runs}``)."""
    tables = []
    for fmt, records in families.items():
        columns, rows = family_grid(records)
        table = Table(title=f"{fmt} family: passed/total", title_justify="left")
        table.add_column("parser", no_wrap=True)
        for column in columns:
            table.add_column(column.replace(" ", "\n"), justify="right")
        for parser, cells in rows:
            table.add_row(Text(parser), *cells)
        tables.append(table)
    return tables


def write_families_md(path: Path, run_id: str, families: dict[str, list[dict]], notes: list[str]) -> None:
    """Write the all-models ``report.md``: the family tables, then one note per model (``notes``: Markdown
    bullets). Raises ``OSError`` when it cannot be written."""
    lines = [
        f"# Every catalog model, one table per format family (run `{run_id}`)",
        "",
        "Cells: passed/total summed over the family's distinct templates; streaming = every chunking "
        "(whole, char, random, tokens) together.",
        "",
    ]
    for fmt, records in families.items():
        columns, rows = family_grid(records)
        lines += [f"## {fmt}", "", "| parser | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
        lines += [f"| `{parser}` | " + " | ".join(cells) + " |" for parser, cells in rows]
        lines.append("")
    lines += ["## Models", ""] + notes + [""]
    write_text(path, "\n".join(lines))


def show_families(console: Console, families: dict[str, list[dict]], root: Path) -> None:
    """Print the family tables and where the report went."""
    for table in family_tables(families):
        console.print(table)
    console.print(
        f"wrote {root}/report.md and one run folder per model (its report.md and report.html)",
        markup=False,
        highlight=False,
    )

"""Version comparisons: when one library ran at two versions (``mlx-lm==0.32.0:gemma4`` and
``mlx-lm==0.32.2:gemma4``), the cases whose verdict changed between them, per mode (fixed: old failed, new
passes; broken: the reverse), as terminal tables and Markdown."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.core.results import PASSING, clip
from harness.report.summary import flat, plural


def version_pairs(parsers: list[str]) -> list[tuple[str, str]]:
    """``(older, newer)`` pairs of parsers that are one library and format at two versions, consecutive by
    version (``mlx-lm==0.32.0:gemma4`` → ``mlx-lm==0.32.2:gemma4``), from names ``library==version:format``."""
    from packaging.version import InvalidVersion, Version

    groups: dict[tuple[str, str], list[tuple[object, str]]] = {}
    for name in parsers:
        library, sep, rest = name.partition("==")
        version, _, fmt = rest.partition(":")
        if not sep or not version:
            continue
        key: object
        try:
            key = Version(version)
        except InvalidVersion:
            key = version
        groups.setdefault((library, fmt), []).append((key, name))
    pairs = []
    for members in groups.values():
        try:
            members.sort()
        except TypeError:  # mixed valid and invalid version strings: keep the order given
            pass
        pairs += [(a[1], b[1]) for a, b in zip(members, members[1:], strict=False)]
    return pairs


def flips(records: list[dict], old: str, new: str) -> dict:
    """Per (case, mode), where ``old`` and ``new`` disagree on passing; only (case, mode) results both have count.

    Returns ``{"fixed": [...], "broken": [...], "modes": {mode: {"fixed": n, "broken": n, "old": passed,
    "new": passed, "total": n}}, "slices": {slice: {...}}}``; each listed flip is ``{case_id, slice, mode, old, new}``
    with the verdict or error type and detail of each side. ``slices`` counts cases, not results: ``old``/``new``
    the cases passing in every mode both ran, ``fixed``/``broken`` the cases with a fixed/broken mode (a case can be
    both), ``total`` the cases; slices in the order of the records."""
    by_key: dict[tuple[str, str], dict[str, dict]] = {}
    for r in records:
        if r["parser"] in (old, new):
            by_key.setdefault((r["case_id"], r["mode"]), {})[r["parser"]] = r
    out: dict[str, Any] = {"fixed": [], "broken": [], "modes": {}, "slices": {}}
    cases: dict[str, dict] = {}
    for (case_id, mode), pair in by_key.items():
        if old not in pair or new not in pair:
            continue
        a, b = pair[old], pair[new]
        stats = out["modes"].setdefault(mode, {"fixed": 0, "broken": 0, "old": 0, "new": 0, "total": 0})
        case = cases.setdefault(case_id, {"slice": a["slice"], "old": True, "new": True, "fixed": 0, "broken": 0})
        stats["total"] += 1
        stats["old"] += a["verdict"] in PASSING
        stats["new"] += b["verdict"] in PASSING
        case["old"] &= a["verdict"] in PASSING
        case["new"] &= b["verdict"] in PASSING
        if (a["verdict"] in PASSING) == (b["verdict"] in PASSING):
            continue
        kind = "fixed" if b["verdict"] in PASSING else "broken"
        stats[kind] += 1
        case[kind] = 1
        out[kind].append(
            {"case_id": case_id, "slice": a["slice"], "mode": mode, "old": _outcome(a), "new": _outcome(b)}
        )
    for case in cases.values():
        stats = out["slices"].setdefault(case["slice"], {"fixed": 0, "broken": 0, "old": 0, "new": 0, "total": 0})
        stats["total"] += 1
        for key in ("old", "new", "fixed", "broken"):
            stats[key] += int(case[key])
    return out


def group_flips(rows: list[dict]) -> list[dict]:
    """Flipped records grouped by case: ``[{case_id, slice, modes, old, new}]`` (outcomes of the first mode)."""
    grouped: dict[str, dict] = {}
    for row in rows:
        entry = grouped.setdefault(row["case_id"], {**row, "modes": []})
        entry["modes"].append(row["mode"])
    return list(grouped.values())


def _outcome(record: dict) -> str:
    if record["verdict"] in PASSING:
        return str(record["verdict"])
    return f"{record['error_type'] or record['verdict']}: {flat(record['detail'])}"


def flip_tables(records: list[dict], parsers: list[str]) -> list[tuple[str, str, dict]]:
    """``(old, new, flips)`` for every version pair among ``parsers`` (see :func:`version_pairs`)."""
    return [(old, new, flips(records, old, new)) for old, new in version_pairs(parsers)]


def print_flips(console: Console, comparisons: list[tuple[str, str, dict]], modes: list[str], limit: int = 10) -> None:
    """Side-by-side pass counts per mode for each version pair, then the flipped cases (first ``limit``)."""
    for old, new, result in comparisons:
        table = Table(title=Text(f"{old} → {new}\npassed (all slices), fixed / broken"), title_justify="left")
        table.add_column("mode")
        for label in ("old", "new", "fixed", "broken"):
            table.add_column(label, justify="right")
        for mode in modes:
            s = result["modes"].get(mode)
            if s:
                table.add_row(
                    mode, f"{s['old']}/{s['total']}", f"{s['new']}/{s['total']}", str(s["fixed"]), str(s["broken"])
                )
        console.print(table)
        for kind in ("fixed", "broken"):
            cases = group_flips(result[kind])
            if cases:
                console.print(
                    f"{kind}: {plural(len(cases), 'case')} ({len(result[kind])} case×mode results)", highlight=False
                )
            for row in cases[:limit]:
                other = row["old"] if kind == "fixed" else row["new"]
                console.print(
                    f"  {row['case_id']} [{','.join(row['modes'])}]: {clip(other, 160)}", markup=False, highlight=False
                )
            if len(cases) > limit:
                console.print(f"  … {len(cases) - limit} more cases in report.md", highlight=False)


def flips_markdown(comparisons: list[tuple[str, str, dict]], modes: list[str]) -> list[str]:
    """Markdown lines for the version comparisons: the per-mode table and every flipped case."""
    lines: list[str] = []
    for old, new, result in comparisons:
        lines += [
            f"### `{old}` → `{new}`",
            "",
            "| mode | old passed | new passed | fixed | broken |",
            "|---|---:|---:|---:|---:|",
        ]
        for mode in modes:
            s = result["modes"].get(mode)
            if s:
                lines.append(
                    f"| {mode} | {s['old']}/{s['total']} | {s['new']}/{s['total']} | {s['fixed']} | {s['broken']} |"
                )
        lines.append("")
        for kind in ("fixed", "broken"):
            cases = group_flips(result[kind])
            lines += [f"**{kind}**: {plural(len(cases), 'case')} ({len(result[kind])} case×mode results)", ""]
            for row in cases:
                lines.append(
                    f"- `{row['case_id']}` ({row['slice']}; {', '.join(row['modes'])}): old "
                    f"{clip(row['old'], 300)} → new {clip(row['new'], 300)}"
                )
            lines.append("")
    return lines

"""The gate's result (:class:`GateResult`, one :class:`Flip` per case that changed) and how it is shown: the
terminal summary and ``gate.md``, ready for a pull request.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from harness.core.results import PASSING, clip


@dataclass
class Flip:
    """One (case, mode) whose passing changed: ``baseline`` and ``now`` are result records (verdict,
    error_type, detail, got)."""

    case_id: str
    mode: str
    slice: str
    baseline: dict
    now: dict


@dataclass
class GateResult:
    """The comparison of one parser with its baseline file ``path``."""

    path: Path
    baseline: dict
    parser: str
    run_dir: Path
    regressions: list[Flip] = field(default_factory=list)
    fixes: list[Flip] = field(default_factory=list)
    compared: int = 0
    missing: int = 0  # baseline results with no result now (a mode that does not apply to this parser)
    extra: int = 0  # results now with none in the baseline
    minimal: dict = field(default_factory=dict)  # {case id: harness.analysis.minimize.minimize_case result + "mode"}
    changes: list[Flip] = field(default_factory=list)  # failed in both, with another verdict, fault class or output
    strict: bool = False  # any difference fails the gate (pinned verdicts), not only a regression

    @property
    def failed(self) -> bool:
        """A regression; with ``strict``, also a fix, a change or a result missing on either side."""
        if self.strict:
            return bool(self.regressions or self.fixes or self.changes or self.missing or self.extra)
        return bool(self.regressions)


def _one_line(value) -> str:
    return json.dumps(value, ensure_ascii=False)


def _md(value) -> str:
    """``value`` as one line of JSON for inline Markdown code (backticks become quotes)."""
    return _one_line(value).replace("`", "'")


def _fenced(text: str) -> list[str]:
    """A Markdown code block holding ``text`` (the fence longer than any backtick run inside)."""
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    return [fence, text, fence]


def outcome(result: dict) -> str:
    if result["verdict"] in PASSING:
        return str(result["verdict"])
    return f"{result['verdict']} {result['error_type'] or ''}: {' '.join((result['detail'] or '').split())}".strip()


def by_case(flips: list[Flip]) -> dict[str, list[Flip]]:
    grouped: dict[str, list[Flip]] = {}
    for flip in flips:
        grouped.setdefault(flip.case_id, []).append(flip)
    return grouped


def _headline(result: GateResult) -> str:
    b = result.baseline
    verdict = "FAILED" if result.failed else "passed"
    changed = f"; {len(result.changes)} failing results changed" if result.changes or result.strict else ""
    return (
        f"gate {verdict}{' (strict)' if result.strict else ''}: {result.parser} vs baseline {result.path} "
        f"({b['parser']['name']} {b['parser'].get('version', '?')}, {b.get('commit', '?')}, {b.get('created', '?')}): "
        f"{len(result.regressions)} regressed and {len(result.fixes)} fixed of {result.compared} case×mode "
        f"results ({len(by_case(result.regressions))} and {len(by_case(result.fixes))} cases){changed}"
    )


def _got(result: dict, expected, show=_one_line) -> str:
    """A result's output as one line (by ``show``); a compact baseline's passing result (``got`` None) is the
    expected message."""
    if result.get("got") is None and result.get("verdict") == "pass":
        return f"{show(expected)} (as expected)"
    return show(result.get("got"))


def print_result(console: Console, result: GateResult, texts: dict[str, tuple[str, dict]]) -> None:
    """Print the gate's verdict, then each regressed case (input text, expected, baseline and new output
    per mode; the first :data:`SHOWN_CASES` in full) and the fixed cases' ids and modes."""

    def say(line: str = "") -> None:
        console.print(line, markup=False, highlight=False, soft_wrap=True)

    say()
    say(_headline(result))
    if result.missing or result.extra:
        say(
            f"  not compared: {result.missing} baseline results with no result now, {result.extra} new results "
            "with no baseline (modes that apply to only one of the two parsers)"
        )
    for i, (case_id, flips) in enumerate(by_case(result.regressions).items()):
        if i == SHOWN_CASES:
            rest = list(by_case(result.regressions))[SHOWN_CASES:]
            say(f"  … {len(rest)} more regressed cases in {result.run_dir / 'gate.md'}: {some_ids(rest, 30)}")
            break
        text, expected = texts.get(case_id, ("?", None))
        say(f"REGRESSION {case_id} ({flips[0].slice}) [{', '.join(f.mode for f in flips)}]")
        say(f"  input ({len(text)} chars): {_one_line(text)}")
        say(f"  expected: {_one_line(expected)}")
        for flip in flips:
            say(f"  [{flip.mode}] baseline: pass, got {_got(flip.baseline, expected)}")
            say(f"  [{flip.mode}] now: {clip(outcome(flip.now), 400)}; got {_one_line(flip.now['got'])}")
        small = result.minimal.get(case_id)
        if small:
            say(
                f"  minimal failing input [{small['mode']}] ({len(small['text'])} of {small['original_len']} chars, "
                f"{small['method']}): {_one_line(small['text'])}"
            )
            say(f"    expected {_one_line(small['expected'])}; got {_one_line(small['got'])}")
    for case_id, flips in by_case(result.fixes).items():
        say(
            f"FIXED {case_id} ({flips[0].slice}) [{', '.join(f.mode for f in flips)}]: was "
            f"{clip(outcome(flips[0].baseline), 200)}"
        )
    for i, (case_id, flips) in enumerate(by_case(result.changes).items()):
        if i == SHOWN_CASES:
            say(f"  … {len(by_case(result.changes)) - SHOWN_CASES} more changed cases in {result.run_dir / 'gate.md'}")
            break
        for flip in flips:
            say(
                f"CHANGED {case_id} ({flip.slice}) [{flip.mode}]: was {clip(outcome(flip.baseline), 200)}, got "
                f"{clip(_one_line(flip.baseline['got']), 300)}; now {clip(outcome(flip.now), 200)}, got "
                f"{clip(_one_line(flip.now['got']), 300)}"
            )
    say(f"gate report: {result.run_dir / 'gate.md'}")


MD_DETAILED_CASES = 20


def summary_table(result: GateResult) -> list[str]:
    """Markdown table: regressed and fixed (case × mode) results per error type (the new one for regressions,
    the baseline's for fixes)."""
    counts: dict[tuple[str, str], int] = {}
    for kind, flips, side in (("regressed", result.regressions, "now"), ("fixed", result.fixes, "baseline")):
        for flip in flips:
            result_ = getattr(flip, side)
            key = (kind, result_.get("error_type") or result_.get("verdict") or "?")
            counts[key] = counts.get(key, 0) + 1
    if not counts:
        return []
    rows = sorted(counts.items(), key=lambda item: (item[0][0] != "regressed", -item[1], item[0][1]))
    return [
        "| change | error type | case × mode results |",
        "|---|---|---:|",
        *[f"| {kind} | {error} | {n} |" for (kind, error), n in rows],
        "",
    ]


def gate_markdown(result: GateResult, texts: dict[str, tuple[str, dict]]) -> list[str]:
    """``gate.md`` lines: the verdict, a table of regressed and fixed results per error type, then the first
    :data:`MD_DETAILED_CASES` regressed cases with input, expected and both outputs (the others by id), and the
    fixed cases likewise (Markdown for a pull request)."""
    lines = [f"# {_headline(result)}", ""]
    b = result.baseline
    settings = b["settings"]
    lines += [
        (
            f"- corpus: {b['corpus']['hash'][:16]} (seed {settings['seed']}, {settings['n_generated']} generated, "
            f"slices {', '.join(settings['slices'])}, modes {', '.join(settings['modes'])})"
        ),
        f"- run: `{result.run_dir}`",
        "",
    ]
    lines += summary_table(result)
    sections = [("Regressions", result.regressions), ("Fixes", result.fixes)]
    if result.changes:
        sections.append(("Changes (failed in both)", result.changes))
    for title, flips in sections:
        grouped = by_case(flips)
        lines += [f"## {title} ({len(grouped)} cases)", ""]
        if len(grouped) > MD_DETAILED_CASES:
            lines += [
                f"The first {MD_DETAILED_CASES} in full; the others: "
                + ", ".join(f"`{c}`" for c in list(grouped)[MD_DETAILED_CASES:]),
                "",
            ]
        for case_id, group in list(grouped.items())[:MD_DETAILED_CASES]:
            lines += [
                f"### `{case_id}` ({group[0].slice}; {', '.join(f.mode for f in group)})",
                "",
                *flip_case_lines(group, texts, result.minimal.get(case_id)),
                "",
            ]
    return lines


def flip_case_lines(
    group: list[Flip],
    texts: dict[str, tuple[str, dict]],
    small: dict | None,
    sides: tuple[str, str] = ("baseline", "now"),
) -> list[str]:
    """Markdown lines for one case's flips (``group``: one per mode): the input, the expected message, each side's
    outcome and output (``sides``: the labels of :attr:`Flip.baseline` and :attr:`Flip.now`), one line per side and
    outcome with the modes that gave it, then the minimal failing input ``small``
    (:func:`harness.analysis.minimize.minimize_case`'s result plus ``mode``, and ``side``: the label of the parser it
    fails, when not the second) if any."""
    text, expected = texts.get(group[0].case_id, ("?", None))
    lines = ["input:", "", *_fenced(_one_line(text)), "", f"expected: `{_md(expected)}`", ""]
    for label, side in zip(sides, ("baseline", "now"), strict=True):
        shown: dict[str, list[str]] = {}  # "outcome, got `output`": the modes that gave it
        for flip in group:
            result = getattr(flip, side)
            shown.setdefault(f"{outcome(result)}, got `{_got(result, expected, _md)}`", []).append(flip.mode)
        lines += [f"- {', '.join(modes)}: {label} {line}" for line, modes in shown.items()]
    if small:
        side = f"{small['side']}; " if small.get("side") else ""
        lines += [
            "",
            (
                f"minimal failing input ({side}{small['mode']}; {len(small['text'])} of "
                f"{small['original_len']} chars; {small['method']}):"
            ),
            "",
            *_fenced(_one_line(small["text"])),
            "",
            f"expected `{_md(small['expected'])}`, got `{_md(small['got'])}`",
        ]
    return lines


SHOWN_CASES = 20


def some_ids(ids: list[str], limit: int = 8) -> str:
    return ", ".join(ids[:limit]) + (f", … {len(ids) - limit} more" if len(ids) > limit else "")

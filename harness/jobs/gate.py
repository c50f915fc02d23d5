"""The regression gate: rerun saved baselines (:mod:`harness.jobs.baseline`) and compare case by case.

``toolcall-harness gate`` reruns each baseline's parser (or a candidate) on the same corpus with the recorded
settings (:func:`run_gate`): a (case, mode) that passed and now does not is a *regression*, one that did not pass and
now does is a *fix*, and (``--strict``, the engine pins) one whose verdict, fault class or failing output differs
otherwise is a *change*. The gate rebuilds the corpus before running anything; a different hash raises
:class:`CorpusMismatchError` naming the inputs that differ (and which cases were added, removed or changed), so
verdicts of two different corpora are never compared.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from rich.console import Console

from harness.analysis.minimize import MODE_COST, minimize_case
from harness.core.cases import Case
from harness.core.errors import HarnessError
from harness.core.paths import BASELINES_DIR
from harness.core.results import PASSING
from harness.core.textio import write_text
from harness.engines.client import runs_out_of_process
from harness.formats import get_format
from harness.jobs.baseline import (
    BaselineError,
    RunSettings,
    build_cases,
    case_digest,
    corpus_hash,
    corpus_inputs,
    load_baseline,
    new_run_dir,
    result_fields,
    run_parser,
    save_command,
)
from harness.jobs.evaluate import REPORTS_DIR
from harness.parse import registry
from harness.parse.loader import load_parser_object
from harness.parse.modes import DEFAULT_TIMEOUT_S, ROUNDTRIP
from harness.parse.registry import get_any_parser
from harness.report.gate import SHOWN_CASES, Flip, GateResult, by_case, gate_markdown, print_result, some_ids
from harness.score.policy import Policy
from harness.template.catalog import get_model


class PolicyMismatchError(HarnessError):
    """A gate asked to judge under another policy than its baseline's (verdicts under two policies differ by
    design, so they are never compared); the message names both and the command that saves a new baseline."""


def check_same_policy(recorded: Policy, asked: Policy | None, path: Path) -> None:
    """Raise :class:`PolicyMismatchError` when ``asked`` (``--policy``; ``None``: not given) is not the
    ``recorded`` policy of baseline ``path``."""
    if asked is not None and asked != recorded:
        raise PolicyMismatchError(
            f"{path}: the baseline was judged under --policy {recorded.describe()}, this gate asks for "
            f"{asked.describe()}: verdicts under different policies are not compared (save a baseline with "
            f"`toolcall-harness baseline save --policy {asked.describe()}` first)"
        )


class CorpusMismatchError(HarnessError):
    """The corpus rebuilt now is not the baseline's; the message lists the inputs that differ."""


def check_same_corpus(baseline: dict, path: Path, inputs: dict, cases: list[Case], settings: RunSettings) -> None:
    """Raise :class:`CorpusMismatchError` unless ``inputs`` hash like the baseline's corpus; the message
    lists each differing input, the cases only in the baseline, only now, or changed, and the command that
    saves a baseline with ``settings`` (those of the rerun)."""
    if corpus_hash(inputs) == baseline["corpus"]["hash"]:
        return
    recorded = baseline["corpus"]["inputs"]
    case_keys = ("case_ids_sha256", "cases_sha256")  # explained case by case below
    lines = [
        f"  {key}: baseline {recorded.get(key)!r}, now {value!r}"
        for key, value in inputs.items()
        if recorded.get(key) != value and key not in case_keys
    ]
    then = {cid: c["digest"] for cid, c in baseline["cases"].items()}
    now = {c.id: case_digest(c) for c in cases}
    for label, ids in (
        ("cases only in the baseline", sorted(then.keys() - now.keys())),
        ("cases only now", sorted(now.keys() - then.keys())),
        (
            "cases whose text, expected message, tools or prefix changed",
            sorted(k for k in then.keys() & now.keys() if then[k] != now[k]),
        ),
    ):
        if ids:
            lines.append(f"  {label}: {len(ids)} ({some_ids(ids)})")
    if not lines:
        lines.append(f"  hash inputs: baseline {recorded}, now {inputs}")
    raise CorpusMismatchError(
        f"{path}: the corpus differs from the baseline's (hash {baseline['corpus']['hash'][:12]}… vs "
        f"{corpus_hash(inputs)[:12]}…), so its verdicts cannot be compared case by case:\n"
        + "\n".join(lines)
        + "\nIf the change is intended, save a new baseline: "
        + save_command(settings.to_json(), baseline["parser"]["spec"])
    )


# --- the gate ----------------------------------------------------------------------------------------


def select_baselines(
    model: str | None, specs: list[str] | None, baseline_file: Path | None, baseline_dir: Path = BASELINES_DIR
) -> list[tuple[Path, dict, str]]:
    """``[(path, baseline, parser spec to run)]`` for a gate.

    - ``baseline_file``: that baseline, run with the one spec in ``specs`` (a candidate) or its own spec;
    - else ``specs``: for each, the baseline in ``baseline_dir/<model>/`` recorded with that spec or for the
      parser it names (a ``py:`` candidate whose class keeps the registered name finds that parser's
      baseline);
    - else every baseline in ``baseline_dir/<model>/``.

    Raises :class:`BaselineError` when a baseline is missing (saying how to create it), or for a model
    that contradicts the baseline file's.
    """
    if baseline_file is not None:
        baseline = load_baseline(baseline_file)
        if model is not None and model != baseline["model"]:
            raise BaselineError(f"{baseline_file}: a baseline of {baseline['model']}, not {model}")
        if specs is not None and len(specs) != 1:
            raise BaselineError("--baseline FILE compares one parser: pass at most one name in --parsers")
        return [(Path(baseline_file), baseline, specs[0] if specs else baseline["parser"]["spec"])]
    model = model or "gemma-4-e2b"
    folder = Path(baseline_dir) / model
    found = {path: load_baseline(path) for path in sorted(folder.glob("*.json"))} if folder.is_dir() else {}
    if specs is None:
        if not found:
            raise BaselineError(
                f"no baseline for {model} in {folder}: create one with `toolcall-harness baseline "
                f"save --model {model} --parsers PARSER` (or `make baseline MODEL={model}`)"
            )
        return [(path, data, data["parser"]["spec"]) for path, data in found.items()]
    chosen = []
    for spec in specs:
        names = {spec, _parser_name(spec, model)}
        match = [(p, d) for p, d in found.items() if d["parser"]["spec"] in names or d["parser"]["name"] in names]
        if not match:
            have = ", ".join(d["parser"]["name"] for d in found.values()) or "none"
            raise BaselineError(
                f"no baseline for parser {spec} of {model} in {folder} (baselines there: {have}); "
                f"create one with `toolcall-harness baseline save --model {model} --parsers {spec}`, "
                "or name one with --baseline FILE"
            )
        chosen.append((*match[0], spec))
    return chosen


def _parser_name(spec: str, model: str) -> str:
    """The registered name ``spec`` designates (an alias or a ``py:`` candidate's ``name``), else ``spec``."""
    fmt = get_model(model).format
    if spec.startswith("py:"):
        return str(getattr(load_parser_object(spec[3:]), "name", spec))
    try:
        return registry.resolve(spec, fmt)
    except KeyError:
        return spec


def compare(baseline_results: list[dict], records: list[dict]) -> Comparison:
    """Baseline results against new records, keyed by (case_id, mode): a regression passed (``pass`` or
    ``soft_pass``) in the baseline and does not now, a fix is the reverse, and a change failed in both with another
    verdict, fault class or output (``got``; a ``detail`` text alone is no change), or passed in both, once
    softly."""
    then = {(r["case_id"], r["mode"]): r for r in baseline_results}
    now = {(r["case_id"], r["mode"]): r for r in records}
    found: dict[str, list[Flip]] = {"regressions": [], "fixes": [], "changes": []}
    for key in sorted(then.keys() & now.keys()):
        a, b = then[key], now[key]
        passed = (a["verdict"] in PASSING, b["verdict"] in PASSING)
        if passed == (True, False):
            kind = "regressions"
        elif passed == (False, True):
            kind = "fixes"
        elif not any(passed) and any(a.get(k) != b.get(k) for k in ("verdict", "error_type", "got")):
            kind = "changes"
        elif all(passed) and a["verdict"] != b["verdict"]:  # pass <-> soft_pass
            kind = "changes"
        else:
            continue
        found[kind].append(Flip(key[0], key[1], a.get("slice", ""), result_fields(a), result_fields(b)))
    return Comparison(
        **found,
        compared=len(then.keys() & now.keys()),
        missing=len(then.keys() - now.keys()),
        extra=len(now.keys() - then.keys()),
    )


@dataclass
class Comparison:
    """What :func:`compare` finds; the lists are sorted by (case id, mode)."""

    regressions: list[Flip]
    fixes: list[Flip]
    changes: list[Flip]
    compared: int
    missing: int  # baseline results with no result now
    extra: int  # results now with none in the baseline


def run_gate(
    model: str | None = None,
    specs: list[str] | None = None,
    baseline_file: Path | None = None,
    baseline_dir: Path = BASELINES_DIR,
    runs_root: Path | None = None,
    console: Console | None = None,
    model_dir: str | None = None,
    gguf: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    shrink: bool = False,
    install_missing: bool = True,
    minimize: bool = True,
    strict: bool = False,
    policy: Policy | None = None,
) -> list[GateResult]:
    """Rerun each selected baseline (:func:`select_baselines`) with its recorded settings (``model_dir`` /
    ``gguf`` override the recorded template source) and compare case by case; prints each result
    (:func:`print_result`) and writes ``gate.md`` into each run directory. With ``minimize``, the first
    :data:`SHOWN_CASES` regressed cases get a minimal failing input (:func:`minimal_inputs`). With ``strict``, a
    result fails (:attr:`GateResult.failed`) on any difference: fixes, changes and results missing on either side.
    The rerun is judged under the baseline's policy; a ``policy`` that differs from it is refused.

    Raises :class:`BaselineError`, :class:`PolicyMismatchError` and :class:`CorpusMismatchError` (checked before
    any parser runs)."""
    console = console or Console()
    results = []
    for path, baseline, spec in select_baselines(model, specs, baseline_file, baseline_dir):
        settings = RunSettings.from_json({**baseline["settings"], "model": baseline["model"]})
        if model_dir or gguf:
            settings = replace(settings, model_dir=model_dir, gguf=gguf)
        check_same_policy(settings.policy, policy, path)
        cases, template, slices = build_cases(settings)
        check_same_corpus(baseline, path, corpus_inputs(settings, cases, template, slices), cases, settings)
        root = runs_root or REPORTS_DIR / settings.model
        run = run_parser(
            replace(settings, slices=slices),
            spec,
            cases,
            new_run_dir(root, "gate", spec),
            console,
            timeout_s,
            shrink,
            install_missing,
        )
        found = compare(baseline["results"], run.records)
        regressions = found.regressions
        result = GateResult(
            path,
            baseline,
            f"{run.parser['name']} {run.parser['version']}",
            run.run_dir,
            regressions,
            found.fixes,
            found.compared,
            found.missing,
            found.extra,
            changes=found.changes,
            strict=strict,
        )
        if minimize and regressions:
            result.minimal = minimal_inputs(
                regressions, spec, {c.id: c for c in cases}, template, settings, timeout_s, console
            )
        texts = {c.id: (c.text, c.expected.to_json()) for c in cases}
        print_result(console, result, texts)
        write_text(run.run_dir / "gate.md", "\n".join(gate_markdown(result, texts)) + "\n")
        results.append(result)
    return results


def minimal_inputs(
    regressions: list[Flip],
    spec: str,
    cases: dict[str, Case],
    template,
    settings: RunSettings,
    timeout_s: float,
    console: Console,
) -> dict[str, dict]:
    """``{case id: minimal failing input}`` for the first :data:`SHOWN_CASES` regressed cases, each in its
    cheapest regressed mode, by :func:`harness.analysis.minimize.minimize_case` (structure reduction through the
    template, or ddmin for self-contained faults), run with parser ``spec``, which fails as each flip's ``now``
    result does (``compare`` passes its fixes with the sides swapped and the first parser's spec); only results
    shorter than the case are kept. A minimizer failure is reported and skipped (the gate's verdict stands)."""
    fmt = get_format(get_model(settings.model).format)
    try:
        parser = get_any_parser(spec, fmt.name, install_missing=False)
    except HarnessError as exc:  # the run went well; only the minimization is lost
        console.print(f"no minimal inputs: {exc}", markup=False, highlight=False)
        return {}

    def cost(flip: Flip) -> int:
        return MODE_COST.index(flip.mode) if flip.mode in MODE_COST else len(MODE_COST)

    found = {}
    try:
        for case_id, flips in list(by_case(regressions).items())[:SHOWN_CASES]:
            flip = min((f for f in flips if f.mode != ROUNDTRIP), key=cost, default=None)
            if flip is None or case_id not in cases:
                continue
            try:
                small = minimize_case(
                    cases[case_id],
                    parser,
                    fmt,
                    flip.mode,
                    flip.now["error_type"],
                    template=template,
                    seed=settings.seed,
                    timeout_s=timeout_s,
                )
            except Exception as exc:  # another module's fault must not hide the gate's verdict
                console.print(f"minimizing {case_id} failed: {type(exc).__name__}: {exc}", markup=False)
                continue
            if len(small["text"]) < len(cases[case_id].text):
                found[case_id] = {**small, "mode": flip.mode}
    finally:
        if runs_out_of_process(parser):
            parser.close()
    return found

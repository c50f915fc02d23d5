"""``toolcall-harness compare``: two parsers (main and a branch, a release and its fix) on one corpus, case by case.

:func:`run_compare` runs :func:`harness.jobs.evaluate.run_eval` once with both parsers, so both see the same
corpus by construction (captures off, as in the gate); compares their results with the gate's rule
(:func:`harness.jobs.gate.compare`, parser A in the baseline's place, B in the rerun's); reduces flipped cases to
minimal inputs (:func:`harness.jobs.gate.minimal_inputs`: a regression with B, a fix with A, the first
:data:`harness.report.gate.SHOWN_CASES` of each); stores what it found as the run log's ``comparison`` and writes
the run's reports again, ``compare.md`` among them (:mod:`harness.report.compare`; ``report.html`` gets a compare
section).

``comparison`` (in ``run.json``): ``a`` and ``b`` ``{spec, name, library, version}``; ``regressions``, ``fixes``,
``changes`` ``[{case_id, mode, slice, a, b}]`` (``a``/``b``: the result fields a baseline keeps,
:func:`harness.jobs.baseline.result_fields`); ``compared``, ``missing`` (results of A only), ``extra`` (of B only);
``minimal`` ``{"regressions": {case id: minimal input}, "fixes": {...}}``.
"""

from __future__ import annotations

from dataclasses import replace

from rich.console import Console

from harness.core.errors import HarnessError
from harness.jobs.baseline import RunSettings
from harness.jobs.evaluate import EvalConfig, run_eval
from harness.jobs.gate import compare, minimal_inputs
from harness.parse.registry import UnknownParserError, names_own_code, resolve
from harness.report.files import write_reports
from harness.report.gate import Flip
from harness.report.progress import ConsoleProgress
from harness.report.runlog import RunLog
from harness.template.catalog import get_model
from harness.template.sources import load_template


def run_compare(config: EvalConfig, console: Console | None = None, minimize: bool = True) -> RunLog:
    """Run ``config.parsers`` (exactly two specs: A, then B) on ``config``'s corpus and return the run log with its
    ``comparison`` (see the module docstring); its reports and ``compare.md`` are written in its run folder.
    Progress and minimizer notes go to ``console``.

    Raises :class:`HarnessError` before any parser runs unless two different specs are given that do not resolve to
    one registered parser and both can run (else the reason), after the run when both made one parser (two engine
    specs of one version); and what ``run_eval`` raises."""
    console = console or Console()
    specs = list(config.parsers or ())
    if len(specs) != 2:
        raise HarnessError(f"compare takes two parsers, --parsers A,B (got {len(specs)}: {', '.join(specs) or 'none'})")
    if specs[0] == specs[1]:
        raise HarnessError(f"--parsers names {specs[0]} twice: compare two different parsers")
    _check_two_parsers(specs, get_model(config.model).format)
    log = run_eval(replace(config, no_capture=True, require_all=True), progress=ConsoleProgress(console))
    if len(log.parsers) != 2:  # two engine specs of one version, say
        raise _one_parser(specs, log.parsers[0])
    names = log.parsers
    records = [[r for r in log.corpus_records if r["parser"] == name] for name in names]
    found = compare(*records)
    minimal: dict[str, dict] = {"regressions": {}, "fixes": {}}
    if minimize and (found.regressions or found.fixes):
        settings = RunSettings(
            model=config.model,
            seed=config.seed,
            n_generated=config.n_generated,
            slices=log.slices,
            modes=log.modes,
            model_dir=config.model_dir,
            gguf=config.gguf,
            policy=config.policy,
        )
        template = (
            None
            if log.provenance.template["source"] == "none"
            else load_template(config.model, model_dir=config.model_dir, gguf=config.gguf)
        )
        cases = {case.id: case for case in log.cases}
        minimal["regressions"] = minimal_inputs(
            found.regressions, specs[1], cases, template, settings, config.timeout_s, console
        )
        swapped = [Flip(f.case_id, f.mode, f.slice, f.now, f.baseline) for f in found.fixes]  # A is the failing side
        minimal["fixes"] = minimal_inputs(swapped, specs[0], cases, template, settings, config.timeout_s, console)

    def side(spec: str, name: str) -> dict:
        return {"spec": spec, "name": name, **log.provenance.parsers[name]}

    def listed(flips: list[Flip]) -> list[dict]:
        return [{"case_id": f.case_id, "mode": f.mode, "slice": f.slice, "a": f.baseline, "b": f.now} for f in flips]

    log = replace(
        log,
        comparison={
            "a": side(specs[0], names[0]),
            "b": side(specs[1], names[1]),
            "regressions": listed(found.regressions),
            "fixes": listed(found.fixes),
            "changes": listed(found.changes),
            "compared": found.compared,
            "missing": found.missing,
            "extra": found.extra,
            "minimal": minimal,
        },
    )
    write_reports(log)
    log.save()
    return log


def _check_two_parsers(specs: list[str], fmt: str) -> None:
    """Raise :class:`HarnessError` when two registry names designate one parser (``own,toolcall-harness:gemma4``),
    before anything runs; specs the registry does not resolve (engines, ``py:``, unknown names) are left to the run."""
    if any(names_own_code(spec) for spec in specs):
        return
    try:
        names = [resolve(spec, fmt) for spec in specs]
    except UnknownParserError:
        return
    if names[0] == names[1]:
        raise _one_parser(specs, names[0])


def _one_parser(specs: list[str], name: str) -> HarnessError:
    return HarnessError(f"--parsers {','.join(specs)} name one parser ({name}): compare two different parsers")

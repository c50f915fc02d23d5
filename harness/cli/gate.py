"""``baseline save``, ``gate`` (exit 1 on any regression, or with ``--strict`` any change) and ``sweep``."""

from __future__ import annotations

from rich.console import Console

from harness.cli.arguments import check_choices, resumed_out
from harness.core.cases import SLICES
from harness.jobs.baseline import RunSettings, save_baselines
from harness.jobs.gate import run_gate
from harness.jobs.sweep import run_sweep
from harness.parse.modes import DEFAULT_MODES
from harness.report.sweep import SweepConfig


def cmd_baseline_save(args, console: Console) -> int:
    check_choices("mode", args.modes, DEFAULT_MODES)
    check_choices("slice", args.slices, SLICES)
    settings = RunSettings(
        model=args.model,
        seed=args.seed,
        n_generated=args.cases,
        slices=tuple(args.slices),
        modes=tuple(args.modes),
        model_dir=args.model_dir,
        gguf=args.gguf,
        policy=args.policy,
    )
    save_baselines(
        settings,
        args.parsers,
        baseline_dir=args.dir,
        runs_root=args.out,
        console=console,
        timeout_s=args.timeout,
        install_missing=not args.no_install,
        compact=args.compact,
    )
    return 0


def cmd_gate(args, console: Console) -> int:
    results = run_gate(
        args.model,
        args.parsers,
        args.baseline,
        baseline_dir=args.dir,
        runs_root=args.out,
        console=console,
        model_dir=args.model_dir,
        gguf=args.gguf,
        timeout_s=args.timeout,
        shrink=args.shrink,
        install_missing=not args.no_install,
        minimize=not args.no_minimize,
        strict=args.strict,
        policy=args.policy,
    )
    return 1 if any(r.failed for r in results) else 0


def cmd_sweep(args, console: Console) -> int:
    out_dir, resume = resumed_out(args)
    run_sweep(
        SweepConfig(
            model=args.model,
            parsers=args.parsers,
            n=args.n,
            seed=args.seed,
            values=args.values,
            jobs=args.jobs,
            out_dir=out_dir,
            resume=resume,
            force=args.force,
            break_after=args.break_after,
            timeout_s=args.timeout,
            cuts=args.cuts,
            full_every=args.full_every,
            keep=args.keep,
            repros=args.repros,
            budget=args.budget,
            console=console,
        )
    )
    return 0

"""``compare --parsers A,B``: both parsers on one corpus; ``compare.md`` for a pull request; exit 1 when B regressed."""

from __future__ import annotations

from rich.console import Console

from harness.cli.arguments import check_choices
from harness.core.cases import SLICES
from harness.jobs.compare import run_compare
from harness.jobs.evaluate import EvalConfig
from harness.parse.modes import DEFAULT_MODES
from harness.report.compare import show_compare
from harness.report.terminal import show_run


def cmd_compare(args, console: Console) -> int:
    check_choices("mode", args.modes, DEFAULT_MODES)
    check_choices("slice", args.slices, SLICES)
    config = EvalConfig(
        model=args.model,
        parsers=args.parsers,
        modes=tuple(args.modes),
        slices=tuple(args.slices),
        seed=args.seed,
        n_generated=args.cases,
        model_dir=args.model_dir,
        gguf=args.gguf,
        out_dir=args.out,
        timeout_s=args.timeout,
        shrink=not args.no_shrink,
        install_missing=not args.no_install,
        policy=args.policy,
        break_after=args.break_after,
        force=args.force,
    )
    log = run_compare(config, console, minimize=not args.no_minimize)
    show_run(console, log)
    show_compare(console, log)
    return 1 if log.comparison["regressions"] else 0

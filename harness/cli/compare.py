"""``compare --parsers A,B``: both parsers on one corpus; ``compare.md`` for a pull request; exit 1 when B regressed."""

from __future__ import annotations

from rich.console import Console

from harness.cli.arguments import check_choices
from harness.cli.evaluate import eval_config
from harness.core.cases import SLICES
from harness.jobs.compare import run_compare
from harness.parse.modes import DEFAULT_MODES
from harness.report.compare import show_compare
from harness.report.terminal import show_run


def cmd_compare(args, console: Console) -> int:
    check_choices("mode", args.modes, DEFAULT_MODES)
    check_choices("slice", args.slices, SLICES)
    config = eval_config(args, model=args.model, model_dir=args.model_dir, gguf=args.gguf, out_dir=args.out)
    log = run_compare(config, console, minimize=not args.no_minimize)
    show_run(console, log)
    show_compare(console, log)
    return 1 if log.comparison["regressions"] else 0

"""``eval`` (one model, or ``--all-models``) and ``report RUN_DIR`` (re-render a run folder)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from harness.cli.arguments import check_choices, resumed_out
from harness.cli.capture import capture_settings
from harness.core.cases import SLICES
from harness.core.errors import HarnessError
from harness.jobs.all_models import run_all_models
from harness.jobs.evaluate import EvalConfig, run_eval
from harness.parse.modes import DEFAULT_MODES
from harness.report.families import show_families
from harness.report.files import write_reports
from harness.report.progress import ConsoleProgress
from harness.report.runlog import RunLog
from harness.report.terminal import show_run


def eval_config(args, **fields) -> EvalConfig:
    """The :class:`EvalConfig` of the ``eval`` flags every run takes; ``fields`` adds one model's own."""
    return EvalConfig(
        parsers=args.parsers,
        modes=tuple(args.modes),
        slices=tuple(args.slices),
        seed=args.seed,
        n_generated=args.cases,
        timeout_s=args.timeout,
        shrink=not args.no_shrink,
        install_missing=not args.no_install,
        policy=args.policy,
        break_after=args.break_after,
        force=args.force,
        **fields,
    )


def cmd_eval(args, console: Console) -> int:
    check_choices("mode", args.modes, DEFAULT_MODES)
    check_choices("slice", args.slices, SLICES)
    out_dir, resume = resumed_out(args)
    if args.all_models:
        if resume:
            raise HarnessError("--resume continues one model's run: give its folder without --all-models")
        result = run_all_models(eval_config(args), out_root=args.out, progress=ConsoleProgress(console))
        show_families(console, result.families, result.root)
        return 0
    capture = capture_settings(args, files=tuple(Path(f) for f in args.captures or ()), required=False)
    config = eval_config(
        args,
        model=args.model,
        model_dir=args.model_dir,
        gguf=args.gguf,
        out_dir=out_dir,
        resume=resume,
        capture=capture,
        no_capture=args.no_capture,
    )
    log = run_eval(config, progress=ConsoleProgress(console))
    show_run(console, log)
    return 0


def cmd_report(args, console: Console) -> int:
    log = RunLog.load(args.run_dir)
    if args.show:
        show_run(console, log)
    written = write_reports(log)
    console.print(f"wrote {', '.join(str(path) for path in written)}", markup=False, highlight=False)
    return 0

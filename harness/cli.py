"""``toolcall-harness`` command line: ``eval``, ``report`` (re-render a run folder's report files), ``check``,
``parsers``, ``engines``, ``suites``, ``models``, ``template``, ``corpus``, ``baseline save`` and ``gate`` (exit 1
when a case that passed now fails), ``sweep`` (the seeded random sweep).

Bad input (unknown model or parser, malformed case file, a template that fails to render) prints one
``error:`` line and exits with status 2; no traceback reaches the user.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

from rich.console import Console

from harness.core.cases import SLICES
from harness.core.errors import HarnessError
from harness.core.guards import request_interrupt
from harness.formats import DEFAULT_FORMAT, case_formats
from harness.parse.modes import DEFAULT_MODES, DEFAULT_TIMEOUT_S


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    signal.signal(signal.SIGINT, request_interrupt)
    _keep_hypothesis_files_in_cache()
    console = Console()
    if not console.is_terminal:  # logs and pipes: wide enough for the tables, no colour codes
        console = Console(width=max(console.width, 220), no_color=True)
    try:
        return args.func(args, console) or 0
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # an --out path that cannot be written, a file that cannot be read
        where = f": {exc.filename}" if exc.filename else ""
        print(f"error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _keep_hypothesis_files_in_cache() -> None:
    """Hypothesis caches Unicode tables in ``./.hypothesis``; the CLI keeps them in the harness cache instead
    of the user's working directory (an explicit ``HYPOTHESIS_STORAGE_DIRECTORY`` wins)."""
    import os

    if "HYPOTHESIS_STORAGE_DIRECTORY" not in os.environ:
        from hypothesis.configuration import set_hypothesis_home_dir

        from harness.core.paths import cache_dir

        set_hypothesis_home_dir(str(cache_dir() / "hypothesis"))


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def _non_negative(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def _seconds(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text}")
    return value


def _csv(text: str) -> list[str]:
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not parts:
        raise argparse.ArgumentTypeError("empty list")
    return parts


def _parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="toolcall-harness", description="Differential testing and evaluation of LLM tool-call parsers."
    )
    sub = top.add_subparsers(dest="command", required=True)

    ev = sub.add_parser("eval", help="render the model's corpus, run every parser, print the pass-rate table")
    _template_args(ev)
    ev.add_argument(
        "--parsers",
        type=_csv,
        default=None,
        help="comma-separated parser names or aliases; 'all' adds every engine; ENGINE[==VERSION]; "
        "cmd:COMMAND (no commas in it); py:MODULE:CLASS or py:FILE.py:CLASS "
        "(default: the in-process parsers for the format)",
    )
    ev.add_argument("--modes", type=_csv, default=list(DEFAULT_MODES), help=f"default: {','.join(DEFAULT_MODES)}")
    ev.add_argument("--slices", type=_csv, default=list(SLICES), help=f"default: {','.join(SLICES)}")
    ev.add_argument("--seed", type=_count, default=0, help="seed for generated cases and random chunkings")
    ev.add_argument("--cases", type=_count, default=300, help="number of generated (property-based) cases")
    ev.add_argument("--out", type=Path, default=None, help="run directory (default reports/<model>/<run-id>)")
    ev.add_argument("--timeout", type=_seconds, default=DEFAULT_TIMEOUT_S, help="seconds per parser call")
    ev.add_argument("--no-shrink", action="store_true", help="skip hypothesis shrinking of generated failures")
    ev.add_argument(
        "--no-install",
        action="store_true",
        help="report engines that are not built yet as unavailable instead of building them",
    )
    _capture_args(ev)
    ev.add_argument(
        "--captures",
        type=_csv,
        default=None,
        metavar="FILE[,FILE]",
        help="score these capture files (JSON Lines) instead of generating",
    )
    ev.add_argument("--no-capture", action="store_true", help="skip capturing even when the catalog names a backend")
    ev.add_argument(
        "--all-models",
        action="store_true",
        help="run every catalog model (captures off) and print one table per format family",
    )
    ev.set_defaults(func=_cmd_eval)

    rp = sub.add_parser("report", help="write report.md, report.html and summary.csv again from a run folder")
    rp.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a run folder of eval (holding run.json)")
    rp.add_argument("--show", action="store_true", help="also print the tables eval printed")
    rp.set_defaults(func=_cmd_report)

    ca = sub.add_parser("capture", help="run a model on the prompt suites and record its raw output (JSON Lines)")
    _template_args(ca)
    _capture_args(ca)
    ca.add_argument("--out", type=Path, default=None, help="capture file (default reports/<model>/captures/...)")
    ca.set_defaults(func=_cmd_capture)

    ck = sub.add_parser("check", help="score an external case file (JSON Lines) with one parser")
    ck.add_argument("file", type=Path)
    ck.add_argument("--parser", required=True)
    ck.add_argument(
        "--modes",
        "--mode",
        dest="mode",
        type=_csv,
        default=["oneshot"],
        help="modes, comma-separated (default oneshot)",
    )
    ck.add_argument("--format", default=None, help="only cases of this format")
    ck.add_argument("--seed", type=_count, default=0)
    ck.add_argument("--timeout", type=_seconds, default=DEFAULT_TIMEOUT_S)
    ck.add_argument("--out", type=Path, default=None, help="write per-case records here (JSON Lines)")
    ck.add_argument("--no-install", action="store_true", help="do not build a missing engine (report it instead)")
    ck.set_defaults(func=_cmd_check)

    ps = sub.add_parser("parsers", help="list parser names, and why any is unavailable")
    ps.add_argument("--format", default=None)
    ps.add_argument(
        "--worker",
        default=None,
        metavar="NAME",
        help="start one out-of-process parser (engine name or 'cmd:COMMAND') and print its hello",
    )
    ps.set_defaults(func=_cmd_parsers)

    en = sub.add_parser("engines", help="build and list engine environments (SGLang, vLLM, llama.cpp, ...)")
    en_sub = en.add_subparsers(dest="engines_command", required=True)
    ei = en_sub.add_parser("install", help="build NAME[==VERSION] into the user cache (reused later)")
    ei.add_argument("specs", nargs="+", metavar="NAME[==VERSION]")
    ei.add_argument("--force", action="store_true", help="rebuild even if installed")
    ei.set_defaults(func=_cmd_engines_install)
    el = en_sub.add_parser("list", help="known engines, and the environments built (size, build time, recipe)")
    el.set_defaults(func=_cmd_engines_list)

    su = sub.add_parser("suites", help="list the prompt suites (corpora/suites/) and check their files")
    su.add_argument("files", nargs="*", type=Path, help="suite files to check (default: the shipped suites)")
    su.set_defaults(func=_cmd_suites)

    ms = sub.add_parser("models", help="list the model catalog")
    ms.set_defaults(func=_cmd_models)

    tp = sub.add_parser("template", help="resolve a model's chat template and print its provenance")
    _template_args(tp)
    tp.add_argument("--print", action="store_true", help="print the template text too")
    tp.set_defaults(func=_cmd_template)

    cp = sub.add_parser("corpus", help="write the model's rendered corpus as a case file")
    _template_args(cp)
    cp.add_argument("--seed", type=_count, default=0)
    cp.add_argument("--cases", type=_count, default=300)
    cp.add_argument("--slices", type=_csv, default=list(SLICES))
    cp.add_argument("--out", type=Path, required=True)
    cp.set_defaults(func=_cmd_corpus)
    _baseline_commands(sub)
    _sweep_command(sub)
    return top


def _sweep_command(sub) -> None:
    """``sweep``: the seeded random sweep (:mod:`harness.jobs.sweep`)."""
    from harness.corpus.random_calls import DEFAULT_CUTS, DEFAULT_FULL_EVERY
    from harness.report.sweep import DEFAULT_KEEP

    sw = sub.add_parser(
        "sweep",
        help="random tool calls through the real template: one-shot, char-by-char "
        "streaming and truncation checks; prints the wrong/total rate per parser",
    )
    sw.add_argument("--model", default="gemma-4-e2b", help="catalog name (see `toolcall-harness models`)")
    sw.add_argument(
        "--parser",
        "--parsers",
        dest="parsers",
        type=_csv,
        default=["toolcall-harness"],
        help="parser name(s), comma-separated (default: the project's own parser)",
    )
    sw.add_argument("-n", "--cases", dest="n", type=_count, default=2000, help="random cases (default 2000)")
    sw.add_argument("--seed", type=_count, default=0, help="case i is built from (seed, i) alone")
    sw.add_argument("--jobs", type=_positive, default=None, help="processes (default: every CPU)")
    sw.add_argument("--out", type=Path, default=None, help="run directory (default reports/<model>/sweep-<time>)")
    sw.add_argument("--timeout", type=_seconds, default=DEFAULT_TIMEOUT_S, help="seconds per parser call")
    sw.add_argument("--cuts", type=_count, default=DEFAULT_CUTS, help="seeded random truncation cuts per case")
    sw.add_argument(
        "--full-every",
        type=_count,
        default=DEFAULT_FULL_EVERY,
        help="truncate at every position on every Nth case (0: never)",
    )
    sw.add_argument(
        "--keep",
        type=_count,
        default=DEFAULT_KEEP,
        help="failure lines written per (parser, check, error type); counts stay exact",
    )
    sw.add_argument("--repros", type=_count, default=10, help="failure groups to minimize (default 10)")
    sw.add_argument("--budget", type=_count, default=300, help="checks per minimization (default 300)")
    sw.set_defaults(func=_cmd_sweep)


def _cmd_sweep(args, console: Console) -> int:
    from harness.jobs.sweep import run_sweep
    from harness.report.sweep import SweepConfig

    run_sweep(
        SweepConfig(
            model=args.model,
            parsers=args.parsers,
            n=args.n,
            seed=args.seed,
            jobs=args.jobs,
            out_dir=args.out,
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


def _baseline_commands(sub) -> None:
    """``baseline save`` and ``gate`` (:mod:`harness.jobs.gate`)."""
    from harness.jobs.gate import BASELINES_DIR

    bl = sub.add_parser("baseline", help="store per-case verdicts of parsers, for `gate` to compare with")
    bl_sub = bl.add_subparsers(dest="baseline_command", required=True)
    bs = bl_sub.add_parser("save", help="run the corpus and write reports/baselines/<model>/<parser>.json")
    _template_args(bs)
    bs.add_argument(
        "--parsers",
        type=_csv,
        default=None,
        help="parsers as in eval (default: the in-process parsers for the format); one baseline each",
    )
    bs.add_argument("--modes", type=_csv, default=list(DEFAULT_MODES), help=f"default: {','.join(DEFAULT_MODES)}")
    bs.add_argument("--slices", type=_csv, default=list(SLICES), help=f"default: {','.join(SLICES)}")
    bs.add_argument("--seed", type=_count, default=0)
    bs.add_argument("--cases", type=_count, default=300, help="number of generated cases")
    _gate_common_args(bs, BASELINES_DIR)
    bs.set_defaults(func=_cmd_baseline_save)

    gt = sub.add_parser("gate", help="rerun saved baselines and compare case by case (exit 1 on any regression)")
    gt.add_argument("--model", default=None, help="catalog name (default: the --baseline file's, else gemma-4-e2b)")
    gt.add_argument(
        "--model-dir", default=None, help="template from this model directory instead of the recorded source"
    )
    gt.add_argument("--gguf", default=None, help="template from this GGUF instead of the recorded source")
    gt.add_argument(
        "--parsers",
        type=_csv,
        default=None,
        help="parsers to gate, e.g. a candidate py:MODULE:CLASS (default: each baseline's own parser)",
    )
    gt.add_argument(
        "--baseline",
        type=Path,
        default=None,
        metavar="FILE",
        help="compare with this baseline file (default: the model's baselines in --dir)",
    )
    gt.add_argument("--shrink", action="store_true", help="hypothesis-shrink generated failures (in the run report)")
    gt.add_argument(
        "--no-minimize",
        action="store_true",
        help="skip reducing each regressed case to a minimal failing input (harness/analysis/minimize.py)",
    )
    _gate_common_args(gt, BASELINES_DIR)
    gt.set_defaults(func=_cmd_gate)


def _gate_common_args(cmd: argparse.ArgumentParser, baselines_dir: Path) -> None:
    cmd.add_argument("--dir", type=Path, default=baselines_dir, help=f"baselines folder (default {baselines_dir})")
    cmd.add_argument("--out", type=Path, default=None, help="folder for the run directories (default reports/<model>)")
    cmd.add_argument("--timeout", type=_seconds, default=DEFAULT_TIMEOUT_S, help="seconds per parser call")
    cmd.add_argument("--no-install", action="store_true", help="do not build a missing engine (report it instead)")


def _cmd_baseline_save(args, console: Console) -> int:
    from harness.jobs.gate import RunSettings, save_baselines

    _check_choices("mode", args.modes, DEFAULT_MODES)
    _check_choices("slice", args.slices, SLICES)
    settings = RunSettings(
        model=args.model,
        seed=args.seed,
        n_generated=args.cases,
        slices=tuple(args.slices),
        modes=tuple(args.modes),
        model_dir=args.model_dir,
        gguf=args.gguf,
    )
    save_baselines(
        settings,
        args.parsers,
        baseline_dir=args.dir,
        runs_root=args.out,
        console=console,
        timeout_s=args.timeout,
        install_missing=not args.no_install,
    )
    return 0


def _cmd_gate(args, console: Console) -> int:
    from harness.jobs.gate import run_gate

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
    )
    return 1 if any(r.regressions for r in results) else 0


def _template_args(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument(
        "--model",
        default="gemma-4-e2b",
        help="catalog name (see `toolcall-harness models`); it sets the format and hub repo "
        "even when --model-dir or --gguf supplies the template",
    )
    cmd.add_argument("--model-dir", default=None, help="local model directory holding the chat template")
    cmd.add_argument(
        "--gguf",
        default=None,
        help="a GGUF file: its tokenizer.chat_template is the template of the run, and the llama-cpp capture "
        "backend loads it",
    )


def _cmd_eval(args, console: Console) -> int:
    from harness.jobs.evaluate import EvalConfig, run_eval
    from harness.report.progress import ConsoleProgress
    from harness.report.terminal import show_run

    _check_choices("mode", args.modes, DEFAULT_MODES)
    _check_choices("slice", args.slices, SLICES)
    if args.all_models:
        from harness.jobs.all_models import run_all_models
        from harness.report.families import show_families

        result = run_all_models(
            EvalConfig(
                parsers=args.parsers,
                modes=tuple(args.modes),
                slices=tuple(args.slices),
                seed=args.seed,
                n_generated=args.cases,
                timeout_s=args.timeout,
                shrink=not args.no_shrink,
                install_missing=not args.no_install,
            ),
            out_root=args.out,
            progress=ConsoleProgress(console),
        )
        show_families(console, result.families, result.root)
        return 0
    capture = _capture_settings(args, files=tuple(Path(f) for f in args.captures or ()), required=False)
    log = run_eval(
        EvalConfig(
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
            capture=capture,
            no_capture=args.no_capture,
        ),
        progress=ConsoleProgress(console),
    )
    show_run(console, log)
    return 0


def _cmd_report(args, console: Console) -> int:
    from harness.report.files import write_reports
    from harness.report.runlog import RunLog
    from harness.report.terminal import show_run

    log = RunLog.load(args.run_dir)
    if args.show:
        show_run(console, log)
    written = write_reports(log)
    console.print(f"wrote {', '.join(str(path) for path in written)}", markup=False, highlight=False)
    return 0


def _capture_args(sub: argparse.ArgumentParser) -> None:
    from harness.capture.backends import known_backends

    sub.add_argument(
        "--backend",
        choices=known_backends(),
        default=None,
        help="capture with this backend (default: the catalog's capture_backend for the model)",
    )
    sub.add_argument("--suites", type=_csv, default=None, help="suite names or files (default: every shipped suite)")
    sub.add_argument("--capture-limit", type=_count, default=None, metavar="N", help="first N prompts of each suite")
    sub.add_argument("--max-tokens", type=_positive, default=256, help="completion tokens per prompt (default 256)")
    sub.add_argument("--temperature", type=_non_negative, default=0.0, help="0 = greedy (default)")
    sub.add_argument("--capture-seed", type=_count, default=0, help="sampler seed (default 0)")
    sub.add_argument("--grammar", type=Path, default=None, help="GBNF grammar file (llama-cpp backend)")
    sub.add_argument(
        "--force-reference",
        action="store_true",
        help="make the model write each prompt's reference answer (fixture models)",
    )
    sub.add_argument("--base-url", default=None, help="openai backend: server URL, e.g. http://127.0.0.1:8080")
    sub.add_argument(
        "--server-mode",
        choices=["completions", "chat"],
        default="completions",
        help="openai backend: raw completions of the rendered prompt, or chat with tools",
    )
    sub.add_argument("--server-name", default=None, help="openai backend: name for the server's own parser")
    sub.add_argument("--concurrency", type=_positive, default=4, help="openai backend: requests in flight (default 4)")
    sub.add_argument(
        "--examples",
        default=None,
        metavar="NAME",
        help="few-shot turns before each prompt: corpora/fewshot/NAME.json or a .json file (default: "
        "the catalog's capture_examples; 'none' for none)",
    )


def _capture_settings(args, files: tuple = (), required: bool = True):
    """Capture settings from the flags; the backend defaults to the catalog's ``capture_backend``. None when
    no backend is named anywhere and ``required`` is False."""
    from harness.capture.backends import Sampling
    from harness.capture.run import CaptureSettings
    from harness.template.catalog import get_model

    entry = get_model(args.model)
    backend = args.backend or entry.capture_backend or ("files" if files else None)
    if backend is None and not required:
        return None
    if backend is None:
        raise HarnessError(
            f"{args.model}: the catalog names no capture backend; pass --backend "
            f"(transformers, llama-cpp, mlx-lm, openai)"
        )
    grammar = None
    if args.grammar is not None:
        if backend != "llama-cpp":
            raise HarnessError(f"--grammar applies to the llama-cpp backend, not {backend}")
        grammar = args.grammar.read_text(encoding="utf-8")
    return CaptureSettings(
        backend=backend,
        suites=tuple(args.suites or ()),
        limit=args.capture_limit,
        sampling=Sampling(temperature=args.temperature, max_tokens=args.max_tokens, seed=args.capture_seed),
        force=args.force_reference,
        grammar=grammar,
        base_url=args.base_url,
        server_mode=args.server_mode,
        concurrency=max(1, args.concurrency),
        server_name=args.server_name,
        files=files,
        examples=None if args.examples == "none" else args.examples or entry.capture_examples or None,
    )


def _cmd_capture(args, console: Console) -> int:
    from harness.capture.run import capture_key, capture_stats, load_examples, load_prompts, open_backend, run_capture
    from harness.formats import get_format
    from harness.jobs.evaluate import REPORTS_DIR
    from harness.report.captures import STATS_HEADER, stats_rows
    from harness.template.catalog import get_model
    from harness.template.sources import load_template

    settings = _capture_settings(args)
    entry = get_model(args.model)
    fmt = get_format(entry.format)
    prompts = load_prompts(settings.suites, settings.limit)
    template = load_template(args.model, model_dir=args.model_dir, gguf=args.gguf)
    backend = open_backend(settings, entry, gguf=args.gguf, model_dir=args.model_dir)
    path = args.out or REPORTS_DIR / args.model / "captures" / capture_key(backend.name, backend.weights.sha256)
    print(f"capturing {len(prompts)} prompts with {backend.name} ({backend.weights.path}) into {path}")
    examples = load_examples(settings.examples) if settings.examples else None
    run = run_capture(
        prompts,
        backend,
        template,
        fmt,
        path,
        sampling=settings.sampling,
        force=settings.force,
        options=settings.recorded_options(),
        examples=examples,
        on_capture=lambda c: print(
            f"  {c.prompt_id}: {c.error or c.finish_reason} ({c.tokens} tokens, {c.elapsed_s:.1f} s)"
        ),
    )
    backend.close()
    print(f"{run.generated} prompts run, {run.reused} reused; capture errors: {run.errors}")
    if run.stopped:
        print(run.stopped)
    print("  ".join(STATS_HEADER))
    for row in stats_rows({"stats": capture_stats(run.captures, fmt)}):
        print("  ".join(row))
    return 1 if run.captures and run.errors == len(run.captures) else 0  # every capture failed


def _cmd_check(args, console: Console) -> int:
    from harness.jobs.check import check_file

    _check_choices("mode", args.mode, DEFAULT_MODES)
    if args.format is not None:
        _check_choices("format", [args.format], case_formats())
    summary = check_file(
        args.file,
        args.parser,
        modes=tuple(args.mode),
        fmt=args.format,
        seed=args.seed,
        timeout_s=args.timeout,
        out=args.out,
        install_missing=not args.no_install,
    )
    print(summary.describe())
    return 0


def _cmd_parsers(args, console: Console) -> int:
    from harness.engines.client import runs_out_of_process
    from harness.parse.registry import describe_parsers, get_any_parser

    if args.worker:
        parser = get_any_parser(args.worker, args.format or DEFAULT_FORMAT, install_missing=False)
        if not runs_out_of_process(parser):
            print(
                f"{parser.name} runs in-process (library {parser.library} {parser.version}); "
                "--worker starts engines and cmd: workers"
            )
            return 0
        print(json.dumps({"name": parser.name, "hello": parser.hello, "command": parser.spec.argv}, indent=2))
        parser.close()
        return 0
    for name, status in describe_parsers(args.format):
        print(f"{name:40s} {status}")
    from harness.engines.environments import engines, find_installed

    for engine in engines().values():
        if args.format and args.format not in engine.formats:
            continue
        installed = find_installed(engine.name)
        state = "installed" if installed else f"not installed (`toolcall-harness engines install {engine.name}`)"
        print(
            f"{engine.name + '==' + engine.default_version + ':' + ','.join(engine.formats):40s} "
            f"engine (out of process), {state}"
        )
    return 0


def _cmd_engines_install(args, console: Console) -> int:
    from harness.engines.environments import install

    for spec in args.specs:
        installed = install(spec, log=lambda line: print(line, flush=True), force=args.force)
        print(f"ready: {installed.name}=={installed.version} at {installed.path}")
    return 0


def _cmd_engines_list(args, console: Console) -> int:
    from harness.engines.environments import broken_engines, describe, engines, list_installed, recipe_summary

    print("engines (default version; cold install; recipe):")
    for engine in engines().values():
        print(
            f"  {engine.name}=={engine.default_version}  formats {','.join(engine.formats)}; "
            f"cold install {engine.cold_install}"
        )
        print(f"      {recipe_summary(engine, engine.default_version)}")
    for module, reason in broken_engines().items():
        print(f"  {module}: unavailable: {reason}")
    installed = list_installed()
    print(f"installed ({len(installed)}):")
    for item in installed:
        print("  " + describe(item))
    return 0


def _cmd_suites(args, console: Console) -> int:
    from harness.capture.suites import load_suite, suite_names

    for source in args.files or suite_names():
        prompts = load_suite(source)
        calls = sum(len(p.calls) for p in prompts)
        tools = sorted({t["function"]["name"] for p in prompts for t in p.tools})
        print(f"{str(source):24s} {len(prompts):3d} prompts, {calls} expected calls; tools: {', '.join(tools)}")
    return 0


def _cmd_models(args, console: Console) -> int:
    from harness.template.catalog import list_models

    for entry in list_models():
        print(f"{entry.name:16s} {entry.format:10s} {entry.hf_repo}")
    return 0


def _cmd_template(args, console: Console) -> int:
    from harness.template.sources import load_template

    template = load_template(args.model, model_dir=args.model_dir, gguf=args.gguf)
    for key, value in template.provenance.items():
        if key == "attempts":
            for attempt in value:
                print(f"attempt: {attempt['source']}: {attempt['error']}")
        else:
            print(f"{key}: {value}")
    if args.print:
        print(template.text)
    return 0


def _cmd_corpus(args, console: Console) -> int:
    from harness.core.cases import write_cases
    from harness.corpus.build import build_corpus
    from harness.formats import get_format
    from harness.template.catalog import get_model
    from harness.template.sources import load_template

    _check_choices("slice", args.slices, SLICES)
    fmt = get_format(get_model(args.model).format)
    template = load_template(args.model, model_dir=args.model_dir, gguf=args.gguf)
    print(
        f"template: {template.provenance['source']} {template.file} sha256 {template.sha256}"
        + (f" (fallback: {template.provenance['fallback_note']})" if template.fallback else "")
    )
    corpus = build_corpus(template, fmt, seed=args.seed, n_generated=args.cases, slices=tuple(args.slices))
    count = write_cases(args.out, corpus.cases)
    print(f"wrote {count} cases to {args.out} ({len(corpus.skipped)} skipped)")
    return 0


def _check_choices(what: str, given: list[str], known) -> None:
    unknown = [g for g in given if g not in known]
    if unknown:
        raise HarnessError(f"unknown {what} {', '.join(unknown)}; known: {', '.join(known)}")


if __name__ == "__main__":
    sys.exit(main())

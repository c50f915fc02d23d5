"""The inspection commands: ``check`` (score a case file), ``parsers``, ``engines install|list``, ``models``,
``template`` and ``corpus``."""

from __future__ import annotations

import collections
import json
import sys

from rich.console import Console

from harness.cli.arguments import check_choices
from harness.core.cases import SLICES
from harness.engines.client import runs_out_of_process
from harness.engines.environments import (
    broken_engines,
    describe,
    engines,
    find_installed,
    install,
    list_installed,
    recipe_summary,
)
from harness.formats import DEFAULT_FORMAT, case_formats
from harness.jobs.check import check_file
from harness.jobs.export import default_slices, export_corpus
from harness.parse.modes import DEFAULT_MODES
from harness.parse.registry import describe_parsers, get_any_parser
from harness.template.catalog import list_models
from harness.template.sources import load_template


def cmd_check(args, console: Console) -> int:
    check_choices("mode", args.mode, DEFAULT_MODES)
    if args.format is not None:
        check_choices("format", [args.format], case_formats())
    summary = check_file(
        args.file,
        args.parser,
        modes=tuple(args.mode),
        fmt=args.format,
        seed=args.seed,
        timeout_s=args.timeout,
        out=args.out,
        install_missing=not args.no_install,
        policy=args.policy,
        break_after=args.break_after,
    )
    print(summary.describe())
    return 0


def cmd_parsers(args, console: Console) -> int:
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

    for engine in engines().values():
        if args.format and args.format not in engine.formats:
            continue
        installed = find_installed(engine.name)
        state = "installed" if installed else f"not installed (`toolcall-harness engines install {engine.name}`)"
        reason = engine.unavailable()
        if reason:
            state = f"unavailable: {reason}"
        print(
            f"{engine.name + '==' + engine.default_version + ':' + ','.join(engine.formats):40s} "
            f"engine (out of process), {state}"
        )
    return 0


def cmd_engines_install(args, console: Console) -> int:
    for spec in args.specs:
        installed = install(spec, log=lambda line: print(line, flush=True), force=args.force)
        source = installed.manifest.get("source")
        what = (
            f"{installed.name}@{source['path']} ({source['how']})"
            if source
            else f"{installed.name}=={installed.version}"
        )
        print(f"ready: {what} at {installed.path}")
    return 0


def cmd_engines_list(args, console: Console) -> int:
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


def cmd_models(args, console: Console) -> int:
    for entry in list_models():
        print(f"{entry.name:16s} {entry.format:10s} {entry.hf_repo}")
    return 0


def cmd_template(args, console: Console) -> int:
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


def cmd_corpus(args, console: Console) -> int:
    slices = tuple(args.slices) if args.slices else default_slices(args.spec)
    check_choices("slice", list(slices), SLICES)
    result = export_corpus(
        args.model,
        args.spec,
        args.out,
        seed=args.seed,
        n_generated=args.cases,
        slices=slices,
        revision=args.revision,
        model_dir=args.model_dir,
        gguf=args.gguf,
    )
    print(f"template: {result.template}")
    what = "cases" if args.spec == "cases" else f"{args.spec} fixtures"
    print(f"wrote {result.count} {what} to {args.out} ({len(result.skipped)} skipped)")
    for path in result.files if args.spec != "cases" else []:
        print(f"  {path}")
    for reason, n in collections.Counter(why for _, why in result.skipped).most_common():
        print(f"  skipped {n}: {reason}")
    if not result.count:
        print(f"error: nothing to write: every case of {args.model} was skipped", file=sys.stderr)
        return 1
    return 0

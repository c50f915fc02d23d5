"""``capture`` (run a model on the prompt suites) and ``suites`` (list and check them); the capture flags as
:class:`~harness.capture.run.CaptureSettings`."""

from __future__ import annotations

from rich.console import Console

from harness.capture.backends import Sampling
from harness.capture.backends.openai import check_base_url
from harness.capture.run import (
    CaptureSettings,
    capture_key,
    capture_stats,
    capture_with,
    load_examples,
    load_prompts,
    open_backend,
)
from harness.capture.suites import load_suite, suite_names
from harness.core.errors import HarnessError
from harness.core.paths import REPORTS_DIR
from harness.formats import get_format
from harness.report.captures import STATS_HEADER, stats_rows
from harness.template.catalog import get_model
from harness.template.sources import load_template


def capture_settings(args, files: tuple = (), required: bool = True):
    """Capture settings from the flags; the backend defaults to the catalog's ``capture_backend``. None when
    no backend is named anywhere and ``required`` is False."""
    if args.base_url is not None:
        check_base_url(args.base_url)  # a bad URL is an error even where no capture runs
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
        deadline_s=args.request_deadline,
        bytes_per_token=args.max_bytes_per_token,
        files=files,
        examples=None if args.examples == "none" else args.examples or entry.capture_examples or None,
    )


def cmd_capture(args, console: Console) -> int:
    settings = capture_settings(args)
    entry = get_model(args.model)
    fmt = get_format(entry.format)
    prompts = load_prompts(settings.suites, settings.limit)
    template = load_template(args.model, model_dir=args.model_dir, gguf=args.gguf)
    backend = open_backend(settings, entry, gguf=args.gguf, model_dir=args.model_dir)
    path = args.out or REPORTS_DIR / args.model / "captures" / capture_key(backend.name, backend.weights.sha256)
    print(f"capturing {len(prompts)} prompts with {backend.name} ({backend.weights.path}) into {path}")
    examples = load_examples(settings.examples) if settings.examples else None

    def show(c) -> None:
        print(f"  {c.prompt_id}: {c.error or c.finish_reason} ({c.tokens} tokens, {c.elapsed_s:.1f} s)")

    run = capture_with(settings, prompts, backend, template, fmt, path, examples=examples, on_capture=show)
    backend.close()
    for note in run.torn:
        print(f"warning: {note}")
    print(f"{run.generated} prompts run, {run.reused} reused; capture errors: {run.errors}")
    if run.stopped:
        print(run.stopped)
    print("  ".join(STATS_HEADER))
    for row in stats_rows({"stats": capture_stats(run.captures, fmt)}):
        print("  ".join(row))
    return 1 if run.captures and run.errors == len(run.captures) else 0  # every capture failed


def cmd_suites(args, console: Console) -> int:
    for source in args.files or suite_names():
        prompts = load_suite(source)
        calls = sum(len(p.calls) for p in prompts)
        tools = sorted({t["function"]["name"] for p in prompts for t in p.tools})
        print(f"{str(source):24s} {len(prompts):3d} prompts, {calls} expected calls; tools: {', '.join(tools)}")
    return 0

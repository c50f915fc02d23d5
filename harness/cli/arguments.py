"""The ``toolcall-harness`` argument tree: each sub-command's flags, and ``command`` = ``"MODULE:FUNCTION"`` in
:mod:`harness.cli` that runs it (loaded when that command runs). Value checks (``count``, ``seconds``...) raise
``argparse.ArgumentTypeError``, which argparse prints as one usage error."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.capture.backends import known_backends
from harness.capture.backends._budget import BASE_BYTES, BYTES_PER_TOKEN, DEADLINE_S
from harness.core.cases import SLICES
from harness.core.errors import HarnessError
from harness.core.guards import MAX_TIME_LIMIT_S, TimeLimitError, checked_time_limit
from harness.core.paths import BASELINES_DIR
from harness.corpus.random_calls import DEFAULT_CUTS, DEFAULT_FULL_EVERY, VALUE_PROFILES
from harness.parse.calls import DEFAULT_BREAK_AFTER
from harness.parse.modes import DEFAULT_MODES, DEFAULT_TIMEOUT_S
from harness.report.sweep import DEFAULT_KEEP
from harness.score.policy import CHOICES, DEFAULT_POLICY, Policy, PolicyError, parse_policy
from harness.template.bounded import DEFAULT_MAX_CHARS, MEMORY_HEADROOM_BYTES
from harness.template.bounded import DEFAULT_TIMEOUT_S as DEFAULT_RENDER_TIMEOUT_S


def count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def non_negative(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def seconds(text: str) -> float:
    """A per-call time limit: more than 0 and at most :data:`~harness.core.guards.MAX_TIME_LIMIT_S` seconds."""
    try:
        return checked_time_limit(float(text))
    except (ValueError, TimeLimitError):
        raise argparse.ArgumentTypeError(
            f"must be more than 0 and at most {MAX_TIME_LIMIT_S:g} seconds, got {text}"
        ) from None


#: the ``--timeout`` help of every command that takes one.
TIMEOUT_HELP = (
    f"seconds per parser call, more than 0 and at most {MAX_TIME_LIMIT_S:g} (default {DEFAULT_TIMEOUT_S:g}); a worker "
    "restarted after a crash or timeout gets as long to start (or twice its first start's time, if longer)"
)


def csv_list(text: str) -> list[str]:
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not parts:
        raise argparse.ArgumentTypeError("empty list")
    return parts


def policy_arg(text: str) -> Policy:
    try:
        return parse_policy(text)
    except PolicyError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def policy_flag(parser: argparse.ArgumentParser, default: Policy | None) -> None:
    """``--policy KEY=VALUE,...``: the judging policy (:mod:`harness.score.policy`)."""
    keys = "; ".join(f"{k}: {'|'.join(v)}" for k, v in CHOICES.items())
    parser.add_argument(
        "--policy",
        type=policy_arg,
        default=default,
        metavar="KEY=VALUE[,...]",
        help=f"judging policy ({keys}; default {DEFAULT_POLICY.describe()})"
        + ("" if default is not None else "; default here: the baseline's"),
    )


def check_choices(what: str, given: list[str], known) -> None:
    unknown = [g for g in given if g not in known]
    if unknown:
        raise HarnessError(f"unknown {what} {', '.join(unknown)}; known: {', '.join(known)}")


def build_parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="toolcall-harness", description="Differential testing and evaluation of LLM tool-call parsers."
    )
    sub = top.add_subparsers(dest="command", required=True)

    ev = sub.add_parser("eval", help="render the model's corpus, run every parser, print the pass-rate table")
    template_args(ev)
    ev.add_argument(
        "--parsers",
        type=csv_list,
        default=None,
        help="comma-separated parser names or aliases; 'all' adds every engine, 'references' is all but own; "
        "cmd:COMMAND (no commas in it); py:MODULE:CLASS or py:FILE.py:CLASS "
        "(default: the in-process parsers for the format)",
    )
    corpus_args(ev)
    ev.add_argument(
        "--out",
        type=Path,
        default=None,
        help="run directory (default: a new reports/<model>/<run-id>); one that holds anything is refused "
        "unless --resume or --force",
    )
    ev.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT_S, help=TIMEOUT_HELP)
    run_folder_args(ev, "eval", "results.jsonl", "run.json")
    ev.add_argument("--no-shrink", action="store_true", help="skip hypothesis shrinking of generated failures")
    ev.add_argument(
        "--no-install",
        action="store_true",
        help="report engines that are not built yet as unavailable instead of building them",
    )
    capture_args(ev)
    ev.add_argument(
        "--captures",
        type=csv_list,
        default=None,
        metavar="FILE[,FILE]",
        help="score these capture files (JSON Lines) instead of generating",
    )
    ev.add_argument("--no-capture", action="store_true", help="skip capturing even when the catalog names a backend")
    policy_flag(ev, DEFAULT_POLICY)
    ev.add_argument(
        "--all-models",
        action="store_true",
        help="run every catalog model (captures off) and print one table per format family",
    )
    ev.set_defaults(command="evaluate:cmd_eval")

    rp = sub.add_parser("report", help="write report.md, report.html and summary.csv again from a run folder")
    rp.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a run folder of eval (holding run.json)")
    rp.add_argument("--show", action="store_true", help="also print the tables eval printed")
    rp.set_defaults(command="evaluate:cmd_report")

    ca = sub.add_parser("capture", help="run a model on the prompt suites and record its raw output (JSON Lines)")
    template_args(ca)
    capture_args(ca)
    ca.add_argument("--out", type=Path, default=None, help="capture file (default reports/<model>/captures/...)")
    ca.set_defaults(command="capture:cmd_capture")

    ck = sub.add_parser("check", help="score an external case file (JSON Lines) with one parser")
    ck.add_argument("file", type=Path)
    ck.add_argument("--parser", required=True)
    ck.add_argument(
        "--modes",
        "--mode",
        dest="mode",
        type=csv_list,
        default=["oneshot"],
        help="modes, comma-separated (default oneshot)",
    )
    ck.add_argument("--format", default=None, help="only cases of this format")
    ck.add_argument("--seed", type=count, default=0)
    ck.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT_S, help=TIMEOUT_HELP)
    ck.add_argument("--out", type=Path, default=None, help="write per-case records here (JSON Lines)")
    ck.add_argument("--no-install", action="store_true", help="do not build a missing engine (report it instead)")
    break_after_flag(ck)
    policy_flag(ck, DEFAULT_POLICY)
    ck.set_defaults(command="info:cmd_check")

    ps = sub.add_parser("parsers", help="list parser names, and why any is unavailable")
    ps.add_argument("--format", default=None)
    ps.add_argument(
        "--worker",
        default=None,
        metavar="NAME",
        help="start one out-of-process parser (engine name or 'cmd:COMMAND') and print its hello",
    )
    ps.set_defaults(command="info:cmd_parsers")

    en = sub.add_parser("engines", help="build and list engine environments (SGLang, vLLM, llama.cpp, ...)")
    en_sub = en.add_subparsers(dest="engines_command", required=True)
    ei = en_sub.add_parser(
        "install", help="build NAME[==VERSION] or NAME@SOURCE (a source tree or wheel) into the user cache"
    )
    ei.add_argument("specs", nargs="+", metavar="NAME[==VERSION]|NAME@SOURCE")
    ei.add_argument("--force", action="store_true", help="rebuild even if installed")
    ei.set_defaults(command="info:cmd_engines_install")
    el = en_sub.add_parser("list", help="known engines, and the environments built (size, build time, recipe)")
    el.set_defaults(command="info:cmd_engines_list")

    su = sub.add_parser("suites", help="list the prompt suites (corpora/suites/) and check their files")
    su.add_argument("files", nargs="*", type=Path, help="suite files to check (default: the shipped suites)")
    su.set_defaults(command="capture:cmd_suites")

    ms = sub.add_parser("models", help="list the model catalog")
    ms.set_defaults(command="info:cmd_models")

    tp = sub.add_parser("template", help="resolve a model's chat template and print its provenance")
    template_args(tp)
    tp.add_argument("--print", action="store_true", help="print the template text too")
    tp.set_defaults(command="info:cmd_template")

    cp = sub.add_parser(
        "corpus", help="write (export) the model's corpus: a case file, or canitoolcall fixtures (--spec canitoolcall)"
    )
    cp.add_argument("action", nargs="?", choices=["export"], default="export", help="export (the only action)")
    template_args(cp)
    cp.add_argument("--seed", type=count, default=0)
    cp.add_argument("--cases", type=count, default=300)
    cp.add_argument(
        "--slices",
        type=csv_list,
        default=None,
        help="default: every slice for --spec cases; curated,generated,drift for --spec canitoolcall",
    )
    cp.add_argument(
        "--spec",
        choices=["cases", "canitoolcall"],
        default="cases",
        help="cases: one JSON Lines case file (--out FILE); canitoolcall: fixture spec v0.1 folder (--out DIR)",
    )
    cp.add_argument(
        "--revision",
        default=None,
        help="canitoolcall: the 40-hex Hugging Face commit of the model (default: the hub commit of its template)",
    )
    cp.add_argument("--out", type=Path, required=True)
    cp.set_defaults(command="info:cmd_corpus")
    _baseline_commands(sub)
    _compare_command(sub)
    _sweep_command(sub)
    return top


def _compare_command(sub) -> None:
    """``compare --parsers A,B`` (:mod:`harness.jobs.compare`): the ``eval`` corpus flags, one run of both."""
    cm = sub.add_parser(
        "compare",
        help="run two parsers (before, after) on one corpus and write compare.md for a pull request: the per-slice "
        "table, every flipped case, the gate's verdict (exit 1 when B regressed on any case)",
    )
    template_args(cm)
    cm.add_argument(
        "--parsers",
        type=csv_list,
        required=True,
        metavar="A,B",
        help="two parser specs as in eval: A (before: main, a release) and B (after: a branch, a fix)",
    )
    corpus_args(cm)
    cm.add_argument(
        "--out",
        type=Path,
        default=None,
        help="run directory, compare.md in it (default: a new reports/<model>/<run-id>); one that holds anything "
        "is refused unless --force",
    )
    cm.add_argument("--force", action="store_true", help="write into a non-empty --out, replacing the run files there")
    cm.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT_S, help=TIMEOUT_HELP)
    break_after_flag(cm)
    cm.add_argument("--no-shrink", action="store_true", help="skip hypothesis shrinking of generated failures")
    cm.add_argument(
        "--no-minimize",
        action="store_true",
        help="skip reducing each flipped case to a minimal failing input (harness/analysis/minimize.py)",
    )
    cm.add_argument("--no-install", action="store_true", help="do not build a missing engine (report it instead)")
    policy_flag(cm, DEFAULT_POLICY)
    cm.set_defaults(command="compare:cmd_compare")


def _sweep_command(sub) -> None:
    """``sweep``: the seeded random sweep (:mod:`harness.jobs.sweep`)."""
    sw = sub.add_parser(
        "sweep",
        help="random tool calls through the real template: one-shot, char-by-char "
        "streaming and truncation checks; prints the wrong/total rate per parser",
    )
    sw.add_argument("--model", default="gemma-4-e2b", help="catalog name (see `toolcall-harness models`)")
    render_limit_args(sw)
    sw.add_argument(
        "--parser",
        "--parsers",
        dest="parsers",
        type=csv_list,
        default=["toolcall-harness"],
        help="parser name(s), comma-separated (default: the project's own parser)",
    )
    sw.add_argument("-n", "--cases", dest="n", type=count, default=2000, help="random cases (default 2000)")
    sw.add_argument("--seed", type=count, default=0, help="case i is built from (seed, i) alone")
    sw.add_argument(
        "--values",
        choices=tuple(VALUE_PROFILES),
        default="mixed",
        help="string value profile: mixed (default) or code (plain quotes, backticks, commas, closers)",
    )
    sw.add_argument("--jobs", type=positive, default=None, help="processes (default: every CPU)")
    sw.add_argument(
        "--out",
        type=Path,
        default=None,
        help="run directory (default: a new reports/<model>/sweep-<time>); one that holds anything is refused "
        "unless --resume or --force",
    )
    sw.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT_S, help=TIMEOUT_HELP)
    run_folder_args(sw, "sweep", "batches.jsonl", "summary.json")
    sw.add_argument("--cuts", type=count, default=DEFAULT_CUTS, help="seeded random truncation cuts per case")
    sw.add_argument(
        "--full-every",
        type=count,
        default=DEFAULT_FULL_EVERY,
        help="truncate at every position on every Nth case (0: never)",
    )
    sw.add_argument(
        "--keep",
        type=count,
        default=DEFAULT_KEEP,
        help="failure lines written per (parser, check, error type); counts stay exact",
    )
    sw.add_argument("--repros", type=count, default=10, help="failure groups to minimize (default 10)")
    sw.add_argument("--budget", type=count, default=300, help="checks per minimization (default 300)")
    sw.set_defaults(command="gate:cmd_sweep")


def _baseline_commands(sub) -> None:
    """``baseline save`` and ``gate`` (:mod:`harness.jobs.gate`)."""
    bl = sub.add_parser("baseline", help="store per-case verdicts of parsers, for `gate` to compare with")
    bl_sub = bl.add_subparsers(dest="baseline_command", required=True)
    bs = bl_sub.add_parser("save", help="run the corpus and write reports/baselines/<model>/<parser>.json")
    template_args(bs)
    bs.add_argument(
        "--parsers",
        type=csv_list,
        default=None,
        help="parsers as in eval (default: the in-process parsers for the format); one baseline each",
    )
    corpus_args(bs)
    bs.add_argument(
        "--compact",
        action="store_true",
        help="leave out case texts and the outputs of passing results (pinned verdicts kept in a repository)",
    )
    policy_flag(bs, DEFAULT_POLICY)
    gate_common_args(bs, BASELINES_DIR)
    bs.set_defaults(command="gate:cmd_baseline_save")

    gt = sub.add_parser(
        "gate", help="rerun saved baselines and compare case by case (exit 1 on any regression; --strict: any change)"
    )
    gt.add_argument("--model", default=None, help="catalog name (default: the --baseline file's, else gemma-4-e2b)")
    gt.add_argument(
        "--model-dir", default=None, help="template from this model directory instead of the recorded source"
    )
    gt.add_argument("--gguf", default=None, help="template from this GGUF instead of the recorded source")
    render_limit_args(gt)
    gt.add_argument(
        "--parsers",
        type=csv_list,
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
    policy_flag(gt, None)
    gt.add_argument(
        "--no-minimize",
        action="store_true",
        help="skip reducing each regressed case to a minimal failing input (harness/analysis/minimize.py)",
    )
    gt.add_argument(
        "--strict",
        action="store_true",
        help="fail on any difference (fixes, changed fault classes or outputs, missing results), not only regressions",
    )
    gate_common_args(gt, BASELINES_DIR)
    gt.set_defaults(command="gate:cmd_gate")


def corpus_args(cmd: argparse.ArgumentParser) -> None:
    """Which corpus, which modes: ``--modes``, ``--slices``, ``--seed``, ``--cases`` (eval, compare, baseline)."""
    cmd.add_argument("--modes", type=csv_list, default=list(DEFAULT_MODES), help=f"default: {','.join(DEFAULT_MODES)}")
    cmd.add_argument("--slices", type=csv_list, default=list(SLICES), help=f"default: {','.join(SLICES)}")
    cmd.add_argument("--seed", type=count, default=0, help="seed for generated cases and random chunkings")
    cmd.add_argument("--cases", type=count, default=300, help="number of generated (property-based) cases")


def gate_common_args(cmd: argparse.ArgumentParser, baselines_dir: Path) -> None:
    cmd.add_argument("--dir", type=Path, default=baselines_dir, help=f"baselines folder (default {baselines_dir})")
    cmd.add_argument("--out", type=Path, default=None, help="folder for the run directories (default reports/<model>)")
    cmd.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT_S, help=TIMEOUT_HELP)
    cmd.add_argument("--no-install", action="store_true", help="do not build a missing engine (report it instead)")


def render_limit_args(cmd: argparse.ArgumentParser) -> None:
    """``--render-timeout`` and ``--render-max-chars``: the bounds of each template render
    (:mod:`harness.template.bounded`)."""
    cmd.add_argument(
        "--render-timeout",
        type=seconds,
        default=DEFAULT_RENDER_TIMEOUT_S,
        metavar="SECONDS",
        help=f"seconds one chat-template render may take, more than 0 and at most {MAX_TIME_LIMIT_S:g} "
        f"(default {DEFAULT_RENDER_TIMEOUT_S:g}); renders run in a worker process, killed past it",
    )
    cmd.add_argument(
        "--render-max-chars",
        type=positive,
        default=DEFAULT_MAX_CHARS,
        metavar="N",
        help=f"characters one render may write (default {DEFAULT_MAX_CHARS:,}); its memory is capped too "
        f"(the worker's size at start plus {MEMORY_HEADROOM_BYTES >> 20} MiB, Linux)",
    )


def run_folder_args(cmd: argparse.ArgumentParser, name: str, journal: str, settings: str) -> None:
    """``--resume RUN_DIR``, ``--force`` and ``--break-after N`` of ``eval`` and ``sweep``."""
    cmd.add_argument(
        "--resume",
        type=Path,
        default=None,
        metavar="RUN_DIR",
        help=f"continue the {name} run in RUN_DIR that was stopped or killed, from what its {journal} holds (a torn "
        f"last line is dropped), so its files end as an uninterrupted run's; give the run's flags (checked against "
        f"its {settings})",
    )
    cmd.add_argument("--force", action="store_true", help="write into a non-empty --out, replacing the run files there")
    break_after_flag(cmd)


def break_after_flag(cmd: argparse.ArgumentParser) -> None:
    """``--break-after N``: the circuit breaker (:class:`harness.parse.calls.Breaker`)."""
    cmd.add_argument(
        "--break-after",
        type=count,
        default=DEFAULT_BREAK_AFTER,
        metavar="N",
        help="mark a parser broken after N cases in a row on which it timed out or its worker crashed: it is not "
        "called again and its remaining results are error/unavailable, with the reason "
        f"(0: never; default {DEFAULT_BREAK_AFTER})",
    )


def resumed_out(args) -> tuple[Path | None, bool]:
    """``(run folder, resume)`` from ``--out``, ``--resume`` and ``--force``; raises :class:`HarnessError` when
    they contradict each other."""
    if args.resume is None:
        return args.out, False
    if args.force:
        raise HarnessError("--resume continues a run and --force replaces one: give one of them")
    if args.out is not None and args.out.resolve() != args.resume.resolve():
        raise HarnessError(f"--resume {args.resume} and --out {args.out} name two folders: give one")
    return args.resume, True


def template_args(cmd: argparse.ArgumentParser) -> None:
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
    render_limit_args(cmd)


def capture_args(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--backend",
        choices=known_backends(),
        default=None,
        help="capture with this backend (default: the catalog's capture_backend for the model)",
    )
    sub.add_argument(
        "--suites", type=csv_list, default=None, help="suite names or files (default: every shipped suite)"
    )
    sub.add_argument("--capture-limit", type=count, default=None, metavar="N", help="first N prompts of each suite")
    sub.add_argument("--max-tokens", type=positive, default=256, help="completion tokens per prompt (default 256)")
    sub.add_argument("--temperature", type=non_negative, default=0.0, help="0 = greedy (default)")
    sub.add_argument("--capture-seed", type=count, default=0, help="sampler seed (default 0)")
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
    sub.add_argument("--concurrency", type=positive, default=4, help="openai backend: requests in flight (default 4)")
    sub.add_argument(
        "--request-deadline",
        type=seconds,
        default=DEADLINE_S,
        metavar="SECONDS",
        help=f"openai backend: seconds one prompt may take, retries included; past it the capture is an error "
        f"and the run goes on (default {DEADLINE_S:g})",
    )
    sub.add_argument(
        "--max-bytes-per-token",
        type=positive,
        default=BYTES_PER_TOKEN,
        metavar="N",
        help=f"openai backend: a response may hold {BASE_BYTES // 1024} KiB plus N bytes per --max-tokens token; "
        f"more is a capture error (default {BYTES_PER_TOKEN})",
    )
    sub.add_argument(
        "--examples",
        default=None,
        metavar="NAME",
        help="few-shot turns before each prompt: corpora/fewshot/NAME.json or a .json file (default: "
        "the catalog's capture_examples; 'none' for none)",
    )

"""Baseline files: per-case verdicts of one parser on one corpus, saved once for the gate to compare with.

``toolcall-harness baseline save`` runs :func:`harness.jobs.evaluate.run_eval` for each parser and writes
``reports/baselines/<model>/<parser-slug>.json`` (:func:`save_baselines`); :mod:`harness.jobs.gate` reruns and
compares. The corpus is identified by :func:`corpus_hash` over :func:`corpus_inputs`: the template's sha256,
:data:`harness.corpus.generated.GENERATOR_VERSION`, the seed, the number of generated cases, the slices, the sorted
case ids and a digest of every case (text, expected message, tools, prefix, kind).

Baseline file (JSON): ``schema``, ``model``, ``format``, ``created``, ``commit`` (``git describe``),
``parser`` ``{spec, name, library, version}`` (``spec`` is what ``--parsers`` named: it is rerun by it),
``settings`` ``{seed, n_generated, slices, modes, model_dir, gguf}``, ``corpus`` ``{hash, inputs}``,
``run_dir``, ``cases`` ``{id: {slice, digest, text, expected}}`` and ``results`` ``[{case_id, slice, mode,
verdict, error_type, detail, got}]``, one result per line. A *compact* baseline (``--compact``, the engine pins in
``tests/engines/pins/``) leaves out each case's ``text`` and ``expected`` (the gate shows them from the rebuilt
corpus) and the ``got`` of passing results (``null``: the case's expected message, as judged).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from harness.core.cases import SLICES, Case, load_cases
from harness.core.errors import HarnessError, TemplateNotFoundError
from harness.core.paths import BASELINES_DIR
from harness.core.paths import new_run_dir as fresh_run_dir
from harness.core.results import PASSING
from harness.core.textio import write_text
from harness.corpus.build import build_corpus
from harness.corpus.generated import GENERATOR_VERSION
from harness.formats import case_formats, get_format
from harness.jobs.evaluate import REPORTS_DIR, EvalConfig, harness_commit, run_eval
from harness.parse.modes import DEFAULT_MODES, DEFAULT_TIMEOUT_S
from harness.parse.registry import available_parsers, expand_names
from harness.report.gate import some_ids
from harness.report.progress import ConsoleProgress
from harness.report.terminal import show_run
from harness.score.policy import DEFAULT_POLICY, Policy
from harness.template.catalog import get_model
from harness.template.sources import load_template

if TYPE_CHECKING:
    from harness.template.sources import ChatTemplate

SCHEMA = 1


class BaselineError(HarnessError):
    """A baseline that is missing (the message says how to create it) or not a baseline file (names it)."""


@dataclass(frozen=True)
class RunSettings:
    """What fixes a baseline's corpus and run: the ``eval`` flags of the same names."""

    model: str = "gemma-4-e2b"
    seed: int = 0
    n_generated: int = 300
    slices: tuple[str, ...] = SLICES
    modes: tuple[str, ...] = DEFAULT_MODES
    model_dir: str | None = None
    gguf: str | None = None
    policy: Policy = DEFAULT_POLICY

    def to_json(self) -> dict:
        return {**asdict(self), "slices": list(self.slices), "modes": list(self.modes), "policy": self.policy.to_json()}

    @classmethod
    def from_json(cls, data: dict) -> RunSettings:
        return cls(
            model=data["model"],
            seed=int(data["seed"]),
            n_generated=int(data["n_generated"]),
            slices=tuple(data["slices"]),
            modes=tuple(data["modes"]),
            model_dir=data.get("model_dir"),
            gguf=data.get("gguf"),
            policy=Policy.from_json(data.get("policy")),  # a baseline saved before policies: the default
        )


# --- corpus identity ---------------------------------------------------------------------------------


def build_cases(settings: RunSettings) -> tuple[list[Case], ChatTemplate | None, tuple[str, ...]]:
    """The corpus ``run_eval`` runs for ``settings``: ``(cases, template or None, slices)``.

    Follows run_eval's rule: a model with no template anywhere (FunctionGemma) runs only its observed
    cases. Raises the ``HarnessError`` subclasses of template loading and corpus building.
    """
    entry = get_model(settings.model)
    slices = settings.slices
    try:
        template = load_template(settings.model, model_dir=settings.model_dir, gguf=settings.gguf)
    except TemplateNotFoundError:
        if entry.offline_template or settings.model_dir or settings.gguf or "observed" not in slices:
            raise
        template, slices = None, ("observed",)
    corpus = build_corpus(
        template, get_format(entry.format), seed=settings.seed, n_generated=settings.n_generated, slices=slices
    )
    return corpus.cases, template, slices


def case_digest(case: Case) -> str:
    """sha256 (hex, 16 digits) of what a verdict depends on: text, expected message, tools, prefix, kind."""
    payload = [case.text, case.expected.to_json(), case.tools, case.prefix, case.kind]
    return _sha(json.dumps(payload, ensure_ascii=False, sort_keys=True))[:16]


def corpus_inputs(settings: RunSettings, cases: list[Case], template, slices: tuple[str, ...]) -> dict:
    """The inputs :func:`corpus_hash` covers (recorded in the baseline to explain a mismatch); ``template``
    is the :class:`harness.template.sources.ChatTemplate` that rendered ``cases``, or None (observed cases only)."""
    template_sha256 = template.sha256 if template is not None else "none"
    ids = sorted(c.id for c in cases)
    digests = sorted(f"{c.id}\t{case_digest(c)}" for c in cases)
    return {
        "template_sha256": template_sha256,
        "generator_version": GENERATOR_VERSION,
        "seed": settings.seed,
        "n_generated": settings.n_generated,
        "slices": list(slices),
        "n_cases": len(cases),
        "case_ids_sha256": _sha("\n".join(ids)),
        "cases_sha256": _sha("\n".join(digests)),
    }


def corpus_hash(inputs: dict) -> str:
    """sha256 (hex) of :func:`corpus_inputs`."""
    return _sha(json.dumps(inputs, sort_keys=True))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --- running -----------------------------------------------------------------------------------------


@dataclass
class ParserRun:
    run_dir: Path
    parser: dict  # {name, library, version}
    records: list[dict]


def run_parser(
    settings: RunSettings,
    spec: str,
    cases: list[Case],
    run_dir: Path,
    console: Console,
    timeout_s: float,
    shrink: bool,
    install_missing: bool,
) -> ParserRun:
    """One ``run_eval`` of parser ``spec`` (captures off); its records and the parser's identity. Raises
    ``HarnessError`` if the corpus it ran is not ``cases`` (the corpus that was hashed)."""
    config = EvalConfig(
        model=settings.model,
        parsers=[spec],
        modes=settings.modes,
        slices=settings.slices,
        seed=settings.seed,
        n_generated=settings.n_generated,
        model_dir=settings.model_dir,
        gguf=settings.gguf,
        out_dir=run_dir,
        timeout_s=timeout_s,
        shrink=shrink,
        install_missing=install_missing,
        no_capture=True,
        policy=settings.policy,
    )
    log = run_eval(config, progress=ConsoleProgress(console))
    show_run(console, log)
    _check_ran(log.run_dir / "corpus.jsonl", cases)
    ((name, identity),) = log.provenance.parsers.items()
    return ParserRun(log.run_dir, {"name": name, **identity}, [r for r in log.records if r["parser"] == name])


def _check_ran(corpus_file: Path, cases: list[Case]) -> None:

    ran = {c.id: case_digest(c) for c in load_cases(corpus_file, formats=case_formats())}
    hashed = {c.id: case_digest(c) for c in cases}
    if ran != hashed:
        differ = sorted(k for k in ran.keys() | hashed.keys() if ran.get(k) != hashed.get(k))
        raise HarnessError(
            f"{corpus_file}: the run's corpus differs from the one hashed in {len(differ)} cases "
            f"({some_ids(differ)}): corpus building is not reproducible here"
        )


def new_run_dir(root: Path, kind: str, spec: str) -> Path:
    """A fresh, empty run folder ``root/<kind>-<timestamp>-<parser>[-N]`` (:func:`harness.core.paths.new_run_dir`)."""
    return fresh_run_dir(root, f"{kind}-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}-{slug(spec)}")


def slug(name: str) -> str:
    """A file-name form of a parser name or spec (``toolcall-harness:gemma4`` → ``toolcall-harness_gemma4``)."""
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", name).strip("_")[:120] or "parser"


# --- saving and loading ------------------------------------------------------------------------------


def save_baselines(
    settings: RunSettings,
    specs: list[str] | None,
    baseline_dir: Path = BASELINES_DIR,
    runs_root: Path | None = None,
    console: Console | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    install_missing: bool = True,
    compact: bool = False,
) -> list[Path]:
    """Run each parser of ``specs`` (None: every in-process parser of the model's format) on the corpus of
    ``settings`` and write one baseline per parser to ``baseline_dir/<model>/<slug of parser name>.json``
    (overwriting; ``compact``: without case texts and passing outputs, see the module docstring). Run
    directories go under ``runs_root`` (default ``reports/<model>``). Returns the paths. Raises
    ``HarnessError`` subclasses for bad input (unknown model or parser, a template that fails)."""
    console = console or Console()
    fmt = get_format(get_model(settings.model).format).name
    specs = list(available_parsers(fmt)) if specs is None else expand_names(specs, fmt)
    cases, template, slices = build_cases(settings)
    settings = replace(settings, slices=slices)
    inputs = corpus_inputs(settings, cases, template, slices)
    runs_root = runs_root or REPORTS_DIR / settings.model
    paths = []
    for spec in specs:
        run = run_parser(
            settings, spec, cases, new_run_dir(runs_root, "baseline", spec), console, timeout_s, False, install_missing
        )
        data = {
            "schema": SCHEMA,
            "model": settings.model,
            "format": fmt,
            "created": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
            "commit": harness_commit(),
            "parser": {"spec": spec, **run.parser},
            "settings": settings.to_json(),
            "corpus": {"hash": corpus_hash(inputs), "inputs": inputs},
            "run_dir": str(run.run_dir),
            "cases": {c.id: _case_entry(c, compact) for c in cases},
            "results": [result_fields(r, compact) for r in run.records],
        }
        path = Path(baseline_dir) / settings.model / f"{slug(run.parser['name'])}.json"
        write_baseline(path, data)
        passed = sum(r["verdict"] in PASSING for r in run.records)
        console.print(
            f"baseline saved: {path} ({run.parser['name']} {run.parser['version']}: {passed}/"
            f"{len(run.records)} case×mode results pass; corpus {corpus_hash(inputs)[:12]}…)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        paths.append(path)
    return paths


def _case_entry(case: Case, compact: bool) -> dict:
    entry = {"slice": case.slice, "digest": case_digest(case)}
    return entry if compact else {**entry, "text": case.text, "expected": case.expected.to_json()}


def result_fields(record: dict, compact: bool = False) -> dict:
    """The fields of a result record a baseline keeps (``compact``: a passing result keeps only its case, slice,
    mode, verdict and a non-empty detail; readers take a missing field as None)."""
    out = {k: record.get(k) for k in ("case_id", "slice", "mode", "verdict", "error_type", "detail", "got")}
    if compact and out["verdict"] == "pass":
        out = {k: v for k, v in out.items() if k in ("case_id", "slice", "mode", "verdict") or v}
        out.pop("got", None)
    return out


def write_baseline(path: Path, data: dict) -> None:
    """Write baseline ``data`` to ``path`` (folders made): indented JSON with one result per line, so a saved
    baseline's diff shows the (case, mode) results that changed."""
    head = {k: v for k, v in data.items() if k != "results"}
    text = json.dumps(head, ensure_ascii=False, indent=1)[: -len("\n}")]
    rows = ",\n  ".join(json.dumps(r, ensure_ascii=False, sort_keys=False) for r in data["results"])
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, f'{text},\n "results": [\n  {rows}\n ]\n}}\n' if rows else f'{text},\n "results": []\n}}\n')


REQUIRED = (
    "schema",
    "model",
    "parser.spec",
    "parser.name",
    "settings.seed",
    "settings.n_generated",
    "settings.slices",
    "settings.modes",
    "corpus.hash",
    "corpus.inputs",
    "cases",
    "results",
)


def load_baseline(path: Path) -> dict:
    """Read a baseline file. Raises :class:`BaselineError`: a missing file (with the command that creates
    one), a file that is not JSON (with line and column) or lacks a field of :data:`REQUIRED`."""
    path = Path(path)
    if not path.is_file():
        raise BaselineError(
            f"{path}: no such baseline; create one with `toolcall-harness baseline save "
            "--model MODEL --parsers PARSER` (or `make baseline MODEL=... PARSERS=...`)"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise BaselineError(f"{path}: not a baseline file: not UTF-8 text ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise BaselineError(
            f"{path}: not a baseline file: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    for dotted in REQUIRED:
        value = data
        for key in dotted.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        if value is None:
            raise BaselineError(f"{path}: not a baseline file: missing field {dotted!r}")
    if data["schema"] != SCHEMA:
        raise BaselineError(f"{path}: baseline schema {data['schema']!r}, this harness reads {SCHEMA}; save it again")
    return data


def save_command(settings: dict, spec: str) -> str:
    parts = [
        f"toolcall-harness baseline save --model {settings['model']} --parsers {spec}",
        f"--seed {settings['seed']} --cases {settings['n_generated']}",
        f"--slices {','.join(settings['slices'])} --modes {','.join(settings['modes'])}",
    ]
    for flag in ("model_dir", "gguf"):
        if settings.get(flag):
            parts.append(f"--{flag.replace('_', '-')} {settings[flag]}")
    policy = Policy.from_json(settings.get("policy"))
    if policy != DEFAULT_POLICY:
        parts.append(f"--policy {policy.describe()}")
    return " ".join(parts)

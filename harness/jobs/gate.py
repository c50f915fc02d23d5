"""Baselines and the regression gate: per-case verdicts stored once, compared case by case on every rerun.

``toolcall-harness baseline save`` runs :func:`harness.jobs.evaluate.run_eval` for each parser and writes
``reports/baselines/<model>/<parser-slug>.json`` (:func:`save_baselines`). ``toolcall-harness gate`` reruns
each baseline's parser (or a candidate) on the same corpus with the recorded settings and compares
(:func:`run_gate`): a (case, mode) that passed and now does not is a *regression*, one that did not pass and
now does is a *fix*.

The corpus is identified by :func:`corpus_hash` over :func:`corpus_inputs`: the template's sha256,
:data:`harness.corpus.generated.GENERATOR_VERSION`, the seed, the number of generated cases, the slices, the sorted
case ids and a digest of every case (text, expected message, tools, prefix, kind). The gate rebuilds the corpus before
running anything; a different hash raises :class:`CorpusMismatchError` naming the inputs that differ (and
which cases were added, removed or changed), so verdicts of two different corpora are never compared.

Baseline file (JSON): ``schema``, ``model``, ``format``, ``created``, ``commit`` (``git describe``),
``parser`` ``{spec, name, library, version}`` (``spec`` is what ``--parsers`` named: it is rerun by it),
``settings`` ``{seed, n_generated, slices, modes, model_dir, gguf}``, ``corpus`` ``{hash, inputs}``,
``run_dir``, ``cases`` ``{id: {slice, digest, text, expected}}`` and ``results`` ``[{case_id, slice, mode,
verdict, error_type, detail, got}]``.
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

from harness.analysis.minimize import MODE_COST, minimize_case
from harness.core.cases import SLICES, Case, load_cases
from harness.core.errors import HarnessError, TemplateNotFoundError
from harness.core.paths import BASELINES_DIR
from harness.corpus.build import build_corpus
from harness.corpus.generated import GENERATOR_VERSION
from harness.engines.client import runs_out_of_process
from harness.formats import case_formats, get_format
from harness.jobs.evaluate import REPORTS_DIR, EvalConfig, harness_commit, run_eval
from harness.parse import registry
from harness.parse.loader import load_parser_object
from harness.parse.modes import DEFAULT_MODES, DEFAULT_TIMEOUT_S, ROUNDTRIP
from harness.parse.registry import available_parsers, get_any_parser
from harness.report.gate import SHOWN_CASES, Flip, GateResult, _by_case, _some, gate_markdown, print_result
from harness.report.progress import ConsoleProgress
from harness.report.terminal import show_run
from harness.template.catalog import get_model
from harness.template.sources import load_template

if TYPE_CHECKING:
    from harness.template.sources import ChatTemplate

SCHEMA = 1
"""Flipped cases printed in full on the terminal; ``gate.md`` in the run directory lists them all."""


class BaselineError(HarnessError):
    """A baseline that is missing (the message says how to create it) or not a baseline file (names it)."""


class CorpusMismatchError(HarnessError):
    """The corpus rebuilt now is not the baseline's; the message lists the inputs that differ."""


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

    def to_json(self) -> dict:
        return {**asdict(self), "slices": list(self.slices), "modes": list(self.modes)}

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


def check_same_corpus(baseline: dict, path: Path, inputs: dict, cases: list[Case], settings: RunSettings) -> None:
    """Raise :class:`CorpusMismatchError` unless ``inputs`` hash like the baseline's corpus; the message
    lists each differing input, the cases only in the baseline, only now, or changed, and the command that
    saves a baseline with ``settings`` (those of the rerun)."""
    if corpus_hash(inputs) == baseline["corpus"]["hash"]:
        return
    recorded = baseline["corpus"]["inputs"]
    case_keys = ("case_ids_sha256", "cases_sha256")  # explained case by case below
    lines = [
        f"  {key}: baseline {recorded.get(key)!r}, now {value!r}"
        for key, value in inputs.items()
        if recorded.get(key) != value and key not in case_keys
    ]
    then = {cid: c["digest"] for cid, c in baseline["cases"].items()}
    now = {c.id: case_digest(c) for c in cases}
    for label, ids in (
        ("cases only in the baseline", sorted(then.keys() - now.keys())),
        ("cases only now", sorted(now.keys() - then.keys())),
        (
            "cases whose text, expected message, tools or prefix changed",
            sorted(k for k in then.keys() & now.keys() if then[k] != now[k]),
        ),
    ):
        if ids:
            lines.append(f"  {label}: {len(ids)} ({_some(ids)})")
    if not lines:
        lines.append(f"  hash inputs: baseline {recorded}, now {inputs}")
    raise CorpusMismatchError(
        f"{path}: the corpus differs from the baseline's (hash {baseline['corpus']['hash'][:12]}… vs "
        f"{corpus_hash(inputs)[:12]}…), so its verdicts cannot be compared case by case:\n"
        + "\n".join(lines)
        + "\nIf the change is intended, save a new baseline: "
        + _save_command(settings.to_json(), baseline["parser"]["spec"])
    )


# --- running -----------------------------------------------------------------------------------------


@dataclass
class _Run:
    run_dir: Path
    parser: dict  # {name, library, version}
    records: list[dict]


def _run(
    settings: RunSettings,
    spec: str,
    cases: list[Case],
    run_dir: Path,
    console: Console,
    timeout_s: float,
    shrink: bool,
    install_missing: bool,
) -> _Run:
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
    )
    log = run_eval(config, progress=ConsoleProgress(console))
    show_run(console, log)
    _check_ran(log.run_dir / "corpus.jsonl", cases)
    ((name, identity),) = log.provenance.parsers.items()
    return _Run(log.run_dir, {"name": name, **identity}, [r for r in log.records if r["parser"] == name])


def _check_ran(corpus_file: Path, cases: list[Case]) -> None:

    ran = {c.id: case_digest(c) for c in load_cases(corpus_file, formats=case_formats())}
    hashed = {c.id: case_digest(c) for c in cases}
    if ran != hashed:
        differ = sorted(k for k in ran.keys() | hashed.keys() if ran.get(k) != hashed.get(k))
        raise HarnessError(
            f"{corpus_file}: the run's corpus differs from the one hashed in {len(differ)} cases "
            f"({_some(differ)}): corpus building is not reproducible here"
        )


def _new_run_dir(root: Path, kind: str, spec: str) -> Path:
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = root / f"{kind}-{stamp}-{slug(spec)}"
    n = 2
    while path.exists():
        path, n = root / f"{kind}-{stamp}-{slug(spec)}-{n}", n + 1
    return path


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
) -> list[Path]:
    """Run each parser of ``specs`` (None: every in-process parser of the model's format) on the corpus of
    ``settings`` and write one baseline per parser to ``baseline_dir/<model>/<slug of parser name>.json``
    (overwriting). Run directories go under ``runs_root`` (default ``reports/<model>``). Returns the paths.
    Raises ``HarnessError`` subclasses for bad input (unknown model or parser, a template that fails)."""
    console = console or Console()
    fmt = get_format(get_model(settings.model).format).name
    if specs is None:
        specs = list(available_parsers(fmt))
    cases, template, slices = build_cases(settings)
    settings = replace(settings, slices=slices)
    inputs = corpus_inputs(settings, cases, template, slices)
    runs_root = runs_root or REPORTS_DIR / settings.model
    paths = []
    for spec in specs:
        run = _run(
            settings, spec, cases, _new_run_dir(runs_root, "baseline", spec), console, timeout_s, False, install_missing
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
            "cases": {
                c.id: {"slice": c.slice, "digest": case_digest(c), "text": c.text, "expected": c.expected.to_json()}
                for c in cases
            },
            "results": [_result(r) for r in run.records],
        }
        path = Path(baseline_dir) / settings.model / f"{slug(run.parser['name'])}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        passed = sum(r["verdict"] == "pass" for r in run.records)
        console.print(
            f"baseline saved: {path} ({run.parser['name']} {run.parser['version']}: {passed}/"
            f"{len(run.records)} case×mode results pass; corpus {corpus_hash(inputs)[:12]}…)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        paths.append(path)
    return paths


def _result(record: dict) -> dict:
    return {k: record.get(k) for k in ("case_id", "slice", "mode", "verdict", "error_type", "detail", "got")}


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


def _save_command(settings: dict, spec: str) -> str:
    parts = [
        f"toolcall-harness baseline save --model {settings['model']} --parsers {spec}",
        f"--seed {settings['seed']} --cases {settings['n_generated']}",
        f"--slices {','.join(settings['slices'])} --modes {','.join(settings['modes'])}",
    ]
    for flag in ("model_dir", "gguf"):
        if settings.get(flag):
            parts.append(f"--{flag.replace('_', '-')} {settings[flag]}")
    return " ".join(parts)


# --- the gate ----------------------------------------------------------------------------------------


def select_baselines(
    model: str | None, specs: list[str] | None, baseline_file: Path | None, baseline_dir: Path = BASELINES_DIR
) -> list[tuple[Path, dict, str]]:
    """``[(path, baseline, parser spec to run)]`` for a gate.

    - ``baseline_file``: that baseline, run with the one spec in ``specs`` (a candidate) or its own spec;
    - else ``specs``: for each, the baseline in ``baseline_dir/<model>/`` recorded with that spec or for the
      parser it names (a ``py:`` candidate whose class keeps the registered name finds that parser's
      baseline);
    - else every baseline in ``baseline_dir/<model>/``.

    Raises :class:`BaselineError` when a baseline is missing (saying how to create it), or for a model
    that contradicts the baseline file's.
    """
    if baseline_file is not None:
        baseline = load_baseline(baseline_file)
        if model is not None and model != baseline["model"]:
            raise BaselineError(f"{baseline_file}: a baseline of {baseline['model']}, not {model}")
        if specs is not None and len(specs) != 1:
            raise BaselineError("--baseline FILE compares one parser: pass at most one name in --parsers")
        return [(Path(baseline_file), baseline, specs[0] if specs else baseline["parser"]["spec"])]
    model = model or "gemma-4-e2b"
    folder = Path(baseline_dir) / model
    found = {path: load_baseline(path) for path in sorted(folder.glob("*.json"))} if folder.is_dir() else {}
    if specs is None:
        if not found:
            raise BaselineError(
                f"no baseline for {model} in {folder}: create one with `toolcall-harness baseline "
                f"save --model {model} --parsers PARSER` (or `make baseline MODEL={model}`)"
            )
        return [(path, data, data["parser"]["spec"]) for path, data in found.items()]
    chosen = []
    for spec in specs:
        names = {spec, _parser_name(spec, model)}
        match = [(p, d) for p, d in found.items() if d["parser"]["spec"] in names or d["parser"]["name"] in names]
        if not match:
            have = ", ".join(d["parser"]["name"] for d in found.values()) or "none"
            raise BaselineError(
                f"no baseline for parser {spec} of {model} in {folder} (baselines there: {have}); "
                f"create one with `toolcall-harness baseline save --model {model} --parsers {spec}`, "
                "or name one with --baseline FILE"
            )
        chosen.append((*match[0], spec))
    return chosen


def _parser_name(spec: str, model: str) -> str:
    """The registered name ``spec`` designates (an alias or a ``py:`` candidate's ``name``), else ``spec``."""
    fmt = get_model(model).format
    if spec.startswith("py:"):
        return str(getattr(load_parser_object(spec[3:]), "name", spec))
    try:
        return registry.resolve(spec, fmt)
    except KeyError:
        return spec


def compare(baseline_results: list[dict], records: list[dict]) -> tuple[list[Flip], list[Flip], int, int, int]:
    """``(regressions, fixes, compared, missing, extra)`` between baseline results and new records, keyed by
    (case_id, mode). A regression passed in the baseline and does not now; a fix is the reverse."""
    then = {(r["case_id"], r["mode"]): r for r in baseline_results}
    now = {(r["case_id"], r["mode"]): r for r in records}
    regressions: list[Flip] = []
    fixes: list[Flip] = []
    for key in then.keys() & now.keys():
        a, b = then[key], now[key]
        if (a["verdict"] == "pass") != (b["verdict"] == "pass"):
            flip = Flip(key[0], key[1], a.get("slice", ""), _result(a), _result(b))
            (fixes if b["verdict"] == "pass" else regressions).append(flip)

    def order(flip: Flip) -> tuple[str, str]:
        return flip.case_id, flip.mode

    return (
        sorted(regressions, key=order),
        sorted(fixes, key=order),
        len(then.keys() & now.keys()),
        len(then.keys() - now.keys()),
        len(now.keys() - then.keys()),
    )


def run_gate(
    model: str | None = None,
    specs: list[str] | None = None,
    baseline_file: Path | None = None,
    baseline_dir: Path = BASELINES_DIR,
    runs_root: Path | None = None,
    console: Console | None = None,
    model_dir: str | None = None,
    gguf: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    shrink: bool = False,
    install_missing: bool = True,
    minimize: bool = True,
) -> list[GateResult]:
    """Rerun each selected baseline (:func:`select_baselines`) with its recorded settings (``model_dir`` /
    ``gguf`` override the recorded template source) and compare case by case; prints each result
    (:func:`print_result`) and writes ``gate.md`` into each run directory. With ``minimize``, the first
    :data:`SHOWN_CASES` regressed cases get a minimal failing input (:func:`_minimize`).

    Raises :class:`BaselineError` and :class:`CorpusMismatchError` (checked before any parser runs)."""
    console = console or Console()
    results = []
    for path, baseline, spec in select_baselines(model, specs, baseline_file, baseline_dir):
        settings = RunSettings.from_json({**baseline["settings"], "model": baseline["model"]})
        if model_dir or gguf:
            settings = replace(settings, model_dir=model_dir, gguf=gguf)
        cases, template, slices = build_cases(settings)
        check_same_corpus(baseline, path, corpus_inputs(settings, cases, template, slices), cases, settings)
        root = runs_root or REPORTS_DIR / settings.model
        run = _run(
            replace(settings, slices=slices),
            spec,
            cases,
            _new_run_dir(root, "gate", spec),
            console,
            timeout_s,
            shrink,
            install_missing,
        )
        regressions, fixes, compared, missing, extra = compare(baseline["results"], run.records)
        result = GateResult(
            path,
            baseline,
            f"{run.parser['name']} {run.parser['version']}",
            run.run_dir,
            regressions,
            fixes,
            compared,
            missing,
            extra,
        )
        if minimize and regressions:
            result.minimal = _minimize(
                regressions, spec, {c.id: c for c in cases}, template, settings, timeout_s, console
            )
        texts = {c.id: (c.text, c.expected.to_json()) for c in cases}
        print_result(console, result, texts)
        (run.run_dir / "gate.md").write_text("\n".join(gate_markdown(result, texts)) + "\n", encoding="utf-8")
        results.append(result)
    return results


def _minimize(
    regressions: list[Flip],
    spec: str,
    cases: dict[str, Case],
    template,
    settings: RunSettings,
    timeout_s: float,
    console: Console,
) -> dict[str, dict]:
    """``{case id: minimal failing input}`` for the first :data:`SHOWN_CASES` regressed cases, each in its
    cheapest regressed mode, by :func:`harness.analysis.minimize.minimize_case` (structure reduction through the
    template, or ddmin for self-contained faults); only results shorter than the case are kept. A
    minimizer failure is reported and skipped (the gate's verdict stands)."""
    fmt = get_format(get_model(settings.model).format)
    try:
        parser = get_any_parser(spec, fmt.name, install_missing=False)
    except HarnessError as exc:  # the run went well; only the minimization is lost
        console.print(f"no minimal inputs: {exc}", markup=False, highlight=False)
        return {}

    def cost(flip: Flip) -> int:
        return MODE_COST.index(flip.mode) if flip.mode in MODE_COST else len(MODE_COST)

    found = {}
    try:
        for case_id, flips in list(_by_case(regressions).items())[:SHOWN_CASES]:
            flip = min((f for f in flips if f.mode != ROUNDTRIP), key=cost, default=None)
            if flip is None or case_id not in cases:
                continue
            try:
                small = minimize_case(
                    cases[case_id],
                    parser,
                    fmt,
                    flip.mode,
                    flip.now["error_type"],
                    template=template,
                    seed=settings.seed,
                    timeout_s=timeout_s,
                )
            except Exception as exc:  # another module's fault must not hide the gate's verdict
                console.print(f"minimizing {case_id} failed: {type(exc).__name__}: {exc}", markup=False)
                continue
            if len(small["text"]) < len(cases[case_id].text):
                found[case_id] = {**small, "mode": flip.mode}
    finally:
        if runs_out_of_process(parser):
            parser.close()
    return found


# --- output --------------------------------------------------------------------------------------------


"""Flipped cases shown in full in ``gate.md`` (per section), so it fits a pull-request comment."""

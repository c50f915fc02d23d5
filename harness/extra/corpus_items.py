"""The pytest plugin's corpus items (:mod:`harness.extra.pytest_plugin` registers :class:`CorpusPlugin` when
``--toolcall-parser`` is given): settings, the parser under test, one :class:`CaseItem` per (case, mode), failure
text with the smallest failing input."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, cast

import pytest

import harness
from harness.analysis.minimize import Budget, minimize_case, minimize_scenario
from harness.core.cases import SLICES
from harness.core.errors import HarnessError, UnrepresentableError
from harness.core.guards import MAX_TIME_LIMIT_S
from harness.core.messages import Message
from harness.core.protocol import BufferedStream
from harness.core.results import PASSING
from harness.corpus import curated as corpus_curated
from harness.corpus import drift as corpus_drift
from harness.corpus import strategies as corpus_strategies
from harness.corpus.build import OBSERVED_FILE, build_corpus
from harness.corpus.curated import curated_scenarios
from harness.corpus.generated import generate_scenarios
from harness.engines.client import runs_out_of_process
from harness.engines.environments import engines, parse_spec
from harness.extra.plugin_defaults import DEFAULT_SLICES, MARKER
from harness.formats import get_format
from harness.parse import registry
from harness.parse.loader import load_parser_object
from harness.parse.modes import DEFAULT_MODES as ALL_MODES
from harness.parse.modes import DEFAULT_TIMEOUT_S, modes_for
from harness.score.roundtrip import applies, roundtrip_check
from harness.score.runner import evaluate_case
from harness.template.catalog import get_model
from harness.template.render import render_scenario
from harness.template.sources import load_template


@dataclass(frozen=True)
class Settings:
    """The plugin's options, validated: ``modes`` as requested (``("all",)`` for every applicable one)."""

    parser_spec: str
    model: str
    slices: tuple[str, ...]
    modes: tuple[str, ...]
    n_generated: int
    seed: int
    timeout_s: float


def settings_from(config: pytest.Config) -> Settings:
    """Read and check the ``--toolcall-*`` options. Raises ``pytest.UsageError`` naming the bad option."""
    n = config.getoption("toolcall_cases")
    if n < 0:
        raise pytest.UsageError(f"--toolcall-cases: expected a number >= 0, got {n}")
    given_slices = config.getoption("toolcall_slices")
    slices = _split(given_slices) if given_slices else DEFAULT_SLICES + (("generated",) if n else ())
    unknown = [s for s in slices if s not in SLICES]
    if unknown or not slices:
        raise pytest.UsageError(
            f"--toolcall-slices: unknown slice(s) {', '.join(unknown) or '(none given)'}; known: {', '.join(SLICES)}"
        )
    if "generated" in slices and n == 0:
        raise pytest.UsageError("--toolcall-slices: the generated slice needs --toolcall-cases N (N > 0)")
    modes = _split(config.getoption("toolcall_modes"))
    if modes != ("all",):
        unknown = [m for m in modes if m not in ALL_MODES]
        if unknown or not modes:
            raise pytest.UsageError(
                f"--toolcall-modes: unknown mode(s) {', '.join(unknown) or '(none given)'}; "
                f"known: {', '.join(ALL_MODES)} or all"
            )
    timeout = config.getoption("toolcall_timeout")
    if timeout is not None and not 0 < timeout <= MAX_TIME_LIMIT_S:
        raise pytest.UsageError(
            f"--toolcall-timeout: expected seconds more than 0 and at most {MAX_TIME_LIMIT_S:g}, got {timeout:g}"
        )
    return Settings(
        parser_spec=config.getoption("toolcall_parser"),
        model=config.getoption("toolcall_model"),
        slices=slices,
        modes=modes,
        n_generated=n,
        seed=config.getoption("toolcall_seed"),
        timeout_s=timeout or DEFAULT_TIMEOUT_S,
    )


def _split(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))


def load_parser(spec: str, format: str):
    """The parser ``spec`` names for ``format`` (see the module doc). Raises ``HarnessError`` subclasses."""
    spec = spec.removeprefix("py:")
    head = spec.rpartition(":")[0]
    if (
        not head
        or spec.startswith("cmd:")
        or "==" in head
        or head in registry.ALIASES
        or parse_spec(head).name in engines()
    ):
        return registry.get_any_parser(spec, format, install_missing=False, log=lambda line: None)
    return UserParser(load_parser_object(spec, require_stream=False), spec)


class UserParser:
    """A parser imported from ``pkg.module:Attr`` with the protocol's attributes filled in.

    Only ``parse(text, tools, prefix) -> Message`` is required. Without ``stream`` the streaming modes buffer
    the chunks and parse once at the end (:class:`harness.core.protocol.BufferedStream`); without ``name`` the spec
    is the name; ``library`` defaults to the top-level package, ``version`` to its installed version
    (``unknown``), ``formats`` to ``()`` and ``incremental`` to False. ``parse`` returning anything but a
    :class:`~harness.core.messages.Message` raises ``TypeError`` inside the call (recorded as the parser's exception).
    """

    def __init__(self, wrapped, spec: str):
        package = Path(spec.rpartition(":")[0]).stem.split(".")[0]
        self.wrapped, self.spec = wrapped, spec
        self.name = str(getattr(wrapped, "name", None) or spec)
        self.library = str(getattr(wrapped, "library", None) or package)
        self.version = str(getattr(wrapped, "version", None) or _installed_version(package))
        self.formats = tuple(getattr(wrapped, "formats", None) or ())
        self.has_stream = callable(getattr(wrapped, "stream", None))
        self.incremental = bool(getattr(wrapped, "incremental", False)) and self.has_stream

    def parse(self, text: str, tools: list | None = None, prefix: str = ""):

        message = self.wrapped.parse(text, tools, prefix)
        if not isinstance(message, Message):
            raise TypeError(
                f"{self.spec}: parse() returned {type(message).__name__}, expected harness.core.messages.Message"
            )
        return message

    def stream(self, tools: list | None = None, prefix: str = ""):

        return self.wrapped.stream(tools, prefix) if self.has_stream else BufferedStream(self, tools, prefix)


def _installed_version(package: str) -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version(package)
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return "unknown"


class CorpusPlugin:
    """Registered when ``--toolcall-parser`` is given: loads the parser, builds the corpus, adds the items."""

    def __init__(self, settings: Settings):

        self.settings = settings
        try:
            self.entry = get_model(settings.model)
            self.fmt = get_format(self.entry.format)
            self.parser = load_parser(settings.parser_spec, self.fmt.name)
        except HarnessError as exc:
            raise pytest.UsageError(f"--toolcall-parser/--toolcall-model: {exc}") from None
        self.modes = self._modes()
        _ = self.template  # a model without a usable template stops the run here, before any xdist worker starts
        self.skipped: list[tuple[str, str]] = []
        self._scenarios: dict | None = None  # generated scenarios by case id, drawn again for minimizing

    def _modes(self) -> list[str]:

        wanted = ALL_MODES if self.settings.modes == ("all",) else self.settings.modes
        modes = modes_for(self.parser, tuple(wanted), self.fmt)
        if not modes:
            raise pytest.UsageError(
                f"--toolcall-modes: none of {', '.join(wanted)} applies to parser "
                f"{self.parser.name} (prefix: the project's own incremental parsers only; "
                f"tokens: formats with a tokenizer)"
            )
        return modes

    @cached_property
    def template(self):
        """The model's chat template, or ``None`` when only the observed slice runs."""
        if set(self.settings.slices) == {"observed"} and "roundtrip" not in self.modes:
            return None
        try:
            return load_template(self.settings.model)
        except HarnessError as exc:
            raise pytest.UsageError(
                f"--toolcall-model {self.settings.model}: {exc} (the observed slice alone "
                f"needs no template: --toolcall-slices observed)"
            ) from None

    @cached_property
    def roundtrip(self):

        return roundtrip_check(self.template, self.fmt) if "roundtrip" in self.modes else None

    def build_cases(self) -> list:
        """The corpus cases, deterministic for the settings. Raises ``pytest.UsageError`` for bad input."""
        try:
            corpus = build_corpus(
                self.template,
                self.fmt,
                seed=self.settings.seed,
                n_generated=self.settings.n_generated,
                slices=self.settings.slices,
            )
        except HarnessError as exc:
            raise pytest.UsageError(f"toolcall corpus for {self.settings.model}: {exc}") from None
        self.skipped = corpus.skipped
        return corpus.cases

    def item_modes(self, case) -> list[str]:
        """The modes that give a verdict for ``case`` (round-trip only for cases the template wrote)."""
        return [m for m in self.modes if m != "roundtrip" or applies(case)]

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        p, s = self.parser, self.settings
        return [
            f"toolcall-harness: parser {p.name} ({p.library} {p.version}); model {s.model} "
            f"(format {self.fmt.name}); slices {','.join(s.slices)}; modes {','.join(self.modes)}"
            + (f"; generated {s.n_generated} cases, seed {s.seed}" if "generated" in s.slices else "")
        ]

    @pytest.hookimpl(tryfirst=True)  # before -k/-m deselection, --lf and xdist see the list
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        cases = self.build_cases()  # here, not in collect(): a bad option stops the run as a usage error
        name = f"{MARKER}[{self.settings.model}]"
        collector = CorpusCollector.from_parent(session, name=name, nodeid=name, plugin=self, cases=cases)
        items.extend(session.genitems(collector))

    def pytest_report_collectionfinish(self, config: pytest.Config, items) -> list[str]:
        counts: dict[str, int] = {}
        for item in items:
            if isinstance(item, CaseItem):
                counts[item.case.slice] = counts.get(item.case.slice, 0) + 1
        lines = ["toolcall items: " + ", ".join(f"{s} {n}" for s, n in counts.items())] if counts else []
        if self.skipped:
            lines.append(
                f"toolcall: {len(self.skipped)} scenario(s) the {self.fmt.name} template cannot write "
                f"were skipped: {', '.join(i for i, _ in self.skipped[:5])}" + (" ..." if len(self.skipped) > 5 else "")
            )
        return lines

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if runs_out_of_process(self.parser):
            self.parser.close()

    def evaluate(self, case, mode: str):
        """The :class:`harness.core.results.Record` of ``case`` in ``mode``."""
        records = list(
            evaluate_case(
                case, self.parser, self.fmt, [mode], self.settings.seed, self.settings.timeout_s, self.roundtrip
            )
        )
        return records[-1]

    def minimal_input(self, case, mode: str, error_type: str | None) -> dict | None:
        """The smallest input found that fails like ``case`` did, as ``{"text", "expected", "got", "method",
        "calls"}``: a generated case's scenario (drawn again from the seed) reduced and re-rendered
        (:func:`harness.analysis.minimize.minimize_scenario`), any other case by
        :func:`harness.analysis.minimize.minimize_case`;
        ``None`` for timeouts and worker crashes (every check would cost the time limit or a restart) and for
        the round-trip mode (its verdict needs the original render)."""
        if error_type in (None, "timeout", "crash") or mode == "roundtrip":
            return None
        if case.slice == "generated":
            return self._minimal_generated(case, mode, error_type)
        return minimize_case(
            case,
            self.parser,
            self.fmt,
            mode,
            error_type,
            template=self.template,
            seed=self.settings.seed,
            timeout_s=self.settings.timeout_s,
        )

    def _minimal_generated(self, case, mode: str, error_type: str) -> dict | None:

        if self._scenarios is None:  # the same draw as the corpus: a pure function of (n, seed, forbid)
            drawn = generate_scenarios(self.settings.n_generated, self.settings.seed, forbid=self.fmt.unrepresentable)
            self._scenarios = {s.id: s for s in drawn}
        if case.id not in self._scenarios:
            return None

        def render(scenario):
            try:
                return render_scenario(self.template, scenario, self.fmt, slice="generated")
            except UnrepresentableError:
                return None

        def fails(scenario) -> bool:
            candidate = render(scenario)
            return candidate is not None and self.evaluate(candidate, mode).error_type == error_type

        budget = Budget(150)
        smallest = render(minimize_scenario(self._scenarios[case.id], fails, budget, self.fmt.markers))
        if smallest is None:
            return None
        return {
            "text": smallest.text,
            "expected": smallest.expected.to_json(),
            "got": self.evaluate(smallest, mode).got,
            "method": "structure",
            "calls": budget.used,
        }


class CorpusCollector(pytest.Collector):
    """The corpus of one run (node id ``toolcall[MODEL]``), collected without a file."""

    def __init__(self, *, plugin: CorpusPlugin, cases: list, **kwargs):
        super().__init__(**kwargs)
        self.plugin, self.cases = plugin, cases

    def collect(self):
        for case in self.cases:
            for mode in self.plugin.item_modes(case):
                name = f"[{case.slice}][{_safe(case.id)}][{mode}]"
                # the node id as text: pytest >= 9.2 parses it, as it parses the ids --lf reads back
                yield CaseItem.from_parent(self, name=name, nodeid=f"{self.nodeid}::{name}", case=case, mode=mode)


def _safe(case_id: str) -> str:
    """A case id usable in a node id (no ``::``, no whitespace)."""
    return "-".join(case_id.replace("::", ":").split())


class CaseFailed(Exception):
    """Raised by :meth:`CaseItem.runtest` when the parser fails the case; carries the harness record."""

    def __init__(self, record):
        super().__init__(f"{record.error_type}: {record.detail}")
        self.record = record


class CaseItem(pytest.Item):
    """One (case, mode): runs :func:`harness.score.runner.evaluate_case` and turns the verdict into a test outcome."""

    def __init__(self, *, case, mode: str, **kwargs):
        super().__init__(**kwargs)
        self.case, self.mode = case, mode
        self.add_marker(MARKER)
        self.extra_keyword_matches.update([case.slice, case.kind, mode, *case.tags])

    def runtest(self) -> None:
        record = self.plugin.evaluate(self.case, self.mode)
        if record.verdict == "surfaced":
            pytest.xfail(f"surfaced: drift case declined, raw text kept in content ({record.detail})")
        if record.verdict not in PASSING:  # a soft_pass passes: whitespace aside, the answer is right
            raise CaseFailed(record)

    @property
    def plugin(self) -> CorpusPlugin:
        return cast(CorpusCollector, self.parent).plugin  # items are created by CorpusCollector only

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, CaseFailed):
            return failure_text(self, excinfo.value.record)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        path, line = case_location(self.case, self.plugin.fmt.name)
        return path, line, self.nodeid  # the domain titles the failure report


def failure_text(item: CaseItem, record) -> str:
    """The failure report: case, verdict and error type, detail, input, expected and got (compact JSON), the
    seed of a generated case, and the minimal failing input (:meth:`CorpusPlugin.minimal_input`)."""
    case, plugin = item.case, item.plugin
    lines = [
        f"case {case.id} ({case.slice}, {case.kind}) in mode {item.mode}: {record.verdict} {record.error_type}",
        f"detail:   {record.detail}",
        f"parser:   {plugin.parser.name}",
        f"input:    {_compact(case.text)}",
    ]
    if case.prefix:
        lines.append(f"prefix:   {_compact(case.prefix)}")
    lines += [
        f"expected: {_compact(case.expected.to_json())}",
        f"got:      {_compact(record.got) if record.got is not None else '(nothing: the parser raised)'}",
    ]
    if case.slice == "generated":
        s = plugin.settings
        lines.append(f"seed:     {case.seed} (reproduce: --toolcall-cases {s.n_generated} --toolcall-seed {s.seed})")
    if case.note:
        lines.append(f"note:     {case.note}")
    lines += _minimal_lines(item, record)
    return "\n".join(lines)


def _minimal_lines(item: CaseItem, record) -> list[str]:
    """The report lines of the minimal failing input (the search's own failure is reported, not raised)."""
    case = item.case
    try:
        minimal = item.plugin.minimal_input(case, item.mode, record.error_type)
    except Exception as exc:  # the report must still show the failure itself
        return [f"minimal input: the search raised {type(exc).__name__}: {exc}"]
    if minimal is None or minimal["method"] == "none":
        return ["minimal input: not searched (no reduction applies to this failure)"]
    if minimal["text"] == case.text:
        return [f"minimal input: the input above ({minimal['method']} reduction, {minimal['calls']} checks)"]
    return [
        (
            f"minimal input ({minimal['method']} reduction, {minimal['calls']} checks, "
            f"{len(case.text)} -> {len(minimal['text'])} chars): {_compact(minimal['text'])}"
        ),
        f"  its expected: {_compact(minimal['expected'])}",
        f"  its got:      {_compact(minimal['got'])}",
    ]


def _compact(value) -> str:
    return json.dumps(value, ensure_ascii=False)


def case_location(case, format: str) -> tuple[Path, int | None]:
    """Where a case comes from: the observed file and line, the curated catalog or format module (curated),
    the strategies module (generated) or the drift module (drift)."""
    if case.slice == "observed":
        return OBSERVED_FILE, _observed_lines().get(case.id)
    if case.slice in ("generated", "drift"):  # drawn by hypothesis; curated cases mutated
        return Path(str((corpus_strategies if case.slice == "generated" else corpus_drift).__file__)), None
    if case.id in _catalog_ids():
        return Path(str(corpus_curated.__file__)), None
    return Path(str(harness.__file__)).parent / "formats" / f"{format}.py", None


_cache: dict[str, Any] = {}


def _observed_lines() -> dict[str, int]:
    """``{case id: 0-based line}`` of the observed file (pytest shows line + 1)."""
    if "observed" not in _cache:
        lines = {}
        for number, line in enumerate(OBSERVED_FILE.read_text(encoding="utf-8").split("\n")):
            if line.strip():
                try:
                    lines[json.loads(line).get("id")] = number
                except ValueError:
                    continue
        _cache["observed"] = lines
    return _cache["observed"]


def _catalog_ids() -> set[str]:
    if "catalog" not in _cache:
        _cache["catalog"] = {s.id for s in curated_scenarios()}
    return _cache["catalog"]

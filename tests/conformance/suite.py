"""The shared conformance suite every own parser runs: a :class:`Conformance` config per format and the
:class:`ParserConformance` test class that turns it into tests.

A format's file ``tests/conformance/test_<format>.py`` subclasses :class:`ParserConformance`, sets ``CONFIG`` and
overrides :meth:`ParserConformance.check_corpus` (its corpus counts and observed verdicts); every other test in that
file is specific to the format. The shared tests, on the parser's public protocol only (``parse(text, tools,
prefix)``, ``stream(tools, prefix)``, ``name``/``formats``/``library``/``version``/``incremental``, the registry):

- protocol attributes and registry resolution (``own``, ``toolcall-harness``, ``own:<format>``);
- strict texts x stop markers: one-shot equals streaming under :func:`chunkings`, no marker leaks, no diagnostics;
- drift recovered: the expected calls, no diagnostics;
- malformed text surfaced: no call, the text kept as content, a ``surfaced`` diagnostic;
- a call cut off by the end of the text dropped: the complete calls and the prose, no marker, a ``cut off``
  diagnostic;
- marker hold-back at every two-part split point (:func:`assert_hold_back`);
- the rendered corpus of each template through the runner's modes (:func:`evaluate_corpus`).

Helpers (:func:`view`, :func:`expected_view`, :func:`delta_checker`, :func:`chunkings`,
:func:`assert_stream_matches`, :func:`assert_hold_back`, :func:`assert_roundtrip_chunks`) live here once.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any, ClassVar, NamedTuple

import pytest

from harness.core.messages import Message, ToolCall
from harness.core.protocol import Parser, run_stream
from harness.corpus.build import build_corpus
from harness.formats import get_format
from harness.parse import registry
from harness.parse.modes import modes_for, split_at
from harness.score.roundtrip import roundtrip_check
from harness.score.runner import evaluate_case
from harness.template.sources import load_template

OWN_LIBRARY = "toolcall-harness"
ALL_MODES = ("oneshot", "roundtrip", "whole", "char", "random", "tokens", "prefix")


# ---- helpers ---------------------------------------------------------------------------------------------


def view(message: Message):
    """Comparable form: content, reasoning, calls with type-exact JSON arguments (True != 1)."""
    calls = [(c.name, json.dumps(c.arguments, sort_keys=True)) for c in message.tool_calls]
    return message.content, message.reasoning, calls


def expected_view(calls, content=None, reasoning=None):
    """:func:`view` of the message with ``calls`` (``[(name, arguments)]``), ``content`` and ``reasoning``."""
    return view(Message(content, reasoning, [ToolCall(n, a) for n, a in calls]))


def leak_markers(fmt, extra: Sequence[str] = ()) -> tuple[str, ...]:
    """The markers no streamed delta may hold: the call and stop markers of ``fmt`` (a format or its name), plus
    ``extra``."""
    fmt = get_format(fmt) if isinstance(fmt, str) else fmt
    return tuple(dict.fromkeys((*fmt.markers, *fmt.stop_markers, *extra)))


def delta_checker(fmt, extra: Sequence[str] = ()) -> Callable:
    """An ``on_delta`` callback asserting no delta's content or reasoning holds a marker of ``fmt`` (a format or
    its name)."""
    markers = leak_markers(fmt, extra)

    def check(delta) -> None:
        for piece in (delta.content, delta.reasoning):
            if piece:
                assert not any(m in piece for m in markers), piece

    return check


def chunkings(text: str, seed: int = 0) -> list[list[str]]:
    """Whole, one character at a time, and four random cuttings (``random.Random(seed)``)."""
    rng = random.Random(seed)
    out = [[text], list(text)]
    for _ in range(4):
        cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(1, 12)))) if len(text) > 1 else []
        out.append([text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=False)])
    return out


def assert_stream_matches(
    parser: Parser,
    text: str,
    tools=None,
    prefix: str = "",
    seed: int = 0,
    leak_check: bool = True,
    extra_markers: Sequence[str] = (),
) -> Message:
    """One-shot parse; streaming under :func:`chunkings` must give the same message and (``leak_check``: text
    whose content holds no marker) no marker in any delta. Returns the one-shot message."""
    one_shot = parser.parse(text, tools, prefix)
    watch = delta_checker(parser.formats[0], extra_markers) if leak_check else None
    for chunks in chunkings(text, seed):
        got = run_stream(parser, chunks, tools, prefix, on_delta=watch)
        assert view(got) == view(one_shot), chunks
    return one_shot


def assert_hold_back(parser: Parser, text: str, tools=None, prefix: str = "", extra_markers: Sequence[str] = ()):
    """Fed in two parts split anywhere, what is streamed after the first part is a prefix of the final content
    and reasoning (a marker start is never released early) and the two-part stream equals the one-shot parse; no
    delta holds a marker unless the final message surfaces one."""
    final = parser.parse(text, tools, prefix)
    markers = leak_markers(parser.formats[0], extra_markers)
    surfaced = any(m in (final.content or "") + (final.reasoning or "") for m in markers)
    watch = None if surfaced else delta_checker(parser.formats[0], extra_markers)
    for k in range(len(text) + 1):
        session = parser.stream(tools, prefix)
        first = session.feed(text[:k])
        for delta in first:
            if watch:
                watch(delta)
        content = "".join(d.content or "" for d in first)
        reasoning = "".join(d.reasoning or "" for d in first)
        assert (final.content or "").startswith(content), (k, content)
        assert (final.reasoning or "").startswith(reasoning), (k, reasoning)
        got = run_stream(parser, [text[:k], text[k:]], tools, prefix, on_delta=watch)
        assert view(got) == view(final), k


def assert_roundtrip_chunks(parser: Parser, text: str, message: Message, splits, tools=None, prefix="", watch=None):
    """Streaming ``text`` cut at ``splits`` and one character at a time gives ``message`` (property tests)."""
    for chunks in (split_at(text, splits), list(text)):
        assert view(run_stream(parser, chunks, tools, prefix, on_delta=watch)) == view(message)


def body_without_stops(text: str, stops) -> str:
    """``text`` right-stripped of trailing stop markers (and whitespace between them)."""
    body = text.rstrip()
    while body.endswith(tuple(stops)):
        body = next(body[: -len(m)] for m in stops if body.endswith(m)).rstrip()
    return body


@functools.cache
def template(model: str):
    """The catalog template of ``model``, loaded offline (no Hugging Face cache or network)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("HF_HOME", "/nonexistent/hf-home-for-tests")
    mp.delenv("HF_HUB_CACHE", raising=False)
    try:
        return load_template(model)
    finally:
        mp.undo()


def tool(name: str, properties: dict) -> dict:
    """An OpenAI-style function tool with an object schema of ``properties``."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} tool.",
            "parameters": {"type": "object", "properties": properties},
        },
    }


class CorpusRun(NamedTuple):
    """What :func:`evaluate_corpus` gives: the corpus, the modes run and the records per case id."""

    corpus: Any
    modes: list[str]
    records: dict[str, list]

    def failures(self, kinds=("strict",), skip_observed: bool = False) -> list[tuple]:
        """``(case id, mode, error type, detail)`` of every non-pass record of the cases of ``kinds``."""
        out = []
        for case in self.corpus.cases:
            if (kinds is not None and case.kind not in kinds) or (skip_observed and case.slice == "observed"):
                continue
            out += [(case.id, r.mode, r.error_type, r.detail) for r in self.records[case.id] if r.verdict != "pass"]
        return out

    def observed(self) -> list:
        """Every record of the observed cases."""
        return [r for c in self.corpus.cases if c.slice == "observed" for r in self.records[c.id]]

    def count_mode(self, mode: str, kinds=("strict",)) -> int:
        """How many records of the cases of ``kinds`` ran ``mode``."""
        return sum(
            r.mode == mode for c in self.corpus.cases if kinds is None or c.kind in kinds for r in self.records[c.id]
        )


def evaluate_corpus(model: str, parser: Parser, requested=ALL_MODES, seed: int = 3, n_generated: int = 60):
    """Every rendered case of ``model``'s corpus (curated + generated + observed) through every mode of
    ``requested`` the runner applies to ``parser`` (round trip checked through the template when requested)."""
    fmt = get_format(parser.formats[0])
    tmpl = template(model)
    corpus = build_corpus(tmpl, fmt, seed=seed, n_generated=n_generated)
    modes = modes_for(parser, tuple(requested), fmt)
    check = roundtrip_check(tmpl, fmt) if "roundtrip" in requested else None
    records = {}
    for case in corpus.cases:
        kwargs = {"roundtrip": check} if check is not None else {}
        records[case.id] = list(evaluate_case(case, parser, fmt, modes, seed=seed, **kwargs))
    return CorpusRun(corpus, modes, records)


# ---- the config and the shared tests ---------------------------------------------------------------------


class Text(NamedTuple):
    """A text and the message it must parse to (``calls``: ``[(name, arguments)]``)."""

    text: str
    calls: list
    content: str | None = None
    reasoning: str | None = None
    tools: list | None = None
    seed: int | None = None  # of the random chunkings; None: the length of the case's name


@dataclass(frozen=True)
class Conformance:
    """What the shared tests need to know of one own parser.

    ``strict``/``recovered``: case name -> :class:`Text` (the texts already carry any stop or lead the format's
    tests add; ``stops`` are appended to each strict text in turn). ``surfaced``: case name -> malformed text.
    ``cut_off``: case name -> :class:`Text` whose last call is cut off by the end of the text, and the message
    it must parse to (that call dropped, the rest kept).
    ``prefix``: the generation-prompt tail the strict, drift and surfaced texts are parsed after.
    ``hold_back``: texts split at every point, after each of ``hold_back_prefixes``. ``models``: catalog models whose
    rendered corpus must pass; ``modes``: the modes :func:`evaluate_corpus` must find for the parser out of
    ``requested_modes``. ``extra_markers``: markers beyond the format's that no delta may hold. ``surfaced_note``:
    what the first diagnostic of a surfaced text says; ``surfaced_suffix``: a stop marker its content loses.
    """

    format: str
    parser: Callable[[], Parser]
    strict: Mapping[str, Text] = field(default_factory=dict)
    stops: tuple[str, ...] = ("",)
    recovered: Mapping[str, Text] = field(default_factory=dict)
    surfaced: Mapping[str, str] | Sequence[str] = field(default_factory=dict)
    cut_off: Mapping[str, Text] = field(default_factory=dict)
    prefix: str = ""
    hold_back: tuple[str, ...] = ()
    hold_back_prefixes: tuple[str, ...] = ("",)
    models: tuple[str, ...] = ()
    requested_modes: tuple[str, ...] = ALL_MODES
    modes: tuple[str, ...] = ()
    extra_markers: tuple[str, ...] = ()
    leak_check_exempt: frozenset[str] = frozenset()  # strict cases whose content holds markers by design
    surfaced_note: str = "surfaced"  # the word the first diagnostic of a surfaced text holds
    surfaced_suffix: str = ""  # a stop marker the surfaced content loses


def _argnames(names) -> list[str]:
    return names.split(",") if isinstance(names, str) else list(names)


def _ids(values) -> tuple[list, list[str] | None]:
    if isinstance(values, Mapping):
        names = sorted(values)
        return names, [str(n) for n in names]
    return list(values), None


class ParserConformance:
    """The shared tests of an own parser; a subclass sets ``CONFIG`` and overrides :meth:`check_corpus`."""

    CONFIG: ClassVar[Conformance]

    def pytest_generate_tests(self, metafunc):
        cfg = self.CONFIG
        taken = {n.strip() for m in metafunc.definition.iter_markers("parametrize") for n in _argnames(m.args[0])}
        params = {
            "strict_case": cfg.strict,
            "recovered_case": cfg.recovered,
            "surfaced_case": cfg.surfaced,
            "cut_off_case": cfg.cut_off,
            "hold_back_text": cfg.hold_back,
            "model": cfg.models,
        }
        for name, values in params.items():
            if name in metafunc.fixturenames and name not in taken:
                argvalues, ids = _ids(values)
                metafunc.parametrize(name, argvalues, ids=ids)
        if "stop" in metafunc.fixturenames:
            metafunc.parametrize("stop", cfg.stops)
        if "hold_back_prefix" in metafunc.fixturenames:
            metafunc.parametrize("hold_back_prefix", cfg.hold_back_prefixes)

    @property
    def parser(self) -> Parser:
        return self.CONFIG.parser()

    def test_protocol_attributes(self):
        cfg = self.CONFIG
        parser = self.parser
        assert isinstance(parser, Parser)
        assert (parser.name, parser.formats, parser.library) == (
            f"{OWN_LIBRARY}:{cfg.format}",
            (cfg.format,),
            OWN_LIBRARY,
        )
        assert parser.version == version(OWN_LIBRARY) and parser.incremental is True

    def test_registry_resolves_own_aliases_by_format(self):
        cfg = self.CONFIG
        parser = self.parser
        registry.reload()
        try:
            assert parser.name in registry.available_parsers(cfg.format)
            for alias in ("own", OWN_LIBRARY, parser.name, f"own:{cfg.format}"):
                assert registry.resolve(alias, format=cfg.format) == parser.name
                assert type(registry.get_parser(alias, format=cfg.format)) is type(parser)
            got, _ = registry.create_parsers(["own"], cfg.format)
            assert [p.name for p in got] == [parser.name]
        finally:
            registry.reload()

    def test_strict_text(self, strict_case, stop):
        cfg = self.CONFIG
        case = cfg.strict[strict_case]
        message = assert_stream_matches(
            self.parser,
            case.text + stop,
            case.tools,
            cfg.prefix,
            seed=len(strict_case) if case.seed is None else case.seed,
            leak_check=strict_case not in cfg.leak_check_exempt,
            extra_markers=cfg.extra_markers,
        )
        assert view(message) == expected_view(case.calls, case.content, case.reasoning)
        assert message.diagnostics == []

    def test_drift_recovered(self, recovered_case):
        cfg = self.CONFIG
        case = cfg.recovered[recovered_case]
        message = assert_stream_matches(self.parser, case.text, case.tools, cfg.prefix, extra_markers=cfg.extra_markers)
        assert view(message) == expected_view(case.calls, case.content, case.reasoning)
        assert message.diagnostics == []

    def test_malformed_call_stays_in_content(self, surfaced_case):
        cfg = self.CONFIG
        text = cfg.surfaced[surfaced_case] if isinstance(cfg.surfaced, Mapping) else surfaced_case
        message = assert_stream_matches(self.parser, text, None, cfg.prefix, leak_check=False)  # the text holds markers
        assert message.tool_calls == []
        assert message.content == text.removesuffix(cfg.surfaced_suffix).strip()
        assert message.diagnostics and cfg.surfaced_note in message.diagnostics[0]

    def test_call_cut_off_by_the_end_is_dropped(self, cut_off_case):
        cfg = self.CONFIG
        case = cfg.cut_off[cut_off_case]
        message = assert_stream_matches(self.parser, case.text, case.tools, cfg.prefix, extra_markers=cfg.extra_markers)
        assert view(message) == expected_view(case.calls, case.content, case.reasoning)
        assert any("cut off" in d for d in message.diagnostics), message.diagnostics

    def test_marker_hold_back_at_every_split_point(self, hold_back_text, hold_back_prefix):
        assert_hold_back(self.parser, hold_back_text, prefix=hold_back_prefix, extra_markers=self.CONFIG.extra_markers)

    def test_own_parser_passes_every_strict_rendered_case(self, model):
        """The rendered corpus through every mode the runner applies to the parser; strict cases all pass."""
        run = evaluate_corpus(model, self.parser, self.CONFIG.requested_modes)
        assert run.modes == list(self.CONFIG.modes)
        assert run.failures() == []
        self.check_corpus(model, run)

    def check_corpus(self, model: str, run: CorpusRun) -> None:
        """The format's own corpus checks (counts, skipped cases, observed verdicts); must be overridden."""
        raise NotImplementedError(f"{type(self).__name__} must check its corpus counts")

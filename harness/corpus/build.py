"""Building a model's corpus: curated edge cases and generated cases rendered through its real chat
template, the drift slice (curated cases mutated, :mod:`harness.corpus.drift`), the observed field outputs
shipped in ``corpora/observed/`` and the peer suites' cases of the format (:mod:`harness.corpus.peers`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.core.cases import SLICES, Case, load_cases
from harness.core.errors import UnrepresentableError
from harness.core.paths import OBSERVED_FILE
from harness.corpus.curated import curated_scenarios
from harness.corpus.drift import drift_cases
from harness.corpus.generated import generate_scenarios
from harness.corpus.peers import canitoolcall, llama_cpp
from harness.formats import FormatSpec, case_formats, format_edge_scenarios
from harness.template.render import check_writes_calls, render_scenario
from harness.template.sources import ChatTemplate

#: the default of :func:`build_corpus`: the curated, generated and observed slices (``drift`` and the peer
#: suites' ``peer-*`` slices are asked for by name; ``eval`` asks for every slice of ``SLICES``).
RENDERED_SLICES = tuple(s for s in SLICES if s != "drift" and not s.startswith("peer-"))


@dataclass
class Corpus:
    """The cases of one run, by slice, and what was skipped and why (``skipped``: ``[(id, reason)]``).

    ``unsupported``: ``[(peer id, reason)]`` of the peer suites' cases this run cannot judge: those that map to
    no harness format, and those of this format the judge cannot apply (never dropped silently); reports count
    them per reason. ``notes``: warnings on the corpus as a whole (a template that writes no tool call)."""

    cases: list[Case]
    skipped: list[tuple[str, str]] = field(default_factory=list)
    unsupported: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def count(self, slice_name: str) -> int:
        return sum(1 for c in self.cases if c.slice == slice_name)


def build_corpus(
    template: ChatTemplate | None,
    fmt: FormatSpec,
    *,
    seed: int,
    n_generated: int,
    slices: tuple[str, ...] = RENDERED_SLICES,
    observed_file: Path = OBSERVED_FILE,
) -> Corpus:
    """Render the curated and ``n_generated`` generated scenarios (seeded) and load the observed cases; with
    ``"drift"`` in ``slices`` (``eval`` asks for every slice of :data:`harness.core.cases.SLICES`), also mutate the
    curated cases (:func:`harness.corpus.drift.drift_cases`, seeded by ``seed``).

    With ``"peer-canitoolcall"`` in ``slices``, add canitoolcall's fixtures of the format (the pinned wheel,
    downloaded once; :mod:`harness.corpus.peers.canitoolcall`) and its unsupported ones to ``Corpus.unsupported``.

    Scenarios the format cannot represent (e.g. a Gemma 4 string containing ``<|"|>``) are skipped and
    listed in ``Corpus.skipped``. Raises :class:`harness.core.errors.HarnessError` subclasses for a template that
    fails to render, is empty or constant (:func:`~harness.template.render.check_writes_calls`; one that renders
    the conversation but writes no call gets a note in ``Corpus.notes``), or a malformed observed file.
    ``template`` may be ``None`` for the observed slice alone (no model template found); a rendered slice without
    one raises ``ValueError``.

    With ``"peer-llama.cpp"`` in ``slices``, llama.cpp's own chat tests of the format are added (read from the
    pinned sdist, :func:`harness.corpus.peers.llama_cpp.load_cases`) and ``Corpus.unsupported`` lists that suite's
    cases this run cannot judge.
    """
    corpus = Corpus(cases=[])
    if template is not None and {"curated", "generated", "drift"} & set(slices):
        note = check_writes_calls(template, fmt)  # raises for an empty or constant template
        corpus.notes += [note] if note else []
    if "curated" in slices or "drift" in slices:
        curated = Corpus(cases=[])
        _render_all(curated, template, fmt, curated_scenarios() + format_edge_scenarios(fmt.name), "curated")
        if "curated" in slices:
            corpus.cases.extend(curated.cases)
            corpus.skipped.extend(curated.skipped)
        if "drift" in slices:  # the curated cases mutated (harness.corpus.drift), seeded by ``seed``
            corpus.cases.extend(drift_cases(curated.cases, fmt, seed))
    if "generated" in slices and n_generated > 0:
        scenarios = generate_scenarios(n_generated, seed, forbid=fmt.unrepresentable)
        _render_all(corpus, template, fmt, scenarios, "generated")
    if "observed" in slices:
        corpus.cases.extend(load_cases(observed_file, fmt=fmt.name, default_slice="observed", formats=case_formats()))
    if canitoolcall.SLICE in slices:
        cases, unsupported = canitoolcall.peer_cases(fmt)
        corpus.cases.extend(cases)
        corpus.unsupported.extend(unsupported)
    if llama_cpp.SLICE in slices:
        peers = llama_cpp.load_cases()
        corpus.cases.extend(peers.for_format(fmt.name))
        corpus.unsupported.extend(peers.corpus_unsupported(fmt.name))
    return corpus


def _render_all(corpus: Corpus, template: ChatTemplate | None, fmt: FormatSpec, scenarios, slice_name: str) -> None:
    if template is None:
        raise ValueError(f"the {slice_name} slice is rendered: it needs a chat template")
    for scenario in scenarios:
        try:
            corpus.cases.append(render_scenario(template, scenario, fmt, slice=slice_name))
        except UnrepresentableError as exc:
            corpus.skipped.append((scenario.id, str(exc)))

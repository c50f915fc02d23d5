"""``toolcall-harness corpus export``: a model's rendered corpus written as a harness case file or in a peer
suite's spec (canitoolcall's fixture spec v0.1, :mod:`harness.corpus.peers.canitoolcall_export`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from harness.core.cases import SLICES, write_cases
from harness.core.errors import HarnessError
from harness.corpus.build import build_corpus
from harness.corpus.peers.canitoolcall import SUITE
from harness.corpus.peers.canitoolcall_export import EXPORTED_SLICES, ExportError, write_fixtures
from harness.formats import get_format
from harness.template.catalog import get_model
from harness.template.sources import load_template

#: ``--spec`` values: the harness' own case file (JSON Lines), or canitoolcall's fixture folder.
SPECS = ("cases", SUITE)


@dataclass
class ExportResult:
    """What was written: ``files``, ``count`` records, ``skipped`` ``[(case id, reason)]`` (unrepresentable
    scenarios and cases the spec cannot hold), and the template's one-line provenance."""

    files: list[Path]
    count: int
    template: str
    skipped: list[tuple[str, str]] = field(default_factory=list)


def default_slices(spec: str) -> tuple[str, ...]:
    """Every slice for a case file; the rendered slices for a peer spec (the others are imports of it)."""
    return SLICES if spec == "cases" else EXPORTED_SLICES


def export_corpus(
    model: str,
    spec: str,
    out: Path,
    *,
    seed: int,
    n_generated: int,
    slices: tuple[str, ...],
    revision: str | None = None,
    model_dir: str | None = None,
    gguf: str | None = None,
) -> ExportResult:
    """Build ``model``'s corpus and write it in ``spec`` to ``out`` (a file for ``cases``, a folder for
    ``canitoolcall``). ``revision``: the 40-hex Hugging Face commit of the model the peer spec pins (default: the
    hub commit the template came from). Raises ``HarnessError`` subclasses for bad input."""
    if spec not in SPECS:
        raise HarnessError(f"unknown spec {spec!r}; known: {', '.join(SPECS)}")
    entry = get_model(model)
    fmt = get_format(entry.format)
    template = load_template(model, model_dir=model_dir, gguf=gguf)
    where = f"{template.provenance['source']} {template.file} sha256 {template.sha256}"
    if template.fallback:
        where += f" (fallback: {template.provenance['fallback_note']})"
    if spec != "cases":
        recorded = str(template.provenance.get("revision") or "")
        revision = revision or (recorded if re.fullmatch(r"[0-9a-f]{40}", recorded) else None)
        if revision is None:
            raise ExportError(
                f"{model}: the template came from {template.provenance['source']} ({template.file}), which names no "
                f"Hugging Face commit, and canitoolcall's family.json pins {entry.hf_repo} by one: pass "
                "--revision COMMIT (the 40-hex commit of that repository whose template this is)"
            )
    corpus = build_corpus(template, fmt, seed=seed, n_generated=n_generated, slices=slices)
    if spec == "cases":
        count = write_cases(out, corpus.cases)
        return ExportResult(files=[Path(out)], count=count, template=where, skipped=list(corpus.skipped))
    files, count, skipped = write_fixtures(
        corpus.cases, Path(out), fmt, model=entry.hf_repo, revision=revision or "", name=entry.name
    )
    return ExportResult(files=files, count=count, template=where, skipped=[*corpus.skipped, *skipped])

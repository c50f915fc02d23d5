"""The harness' rendered corpus written in canitoolcall's fixture spec v0.1, so other harnesses can replay it.

Layout (the spec's): ``<folder>/<family>/family.json`` and ``<folder>/<family>/<slice>.jsonl``, one fixture per
case. ``<family>`` is the canitoolcall family the format's ``peers`` name (``gemma4``, ``qwen3-hermes``...), else
the format name with ``-`` for ``_``; an existing ``family.json`` there gains this model as a reference model.

Per case (only rendered slices: ``curated``, ``generated``, ``drift``; others are returned as skipped):

- ``id`` ``<family>/th-<case id>`` (lowercase; ``~`` becomes ``.``, other characters outside ``[a-z0-9._-]``
  ``-``); ``models`` ``[model]``; ``raw_output`` the case text; ``generation_prompt`` the format's first
  ``role_headers`` entry plus the case prefix (so :mod:`harness.corpus.peers.canitoolcall` reads the prefix back).
- ``provenance``: ``kind`` ``template_render``, ``source_url`` the template (the hub file at ``revision``, the
  llama-cpp-python sdist's PyPI page, or the model repo for a local file or GGUF), ``template_sha256``,
  ``generator`` ``harness/template/render.py``, ``license`` ``NOASSERTION`` (the catalog records no licence).
- ``tags``: ``no-call`` / ``single-call`` / ``parallel-calls``, ``reasoning``, ``truncated`` / ``malformed`` for
  drift cases, then the harness tags as ``x-<tag>``.
- ``expected`` (``reasoning`` as ``reasoning_content``); for a drift case the harness' recovered reading. A
  truncation (mutators ``truncate-*``) with no complete call left gets ``expected_error`` accepting
  ``no_tool_calls``, ``content_passthrough`` and ``exception`` (the spec's rule for outputs cut at
  ``max_tokens``). The spec has no "either": where the harness also accepts a surfaced answer, ``notes`` say so.
- ``family.json``'s reference model has ``variant`` ``toolcall-harness:<format>`` (the reader's mapping back).
- No ``output_token_ids``: the cases are texts (canitoolcall adapters then tokenize ``raw_output``).

``family.json`` pins the reference model by a 40-hex Hugging Face commit (``revision``), as the spec requires.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.assets.sdist import SDIST_NAME, SDIST_VERSION
from harness.core.cases import Case
from harness.core.errors import HarnessError
from harness.core.textio import open_text, write_text
from harness.corpus.peers.canitoolcall import ACCEPT, SPEC_VERSION, SUITE, VARIANT_PREFIX
from harness.formats import FormatSpec

#: the slices written (template renders); the others are the harness' imports of other sources.
EXPORTED_SLICES = ("curated", "generated", "drift")
GENERATOR = "harness/template/render.py"
_REVISION = re.compile(r"[0-9a-f]{40}")
_NOT_ID = re.compile(r"[^a-z0-9._-]+")
_NOT_TAG = re.compile(r"[^a-z0-9]+")


class ExportError(HarnessError):
    """The corpus cannot be written in the peer spec (a missing or malformed pin); the message says what to pass."""


def family_slug(fmt: FormatSpec) -> str:
    """The canitoolcall family of ``fmt``: the first family its ``peers`` select, else its name with ``-``."""
    for entry in fmt.peers:
        suite, _, selector = entry.partition(":")
        if suite == SUITE:
            return selector.partition("/")[0]
    return fmt.name.replace("_", "-")


def write_fixtures(
    cases: Iterable[Case], folder: Path, fmt: FormatSpec, *, model: str, revision: str, name: str = ""
) -> tuple[list[Path], int, list[tuple[str, str]]]:
    """Write ``cases`` (of format ``fmt``, rendered for HF repo ``model`` at commit ``revision``; ``name``: the
    catalog model, for the notes) under ``folder``.

    Returns ``(files written, fixtures written, skipped [(case id, reason)])``. Raises :class:`ExportError` for
    a ``revision`` that is not a 40-hex commit."""
    if not _REVISION.fullmatch(revision or ""):
        raise ExportError(
            f"revision {revision!r} of {model} is not a 40-hex commit: canitoolcall's family.json pins each "
            "reference model by its Hugging Face commit (pass the commit whose chat template rendered the corpus)"
        )
    family = family_slug(fmt)
    header = fmt.role_headers[0] if fmt.role_headers else None
    by_slice: dict[str, list[dict]] = {}
    skipped: list[tuple[str, str]] = []
    used: set[str] = set()
    reasoning = fmt.reasoning is not None
    for case in cases:
        why = _unwritable(case, fmt, header)
        if why:
            skipped.append((case.id, why))
            continue
        record = _fixture(case, family, model, revision, header, used)
        reasoning = reasoning or bool(case.expected.reasoning)
        by_slice.setdefault(case.slice, []).append(record)
    target = Path(folder) / family
    target.mkdir(parents=True, exist_ok=True)
    written = [_write_family(target / "family.json", fmt, family, model, revision, name, header, reasoning)]
    count = 0
    for slice_name, records in by_slice.items():
        path = target / f"{slice_name}.jsonl"
        with open_text(path) as out:
            for record in records:
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
        written.append(path)
        count += len(records)
    return written, count, skipped


def _unwritable(case: Case, fmt: FormatSpec, header: str | None) -> str:
    if case.format != fmt.name:
        return f"format {case.format}, not {fmt.name}"
    if case.slice not in EXPORTED_SLICES or not case.template:
        return f"slice {case.slice}: not a template render (export the source it was read from instead)"
    if header is None and case.prefix:
        return f"{fmt.name} has no role_headers: the pre-filled prefix cannot be written as a generation prompt"
    if not all(isinstance(c.arguments, dict) for c in case.expected.tool_calls):
        return "expected arguments that are not a JSON object"
    return ""


def _fixture(case: Case, family: str, model: str, revision: str, header: str | None, used: set[str]) -> dict:
    drift = case.extra.get("drift") if isinstance(case.extra.get("drift"), dict) else None
    mutator = str(drift.get("mutator", "")) if drift else ""
    truncated = mutator.startswith("truncate-")
    calls = case.expected.tool_calls
    tags = ["no-call" if not calls else "single-call" if len(calls) == 1 else "parallel-calls"]
    tags += ["reasoning"] if case.expected.reasoning else []
    tags += (["truncated"] if truncated else ["malformed"]) if drift else []
    tags += [f"x-{slug}" for slug in (_NOT_TAG.sub("-", t.lower()).strip("-") for t in case.tags) if slug]
    notes = [f"toolcall-harness {case.slice} case {case.id}"]
    if case.note:
        notes.append(case.note)
    record: dict[str, Any] = {
        "id": f"{family}/{_unique(case.id, used)}",
        "family": family,
        "models": [model],
        "spec_version": SPEC_VERSION,
        "provenance": _provenance(case.template or {}, model, revision),
        "tools": case.tools or [],
        "raw_output": case.text,
        "tags": list(dict.fromkeys(tags)),
    }
    if header is not None:
        record["generation_prompt"] = header + case.prefix
    if truncated and not calls:
        record["expected_error"] = {
            "reason": f"toolcall-harness drift {mutator}: the output ends inside the only call (max_tokens)",
            "accept": list(ACCEPT),
        }
    else:
        record["expected"] = {
            "content": case.expected.content or None,
            "reasoning_content": case.expected.reasoning or None,
            "tool_calls": [{"name": c.name, "arguments": c.arguments} for c in calls],
        }
        if drift and "surfaced" in (drift.get("outcomes") or []):
            notes.append("The harness also accepts a surfaced answer (no call, the damaged text kept in content).")
    template = case.template or {}
    if template.get("source") == "sdist":
        notes.append(f"Template {template.get('file')} from the {SDIST_NAME} {SDIST_VERSION} sdist (llama.cpp's copy).")
    elif template.get("source") in ("local_dir", "gguf"):
        notes.append(f"Template {template.get('file')} from a {template['source']} source.")
    record["notes"] = " ".join(notes)
    return record


def _unique(case_id: str, used: set[str]) -> str:
    base = "th-" + _NOT_ID.sub("-", case_id.lower().replace("~", ".")).strip("-.")
    name, n = base, 2
    while name in used:
        name, n = f"{base}-{n}", n + 1
    used.add(name)
    return name


def _provenance(template: dict, model: str, revision: str) -> dict:
    source, file = template.get("source"), template.get("file", "")
    if source == "hub":
        url, rev = f"https://huggingface.co/{model}/blob/{revision}/{file}", revision
    elif source == "sdist":
        url, rev = f"https://pypi.org/project/{SDIST_NAME}/{SDIST_VERSION}/", SDIST_VERSION
    else:
        url, rev = f"https://huggingface.co/{model}", f"{source}:{file}"
    out = {"kind": "template_render", "source_url": url, "revision": rev, "license": "NOASSERTION"}
    out["generator"] = GENERATOR
    if re.fullmatch(r"[0-9a-f]{64}", str(template.get("sha256", ""))):
        out["template_sha256"] = template["sha256"]
    return out


def _write_family(
    path: Path, fmt: FormatSpec, family: str, model: str, revision: str, name: str, header: str | None, reasoning: bool
) -> Path:
    """Write (or extend, keeping other reference models) the family file; returns its path. The reference
    model's ``variant`` names the harness format (``toolcall-harness:<format>``), which the reader maps back."""
    ref: dict[str, Any] = {"repo": model, "revision": revision, "variant": f"{VARIANT_PREFIX}{fmt.name}"}
    if header is not None:
        ref["default_generation_prompt"] = header
    ref["stop_tokens"] = list(fmt.stop_markers)
    data: dict[str, Any] = {
        "slug": family,
        "name": f"{family} (toolcall-harness export, format {fmt.name})",
        "spec_version": SPEC_VERSION,
        "has_reasoning": reasoning,
        "markers": list(fmt.markers),
        "reference_models": [ref],
        "format_notes": f"harness/formats/{fmt.name}.py",
        "notes": f"Written by toolcall-harness corpus export: {name or model}'s cases, rendered through its template.",
    }
    try:
        old = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, ValueError):
        old = None
    if isinstance(old, dict) and isinstance(old.get("reference_models"), list):
        others = [r for r in old["reference_models"] if isinstance(r, dict) and r.get("repo") != model]
        data["reference_models"] = [*others, ref]
        data["markers"] = list(dict.fromkeys([*(old.get("markers") or []), *fmt.markers]))
        data["has_reasoning"] = bool(old.get("has_reasoning")) or reasoning
    write_text(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    return path

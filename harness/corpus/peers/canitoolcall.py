"""canitoolcall's fixtures (fixture spec v0.1) as harness cases: the slice ``peer-canitoolcall``.

Source: canitoolcall 0.1.1 (PyPI, Apache-2.0). Its wheel holds ``canitoolcall/_data/spec/`` (``README.md``, the
fixture spec v0.1; ``fixture.schema.json``, ``family.schema.json``) and ``canitoolcall/_data/fixtures/<family>/``
(``family.json`` plus ``*.jsonl``, one fixture per line). :func:`load_suite` reads the pinned wheel (downloaded
once with pip into ``cache_dir()/peers/canitoolcall-0.1.1``, sha256 checked) or any folder laid out the same way.

A fixture becomes a :class:`~harness.core.cases.Case` of the format its ``models[0]`` reference model's
``variant`` names (``toolcall-harness:<format>``: the harness' own export), else of the format whose
``FormatSpec.peers`` selects it (``canitoolcall:<family>/<models[0]>`` before ``canitoolcall:<family>``):

- ``id`` ``canitoolcall/<fixture id>``; ``text`` the ``raw_output``; ``tools`` as given; ``tags`` the fixture's;
  ``source`` ``canitoolcall 0.1.1 <family>/<file>:<line>``; ``text_provenance`` ``reconstructed`` for tags
  ``x-derived*``, else ``full`` (``raw_output`` is the exact completion).
- ``prefix``: the ``generation_prompt`` (``null``: the family's ``reference_models[repo == models[0]]``
  ``default_generation_prompt``, as canitoolcall's own adapters resolve it) minus the longest of the format's
  ``role_headers`` (``<|turn>model\\n<|channel>thought\\n<channel|>`` -> ``<|channel>thought\\n<channel|>``);
  ``""`` for an empty prompt (a turn continued after a tool result). A prompt that starts with no role header of
  the format is not guessed at: the fixture is listed as unsupported.
- ``expected``: ``content``, ``reasoning_content`` (as ``reasoning``) and ``tool_calls``; ``""`` is ``None``.
  An ``expected_error`` fixture is ``kind="drift"`` with an empty expected message and
  ``extra["expected_error"] = {"accept", "reason"}`` (the judge turns ``accept`` into outcome classes).
- ``extra["peer"]``: ``suite``, ``version``, ``sha256`` (of the wheel; of the files for a folder), ``where``,
  ``id``, ``family``, ``models``, ``provenance``, ``tags``, ``thinking``, ``tokenizer``, ``generation_prompt``
  (resolved); ``extra["token_ids"]`` / ``extra["tokenizer"]`` when the fixture has ``output_token_ids``.

Fixtures no format selects, or with an unknown major ``spec_version`` (the spec: "harnesses must reject
fixtures with an unknown major version"), are never dropped silently: ``Suite.unsupported`` lists
``(peer id, reason)``. Unknown fields are ignored (a minor version may add optional ones).

Errors: a malformed fixture line or family file raises :class:`~harness.core.cases.CaseFileError` naming the file,
the line and the field; the wheel not downloadable (offline, no cache) or not matching its pin raises
:class:`~harness.assets.pypi.WheelFetchError` naming the pip command.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.assets.pypi import WheelFetchError, open_wheel
from harness.core.cases import Case, CaseFileError
from harness.core.errors import HarnessError
from harness.core.fields import FieldProblem
from harness.core.jsonl import text_objects
from harness.core.messages import Message, ToolCall
from harness.core.paths import cache_dir
from harness.core.schemas import check_tools
from harness.formats import FormatSpec, all_formats

SUITE = "canitoolcall"
VERSION = "0.1.1"
REQUIREMENT = f"canitoolcall=={VERSION}"
#: sha256 of canitoolcall-0.1.1-py3-none-any.whl (317,504 bytes), measured 2026-12-03 on the file that
#: ``pip download --no-deps --only-binary=:all: canitoolcall==0.1.1`` fetched from PyPI.
WHEEL_SHA256 = "a8a0ea82584cfdb00e737f2853d20fb5f233002aeb961ba735f574a225eceb15"
SLICE = "peer-canitoolcall"
#: the members of the wheel that hold the fixtures and the JSON schemas.
FIXTURES_MEMBER = "canitoolcall/_data/fixtures/"
SPEC_MEMBER = "canitoolcall/_data/spec/"
#: the fixture spec versions this reader knows: major 0 (minor versions only add optional fields).
SPEC_MAJOR = 0
SPEC_VERSION = "0.1"
ACCEPT = ("no_tool_calls", "content_passthrough", "exception")
PROVENANCE_KINDS = ("template_render", "engine_test", "bug_report", "recorded", "spec_example")
#: a family.json reference model whose ``variant`` is ``toolcall-harness:<format>`` is in that harness format.
VARIANT_PREFIX = "toolcall-harness:"
_ID = re.compile(r"[a-z0-9][a-z0-9.-]*/[a-z0-9][a-z0-9._-]*")
_VERSION = re.compile(r"([0-9]+)\.([0-9]+)")


@dataclass
class Suite:
    """A fixture set read as cases.

    ``cases``: ``{format name: [Case]}``; ``unsupported``: ``[(peer id, reason)]`` of the fixtures mapped to no
    format (or of an unknown spec version); ``skipped``: ``{format name: [(peer id, reason)]}`` of fixtures of a
    format that cannot be turned into its cases (a generation prompt without its role header); ``version``:
    ``0.1.1`` (the wheel) or ``folder``; ``sha256``: of the wheel, or of the folder's files (names and bytes,
    sorted); ``source``: the wheel file or the folder."""

    cases: dict[str, list[Case]] = field(default_factory=dict)
    unsupported: list[tuple[str, str]] = field(default_factory=list)
    skipped: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    version: str = VERSION
    sha256: str = ""
    source: str = ""

    def all_cases(self) -> list[Case]:
        return [case for cases in self.cases.values() for case in cases]


@dataclass(frozen=True)
class _Family:
    slug: str
    major: int
    version: str
    prompts: dict[str, str | None]  # reference model repo -> default_generation_prompt
    variants: dict[str, str]  # reference model repo -> variant label


def peer_cases(fmt: FormatSpec) -> tuple[list[Case], list[tuple[str, str]]]:
    """``(cases of fmt, unsupported)`` from the pinned wheel: the unsupported list holds the fixtures no format
    selects plus those of ``fmt`` that cannot become cases (each ``(peer id, reason)``)."""
    suite = load_suite()
    return list(suite.cases.get(fmt.name, [])), suite.unsupported + suite.skipped.get(fmt.name, [])


def load_suite(folder: Path | None = None) -> Suite:
    """The fixtures of ``folder`` (a family folder with ``family.json``, a folder of family folders, or one holding
    ``fixtures/``), or of the pinned wheel when ``None`` (read once per process). Raises :class:`CaseFileError`
    for malformed files and :class:`WheelFetchError` when the wheel cannot be had."""
    if folder is None:
        return _wheel_suite()
    folder = Path(folder)
    if not folder.is_dir():
        raise CaseFileError(f"{folder}: not a folder of canitoolcall fixtures")
    if (folder / "fixtures").is_dir() and not (folder / "family.json").is_file():
        folder = folder / "fixtures"
    roots = [folder] if (folder / "family.json").is_file() else sorted(p for p in folder.iterdir() if p.is_dir())
    files: list[tuple[str, str, str]] = []  # (family folder name, file name, where prefix)
    texts: dict[tuple[str, str], str] = {}
    digest = hashlib.sha256()
    for root in roots:
        for path in sorted(root.iterdir()):
            if path.name == "family.json" or path.suffix == ".jsonl":
                try:
                    text = path.read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError) as exc:
                    raise CaseFileError(f"{path}: cannot read: {exc}") from None
                digest.update(f"{root.name}/{path.name}\n".encode())
                digest.update(path.read_bytes())
                files.append((root.name, path.name, str(path)))
                texts[(root.name, path.name)] = text
    return _read(files, texts, version="folder", sha256=digest.hexdigest(), source=str(folder), label="")


def wheel_path() -> Path:
    """The pinned wheel in the harness cache (downloaded on first use), its sha256 checked.

    Raises :class:`WheelFetchError` (offline without the cache: the message names the pip command)."""
    folder = cache_dir() / "peers" / REQUIREMENT.replace("==", "-")
    with open_wheel(REQUIREMENT, folder) as wheel:
        path = Path(str(wheel.filename))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != WHEEL_SHA256:
        raise WheelFetchError(
            f"{path}: sha256 {digest}, not the pinned {WHEEL_SHA256} of {REQUIREMENT} "
            "(harness/corpus/peers/canitoolcall.py WHEEL_SHA256); delete it to download it again"
        )
    return path


def wheel_member(name: str) -> str:
    """The text of one file of the pinned wheel's data (``spec/fixture.schema.json``, ``fixtures/gemma4/...``)."""
    with zipfile.ZipFile(wheel_path()) as wheel:
        return wheel.read(f"canitoolcall/_data/{name}").decode("utf-8")


@functools.cache
def _wheel_suite() -> Suite:
    path = wheel_path()
    files: list[tuple[str, str, str]] = []
    texts: dict[tuple[str, str], str] = {}
    with zipfile.ZipFile(path) as wheel:
        for member in sorted(wheel.namelist()):
            rest = member[len(FIXTURES_MEMBER) :] if member.startswith(FIXTURES_MEMBER) else ""
            family, _, name = rest.partition("/")
            if family and "/" not in name and (name == "family.json" or name.endswith(".jsonl")):
                files.append((family, name, f"{path}!{member}"))
                texts[(family, name)] = wheel.read(member).decode("utf-8")
    if not files:
        raise WheelFetchError(f"{path}: holds no {FIXTURES_MEMBER}*/*.jsonl (not the canitoolcall wheel?)")
    return _read(files, texts, version=VERSION, sha256=WHEEL_SHA256, source=str(path), label=f"{SUITE} {VERSION} ")


# --- reading ------------------------------------------------------------------------------------------------


def _read(files, texts, *, version: str, sha256: str, source: str, label: str) -> Suite:
    suite = Suite(version=version, sha256=sha256, source=source)
    by_model, by_family = _selectors()
    wheres = {(family, name): where for family, name, where in files}
    seen: dict[str, str] = {}
    for family_dir in dict.fromkeys(family for family, _, _ in files):
        if (family_dir, "family.json") not in texts:
            first = next(where for family, _, where in files if family == family_dir)
            raise CaseFileError(f"{first}: field 'family': no family.json in its folder {family_dir!r}")
        family = _family(texts[(family_dir, "family.json")], wheres[(family_dir, "family.json")], family_dir)
        for name in sorted(n for f, n, _ in files if f == family_dir and n != "family.json"):
            for where, data in text_objects(
                texts[(family_dir, name)], wheres[(family_dir, name)], CaseFileError, "fixture"
            ):
                peer_id = _string(data, "id", where)
                if peer_id in seen:
                    raise CaseFileError(f"{where}: duplicate id {peer_id!r} (first at {seen[peer_id]})")
                seen[peer_id] = where
                major = _major(data, where)
                if major != SPEC_MAJOR or family.major != SPEC_MAJOR:
                    version_of = data["spec_version"] if major != SPEC_MAJOR else f"{family.version} (family.json)"
                    reason = f"spec_version {version_of}: unknown major version (this reader knows {SPEC_MAJOR}.x)"
                    suite.unsupported.append((peer_id, reason))
                    continue
                fixture = _fixture(data, where, family)
                fmt = _format_of(fixture, family, by_model, by_family)
                if fmt is None:
                    reason = f"no harness format for {SUITE} {fixture['family']}/{fixture['models'][0]}"
                    suite.unsupported.append((peer_id, reason))
                    continue
                made = _case(fixture, fmt, family, f"{family_dir}/{name}:{where.rsplit(':', 1)[1]}", suite, label)
                if isinstance(made, str):
                    suite.skipped.setdefault(fmt.name, []).append((peer_id, made))
                else:
                    suite.cases.setdefault(fmt.name, []).append(made)
    return suite


def _format_of(fixture: dict, family: _Family, by_model: dict, by_family: dict) -> FormatSpec | None:
    """The format a fixture is in: the one its reference model's ``variant`` names (``toolcall-harness:<format>``,
    written by :mod:`harness.corpus.peers.canitoolcall_export`), else the format selecting its family/model, else
    the one selecting its family."""
    model = fixture["models"][0]
    variant = family.variants.get(model, "")
    if variant.startswith(VARIANT_PREFIX):
        spec = all_formats().get(variant[len(VARIANT_PREFIX) :])
        if spec is not None:
            return spec
    return by_model.get((fixture["family"], model)) or by_family.get(fixture["family"])


def _selectors() -> tuple[dict[tuple[str, str], FormatSpec], dict[str, FormatSpec]]:
    """``({(family, repo): spec}, {family: spec})`` from every format's ``peers``; two formats claiming one
    selector is a :class:`HarnessError` naming both."""
    by_model: dict[tuple[str, str], FormatSpec] = {}
    by_family: dict[str, FormatSpec] = {}
    for spec in all_formats().values():
        for entry in spec.peers:
            suite, _, selector = entry.partition(":")
            if suite != SUITE:
                continue
            family, _, repo = selector.partition("/")
            table: dict = by_model if repo else by_family
            key = (family, repo) if repo else family
            if key in table:
                raise HarnessError(f"formats {table[key].name!r} and {spec.name!r} both select {entry!r} (peers)")
            table[key] = spec
    return by_model, by_family


def _family(text: str, where: str, folder: str) -> _Family:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CaseFileError(f"{where}:{exc.lineno}: invalid JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(data, dict):
        raise CaseFileError(f"{where}: family.json must be a JSON object")
    slug = _string(data, "slug", where)
    if slug != folder:
        raise CaseFileError(f"{where}: field 'slug' is {slug!r}; it must be the folder name {folder!r}")
    major = _major(data, where)
    _string_list(data, "markers", where)
    refs = data.get("reference_models")
    if not isinstance(refs, list) or not refs:
        raise CaseFileError(f"{where}: field 'reference_models' must be a non-empty list")
    prompts: dict[str, str | None] = {}
    variants: dict[str, str] = {}
    for i, ref in enumerate(refs):
        if not isinstance(ref, dict):
            raise CaseFileError(f"{where}: field 'reference_models[{i}]' must be an object")
        repo = _string(ref, "repo", where, f"reference_models[{i}].")
        prompt = ref.get("default_generation_prompt")
        if prompt is not None and not isinstance(prompt, str):
            raise CaseFileError(f"{where}: field 'reference_models[{i}].default_generation_prompt' must be a string")
        prompts[repo] = prompt
        if isinstance(ref.get("variant"), str):
            variants[repo] = ref["variant"]
    return _Family(slug=slug, major=major, version=data["spec_version"], prompts=prompts, variants=variants)


def _major(data: dict, where: str) -> int:
    version = _string(data, "spec_version", where)
    match = _VERSION.fullmatch(version)
    if not match:
        raise CaseFileError(f"{where}: field 'spec_version' is {version!r}; expected MAJOR.MINOR, e.g. '0.1'")
    return int(match.group(1))


def _fixture(data: dict, where: str, family: _Family) -> dict:
    """``data`` checked field by field (the fields the harness reads); raises :class:`CaseFileError`."""
    peer_id = data["id"]
    if not _ID.fullmatch(peer_id):
        raise CaseFileError(f"{where}: field 'id' is {peer_id!r}; expected <family>/<kebab-name>")
    name = _string(data, "family", where)
    if name != family.slug or peer_id.split("/", 1)[0] != name:
        raise CaseFileError(f"{where}: field 'family' is {name!r}; id and folder say {family.slug!r}")
    models = _string_list(data, "models", where)
    provenance = data.get("provenance")
    if not isinstance(provenance, dict):
        raise CaseFileError(f"{where}: field 'provenance' must be an object")
    if provenance.get("kind") not in PROVENANCE_KINDS:
        raise CaseFileError(
            f"{where}: field 'provenance.kind' is {provenance.get('kind')!r}; "
            f"expected one of {', '.join(PROVENANCE_KINDS)}"
        )
    for key in ("source_url", "revision", "license"):
        _string(provenance, key, where, "provenance.")
    tools = data.get("tools")
    if not isinstance(tools, list):
        raise CaseFileError(f"{where}: field 'tools' must be a list")
    try:
        check_tools(tools)  # each a declaration whose parameters are a JSON schema: before any parser reads them
    except FieldProblem as exc:
        raise CaseFileError(f"{where}: {exc}") from None
    _string(data, "raw_output", where, empty_ok=True)
    tags = _string_list(data, "tags", where)
    has_expected, has_error = "expected" in data, "expected_error" in data
    if has_expected == has_error:
        raise CaseFileError(f"{where}: field 'expected' / 'expected_error': exactly one of them is required")
    if has_expected:
        _expected(data["expected"], where)
    else:
        _expected_error(data["expected_error"], where)
    ids = data.get("output_token_ids")
    if ids is not None and not (
        isinstance(ids, list) and all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids)
    ):
        raise CaseFileError(f"{where}: field 'output_token_ids' must be a list of non-negative integers")
    tokenizer = data.get("tokenizer")
    if tokenizer is not None:
        if not isinstance(tokenizer, dict):
            raise CaseFileError(f"{where}: field 'tokenizer' must be an object")
        _string(tokenizer, "repo", where, "tokenizer.")
        _string(tokenizer, "revision", where, "tokenizer.")
        if tokenizer.get("mode", "hf") not in ("hf", "mistral"):
            raise CaseFileError(f"{where}: field 'tokenizer.mode' is {tokenizer['mode']!r}; expected hf or mistral")
    prompt = data.get("generation_prompt")
    if prompt is not None and not isinstance(prompt, str):
        raise CaseFileError(f"{where}: field 'generation_prompt' must be a string or null")
    if data.get("thinking") is not None and not isinstance(data["thinking"], bool):
        raise CaseFileError(f"{where}: field 'thinking' must be true, false or null")
    if data.get("notes") is not None and not isinstance(data["notes"], str):
        raise CaseFileError(f"{where}: field 'notes' must be a string")
    return {**data, "models": models, "tags": tags}


def _expected(value: Any, where: str) -> None:
    if not isinstance(value, dict):
        raise CaseFileError(f"{where}: field 'expected' must be an object")
    for key in ("content", "reasoning_content"):
        if key not in value or not (value[key] is None or isinstance(value[key], str)):
            raise CaseFileError(f"{where}: field 'expected.{key}' must be a string or null")
    calls = value.get("tool_calls")
    if not isinstance(calls, list):
        raise CaseFileError(f"{where}: field 'expected.tool_calls' must be a list")
    for i, call in enumerate(calls):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not call["name"]:
            raise CaseFileError(f"{where}: field 'expected.tool_calls[{i}].name' must be a non-empty string")
        if not isinstance(call.get("arguments"), dict):
            raise CaseFileError(f"{where}: field 'expected.tool_calls[{i}].arguments' must be an object")


def _expected_error(value: Any, where: str) -> None:
    if not isinstance(value, dict):
        raise CaseFileError(f"{where}: field 'expected_error' must be an object")
    _string(value, "reason", where, "expected_error.")
    accept = value.get("accept")
    if not isinstance(accept, list) or not accept or any(a not in ACCEPT for a in accept):
        raise CaseFileError(
            f"{where}: field 'expected_error.accept' must be a non-empty list of {', '.join(ACCEPT)}, got {accept!r}"
        )


def _string(data: dict, key: str, where: str, path: str = "", empty_ok: bool = False) -> str:
    value = data.get(key)
    if not isinstance(value, str) or (not value and not empty_ok):
        got = "missing" if key not in data else f"{type(value).__name__} {value!r}"[:60]
        raise CaseFileError(
            f"{where}: field '{path}{key}' must be a {'' if empty_ok else 'non-empty '}string, got {got}"
        )
    return value


def _string_list(data: dict, key: str, where: str) -> list[str]:
    value = data.get(key)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise CaseFileError(f"{where}: field '{key}' must be a non-empty list of non-empty strings")
    return value


# --- fixture -> case ----------------------------------------------------------------------------------------


def _case(fixture: dict, fmt: FormatSpec, family: _Family, where: str, suite: Suite, label: str) -> Case | str:
    """The case of one checked fixture, or the reason it cannot be one."""
    model = fixture["models"][0]
    prompt = fixture.get("generation_prompt")
    if prompt is None:
        prompt = family.prompts.get(model)
    prefix = ""
    if prompt:
        header = max((h for h in fmt.role_headers if prompt.startswith(h)), key=len, default=None)
        if header is None:
            known = ", ".join(repr(h) for h in fmt.role_headers) or "none known"
            return f"generation prompt {prompt!r} starts with no role header of {fmt.name} ({known})"
        prefix = prompt[len(header) :]
    extra: dict[str, Any] = {
        "peer": {
            "suite": SUITE,
            "version": suite.version,
            "sha256": suite.sha256,
            "where": where,
            "id": fixture["id"],
            "family": fixture["family"],
            "models": fixture["models"],
            "provenance": fixture["provenance"],
            "tags": fixture["tags"],
            "thinking": fixture.get("thinking"),
            "tokenizer": fixture.get("tokenizer"),
            "generation_prompt": prompt,
        }
    }
    if fixture.get("output_token_ids") is not None:
        extra["token_ids"] = list(fixture["output_token_ids"])
        extra["tokenizer"] = fixture.get("tokenizer")
    if "expected" in fixture:
        exp = fixture["expected"]
        kind = "strict"
        expected = Message(
            content=exp["content"] or None,
            reasoning=exp["reasoning_content"] or None,
            tool_calls=[ToolCall(c["name"], c["arguments"]) for c in exp["tool_calls"]],
        )
    else:
        kind, expected = "drift", Message()
        error = fixture["expected_error"]
        extra["expected_error"] = {"accept": list(error["accept"]), "reason": error["reason"]}
    derived = any(t.startswith("x-derived") for t in fixture["tags"])
    return Case(
        id=f"{SUITE}/{fixture['id']}",
        format=fmt.name,
        text=fixture["raw_output"],
        expected=expected,
        kind=kind,
        tools=fixture["tools"],
        prefix=prefix,
        slice=SLICE,
        tags=list(fixture["tags"]),
        source=f"{label or suite.source + ' '}{where}",
        text_provenance="reconstructed" if derived else "full",
        note=fixture.get("notes") or "",
        extra=extra,
    )

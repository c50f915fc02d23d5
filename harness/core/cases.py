"""Reading and writing case files in the external case format (JSON Lines, one case per line).

The format is specified in ``corpora/observed/FORMAT.md`` (a copy of ``shared/cases/README.md``). Every
malformed line is an error naming the file and line: cases are never silently dropped. The core knows no format
names: a caller that checks the ``format`` field passes the names it knows (``harness.formats.case_formats()``).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core import fields
from harness.core.errors import HarnessError
from harness.core.fields import MISSING, FieldProblem
from harness.core.jsonl import read_objects
from harness.core.messages import Message
from harness.core.schemas import check_tools
from harness.core.textio import open_text

REQUIRED_FIELDS = ("id", "format", "text", "expected")
# ``composed`` is the harness' own: template-rendered calls with prose the template cannot write put around them.
TEXT_PROVENANCES = ("full", "partial", "reconstructed", "composed")
OWN_FIELDS = {
    "id",
    "format",
    "kind",
    "text",
    "expected",
    "tools",
    "stream_specific",
    "source",
    "text_provenance",
    "note",
    "prefix",
    "slice",
    "tags",
    "seed",
    "template",
}


class CaseFileError(HarnessError):
    """A case file is missing, unreadable or has a malformed line (message names file and line)."""


def case_from_json(
    data: dict, where: str, default_slice: str = "observed", formats: Collection[str] | None = None
) -> Case:
    """Validate one decoded JSON object and build a :class:`Case`; nothing is coerced.

    Every field of the format (``FORMAT.md``) is checked for its type and range, ``tools`` declaration by
    declaration (each ``parameters`` a JSON schema with no ``$ref`` cycle: :func:`harness.core.schemas.check_tools`).
    ``where`` (``file:line``) prefixes every error, e.g. ``FILE:3: field 'tags': expected a list of strings, got
    string``; ``formats``: the values the ``format`` field may take (any string when ``None``). Raises
    :class:`CaseFileError`.
    """
    if not isinstance(data, dict):
        raise CaseFileError(f"{where}: expected a JSON object, got {fields.json_type(data)}")
    missing = [f for f in REQUIRED_FIELDS if f not in data]
    if missing:
        raise CaseFileError(f"{where}: missing field(s) {', '.join(missing)}")
    try:
        return _case(data, default_slice, formats)
    except FieldProblem as exc:
        raise CaseFileError(f"{where}: {exc}") from None


def _case(data: dict, default_slice: str, formats: Collection[str] | None) -> Case:
    fields.string(data["id"], "id", empty=False)
    fields.string(data["format"], "format")
    if formats is not None and data["format"] not in formats:
        close = difflib.get_close_matches(data["format"], list(formats), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise FieldProblem("format", f"field 'format' is {data['format']!r}{hint}; known: {', '.join(formats)}")
    kind = fields.one_of(data.get("kind", "strict"), "kind", KINDS)
    text = fields.string(data["text"], "text")
    tools = check_tools(data.get("tools"))
    optional = {name: fields.string(data.get(name), name, null=True) for name in ("prefix", "source", "note")}
    provenance = data.get("text_provenance")
    if provenance is not None:
        fields.one_of(provenance, "text_provenance", TEXT_PROVENANCES)
    slice_name = data.get("slice")
    if slice_name is not None:
        fields.one_of(slice_name, "slice", SLICES)
    return Case(
        id=data["id"],
        format=data["format"],
        text=text,
        expected=_expected(data["expected"]),
        kind=kind,
        tools=tools,
        prefix=optional["prefix"] or "",
        slice=slice_name or default_slice,
        tags=list(fields.string_list(data.get("tags"), "tags", null=True) or []),
        stream_specific=fields.boolean(data.get("stream_specific", False), "stream_specific"),
        source=optional["source"] or "",
        text_provenance=provenance or "full",
        note=optional["note"] or "",
        seed=fields.integer(data.get("seed"), "seed", null=True),
        template=fields.obj(data.get("template"), "template", null=True),
        extra=_extension_fields({k: v for k, v in data.items() if k not in OWN_FIELDS}),
    )


def _extension_fields(extra: dict) -> dict:
    """``extra`` when the fields the harness itself writes there and reads back are well-typed (written by
    :mod:`harness.corpus.drift` and the peer readers into ``corpus.jsonl``, read by scoring): ``drift``
    (``outcomes`` a list of strings, ``raw`` a string, ``tolerated`` a list of strings, ``recoverable`` a bool),
    ``expected_error`` (``accept`` a list of strings, ``reason`` a string), ``token_ids`` (integers ≥ 0), ``peer``
    and ``tokenizer`` (objects), ``reasoning_format`` and ``stop`` (strings); each may be null. Other fields are
    the file's own, kept unread."""
    drift = fields.obj(extra.get("drift"), "drift", null=True)
    if drift is not None:
        fields.string_list(drift.get("outcomes", MISSING), "drift.outcomes")
        fields.string(drift.get("raw", ""), "drift.raw")
        fields.string_list(drift.get("tolerated", []), "drift.tolerated")
        fields.boolean(drift.get("recoverable", True), "drift.recoverable")
    error = fields.obj(extra.get("expected_error"), "expected_error", null=True)
    if error is not None:
        fields.string_list(error.get("accept", MISSING), "expected_error.accept")
        fields.string(error.get("reason"), "expected_error.reason", null=True)
    ids = fields.array(extra.get("token_ids"), "token_ids", null=True)
    for i, token in enumerate(ids or ()):
        fields.integer(token, f"token_ids[{i}]", minimum=0)
    for name in ("peer", "tokenizer"):
        fields.obj(extra.get(name), name, null=True)
    for name in ("reasoning_format", "stop"):
        fields.string(extra.get(name), name, null=True)
    return extra


def _expected(data: Any) -> Message:
    """The ``expected`` message: ``content``/``reasoning`` strings or null, ``tool_calls`` a list (or null) of
    ``{"name": non-empty string, "arguments": object}`` (arguments may be left out: ``{}``)."""
    fields.obj(data, "expected")
    for name in ("content", "reasoning"):
        fields.string(data.get(name), f"expected.{name}", null=True)
    for i, call in enumerate(fields.array(data.get("tool_calls"), "expected.tool_calls", null=True) or ()):
        fields.obj(call, f"expected.tool_calls[{i}]")
        fields.string(call.get("name", MISSING), f"expected.tool_calls[{i}].name", empty=False)
        fields.obj(call.get("arguments", {}), f"expected.tool_calls[{i}].arguments")
    return Message.from_json(data)


def load_cases(
    path: str | Path, fmt: str | None = None, default_slice: str = "observed", formats: Collection[str] | None = None
) -> list[Case]:
    """Read a JSON Lines case file; keep only cases of format ``fmt`` when given.

    Blank lines are skipped. ``formats``: the values the ``format`` field may take (unchecked when ``None``).
    Raises :class:`CaseFileError` naming ``file:line`` for invalid JSON, missing or mistyped fields, a format not
    in ``formats`` and duplicate ids.
    """
    path = Path(path)
    cases: list[Case] = []
    seen: dict[str, int] = {}
    for where, data in read_objects(path, CaseFileError, "case"):
        number = int(where.rsplit(":", 1)[1])
        case = case_from_json(data, where, default_slice, formats)
        if case.id in seen:
            raise CaseFileError(f"{where}: duplicate id {case.id!r} (first on line {seen[case.id]})")
        seen[case.id] = number
        if fmt is None or case.format == fmt:
            cases.append(case)
    return cases


def write_cases(path: str | Path, cases: Iterable[Case]) -> int:
    """Write cases as JSON Lines; returns the number written."""
    count = 0
    with open_text(path) as out:
        for case in cases:
            out.write(case.to_line() + "\n")
            count += 1
    return count


KINDS = ("strict", "drift")


#: the slices of a run, in report order; ``peer-*``: a peer test suite's cases (:mod:`harness.corpus.peers`).
SLICES = ("curated", "generated", "observed", "drift", "peer-canitoolcall", "peer-llama.cpp")


@dataclass
class Case:
    """One parsing case: raw completion ``text`` and the ``expected`` message.

    Fields beyond the external format:
    - ``prefix``: text the chat template pre-fills after the generation prompt (e.g. Gemma 4 with thinking
      off ends the prompt with ``<|channel>thought\\n<channel|>``); parsers that need the prompt get it.
    - ``slice``: ``curated``, ``generated``, ``observed``, ``drift`` (curated cases mutated by
      :mod:`harness.corpus.drift`; their mutator facts are in ``extra["drift"]``) or a peer suite's
      (``peer-canitoolcall``, ``peer-llama.cpp``: :mod:`harness.corpus.peers`, provenance in ``extra["peer"]``).
    - ``tags``: edge shapes the case exercises (e.g. ``nested-object``, ``quote-in-string``).
    - ``seed``: the seed that generated the case (generated slice), for reproduction.
    - ``template``: provenance of the template that rendered it (source, file, sha256).
    """

    id: str
    format: str
    text: str
    expected: Message
    kind: str = "strict"
    tools: list | None = None
    prefix: str = ""
    slice: str = "curated"
    tags: list[str] = field(default_factory=list)
    stream_specific: bool = False
    source: str = ""
    text_provenance: str = "full"
    note: str = ""
    seed: int | None = None
    template: dict | None = None
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["expected"] = self.expected.to_json()
        extra = data.pop("extra")
        data.update(extra)
        return data

    def to_line(self) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False)

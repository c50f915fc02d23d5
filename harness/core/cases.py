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

from harness.core.errors import HarnessError
from harness.core.jsonl import read_objects
from harness.core.messages import Message
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
    """Validate one decoded JSON object and build a :class:`Case`.

    ``where`` (``file:line``) prefixes every error; ``formats``: the values the ``format`` field may take (any
    string when ``None``). Raises :class:`CaseFileError`.
    """
    if not isinstance(data, dict):
        raise CaseFileError(f"{where}: expected a JSON object, got {type(data).__name__}")
    missing = [f for f in REQUIRED_FIELDS if f not in data]
    if missing:
        raise CaseFileError(f"{where}: missing field(s) {', '.join(missing)}")
    _check_type(data, "id", str, where)
    _check_type(data, "text", str, where)
    _check_type(data, "expected", dict, where)
    _check_type(data, "format", str, where)
    if formats is not None and data["format"] not in formats:
        close = difflib.get_close_matches(data["format"], list(formats), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise CaseFileError(f"{where}: field 'format' is {data['format']!r}{hint}; known: {', '.join(formats)}")
    kind = data.get("kind", "strict")
    if kind not in KINDS:
        raise CaseFileError(f"{where}: field 'kind' is {kind!r}; expected one of {', '.join(KINDS)}")
    tools = data.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise CaseFileError(f"{where}: field 'tools' must be a list or null")
    if not isinstance(data.get("stream_specific", False), bool):
        raise CaseFileError(f"{where}: field 'stream_specific' must be true or false")
    provenance = data.get("text_provenance") or "full"
    if provenance not in TEXT_PROVENANCES:
        raise CaseFileError(
            f"{where}: field 'text_provenance' is {provenance!r}; expected one of {', '.join(TEXT_PROVENANCES)}"
        )
    tags = data.get("tags")
    if tags is not None and not (isinstance(tags, list) and all(isinstance(tag, str) for tag in tags)):
        raise CaseFileError(f"{where}: field 'tags' must be a list of strings or null, got {type(tags).__name__}")
    expected = _expected(data["expected"], where)
    return Case(
        id=data["id"],
        format=data["format"],
        text=data["text"],
        expected=expected,
        kind=kind,
        tools=tools,
        prefix=data.get("prefix") or "",
        slice=data.get("slice") or default_slice,
        tags=list(tags or []),
        stream_specific=data.get("stream_specific", False),
        source=data.get("source") or "",
        text_provenance=provenance,
        note=data.get("note") or "",
        seed=data.get("seed"),
        template=data.get("template"),
        extra={k: v for k, v in data.items() if k not in OWN_FIELDS},
    )


def _check_type(data: dict, name: str, kind: type, where: str) -> None:
    if not isinstance(data[name], kind):
        raise CaseFileError(f"{where}: field '{name}' must be a {kind.__name__}, got {type(data[name]).__name__}")


def _expected(data: dict, where: str) -> Message:
    calls = data.get("tool_calls") or []
    if not isinstance(calls, list):
        raise CaseFileError(f"{where}: field 'expected.tool_calls' must be a list")
    for i, call in enumerate(calls):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise CaseFileError(f"{where}: field 'expected.tool_calls[{i}].name' must be a string")
        if not isinstance(call.get("arguments", {}), dict):
            raise CaseFileError(f"{where}: field 'expected.tool_calls[{i}].arguments' must be an object")
    for name in ("content", "reasoning"):
        if data.get(name) is not None and not isinstance(data[name], str):
            raise CaseFileError(f"{where}: field 'expected.{name}' must be a string or null")
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

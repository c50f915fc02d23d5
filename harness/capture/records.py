"""Capture records: what a backend generated for a suite prompt, kept so parsers can be re-scored any time.

A capture file is JSON Lines, one record per (prompt, backend, run), appended and flushed as each arrives
(:class:`CaptureWriter`). Fields (:class:`Capture`):

- ``prompt_id``, ``suite``: the prompt (``corpora/suites/``); ``format``: the tool-call format of the model;
- ``backend`` (``transformers``, ``llama-cpp``, ``mlx-lm``, ``openai``), ``model`` (``{name, file, sha256}``),
  ``versions`` (library versions), ``sampling`` (temperature, top_p, max_tokens, ...), ``seed``;
- ``prompt_text``: the rendered prompt; ``prefix``: what the template pre-filled after the generation prompt;
- ``text``: the raw completion, special tokens kept as text; ``pieces``: ``[[text, [token ids]], ...]`` as
  generated (``"".join`` of the texts is ``text``); ``finish_reason``; ``elapsed_s``; ``tokens``;
- ``error``: set instead of ``text`` when the capture itself failed (connection refused, HTTP 500, truncated
  stream): such records are kept and reported, never dropped;
- ``server_message``: for servers that parse tool calls themselves, their parsed message (scored as a parser
  named after the server);
- ``forced``: the backend was made to write the prompt's reference answer (fixture models);
  ``options``: backend settings (server URL and mode, grammar, device).

:func:`score_capture` judges parsers on a capture: one-shot on ``text`` and streaming on the recorded pieces.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness.core.errors import HarnessError
from harness.core.jsonl import prepare_append, read_objects
from harness.core.textio import open_text, same_text


class CaptureFileError(HarnessError):
    """A malformed capture file; the message names the file and line."""


@dataclass
class Capture:
    """One generation for one prompt (see the module docstring for the fields)."""

    prompt_id: str
    suite: str
    format: str
    backend: str
    model: dict
    text: str | None = None
    pieces: list = field(default_factory=list)
    prefix: str = ""
    prompt_text: str = ""
    finish_reason: str | None = None
    elapsed_s: float = 0.0
    tokens: int = 0
    sampling: dict = field(default_factory=dict)
    seed: int | None = None
    versions: dict = field(default_factory=dict)
    error: str | None = None
    server_message: dict | None = None
    forced: bool = False
    options: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return asdict(self)


REQUIRED = {"prompt_id": str, "suite": str, "format": str, "backend": str, "model": dict}
_NUMBER, _NONE = (int, float), type(None)
#: what each optional field may hold (a bool is no number here)
OPTIONAL: dict[str, tuple[type, ...]] = {
    "text": (str, _NONE),
    "pieces": (list,),
    "prefix": (str,),
    "prompt_text": (str,),
    "finish_reason": (str, _NONE),
    "elapsed_s": _NUMBER,
    "tokens": (int,),
    "sampling": (dict,),
    "seed": (int, _NONE),
    "versions": (dict,),
    "error": (str, _NONE),
    "server_message": (dict, _NONE),
    "forced": (bool,),
    "options": (dict,),
}
_NAMES = {str: "a string", list: "a list", dict: "an object", int: "an integer", float: "a number"}
_NAMES[bool] = "true or false"


def read_captures(path: str | Path, torn: list[str] | None = None) -> list[Capture]:
    """The records of a capture file. Raises :class:`CaptureFileError` naming ``file:line`` for a file that is not
    UTF-8, invalid or too deeply nested JSON, a missing or mistyped field (:data:`REQUIRED`, :data:`OPTIONAL`), pieces
    that are not ``[[text, [integer token ids]], ...]`` or do not join to the text, or a record with neither text
    nor error. ``torn``: a list that a torn last line (a write cut off by a crash) is
    reported to, and skipped, instead of raising (:func:`harness.core.jsonl.read_objects`)."""
    lines = read_objects(path, CaptureFileError, "capture", torn, allow_nan=True)
    return [_capture(data, where) for where, data in lines]


def _capture(data: dict, where: str) -> Capture:
    for key, kind in REQUIRED.items():
        if not isinstance(data.get(key), kind):
            raise CaptureFileError(f"{where}: field {key!r} must be a {kind.__name__}")
    unknown = set(data) - set(Capture.__dataclass_fields__)
    if unknown:
        raise CaptureFileError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    for key, kinds in OPTIONAL.items():
        value = data.get(key, None if _NONE in kinds else kinds[0]())
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            what = "a number" if kinds == _NUMBER else " or ".join(_NAMES.get(kind, "null") for kind in kinds)
            raise CaptureFileError(f"{where}: field {key!r} must be {what}, got {type(value).__name__}")
    capture = Capture(**data)
    if capture.error is None and not isinstance(capture.text, str):
        raise CaptureFileError(f"{where}: a capture needs 'text' (or 'error' when the capture failed)")
    if capture.pieces:
        if not all(
            isinstance(p, list)
            and len(p) == 2
            and isinstance(p[0], str)
            and isinstance(p[1], list)
            and all(isinstance(i, int) and not isinstance(i, bool) for i in p[1])
            for p in capture.pieces
        ):
            raise CaptureFileError(f"{where}: 'pieces' must be [[text, [token ids]], ...]")
        if capture.text is not None and not same_text("".join(p[0] for p in capture.pieces), capture.text):
            raise CaptureFileError(f"{where}: the pieces do not join to the text")
    return capture


class CaptureWriter:
    """Appends captures to a JSON Lines file, flushing each, so an interrupted capture run loses nothing. A torn last
    line the file ends with (an earlier run killed mid-write; :func:`read_captures` reports it) is cut off first,
    so the next record starts a line of its own."""

    def __init__(self, path: str | Path):
        prepare_append(path)
        self._fh = open_text(path, "a")

    def write(self, capture: Capture) -> None:
        self._fh.write(json.dumps(capture.to_json(), ensure_ascii=False) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> CaptureWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

"""Reading JSON Lines data whose every line is an object, with errors that name the file and line; cutting the
torn last line a killed writer leaves (:func:`drop_torn_tail`)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path


def read_objects(path: str | Path, error: type[Exception], what: str = "line") -> Iterator[tuple[str, dict]]:
    """Yield ``("file:line", object)`` for every non-blank line of ``path`` (split on ``"\\n"`` only).

    Raises ``error`` (e.g. a :class:`~harness.core.errors.HarnessError` subclass) for an unreadable file, a line
    that is not JSON, or one that is not a JSON object (``what`` names the record in that message)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{path}: cannot read {what} file: {getattr(exc, 'strerror', None) or exc}") from None
    yield from text_objects(text, str(path), error, what)


def text_objects(text: str, where_file: str, error: type[Exception], what: str = "line") -> Iterator[tuple[str, dict]]:
    """:func:`read_objects` for text already read (a member of an archive, say); ``where_file`` names it in errors:
    ``file:line: invalid JSON: <reason> (column N)`` or ``file:line: a <what> must be a JSON object``. Lines split
    on ``"\\n"`` only: U+0085 and U+2028 may sit unescaped inside a JSON string."""
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        where = f"{where_file}:{number}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise error(f"{where}: invalid JSON: {exc.msg} (column {exc.colno})") from None
        if not isinstance(data, dict):
            raise error(f"{where}: a {what} must be a JSON object, got {type(data).__name__}")
        yield where, data


def drop_torn_tail(path: str | Path) -> str | None:
    """Cut ``path`` after its last ``"\\n"``: what follows is a line its writer, killed, did not finish (each line
    is written whole with its newline, then flushed). Returns that text (decoded, bad bytes replaced), or None when
    the file is empty or ends with a newline; a missing file is left missing. Raises ``OSError``."""
    path = Path(path)
    if not path.exists():
        return None
    data = path.read_bytes()
    keep = data.rfind(b"\n") + 1
    if keep == len(data):
        return None
    os.truncate(path, keep)
    return data[keep:].decode("utf-8", "replace")

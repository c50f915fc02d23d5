"""Reading JSON Lines data files whose every line is an object, with errors that name the file and line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path


def read_objects(path: str | Path, error: type[Exception], what: str = "line") -> Iterator[tuple[str, dict]]:
    """Yield ``("file:line", object)`` for every non-blank line of ``path`` (split on ``"\\n"`` only).

    Raises ``error`` (e.g. a :class:`~harness.core.errors.HarnessError` subclass) for an unreadable file, a line
    that is not JSON, or one that is not a JSON object (``what`` names the record in that message)."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except OSError as exc:
        raise error(f"{path}: {exc.strerror or exc}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise error(f"{where}: not JSON ({exc})") from None
        if not isinstance(data, dict):
            raise error(f"{where}: a {what} must be a JSON object")
        yield where, data

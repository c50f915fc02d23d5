"""Reading JSON data (JSON Lines whose every line is an object, and single JSON documents) with errors that name the
file and line: text that is not UTF-8, invalid JSON, JSON nested deeper than :data:`MAX_JSON_DEPTH`, and a torn last
line (a write cut off by a crash: no final newline, not valid JSON), which readers of append-only files may skip;
cutting that torn line off (:func:`drop_torn_tail`, :func:`prepare_append`)."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.core.textio import NotUtf8Error, read_utf8

#: the deepest nesting of arrays and objects a data file may hold. The harness' own data stays under 15 levels;
#: Python's JSON reader fails near 1,000, and recursive code after it (``copy.deepcopy``: 2 frames a level,
#: jsonschema: about 4) well before: 100 leaves room for both.
MAX_JSON_DEPTH = 100


def json_depth(value: Any) -> int:
    """How deeply ``value`` nests lists and dicts (a scalar: 0, ``[]``: 1, ``[[1]]``: 2); iterative, any depth."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


class _NotJsonConstant(ValueError):
    """``NaN``, ``Infinity`` or ``-Infinity``: Python's reader takes them, JSON (RFC 8259) has no such literal."""


def _no_constant(name: str) -> Any:
    raise _NotJsonConstant(name)


def parse_json(text: str, where: str, error: type[Exception], allow_nan: bool = False) -> Any:
    """``json.loads(text)``, or ``error`` naming ``where``: ``where: invalid JSON: <reason> (line L, column C)``,
    ``where: invalid JSON: NaN is not a JSON value``, ``where: invalid JSON: an integer of more than 4300 digits``
    or ``where: JSON nested deeper than 100 levels``. ``allow_nan``: take ``NaN``/``Infinity`` (the harness' own
    records, which hold what a parser returned, may); input files written by people or other tools may not."""
    too_deep = error(f"{where}: JSON nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        value = json.loads(text) if allow_nan else json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        at = f"column {exc.colno}" if "\n" not in text.strip() else f"line {exc.lineno}, column {exc.colno}"
        raise error(f"{where}: invalid JSON: {exc.msg} ({at})") from None
    except _NotJsonConstant as exc:
        raise error(f"{where}: invalid JSON: {exc} is not a JSON value (RFC 8259 has no NaN or Infinity)") from None
    except ValueError as exc:  # int('9' * 5000): Python's limit on the digits of an integer it converts
        raise error(f"{where}: invalid JSON: a number Python cannot read ({exc})") from None
    except RecursionError:
        raise too_deep from None
    # only a text with more brackets than the limit can nest that deep: most are never walked
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and json_depth(value) > MAX_JSON_DEPTH:
        raise too_deep
    return value


def read_json(path: str | Path, error: type[Exception], what: str = "JSON") -> Any:
    """The JSON value in file ``path``; ``error`` names the file for one that cannot be read, is not UTF-8, or holds
    invalid or too deeply nested JSON (:func:`parse_json`)."""
    return parse_json(_read(path, error, what), str(path), error)


def _read(path: str | Path, error: type[Exception], what: str) -> str:
    try:
        mode = os.stat(path).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):  # /dev/zero would be read for ever
            kind = "a folder" if stat.S_ISDIR(mode) else "a device or socket"
            raise error(f"{path}: cannot read {what} file: {kind}, not a file")
        return read_utf8(path)
    except NotUtf8Error as exc:
        raise error(str(exc)) from None
    except OSError as exc:
        raise error(f"{path}: cannot read {what} file: {exc.strerror or exc}") from None


def read_objects(
    path: str | Path, error: type[Exception], what: str = "line", torn: list[str] | None = None, allow_nan: bool = False
) -> Iterator[tuple[str, dict]]:
    """Yield ``("file:line", object)`` for every non-blank line of ``path`` (split on ``"\\n"`` only).

    Raises ``error`` (e.g. a :class:`~harness.core.errors.HarnessError` subclass) for an unreadable or non-UTF-8
    file, a line that is not JSON, nests too deeply, or is not a JSON object (``what`` names the record in that
    message). ``torn``: a list to which a torn last line (:func:`torn_tail`) is reported, ``"file:line: ..."``,
    instead of raising; such a line is skipped. ``allow_nan``: as :func:`parse_json`."""
    text = _read(path, error, what)
    tail = torn_tail(text) if torn is not None else None
    if tail is not None and torn is not None:
        line = text.count("\n") + 1
        torn.append(f"{path}:{line}: torn last line skipped ({len(tail)} characters, no newline: a write cut off)")
        text = text[: len(text) - len(tail)]
    yield from text_objects(text, str(path), error, what, allow_nan)


def text_objects(
    text: str, where_file: str, error: type[Exception], what: str = "line", allow_nan: bool = False
) -> Iterator[tuple[str, dict]]:
    """:func:`read_objects` for text already read (a member of an archive, say); ``where_file`` names it in errors:
    ``file:line: invalid JSON: <reason> (column N)``, ``file:line: JSON nested deeper than 100 levels`` or
    ``file:line: a <what> must be a JSON object``. Lines split on ``"\\n"`` only: U+0085 and U+2028 may sit unescaped
    inside a JSON string."""
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        where = f"{where_file}:{number}"
        data = parse_json(line, where, error, allow_nan)
        if not isinstance(data, dict):
            raise error(f"{where}: a {what} must be a JSON object, got {type(data).__name__}")
        yield where, data


def torn_tail(text: str) -> str | None:
    """The last line of JSON Lines ``text`` when it is torn: no newline after it and not valid JSON (what an
    append cut off by a crash or ``kill -9`` leaves); else None. A whole last line without its newline is not torn."""
    if not text or text.endswith("\n"):
        return None
    tail = text[text.rfind("\n") + 1 :]
    try:
        json.loads(tail)
    except (ValueError, RecursionError):
        return tail
    return None


def prepare_append(path: str | Path) -> str | None:
    """Make the JSON Lines file ``path`` safe to append to: a torn last line (:func:`torn_tail`) is cut off
    (:func:`drop_torn_tail`), a whole last line without its newline gets one. Returns a note naming the line cut off,
    or None. A missing or empty file is left alone; raises ``OSError``."""
    path = Path(path)
    if not path.is_file() or path.stat().st_size == 0:
        return None
    data = path.read_bytes()
    if data.endswith(b"\n"):
        return None
    if torn_tail(data.decode("utf-8", "replace")) is None:
        with open(path, "ab") as fh:
            fh.write(b"\n")
        return None
    line, cut = data.count(b"\n") + 1, drop_torn_tail(path) or ""
    return f"{path}:{line}: torn last line cut off ({len(cut.encode())} bytes, no newline: a write cut off)"


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

"""Text the harness writes (records, reports, protocol lines, the terminal): UTF-8 that cannot fail to encode; and
text it reads (:func:`read_utf8`): UTF-8, or one error naming the file, line and byte.

A Python string can hold a lone surrogate (U+D800-U+DFFF): JSON's ``"\\ud800"`` decodes to one, so a case file,
a worker's reply or a server's stream brings it in. UTF-8 has no encoding for it; :data:`UNENCODABLE`
(``backslashreplace``) writes it as the six characters ``\\ud800``. ``json.dumps(..., ensure_ascii=False)``
leaves a surrogate inside a JSON string, so there it becomes the JSON escape and reads back as the same value;
in Markdown, CSV, HTML and the terminal it is a visible escape. Every other code point is plain UTF-8.
One limit: a high surrogate written just before a low one reads back as the pair's one code point (JSON
cannot tell them apart: :func:`same_text` compares as JSON does). Only surrogates are unencodable in UTF-8,
so nothing else changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO

#: the ``errors=`` handler of every text file and pipe the harness writes.
UNENCODABLE = "backslashreplace"


class NotUtf8Error(ValueError):
    """A file that is not UTF-8 text: ``path: not UTF-8 text: byte 0xE9 at line 3, column 12 (offset 80)``."""


def read_utf8(path: str | Path) -> str:
    """The text of ``path`` decoded as UTF-8, ``"\\r\\n"`` and ``"\\r"`` read as ``"\\n"`` (as ``Path.read_text`` does).
    Raises ``OSError`` as :func:`open` does, and :class:`NotUtf8Error` naming the file and where its first byte that
    is not UTF-8 sits."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = data.count(b"\n", 0, exc.start) + 1, exc.start - data.rfind(b"\n", 0, exc.start)
        raise NotUtf8Error(
            f"{path}: not UTF-8 text: byte 0x{data[exc.start]:02X} at line {line}, column {column} (offset {exc.start})"
        ) from None
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def open_text(path: str | Path | int, mode: str = "w", closefd: bool = True) -> IO[str]:
    """``path`` (or a file descriptor) opened for writing (``mode`` ``"w"`` or ``"a"``): UTF-8, lone
    surrogates escaped, ``"\\n"`` written as is. Raises ``OSError`` as :func:`open`."""
    if mode not in ("w", "a"):
        raise ValueError(f"open_text writes text: mode 'w' or 'a', not {mode!r}")
    return open(path, mode, encoding="utf-8", errors=UNENCODABLE, newline="\n", closefd=closefd)


def write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` (replacing it) as :func:`open_text` does. Raises ``OSError``."""
    with open_text(path) as out:
        out.write(text)


def encode(text: str) -> bytes:
    """``text`` as UTF-8 bytes, lone surrogates escaped (for pipes and sockets written as bytes)."""
    return text.encode("utf-8", UNENCODABLE)


def escape_unencodable(stream) -> None:
    """Make a text stream (``sys.stdout``, ``sys.stderr``) escape what its encoding cannot write instead of
    raising ``UnicodeEncodeError``; streams that cannot be reconfigured (captured by a test) are left alone."""
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors=UNENCODABLE)


def same_text(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are the same UTF-16 code units, i.e. the same JSON string: a surrogate pair split
    in two (a server streaming ``"\\ud83d"`` then ``"\\ude00"``) equals the one code point it encodes."""
    return a == b or a.encode("utf-16-le", "surrogatepass") == b.encode("utf-16-le", "surrogatepass")


def one_line(text: str) -> str:
    """``text`` with every non-printable character (``\\n``, ``\\r``, NUL, U+2028, a lone surrogate) escaped as
    ``repr`` writes it: outside data shown inside a one-line error message."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)

"""GGUF metadata, read straight from the header (no tensors, no torch).

Used for a GGUF's ``tokenizer.chat_template`` (template source) and for the vocabulary that the Gemma 4
tokenizer is built from. ``gguf.GGUFReader`` decodes every array eagerly (measured: 16 s on the sdist's
15.8 MB ``ggml-vocab-gemma-4.gguf``); this reader skips what it is not asked for (< 0.1 s for one key,
~0.3 s for everything).

Layout, per the GGUF spec (ggml's ``docs/gguf.md``; value type codes as ``gguf.GGUFValueType``): magic
``GGUF``, uint32 version (2 or 3; a file written big-endian shows it byte-swapped), uint64 tensor count,
uint64 key/value count, then ``key:string, type:uint32, value`` pairs; a string is a uint64 length and UTF-8
bytes; an array is a uint32 item type, a uint64 count and the items.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Collection
from typing import Any, Literal, overload

_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9


class _Header:
    """A cursor over the metadata section of a memory-mapped GGUF file."""

    def __init__(self, buf, order: str):
        self.buf, self.order, self.pos = buf, order, 0

    def unpack(self, fmt: str):
        values = struct.unpack_from(self.order + fmt, self.buf, self.pos)
        self.pos += struct.calcsize(self.order + fmt)
        return values

    @overload
    def string(self, decode: Literal[True] = True) -> str: ...
    @overload
    def string(self, decode: bool) -> str | None: ...
    def string(self, decode: bool = True) -> str | None:
        (n,) = self.unpack("Q")
        if self.pos + n > len(self.buf):
            raise ValueError("truncated GGUF string")
        start, self.pos = self.pos, self.pos + n
        return self.buf[start : self.pos].decode("utf-8") if decode else None

    def value(self, vtype: int, decode: bool) -> Any:
        if vtype == _STRING:
            return self.string(decode)
        if vtype in _SCALAR:
            if not decode:
                self.pos += struct.calcsize(self.order + _SCALAR[vtype])
                return None
            return self.unpack(_SCALAR[vtype])[0]
        if vtype == _ARRAY:
            itype, count = self.unpack("IQ")
            if itype == _STRING:
                items = [self.string(decode) for _ in range(count)]
                return items if decode else None
            if itype in _SCALAR:
                fmt = f"{count}{_SCALAR[itype]}"
                if not decode:
                    self.pos += struct.calcsize(self.order + fmt)
                    return None
                return list(self.unpack(fmt))
            raise ValueError(f"unsupported GGUF array item type {itype}")
        raise ValueError(f"unknown GGUF value type {vtype}")


def read_gguf_metadata(path: str | os.PathLike, keys: Collection[str] | None = None) -> dict[str, Any]:
    """Metadata key/values of GGUF file ``path``: all of them, or only ``keys`` (reading stops once every
    key asked for is found; keys absent from the file are absent from the result).

    Values: ``int``/``float``/``bool``/``str`` and lists of them. Raises ``ValueError`` for a file that is
    not GGUF, an unsupported version or value type, or a truncated header; ``OSError`` when unreadable.
    """
    wanted = set(keys) if keys is not None else None
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        if buf[:4] != b"GGUF":
            raise ValueError("not a GGUF file (bad magic)")
        order = ">" if struct.unpack_from("<I", buf, 4)[0] & 0xFFFF == 0 else "<"
        header = _Header(buf, order)
        header.pos = 4
        (version,) = header.unpack("I")
        if version not in (2, 3):
            raise ValueError(f"unsupported GGUF version {version}")
        _tensors, n_kv = header.unpack("QQ")
        meta: dict[str, Any] = {}
        try:
            for _ in range(n_kv):
                key = header.string()
                (vtype,) = header.unpack("I")
                take = wanted is None or key in wanted
                value = header.value(vtype, decode=take)
                if take:
                    meta[key] = value
                    if wanted is not None and wanted <= meta.keys():
                        break
        except struct.error:
            raise ValueError("truncated GGUF header") from None
        return meta

"""``fd_line_blocks``, the line reader both worker-protocol sides use, on a real pipe: lines that span many
64 KiB reads come back whole and in order, empty lines are kept, the unterminated rest is yielded once when it
holds more than whitespace. Its speed on a 100 MB line: ``bench/bench_scaling.py``."""

from __future__ import annotations

import os
import threading

import pytest

from harness.engines.server import fd_line_blocks


def read_lines(data: bytes) -> list[bytes]:
    """Every line ``fd_line_blocks`` yields for ``data`` written into a pipe by another thread."""
    r, w = os.pipe()

    def write() -> None:
        with os.fdopen(w, "wb") as pipe:
            pipe.write(data)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        return [line for block in fd_line_blocks(r) for line in block]
    finally:
        writer.join()
        os.close(r)


@pytest.mark.parametrize(
    "data, lines",
    [
        (b"a\nb\n", [b"a", b"b"]),
        (b"a\n\nb", [b"a", b"", b"b"]),  # an empty line is a line; the unterminated rest comes last
        (b"a\n  \n", [b"a", b"  "]),
        (b"a\n \t", [b"a"]),  # an unterminated rest of whitespace only is dropped
        (b"", []),
    ],
)
def test_lines(data, lines):
    assert read_lines(data) == lines


def test_lines_spanning_many_reads_come_back_whole():
    long = bytes(range(256)).replace(b"\n", b"") * 4000  # about 1 MB: 16 reads of 64 KiB
    data = b"short\n" + long + b"\n" + long + b"x\n\n" + long
    assert read_lines(data) == [b"short", long, long + b"x", b"", long]

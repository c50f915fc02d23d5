"""Run folders (:mod:`harness.core.paths`): a fresh one per run even when runs start in the same second, an
``--out`` that holds anything refused; and the torn last line a killed writer leaves
(:func:`harness.core.jsonl.drop_torn_tail`)."""

from __future__ import annotations

import multiprocessing

import pytest

from harness.core.errors import HarnessError
from harness.core.jsonl import drop_torn_tail
from harness.core.paths import claim_out_dir, new_run_dir


def test_a_taken_name_gets_a_suffix(tmp_path):
    names = [new_run_dir(tmp_path / "reports", "20261203-101010-s0").name for _ in range(3)]
    assert names == ["20261203-101010-s0", "20261203-101010-s0-2", "20261203-101010-s0-3"]


def _claim(args) -> str:
    root, barrier = args
    barrier.wait()
    return new_run_dir(root, "same-second").name


def test_processes_started_at_once_never_share_a_folder(tmp_path):
    """Eight processes released together by a barrier, all asking for the same name."""
    context = multiprocessing.get_context("fork")
    with context.Manager() as manager:
        barrier = manager.Barrier(8)
        with context.Pool(8) as pool:
            names = pool.map(_claim, [(tmp_path, barrier)] * 8)
    assert len(set(names)) == 8 and sorted(p.name for p in tmp_path.iterdir()) == sorted(names)


def test_out_must_be_empty_unless_forced(tmp_path):
    assert claim_out_dir(tmp_path / "new" / "run", force=False).is_dir()  # created
    assert claim_out_dir(tmp_path / "new" / "run", force=False).is_dir()  # empty: fine
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "results.jsonl").write_text("{}\n")
    with pytest.raises(HarnessError, match="not empty") as raised:
        claim_out_dir(taken, force=False)
    assert f"--resume {taken}" in str(raised.value) and "--force" in str(raised.value)
    assert claim_out_dir(taken, force=True) == taken
    assert (taken / "results.jsonl").read_text() == "{}\n"  # force does not delete: the run replaces its files
    (tmp_path / "file").write_text("x")
    with pytest.raises(OSError):
        claim_out_dir(tmp_path / "file", force=True)


@pytest.mark.parametrize(
    ("data", "torn", "kept"),
    [
        (b'{"a": 1}\n{"b": 2}\n', None, b'{"a": 1}\n{"b": 2}\n'),
        (b'{"a": 1}\n{"b": ', '{"b": ', b'{"a": 1}\n'),
        (b'{"a": 1}\n{"b": 2}', '{"b": 2}', b'{"a": 1}\n'),  # whole JSON but no newline: not known to be whole
        (b'{"a": "\xc3', '{"a": "\ufffd', b""),  # cut inside a UTF-8 sequence
        (b"", None, b""),
    ],
)
def test_a_torn_last_line_is_cut_off(tmp_path, data, torn, kept):
    path = tmp_path / "results.jsonl"
    path.write_bytes(data)
    assert drop_torn_tail(path) == torn
    assert path.read_bytes() == kept
    assert drop_torn_tail(tmp_path / "missing.jsonl") is None and not (tmp_path / "missing.jsonl").exists()

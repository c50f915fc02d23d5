"""The offline template source: the pinned llama-cpp-python sdist, fetched with pip into the user cache,
verified by sha256, and only the files asked for extracted."""

import pytest

from harness.assets import sdist
from harness.core.paths import file_sha256


@pytest.fixture()
def fresh_cache(tmp_path, monkeypatch):
    """An empty harness cache (the real one stays untouched)."""
    monkeypatch.setenv("TOOLCALL_HARNESS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_tampered_archive_is_fetched_again_with_pip_and_verified(fresh_cache):
    target = fresh_cache / "sdist" / f"{sdist.SDIST_NAME}-{sdist.SDIST_VERSION}" / sdist.SDIST_FILE
    target.parent.mkdir(parents=True)
    target.write_bytes(b"not the sdist")
    archive = sdist.sdist_archive()  # real pip download from the registry
    assert archive == target and file_sha256(archive) == sdist.SDIST_SHA256


def test_only_requested_files_are_extracted(fresh_cache):
    path = sdist.sdist_file("models/templates/google-gemma-4-31B-it.jinja")  # fetches into the empty cache
    assert path.read_text(encoding="utf-8").startswith("{%- macro format_parameters")
    root = fresh_cache / "sdist" / f"{sdist.SDIST_NAME}-{sdist.SDIST_VERSION}"
    assert file_sha256(root / sdist.SDIST_FILE) == sdist.SDIST_SHA256
    assert [p for p in (root / "files").rglob("*") if p.is_file()] == [path]
    assert sdist.sdist_file("models/templates/google-gemma-4-31B-it.jinja") == path  # reused
    assert "google-gemma-4-31B-it.jinja" in sdist.list_templates()


def test_missing_member_is_a_clear_error():
    with pytest.raises(sdist.SdistError, match="has no file vendor/llama.cpp/models/templates/nope.jinja"):
        sdist.sdist_file("models/templates/nope.jinja")

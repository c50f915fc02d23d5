"""The offline default source of real chat templates and vocabularies: the pinned llama-cpp-python sdist.

llama-cpp-python 0.3.36's sdist vendors llama.cpp, whose ``models/templates/*.jinja`` are chat templates
copied from the model repositories and whose ``models/ggml-vocab-*.gguf`` are vocab-only GGUFs. The
templates fall under their models' licences, so the project fetches them at run time (once, with pip,
into the user cache directory), verifies the archive's sha256 and extracts only the files asked for.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path, PurePosixPath

from harness.core.paths import cache_dir, file_sha256

SDIST_NAME = "llama-cpp-python"
SDIST_VERSION = "0.3.36"
SDIST_FILE = "llama_cpp_python-0.3.36.tar.gz"
# sha256 of the PyPI sdist, measured when the pin was chosen.
SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
LLAMA_CPP_DIR = "vendor/llama.cpp"


class SdistError(RuntimeError):
    """The sdist could not be fetched, failed verification, or lacks a requested file."""


def _sdist_dir() -> Path:
    return cache_dir() / "sdist" / f"{SDIST_NAME}-{SDIST_VERSION}"


def sdist_archive() -> Path:
    """Path of the verified sdist archive, downloading it with pip on first use.

    Raises :class:`SdistError` when pip fails (no registry reachable) or the sha256 does not match.
    """
    target = _sdist_dir() / SDIST_FILE
    if target.exists() and file_sha256(target) == SDIST_SHA256:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    print(
        f"downloading {SDIST_NAME}=={SDIST_VERSION} sdist (76 MB, once) into {target.parent} ...",
        file=sys.stderr,
        flush=True,
    )
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            "--quiet",
            "-d",
            tmp,
            f"{SDIST_NAME}=={SDIST_VERSION}",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        got = Path(tmp) / SDIST_FILE
        if not got.exists():
            raise SdistError(
                f"could not download {SDIST_NAME}=={SDIST_VERSION} with pip "
                f"(exit {proc.returncode}): {proc.stderr.strip()[-500:]}"
            )
        digest = file_sha256(got)
        if digest != SDIST_SHA256:
            raise SdistError(f"{SDIST_FILE}: sha256 {digest} does not match the pinned {SDIST_SHA256}")
        os.replace(got, target)
    return target


def sdist_file(relpath: str) -> Path:
    """Extract ``relpath`` (relative to the sdist's ``vendor/llama.cpp``) into the cache; return its path.

    Example: ``sdist_file("models/templates/google-gemma-4-31B-it.jinja")``. Extracted files are reused.
    Raises :class:`SdistError` if the archive lacks the file, or ``relpath`` is absolute or climbs out of
    ``vendor/llama.cpp`` (a ``..`` part): nothing outside the archive's folder is ever read.
    """
    parts = PurePosixPath(relpath.replace("\\", "/")).parts
    if not parts or relpath.startswith(("/", "\\")) or ".." in parts or ":" in parts[0]:
        raise SdistError(f"{relpath!r} is not a path inside {SDIST_FILE}'s {LLAMA_CPP_DIR}")
    files = _sdist_dir() / "files"
    dest = files.joinpath(*parts)
    if dest.exists():
        return dest
    member = f"{SDIST_NAME.replace('-', '_')}-{SDIST_VERSION}/{LLAMA_CPP_DIR}/{'/'.join(parts)}"
    with tarfile.open(sdist_archive(), "r:gz") as tar:
        try:
            info = tar.getmember(member)
        except KeyError:
            raise SdistError(f"{SDIST_FILE} has no file {LLAMA_CPP_DIR}/{relpath}") from None
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f"{dest.name}.{os.getpid()}.part")  # one per process: parallel test workers
        src = tar.extractfile(info)
        if src is None:
            raise SdistError(f"{SDIST_FILE}: {LLAMA_CPP_DIR}/{relpath} is not a regular file")
        with src, open(tmp, "wb") as out:
            out.write(src.read())
        os.replace(tmp, dest)
    return dest


def list_templates() -> list[str]:
    """Names of the ``.jinja`` chat templates in the sdist's collection (``models/templates``)."""
    prefix = f"{SDIST_NAME.replace('-', '_')}-{SDIST_VERSION}/{LLAMA_CPP_DIR}/models/templates/"
    with tarfile.open(sdist_archive(), "r:gz") as tar:
        return sorted(n[len(prefix) :] for n in tar.getnames() if n.startswith(prefix) and n.endswith(".jinja"))

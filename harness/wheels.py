"""Compiled wheels built once and kept in the user cache (llama-cpp-python takes 10-13 minutes on 2 cores).

``cached_wheel()`` returns the path of the llama-cpp-python wheel for the pinned sdist
(:mod:`harness.sdist`), building it with ``pip wheel --no-deps`` from the cached, sha256-checked sdist the
first time. The wheel lives in ``<cache>/wheels/<key>/`` where the key hashes the package, version, build
flags (``CMAKE_ARGS``) and Python version, so CI on the same machine and later sessions reuse it.
``python -m harness.wheels`` builds it ahead of time.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from harness.engine_spec import EngineBuildError
from harness.engines import build_in_place
from harness.errors import HarnessError
from harness.sdist import SDIST_NAME, SDIST_VERSION, cache_dir, sdist_archive

# llava is not needed (no vision), and GGML_NATIVE=OFF keeps the wheel usable on other CPUs of the same kind.
CMAKE_ARGS = "-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF"


class WheelBuildError(HarnessError):
    """``pip wheel`` failed; the message has the end of its output and the log file."""


def wheel_key(cmake_args: str = CMAKE_ARGS) -> str:
    """The cache folder name: package, version, Python and the sha256 of the build flags."""
    flags = hashlib.sha256(json.dumps({"CMAKE_ARGS": cmake_args}).encode()).hexdigest()[:12]
    return f"{SDIST_NAME}-{SDIST_VERSION}-py{sys.version_info.major}{sys.version_info.minor}-{flags}"


def cached_wheel(cmake_args: str = CMAKE_ARGS, log=print) -> Path:
    """The llama-cpp-python wheel, built from the cached sdist on first use (10-13 min on 2 cores).

    Raises :class:`WheelBuildError` when the build fails (cmake and a C++ compiler are needed)."""
    folder = cache_dir() / "wheels" / wheel_key(cmake_args)
    found = sorted(folder.glob("*.whl"))
    if found:
        return found[0]
    log(f"building the {SDIST_NAME} {SDIST_VERSION} wheel into {folder} (once; 10-13 min on 2 cores)")

    def build(scratch: Path) -> None:
        proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check",
                               "-w", str(scratch), str(sdist_archive())], env={**os.environ, "CMAKE_ARGS": cmake_args},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0 or not list(scratch.glob("*.whl")):
            raise EngineBuildError(proc.stdout)  # all of pip's output goes to the failure log

    try:
        build_in_place(folder, build)
    except EngineBuildError as exc:
        tail = "\n".join(str(exc).splitlines()[-15:])
        raise WheelBuildError(f"pip wheel {SDIST_NAME} failed (log: {exc.log}):\n{tail}") from None
    return sorted(folder.glob("*.whl"))[0]


if __name__ == "__main__":
    print(cached_wheel())

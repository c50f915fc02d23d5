"""Compiled wheels built once and kept in the user cache (llama-cpp-python takes 10-13 minutes on 2 cores).

``cached_wheel()`` returns the path of the llama-cpp-python wheel for the pinned sdist
(:mod:`harness.assets.sdist`), building it with ``pip wheel --no-deps`` from the cached, sha256-checked sdist the
first time. The wheel lives in ``<cache>/wheels/<key>/`` where the key hashes the package, version, build
flags (``CMAKE_ARGS``) and Python version, so CI on the same machine and later sessions reuse it.
``python -m harness.engines.wheels`` builds it ahead of time; ``python -m harness.engines.wheels --install`` also
installs it, with the server extras :data:`SERVER_EXTRAS` (for ``python -m llama_cpp.server``), into the running
environment unless that version is there already.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from harness.assets.sdist import SDIST_NAME, SDIST_VERSION, sdist_archive
from harness.core.errors import HarnessError
from harness.core.paths import cache_dir
from harness.engines.environments import build_in_place
from harness.engines.spec import EngineBuildError

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
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "--disable-pip-version-check",
                "-w",
                str(scratch),
                str(sdist_archive()),
            ],
            env={**os.environ, "CMAKE_ARGS": cmake_args},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        if proc.returncode != 0 or not list(scratch.glob("*.whl")):
            raise EngineBuildError(proc.stdout)  # all of pip's output goes to the failure log

    try:
        build_in_place(folder, build, done=lambda: bool(list(folder.glob("*.whl"))))
    except EngineBuildError as exc:
        tail = "\n".join(str(exc).splitlines()[-15:])
        raise WheelBuildError(f"pip wheel {SDIST_NAME} failed (log: {exc.log}):\n{tail}") from None
    return sorted(folder.glob("*.whl"))[0]


# ``llama_cpp.server`` of 0.3.36 imports ``starlette_context`` APIs removed in 0.4 (measured here).
SERVER_EXTRAS = ("starlette-context<0.4",)


def install_wheel(log=print) -> str:
    """Install the cached llama-cpp-python wheel (building it first if needed) with its ``server`` extra into this
    Python environment; returns the installed version. Raises :class:`WheelBuildError`."""
    import importlib.metadata

    try:
        if importlib.metadata.version(SDIST_NAME) == SDIST_VERSION:
            return SDIST_VERSION
    except importlib.metadata.PackageNotFoundError:
        pass
    wheel = cached_wheel(log=log)
    log(f"installing {wheel.name} with its server extras")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            f"{wheel}[server]",
            *SERVER_EXTRAS,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if proc.returncode != 0:
        raise WheelBuildError(f"pip install {wheel.name} failed:\n" + "\n".join(proc.stdout.splitlines()[-15:]))
    return SDIST_VERSION


if __name__ == "__main__":
    if "--install" in sys.argv[1:]:
        print(f"{SDIST_NAME} {install_wheel()}")
    else:
        print(cached_wheel())

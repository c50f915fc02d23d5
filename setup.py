"""Build hook: the wheel carries the top-level ``templates/`` and ``corpora/`` inside the package.

The two folders stay the source of truth at the top of the checkout (and in the sdist, by ``MANIFEST.in``);
``build_py`` copies them into ``harness/_data/`` of the build, where :func:`harness.core.paths.data_dir` finds
them when the package runs outside a checkout. Editable installs skip the copy: they read the checkout's folders.
Everything else is declared in ``pyproject.toml``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
DATA_FOLDERS = ("templates", "corpora")


class build_py_with_data(build_py):
    """``build_py`` plus a copy of each of :data:`DATA_FOLDERS` into ``<build_lib>/harness/_data/``."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        for name in DATA_FOLDERS:
            source = ROOT / name
            if not source.is_dir():
                raise FileNotFoundError(f"{source}: data folder missing; the wheel would not run outside a checkout")
            target = Path(self.build_lib) / "harness" / "_data" / name
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".*"))


setup(cmdclass={"build_py": build_py_with_data})

"""What an engine is: how to build its isolated environment and how to start its protocol worker.

An *engine* is a parser library that runs out of process (see ``docs/worker-protocol.md``): SGLang, vLLM,
llama.cpp, or transformers / mlx-lm at another version than the main environment's. Each engine is one
module under ``parsers/reference/`` (or named by an entry point) that defines ``ENGINE`` (an :class:`Engine`) and,
for Python engines, the adapter the worker serves; :mod:`harness.engines.environments` discovers the modules,
installs and finds environments.

This module uses only the standard library: the engine modules import it, and they are also imported by
workers running inside the engines' own virtualenvs, where the harness' dependencies are not installed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import venv
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness.core.paths import SOURCE_ROOT, file_sha256
from harness.core.textio import write_text
from harness.engines.sources import Source, SourceError, locate, normalize, tree_version, wheel_name, write_overlay

Log = Callable[[str], None]

# A plain release number (no .dev, rc or +local part): one a package index can have.
_RELEASE = re.compile(r"\d+(\.\d+)+(\.post\d+)?")
# The files of a Python project that name its dependencies: an edit to one rebuilds a source environment.
DEPENDENCY_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "requirements/common.txt")


class EngineBuildError(RuntimeError):
    """An install step failed; the message names the step, its exit status and the end of its output.

    ``log``: the file the failure was written to, set by :func:`harness.engines.environments.build_in_place`."""

    log: Path | None = None


@dataclass(frozen=True)
class SourceBuild:
    """How an engine is built from a source (``NAME@PATH``: :mod:`harness.engines.sources`).

    - ``locate(text) -> Source``: checks the path is of this engine's project; raises :class:`SourceError`.
    - ``recipe(source) -> dict``: JSON-able; its sha256 names the environment (``<name>-src-<sha[:12]>``), so it
      holds what must rebuild the environment when it changes (the tree's path and the files naming its
      dependencies, a wheel's sha256), not the code an editable install reads anew.
    - ``install(env_dir, source, log)``: builds the environment into the empty folder ``env_dir``.
    - ``refresh(env_dir, source, log) -> dict | None``: run in the finished environment before every worker start
      (llama.cpp: an incremental cmake build); returns what it did (``{"seconds", ...}``), recorded in
      ``refreshes.json``, or None when there is nothing to do (editable installs).
    - ``how(source) -> str``: how the source is installed, for reports (``"editable install"``, ``"python-only over
      vllm==0.33.0"``).
    - ``version(source) -> str``: the release the source says it is (or the pinned default).
    - ``worker_command(env_dir, source)``: as :attr:`Engine.worker_command`.
    - ``cost``: what a first install and an edit cost, in words, for messages (as :attr:`Engine.cold_install`).
    """

    locate: Callable[[str], Source]
    recipe: Callable[[Source], dict]
    install: Callable[[Path, Source, Log], None]
    worker_command: Callable[[Path, Source], tuple[list[str], dict[str, str]]]
    how: Callable[[Source], str]
    version: Callable[[Source], str]
    refresh: Callable[[Path, Source, Log], dict | None] = field(default=lambda env_dir, source, log: None)
    cost: str = ""


@dataclass(frozen=True)
class Engine:
    """One engine.

    - ``name``: the library name used in parser names (``sglang`` → ``sglang==0.5.23:gemma4``).
    - ``default_version``: the version installed when none is asked for.
    - ``formats``: format families its worker parses.
    - ``cold_install``: what a first install costs, in words (time on 2 cores, disk), for the README and CLI.
    - ``recipe(version) -> dict``: a JSON-able description of how the environment is built; its sha256 is
      part of the cache key, so changing the recipe builds a new environment.
    - ``install(env_dir, version, log)``: builds the environment into the empty folder ``env_dir``;
      raises :class:`EngineBuildError`.
    - ``worker_command(env_dir, version) -> (argv, extra_env)``: how to start the worker.
    - ``check_version(version)``: raises ``ValueError`` for a version the recipe cannot build.
    - ``unavailable() -> str | None``: why the engine cannot run on this machine although it can be built (a file
      its worker needs at run time cannot be had), or None; asked in the main environment before a worker starts
      and by ``toolcall-harness parsers``, it may fetch and cache that file.
    """

    name: str
    default_version: str
    formats: tuple[str, ...]
    cold_install: str
    recipe: Callable[[str], dict]
    install: Callable[[Path, str, Log], None]
    worker_command: Callable[[Path, str], tuple[list[str], dict[str, str]]]
    check_version: Callable[[str], None] = field(default=lambda version: None)
    note: str = ""
    unavailable: Callable[[], str | None] = field(default=lambda: None)
    sources: SourceBuild | None = None


def run_step(
    argv: list[str], log: Log, cwd: Path | None = None, env: dict | None = None, timeout_s: float = 3600
) -> str:
    """Run one install step, streaming nothing to the console but keeping its output for the error message;
    returns its output (stdout and stderr together).

    Raises :class:`EngineBuildError` with the command, exit status and the last 40 lines of output.
    """
    log("$ " + " ".join(argv))
    try:
        proc = subprocess.run(
            argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout_s
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EngineBuildError(f"{' '.join(argv)}: {exc}") from exc
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.splitlines()[-40:])
        raise EngineBuildError(f"step failed with exit status {proc.returncode}: {' '.join(argv)}\n{tail}")
    return proc.stdout


def worker_build_dir(engine: str) -> str:
    """Where an engine's worker keeps what it builds once (a tokenizer file, a converted vocabulary):
    ``<engine environment>/built`` (the client sets ``TOOLCALL_HARNESS_ENGINE_ENV``), else
    ``~/.cache/toolcall-harness/<engine>-built`` (a worker started by hand); created."""
    env = os.environ.get("TOOLCALL_HARNESS_ENGINE_ENV")
    root = (
        os.path.join(env, "built")
        if env
        else os.path.join(os.path.expanduser("~"), ".cache", "toolcall-harness", f"{engine}-built")
    )
    os.makedirs(root, exist_ok=True)
    return root


def base_python() -> str:
    """The interpreter engine virtualenvs are made from: the one behind the current (virtual) environment."""
    return getattr(sys, "_base_executable", None) or sys.executable


def venv_python(env_dir: Path) -> Path:
    return env_dir / "venv" / "bin" / "python"


@dataclass(frozen=True)
class PipEngine:
    """Builder for Python engines: a virtualenv, a list of pip commands, and a worker that serves a parser
    module of this repository with ``python -m harness.engines.server MODULE`` (``PYTHONPATH`` = repository).

    ``steps(version)`` returns pip argument lists, run in order as ``python -m pip <args>`` inside the new
    virtualenv (e.g. ``["install", "torch==2.13.0", ...]``, ``["install", "--no-deps", f"sglang=={v}"]``,
    ``["uninstall", "-y", "triton"]``).

    Sources (``NAME@PATH``, :class:`SourceBuild`): the same steps with the argument ``PACKAGE==VERSION`` replaced by
    ``-e PROJECT`` for a tree (the editable install the projects document for development; ``project_dirs``: where in
    a tree the package's ``pyproject.toml`` may be) or by the file for a wheel. ``python_only``: a tree is not
    installed but overlaid on the release of its version (its ``pyproject``/``PKG-INFO``/``_version.py``/git tag,
    when that is a plain release number, else ``default_version``), as vLLM's python-only development mode
    (``VLLM_USE_PRECOMPILED=1``) runs its Python sources over a release's compiled kernels
    (:func:`harness.engines.sources.write_overlay`).
    """

    name: str
    default_version: str
    formats: tuple[str, ...]
    cold_install: str
    steps: Callable[[str], list[list[str]]]
    worker_module: str
    note: str = ""
    check_version: Callable[[str], None] = field(default=lambda version: None)
    # Called in the main environment when the worker starts: extra environment variables for it (e.g. the
    # path of a tokenizer the harness built). Runs where the harness' dependencies are installed.
    worker_env: Callable[[], dict[str, str]] | None = None
    unavailable: Callable[[], str | None] = field(default=lambda: None)  # Engine.unavailable
    package: str = ""  # the distribution name, when it is not ``name``
    project_dirs: tuple[str, ...] = ("",)
    python_only: bool = False

    def engine(self) -> Engine:
        return Engine(
            name=self.name,
            default_version=self.default_version,
            formats=self.formats,
            cold_install=self.cold_install,
            recipe=self._recipe,
            install=self._install,
            worker_command=self._worker_command,
            check_version=self._check_version,
            note=self.note,
            unavailable=self.unavailable,
            sources=SourceBuild(
                locate=lambda text: locate(text, self.dist, self.project_dirs),
                recipe=self._source_recipe,
                install=self._source_install,
                worker_command=lambda env_dir, source: self._worker_command(env_dir, self._source_version(source)),
                how=self._how,
                version=self._source_version,
                cost=f"the release recipe's steps ({self.cold_install}); an edit rebuilds nothing (the install is "
                "editable), the next worker start reads it",
            ),
        )

    @property
    def dist(self) -> str:
        return self.package or self.name

    def _source_version(self, source: Source) -> str:
        if source.kind == "wheel":
            return wheel_name(source.path)[1]
        found = tree_version(source, self.dist.replace("-", "_"))
        if self.python_only and (found is None or not _RELEASE.fullmatch(found)):
            return self.default_version  # a development version: the pinned release's compiled parts
        return found or self.default_version

    def _how(self, source: Source) -> str:
        if source.kind == "wheel":
            return f"pip install {source.path.name}"
        if self.python_only:
            return (
                f"python-only over {self.dist}=={self._source_version(source)} (the tree's Python sources first, "
                "the release's compiled parts)"
            )
        return f"editable install (pip install -e {source.project})"

    def _source_steps(self, source: Source) -> list[list[str]]:
        """The pip steps for ``source`` (a wheel stands as ``{wheel}``: the key is its sha256, not its path)."""
        version = self._source_version(source)
        if source.kind == "wheel" or self.python_only:
            try:
                self.check_version(version)  # the adapter's own rule (vLLM: 0.33 and later)
            except ValueError as exc:
                what = "checking the wheel" if source.kind == "wheel" else "choosing the release under the tree"
                raise SourceError(f"{what}: {exc}") from None
        if self.python_only and source.kind == "tree":
            return self.steps(version)
        replacement = ["-e", str(source.project)] if source.kind == "tree" else ["{wheel}"]
        steps: list[list[str]] = []
        found = False
        for step in self.steps(version):
            new: list[str] = []
            for arg in step:
                if "==" in arg and normalize(arg.partition("==")[0]) == normalize(self.dist):
                    new += replacement
                    found = True
                else:
                    new.append(arg)
            steps.append(new)
        if not found:
            raise SourceError(f"{self.name}: no pip step of the recipe installs {self.dist}=={version}")
        return steps

    def _source_recipe(self, source: Source) -> dict:
        recipe: dict = {
            "kind": "pip-venv-source",
            "source": source.kind,
            "python": f"{sys.version_info.major}.{sys.version_info.minor}",
            "steps": self._source_steps(source),
            "worker": self.worker_module,
        }
        if source.kind == "wheel":
            recipe["wheel_sha256"] = file_sha256(source.path)
        else:
            # editable: the code is read anew at each start; what names the dependencies rebuilds the environment
            recipe["tree"] = str(source.path)
            recipe["python_only"] = self.python_only
            recipe["dependency_files_sha256"] = {
                name: file_sha256(source.project / name)
                for name in DEPENDENCY_FILES
                if (source.project / name).is_file()
            }
        return recipe

    def _source_install(self, env_dir: Path, source: Source, log: Log) -> None:
        steps = [[str(source.path) if a == "{wheel}" else a for a in step] for step in self._source_steps(source)]
        python = self._pip(env_dir, steps, log)
        if self.python_only and source.kind == "tree":
            purelib = subprocess.run(
                [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                stdout=subprocess.PIPE,
                text=True,
                check=True,
            ).stdout.strip()
            module = write_overlay(Path(purelib), source.project, self.dist.replace("-", "_"))
            log(f"python-only overlay of {source.project} over the release: {module}")

    def _check_version(self, version: str) -> None:
        """The engine's own rule, then the package index: a version it does not list is refused before any
        download (when the index cannot be asked, the build itself will tell)."""
        self.check_version(version)
        listed = index_versions(self.name)
        if listed is not None and version not in listed:
            raise ValueError(f"the package index has no {self.name} {version}; newest: {', '.join(listed[:8])}")

    def _recipe(self, version: str) -> dict:
        return {
            "kind": "pip-venv",
            "python": f"{sys.version_info.major}.{sys.version_info.minor}",
            "steps": self.steps(version),
            "worker": self.worker_module,
        }

    def _install(self, env_dir: Path, version: str, log: Log) -> None:
        self._pip(env_dir, self.steps(version), log)

    def _pip(self, env_dir: Path, steps: list[list[str]], log: Log) -> str:
        """A new virtualenv in ``env_dir/venv`` with ``steps`` run by its pip; returns its interpreter."""
        log(f"creating virtualenv {env_dir / 'venv'}")
        venv.EnvBuilder(with_pip=True, clear=True).create(env_dir / "venv")
        python = str(venv_python(env_dir))
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PIP_REQUIRE_VIRTUALENV")}
        for args in steps:
            run_step([python, "-m", "pip", "--disable-pip-version-check", "--no-input", *args], log, env=env)
        # Record the exact versions installed, for `engines list` and reports.
        frozen = subprocess.run([python, "-m", "pip", "freeze"], stdout=subprocess.PIPE, text=True, env=env)
        write_text(env_dir / "pip-freeze.txt", frozen.stdout)
        return python

    def _worker_command(self, env_dir: Path, version: str) -> tuple[list[str], dict[str, str]]:
        extra = self.worker_env() if self.worker_env else {}
        return (
            [str(venv_python(env_dir)), "-m", "harness.engines.server", self.worker_module],
            {"PYTHONPATH": str(SOURCE_ROOT), "PYTHONNOUSERSITE": "1", **extra},
        )


def index_versions(package: str) -> list[str] | None:
    """The versions of ``package`` the configured package index lists, newest first (``pip index versions``),
    or None when pip cannot tell (offline, an old pip)."""
    try:
        out = subprocess.run(
            [sys.executable, "-m", "pip", "index", "versions", package, "--disable-pip-version-check"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in out.stdout.splitlines():
        if line.startswith("Available versions:"):
            return [v.strip() for v in line.split(":", 1)[1].split(",") if v.strip()]
    return None

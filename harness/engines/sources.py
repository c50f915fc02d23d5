"""Engine sources: an engine built from a local source tree or a wheel file instead of a pinned release.

A source is written after ``@`` in an engine spec (``sglang@/src/sglang``, ``vllm@dist/vllm-0.33.0-cp38-abi3.whl``,
``llama.cpp@~/llama.cpp``); :func:`locate` turns it into a :class:`Source`, checking that it exists and is of the
engine's project, and :func:`identity` says which code it is now (recorded per run, see ``docs/engine-sources.md``):

- a tree in git: ``{"commit", "dirty", "changes_sha256"}`` — the sha256 of ``git diff HEAD --binary`` plus the
  names and bytes of the untracked files (``git ls-files --others --exclude-standard``; byte code and ``*.egg-info``
  left out, as below), so two dirty states differ;
- a tree not in git: ``{"tree_sha256"}`` of the relative paths and bytes of its files (``.git``, ``__pycache__``,
  ``*.pyc``, ``*.egg-info`` and top-level ``build*`` folders left out);
- a wheel: ``{"sha256"}`` of the file.

Standard library only: the engine modules that use it are imported by workers inside the engines' virtualenvs.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from harness.core.paths import file_sha256
from harness.core.textio import write_text


class SourceError(ValueError):
    """A source that cannot be used; the message names the failing step (the caller prefixes the spec)."""


@dataclass(frozen=True)
class Source:
    """A located source: ``text`` as written, ``path`` resolved, ``kind`` ``"tree"`` or ``"wheel"``; ``project``: the
    folder of the tree holding the engine's package (the tree itself, or e.g. ``python/`` of an SGLang checkout)."""

    text: str
    path: Path
    kind: str
    project: Path

    @property
    def label(self) -> str:
        return str(self.path)


def normalize(name: str) -> str:
    """A distribution name as PEP 503 compares them: lower case, runs of ``-_.`` as one ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def locate(text: str, package: str, project_dirs: tuple[str, ...] = ("",), wheels: bool = True) -> Source:
    """The source written ``text`` (``~`` expanded, relative to the working folder) for the distribution ``package``.

    ``project_dirs``: the sub-folders of a tree where the package's ``pyproject.toml`` (or ``setup.py`` /
    ``PKG-INFO``) may be, in order (``""`` is the tree itself). ``package=""`` skips the project check (the caller
    checks, e.g. llama.cpp's CMake project). Raises :class:`SourceError`: no such file or folder, a file that is
    not a wheel (or a wheel where ``wheels`` is False), a wheel of another distribution, a tree without the
    package."""
    path = Path(os.path.expanduser(text)).resolve()
    if not path.exists():
        raise SourceError(f"locating the source: no such file or folder {str(path)!r}")
    if path.is_file():
        if not path.name.endswith(".whl"):
            raise SourceError(f"locating the source: {path.name!r} is a file but not a wheel (*.whl)")
        if not wheels:
            raise SourceError("locating the source: this engine builds from a source tree, not a wheel")
        dist, version = wheel_name(path)
        if normalize(dist) != normalize(package):
            raise SourceError(f"checking the wheel: {path.name} is a wheel of {dist!r}, not of {package!r}")
        return Source(text, path, "wheel", path)
    if not package:
        return Source(text, path, "tree", path)
    for sub in project_dirs:
        folder = path / sub if sub else path
        found = project_name(folder)
        if found is not None and normalize(found) == normalize(package):
            return Source(text, path, "tree", folder)
    where = " or ".join(repr(str(path / s if s else path)) for s in project_dirs)
    raise SourceError(
        f"checking the tree: not a {package} source tree (no pyproject.toml, setup.py or PKG-INFO naming "
        f"{package!r} in {where})"
    )


def wheel_name(path: Path) -> tuple[str, str]:
    """``(distribution, version)`` from a wheel's file name (``{dist}-{version}(-{build})?-{py}-{abi}-{plat}.whl``);
    raises :class:`SourceError` for a name of another shape."""
    parts = path.name[: -len(".whl")].split("-")
    if len(parts) not in (5, 6):
        raise SourceError(f"checking the wheel: {path.name!r} is not a wheel file name (DIST-VERSION-PY-ABI-PLAT.whl)")
    return parts[0], parts[1]


def project_name(folder: Path) -> str | None:
    """The distribution name a project folder declares: ``[project] name`` of ``pyproject.toml``, ``Name:`` of
    ``PKG-INFO`` (an sdist), or ``name="..."`` in ``setup.py``; None when none does."""
    pyproject = _read_toml(folder / "pyproject.toml")
    name = pyproject.get("project", {}).get("name") if isinstance(pyproject.get("project"), dict) else None
    if isinstance(name, str) and name:
        return name
    meta = _pkg_info(folder, "Name")
    if meta:
        return meta
    setup = folder / "setup.py"
    if setup.is_file():
        match = re.search(r"""\bname\s*=\s*["']([A-Za-z0-9_.-]+)["']""", setup.read_text(errors="replace"))
        if match:
            return match.group(1)
    return None


def tree_version(source: Source, package_dir: str) -> str | None:
    """The release a tree says it is: ``[project] version`` of its ``pyproject.toml``, ``Version:`` of ``PKG-INFO``,
    ``__version__``/``version`` in ``<package_dir>/_version.py`` or ``version.py`` (setuptools-scm writes one), or
    the newest ``git`` tag (``v`` stripped); None when nothing says (the caller falls back to its pinned version).
    ``package_dir``: the import package's folder name under the project (``vllm``)."""
    project = source.project
    pyproject = _read_toml(project / "pyproject.toml").get("project", {})
    version = pyproject.get("version") if isinstance(pyproject, dict) else None
    if isinstance(version, str) and version:
        return version
    meta = _pkg_info(project, "Version")
    if meta:
        return meta
    for name in ("_version.py", "version.py"):
        file = project / package_dir / name
        if file.is_file():
            match = re.search(
                r"""^(?:__version__|version)\s*(?::\s*\w+\s*)?=\s*["']([^"']+)["']""", file.read_text(), re.M
            )
            if match:
                return match.group(1)
    tag = _git(source.path, "describe", "--tags", "--abbrev=0")
    return tag.removeprefix("v") if tag else None


def identity(source: Source) -> dict:
    """Which code ``source`` is now (see the module docstring); ``path`` and ``kind`` included."""
    out: dict = {"path": str(source.path), "kind": source.kind}
    if source.kind == "wheel":
        out["sha256"] = file_sha256(source.path)
        return out
    commit = _git(source.path, "rev-parse", "HEAD")
    if commit:
        diff = _git_bytes(source.path, "diff", "HEAD", "--binary", "--", ".")
        digest = hashlib.sha256(diff)
        untracked = _git_bytes(source.path, "ls-files", "--others", "--exclude-standard", "-z", "--", ".")
        names = sorted(n for n in untracked.decode("utf-8", "surrogateescape").split("\0") if n and _is_source(n))
        for name in names:
            _hash_file(digest, name, source.path / name)
        out.update({"commit": commit, "dirty": bool(diff or names), "changes_sha256": digest.hexdigest()})
        return out
    out["tree_sha256"] = tree_sha256(source.path)
    return out


def describe_identity(ident: dict) -> str:
    """One line: ``/src/sglang (git 1a2b3c4d5e6f, dirty: changes 9f8e7d6c)``, ``... (no git, tree 0a1b...)``,
    ``.../x.whl (sha256 ...)``."""
    if "sha256" in ident:
        return f"{ident['path']} (wheel sha256 {ident['sha256'][:12]})"
    if "commit" in ident:
        state = f"dirty: changes {ident['changes_sha256'][:12]}" if ident.get("dirty") else "clean"
        return f"{ident['path']} (git {ident['commit'][:12]}, {state})"
    return f"{ident['path']} (not a git checkout; files sha256 {str(ident.get('tree_sha256'))[:12]})"


_SKIPPED_DIRS = {".git", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache", ".ruff_cache"}


def _is_source(rel: str) -> bool:
    """False for what installing and running a tree writes into it (byte code, ``*.egg-info``), which a checkout's
    ``.gitignore`` usually hides; those are neither hashed nor make a tree dirty."""
    parts = rel.split("/")
    return not (any(p in _SKIPPED_DIRS or p.endswith(".egg-info") for p in parts[:-1]) or rel.endswith(".pyc"))


def tree_sha256(root: Path) -> str:
    """sha256 over the sorted relative paths and bytes of the files under ``root`` (see the module docstring)."""
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in _SKIPPED_DIRS and not d.endswith(".egg-info") and not (rel == "." and d.startswith("build"))
        )
        for name in sorted(files):
            if not name.endswith(".pyc"):
                path = Path(folder) / name
                _hash_file(digest, os.path.relpath(path, root), path)
    return digest.hexdigest()


def _hash_file(digest, name: str, path: Path) -> None:
    digest.update(name.encode("utf-8", "surrogateescape") + b"\0")
    try:
        if path.is_symlink():
            digest.update(b"link:" + os.readlink(path).encode("utf-8", "surrogateescape"))
        elif path.is_file():
            digest.update(path.read_bytes())
    except OSError:
        digest.update(b"unreadable")
    digest.update(b"\0")


def _git_bytes(folder: Path, *args: str) -> bytes:
    try:
        proc = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return b""
    return proc.stdout if proc.returncode == 0 else b""


def _git(folder: Path, *args: str) -> str:
    return _git_bytes(folder, *args).decode("utf-8", "replace").strip()


def _read_toml(path: Path) -> dict:
    if not path.is_file():
        return {}
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10: the backport (a dependency of the harness there; sources are located in its environment)
        import tomli as tomllib
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        return {}


def _pkg_info(folder: Path, field: str) -> str | None:
    file = folder / "PKG-INFO"
    if not file.is_file():
        return None
    for line in file.read_text(errors="replace").splitlines():
        if not line.strip():
            break  # the headers end at the first blank line
        key, sep, value = line.partition(":")
        if sep and key == field:
            return value.strip()
    return None


OVERLAY_MODULE = "_toolcall_harness_overlay"

_OVERLAY_CODE = '''"""Written by toolcall-harness (harness/engines/sources.py): the Python sources of the tree
{tree!r} over the compiled parts of the {package!r} release installed here, as the project's python-only
development mode runs them (without copying anything into the tree). Imported by {module}.pth at start-up."""

import importlib.machinery
import os
import sys

TREE = {tree!r}
PACKAGE = {package!r}
RELEASE = os.path.dirname(os.path.abspath(__file__))


class TreeFirst:
    """``PACKAGE`` and its submodules from the tree; what the tree lacks (``*.so``) from the release."""

    @staticmethod
    def find_spec(fullname, path=None, target=None):
        if fullname != PACKAGE and not fullname.startswith(PACKAGE + "."):
            return None
        parents = fullname.split(".")[:-1]
        for root in (TREE, RELEASE):
            spec = importlib.machinery.PathFinder.find_spec(fullname, [os.path.join(root, *parents)])
            if spec is not None:
                if spec.submodule_search_locations is not None:
                    twin = os.path.join(RELEASE, *fullname.split("."))
                    if root == TREE and os.path.isdir(twin):
                        spec.submodule_search_locations.append(twin)
                return spec
        return None


sys.meta_path.insert(0, TreeFirst)
'''


def write_overlay(site_packages: Path, tree: Path, package: str) -> Path:
    """Install the python-only overlay into a virtualenv's ``site_packages``: ``_toolcall_harness_overlay.py`` (a
    meta-path finder that imports ``package`` from ``tree`` first and falls back to the installed release for the
    files the tree lacks, i.e. its compiled extensions) and the ``.pth`` file that imports it at start-up. Edits to
    the tree are read at the next worker start, with nothing rebuilt. Returns the module's path."""
    module = site_packages / f"{OVERLAY_MODULE}.py"
    write_text(module, _OVERLAY_CODE.format(tree=str(tree), package=package, module=OVERLAY_MODULE))
    write_text(site_packages / f"{OVERLAY_MODULE}.pth", f"import {OVERLAY_MODULE}\n")
    return module

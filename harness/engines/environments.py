"""Engines: parser libraries in their own environments, built once into the user cache and run as workers.

Engines are found by discovery: every public module of :data:`ENGINE_PACKAGE` (``parsers.reference``: one module
per engine) that defines ``ENGINE`` (:class:`harness.engines.spec.Engine`), then the modules named by the entry
points of group :data:`ENTRY_POINT_GROUP` (out-of-tree engines, e.g. ``[project.entry-points."toolcall_harness.engines"]
mine = "mypkg.my_engine"``; ``"mypkg.my_engine:MY_ENGINE"`` names another attribute). Adding an engine is adding its
module. A module that fails to import, or an entry point without an engine, is listed by :func:`broken_engines`.

An environment lives in ``<cache>/engines/<name>-<version>-<recipe sha256[:12]>/`` (the cache is
:func:`harness.core.paths.cache_dir`: ``$TOOLCALL_HARNESS_CACHE`` or the platform's user cache folder), so a
changed recipe builds a new one and CI on the same machine reuses what is there. It is built in a temporary
folder next to it and renamed into place when the build succeeds; ``manifest.json`` records the name,
version, recipe, build time in seconds, size in bytes and when it was built.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import re
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from filelock import FileLock

from harness.core.errors import HarnessError, did_you_mean
from harness.core.paths import cache_dir
from harness.core.plugins import entry_point_modules, package_modules
from harness.core.textio import write_text
from harness.engines.client import WorkerSpec
from harness.engines.sources import Source, SourceError, identity
from harness.engines.spec import Engine, EngineBuildError, Log

#: The package whose modules are the in-tree engines (those defining ``ENGINE``).
ENGINE_PACKAGE = "parsers.reference"
#: Entry-point group naming out-of-tree engine modules.
ENTRY_POINT_GROUP = "toolcall_harness.engines"


class EngineError(HarnessError):
    """An unknown engine or version, or a failed build (the message says which and why)."""


@dataclass(frozen=True)
class Installed:
    """One built environment: its folder and manifest."""

    path: Path
    manifest: dict

    @property
    def name(self) -> str:
        return self.manifest["name"]

    @property
    def version(self) -> str:
        return self.manifest["version"]


def engines() -> dict[str, Engine]:
    """``{name: Engine}`` for every engine found (see the module docstring; engine modules import with the standard
    library only); :func:`broken_engines` names the modules that could not be loaded."""
    return dict(_load()[0])


def broken_engines() -> dict[str, str]:
    """``{module: reason}`` for engine modules that failed to import, and entry points without an ``Engine``."""
    return dict(_load()[1])


def engine_modules() -> dict[str, str]:
    """``{module[:attribute]: where it was found}`` of the engine candidates, in discovery order: the modules of
    :data:`ENGINE_PACKAGE`, then the entry points of :data:`ENTRY_POINT_GROUP` (by distribution)."""
    found = dict.fromkeys(package_modules(ENGINE_PACKAGE), ENGINE_PACKAGE)
    for value, distribution in entry_point_modules(ENTRY_POINT_GROUP).items():
        found.setdefault(value, f"entry point of {distribution}")
    return found


@functools.lru_cache(maxsize=1)
def _load() -> tuple[dict[str, Engine], dict[str, str]]:
    found: dict[str, Engine] = {}
    where: dict[str, str] = {}
    broken: dict[str, str] = {}
    for spec, origin in engine_modules().items():
        module_name, _, attribute = spec.partition(":")
        try:
            engine = getattr(importlib.import_module(module_name), attribute or "ENGINE", None)
        except Exception as exc:  # one broken module must not hide the others
            broken[spec] = f"{type(exc).__name__}: {exc}"
            continue
        if engine is None and origin == ENGINE_PACKAGE:
            continue  # a helper module of the package, not an engine
        if not isinstance(engine, Engine):
            broken[spec] = f"{attribute or 'ENGINE'} is {type(engine).__name__}, not an Engine ({origin})"
        elif engine.name in found:
            broken[spec] = f"duplicate engine name {engine.name!r} (also defined by {where[engine.name]})"
        else:
            found[engine.name], where[engine.name] = engine, spec
    return found, broken


def reload() -> None:
    """Forget the engines found, so the next call discovers them again (tests, plug-ins installed meanwhile)."""
    _load.cache_clear()


def get_engine(name: str) -> Engine:
    """The engine called ``name``; raises :class:`EngineError` naming the close and the known ones."""
    known = engines()
    if name not in known:
        raise EngineError(f"unknown engine {name!r}{did_you_mean(name, known)}; known: {', '.join(sorted(known))}")
    return known[name]


_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+!_-]*")
_FORMAT = re.compile(r"[A-Za-z0-9_]+")


@dataclass(frozen=True)
class EngineSpec:
    """A parsed engine spec: ``name`` with at most one of ``version`` (``NAME==VERSION``) and ``source``
    (``NAME@SOURCE``: a source tree or a wheel file, :mod:`harness.engines.sources`)."""

    name: str
    version: str | None = None
    source: str | None = None

    def __str__(self) -> str:
        return self.name + (f"=={self.version}" if self.version else "") + (f"@{self.source}" if self.source else "")


def parse_spec(spec: str) -> EngineSpec:
    """``"sglang==0.5.23"`` → ``EngineSpec("sglang", "0.5.23")``; ``"sglang@/src/sglang"`` → ``EngineSpec("sglang",
    source="/src/sglang")``; ``"sglang"`` → ``EngineSpec("sglang")``. The one parser of engine specs (parser names
    add ``:FORMAT``: :func:`split_format`).

    Raises :class:`EngineError` for an empty or malformed version, an empty source, or both a version and a
    source (``"vllm==0.33.0:gemma4"``: a parser name, not an engine)."""
    head, at, source = spec.partition("@")
    source = source.strip()
    if at and not source:
        raise EngineError(f"{spec!r}: a source (a folder or a wheel file) must follow '@'")
    name, sep, version = head.partition("==")
    version = version.strip()
    if at and sep:
        raise EngineError(f"{spec!r}: an engine takes a version (NAME==VERSION) or a source (NAME@PATH), not both")
    if sep and not version:
        raise EngineError(f"{spec!r}: a version must follow '=='")
    if version and not _VERSION.fullmatch(version):
        hint = " (engines take NAME==VERSION, without :FORMAT)" if ":" in version else ""
        raise EngineError(f"{spec!r}: {version!r} is not a version{hint}")
    return EngineSpec(name.strip(), version or None, source or None)


def split_format(name: str) -> tuple[str, str]:
    """A parser name's engine spec and format: ``"sglang==0.5.23:gemma4"`` → ``("sglang==0.5.23", "gemma4")``,
    ``"sglang@/src/sglang:gemma4"`` → ``("sglang@/src/sglang", "gemma4")`` (a source path may hold ``:``; only a
    last ``:WORD`` is the format), ``"sglang"`` → ``("sglang", "")``."""
    if "@" in name:
        head, sep, tail = name.rpartition(":")
        if sep and "@" in head and _FORMAT.fullmatch(tail):
            return head, tail
        return name, ""
    head, _, tail = name.partition(":")
    return head, tail


def recipe_key(engine: Engine, version: str) -> str:
    """First 12 hex digits of the sha256 of the engine's recipe for ``version`` (canonical JSON)."""
    text = json.dumps(engine.recipe(version), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def engines_dir() -> Path:
    return cache_dir() / "engines"


def env_dir(engine: Engine, version: str) -> Path:
    """Where ``engine`` at ``version`` with its current recipe is (or would be) installed."""
    return engines_dir() / f"{engine.name}-{version}-{recipe_key(engine, version)}"


def find_installed(name: str, version: str | None = None) -> Installed | None:
    """The environment built with the current recipe for ``name`` at ``version`` (default version when
    None), or None when it is not installed."""
    engine = get_engine(name)
    version = version or engine.default_version
    path = env_dir(engine, version)
    manifest = _read_manifest(path)
    return Installed(path, manifest) if manifest is not None else None


def install(spec: str, log: Log = print, force: bool = False) -> Installed:
    """Build the environment for ``spec`` (``NAME``, ``NAME==VERSION`` or ``NAME@SOURCE``) unless it exists.

    Returns the installed environment. Raises :class:`EngineError` for an unknown engine, a version the
    recipe rejects, a source that cannot be used, or a failed build (with the failing step and its output).
    A source's environment is also refreshed (:func:`refresh_source`: llama.cpp builds there).
    """
    ref = parse_spec(spec)
    engine = get_engine(ref.name)
    if ref.source is not None:
        source = locate_source(engine, ref.source)
        installed = install_source(engine, source, log, force)
        refresh_source(engine, installed, source, log)
        return installed
    name = ref.name
    version = ref.version or engine.default_version
    try:
        target = env_dir(engine, version)  # the recipe may refuse the version too
    except ValueError as exc:
        raise EngineError(f"{name}=={version}: {exc}") from exc
    existing = None if force else _read_manifest(target)
    if existing is not None:
        return Installed(target, existing)
    try:
        engine.check_version(version)
    except ValueError as exc:
        raise EngineError(f"{name}=={version}: {exc}") from exc
    fields = {
        "name": name,
        "version": version,
        "recipe": engine.recipe(version),
        "recipe_key": recipe_key(engine, version),
    }
    try:
        return _build(
            target,
            f"{name}=={version}",
            engine,
            lambda folder: engine.install(folder, version, log),
            fields,
            log,
            force,
        )
    except EngineBuildError as exc:
        raise EngineError(f"building {name}=={version} failed (log: {exc.log}): {_last_lines(str(exc), 12)}") from exc


def _build(
    target: Path,
    label: str,
    engine: Engine,
    run: Callable[[Path], None],
    fields: dict,
    log: Log,
    force: bool,
    cost: str = "",
) -> Installed:
    """Build ``target`` with ``run(folder)`` (see :func:`build_in_place`) and write its manifest: ``fields`` plus
    the build time, date, Python and size. Raises :class:`EngineBuildError`."""
    manifest: dict = {}

    def built_meanwhile() -> bool:  # by another process, while this one waited for the lock
        found = None if force else _read_manifest(target)
        manifest.update(found or {})
        return found is not None

    def build(folder: Path) -> None:
        log(f"installing {label} into {target} (cold install: {cost or engine.cold_install})")
        started = time.monotonic()
        run(folder)
        manifest.update(
            {
                **fields,
                "build_seconds": round(time.monotonic() - started, 1),
                "built_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "python": sys.version.split()[0],
                "size_bytes": folder_size(folder),
            }
        )
        # The manifest marks a finished build: written last.
        write_text(folder / "manifest.json", json.dumps(manifest, indent=2))

    if not build_in_place(target, build, done=built_meanwhile):
        return Installed(target, manifest)
    log(f"installed {label} in {manifest['build_seconds']} s, {manifest['size_bytes'] / 1e6:.0f} MB")
    return Installed(target, manifest)


# ------------------------------------------------------------------------------------------------------ sources


def locate_source(engine: Engine, text: str) -> Source:
    """The source ``text`` of ``engine`` (``NAME@TEXT``), checked; raises :class:`EngineError` naming it and the
    failing step (no such folder, not that project, a wheel of another package, an engine without sources)."""
    if engine.sources is None:
        raise EngineError(f"{engine.name}@{text}: {engine.name} is built from releases only (NAME==VERSION)")
    try:
        return engine.sources.locate(text)
    except SourceError as exc:
        raise EngineError(f"{engine.name}@{text}: {exc}") from None


def source_env_dir(engine: Engine, source: Source) -> Path:
    """``<cache>/engines/<name>-src-<sha256(recipe)[:12]>``: the environment of ``source`` (see
    ``docs/engine-sources.md``: a tree's key is its path and dependency files, not its code, which is read anew
    at each start)."""
    assert engine.sources is not None
    try:
        recipe = engine.sources.recipe(source)
    except SourceError as exc:
        raise EngineError(f"{engine.name}@{source.text}: {exc}") from None
    key = hashlib.sha256(json.dumps(recipe, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:12]
    return engines_dir() / f"{engine.name}-src-{key}"


def install_source(engine: Engine, source: Source, log: Log = print, force: bool = False) -> Installed:
    """Build the environment of ``source`` unless it exists (its manifest records the source's identity then, the
    version it says it is and how it is installed). Raises :class:`EngineError` in one line naming the source,
    the failing step and the log file."""
    assert engine.sources is not None
    target = source_env_dir(engine, source)
    existing = None if force else _read_manifest(target)
    if existing is not None:
        return Installed(target, existing)
    build = engine.sources
    label = f"{engine.name}@{source.path}"
    recipe = build.recipe(source)
    fields = {
        "name": engine.name,
        "version": build.version(source),
        "source": {**identity(source), "how": build.how(source)},
        "recipe": recipe,
        "recipe_key": target.name.rsplit("-", 1)[-1],
    }
    try:
        return _build(
            target, label, engine, lambda folder: build.install(folder, source, log), fields, log, force, build.cost
        )
    except EngineBuildError as exc:
        raise EngineError(
            f"{engine.name}@{source.text}: installing failed: {_first_line(exc)} (log: {exc.log})"
        ) from exc


def refresh_source(engine: Engine, installed: Installed, source: Source, log: Log = print) -> dict | None:
    """Bring ``installed`` up to date with ``source`` before a worker starts (:attr:`SourceBuild.refresh`: an
    incremental build; nothing for editable installs). What it did is appended to ``refreshes.json`` in the
    environment (``{"count", "runs": [{"at", "seconds", ...}]}``, the last 20 runs); returns it. A failure is
    kept in ``<env>/refresh.failed.log`` and raises :class:`EngineError` naming the source, step and log."""
    assert engine.sources is not None
    with FileLock(str(_lock_file(installed.path))):
        started = time.monotonic()
        try:
            done = engine.sources.refresh(installed.path, source, log)
        except EngineBuildError as exc:
            failed = installed.path / "refresh.failed.log"
            write_text(failed, str(exc) + "\n")
            raise EngineError(
                f"{engine.name}@{source.text}: building failed: {_first_line(exc)} (log: {failed})"
            ) from exc
        if done is None:
            return None
        done = {
            "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "seconds": round(time.monotonic() - started, 1),
            **done,
        }
        record = read_refreshes(installed.path)
        record = {"count": record.get("count", 0) + 1, "runs": [*record.get("runs", []), done][-20:]}
        write_text(installed.path / "refreshes.json", json.dumps(record, indent=2))
        return done


def read_refreshes(path: Path) -> dict:
    """``refreshes.json`` of a source environment (``{}`` when there is none)."""
    try:
        return json.loads((path / "refreshes.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]


def build_in_place(target: Path, build: Callable[[Path], None], done: Callable[[], bool] = lambda: False) -> bool:
    """Run ``build(folder)`` in a scratch folder beside ``target`` and move the result into place only when
    it succeeds, so ``target`` is always complete or absent; returns whether it built (False: ``done()`` said that
    another process finished it while this one waited). One process builds at a time (a file lock in
    ``<cache>/locks/``; parallel test workers share the cache). When ``build`` raises :class:`EngineBuildError`,
    its message is kept in ``<target>.failed.log`` (the path is set as the exception's ``log``), the scratch
    folder — possibly gigabytes — is deleted, and the error propagates."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(_lock_file(target))):
        if done():
            return False
        building = target.with_name(target.name + ".building")
        shutil.rmtree(building, ignore_errors=True)
        building.mkdir(parents=True)
        try:
            build(building)
        except EngineBuildError as exc:
            exc.log = log = target.with_name(target.name + ".failed.log")
            write_text(log, str(exc) + "\n")
            shutil.rmtree(building, ignore_errors=True)
            raise
        shutil.rmtree(target, ignore_errors=True)
        building.rename(target)
    return True


def _lock_file(target: Path) -> Path:
    """``<cache>/locks/<folder>-<name>.lock`` for a build target: outside the folders that hold builds, so a
    listing of them shows builds only."""
    locks = cache_dir() / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    return locks / f"{target.parent.name}-{target.name}.lock"


def _last_lines(text: str, n: int) -> str:
    lines = text.splitlines()
    return "\n".join(lines[:1] + (["…"] if len(lines) > n + 1 else []) + lines[1:][-n:])


def list_installed() -> list[Installed]:
    """Every built environment under :func:`engines_dir` (any recipe), sorted by folder name."""
    root = engines_dir()
    if not root.is_dir():
        return []
    found = []
    for path in sorted(root.iterdir()):
        manifest = _read_manifest(path)
        if manifest is not None:
            found.append(Installed(path, manifest))
    return found


def is_current(installed: Installed) -> bool:
    """True when ``installed`` was built with the engine's current recipe (so it is the one used); for a source's
    environment, when its source is still there and would use it."""
    try:
        engine = get_engine(installed.name)
        source = installed.manifest.get("source")
        if isinstance(source, dict):  # the environment its source (still there) would use now
            return installed.path == source_env_dir(engine, locate_source(engine, str(source.get("path"))))
        return installed.path == env_dir(engine, installed.version)
    except (EngineError, ValueError):
        return False


def worker_spec(
    name: str, version: str | None = None, install_missing: bool = False, log: Log = print, source: str | None = None
):
    """The :class:`harness.engines.client.WorkerSpec` starting ``name``'s worker at ``version``, or built from
    ``source`` (``NAME@SOURCE``: see :func:`source_worker_spec`).

    Raises :class:`EngineError` when it is not installed (unless ``install_missing``: then it is built) or cannot
    run here (:attr:`Engine.unavailable`, asked before anything is built)."""
    engine = get_engine(name)
    if source is not None:
        return source_worker_spec(engine, source, install_missing, log)
    version = version or engine.default_version
    reason = engine.unavailable()
    if reason:
        raise EngineError(f"{name}=={version} cannot run here: {reason}")
    installed = find_installed(name, version)
    if installed is None:
        if not install_missing:
            raise EngineError(
                f"{name}=={version} is not installed: run `toolcall-harness engines install "
                f"{name}=={version}` (cold install: {engine.cold_install})"
            )
        installed = install(f"{name}=={version}", log)
    argv, env = engine.worker_command(installed.path, version)
    return WorkerSpec(argv, {**env, "TOOLCALL_HARNESS_ENGINE_ENV": str(installed.path)}, f"{name}=={version}")


def source_worker_spec(engine: Engine, text: str, install_missing: bool = False, log: Log = print) -> WorkerSpec:
    """The worker of ``engine`` built from the source ``text``: located, installed when missing (if
    ``install_missing``), refreshed (:func:`refresh_source`), then started with its parsers named
    ``NAME@/absolute/path:FORMAT`` and the source's identity now (path, commit, dirty state or sha256, how it is
    installed, the refresh) in :attr:`WorkerSpec.source`, which the run log records."""
    source = locate_source(engine, text)
    assert engine.sources is not None
    label = f"{engine.name}@{source.path}"
    reason = engine.unavailable()
    if reason:
        raise EngineError(f"{label} cannot run here: {reason}")
    target = source_env_dir(engine, source)
    manifest = _read_manifest(target)
    if manifest is not None:
        installed = Installed(target, manifest)
    elif install_missing:
        installed = install_source(engine, source, log)
    else:
        raise EngineError(
            f"{label} is not installed: run `toolcall-harness engines install {engine.name}@{source.text}` "
            f"(cost: {engine.sources.cost or engine.cold_install})"
        )
    refreshed = refresh_source(engine, installed, source, log)
    argv, env = engine.sources.worker_command(installed.path, source)
    provenance = {
        **identity(source),
        "how": engine.sources.how(source),
        "version": installed.manifest.get("version"),
        "installed_at": installed.manifest.get("built_at"),
        "install_seconds": installed.manifest.get("build_seconds"),
        "refresh": refreshed,
    }
    return WorkerSpec(
        argv, {**env, "TOOLCALL_HARNESS_ENGINE_ENV": str(installed.path)}, label, name=label, source=provenance
    )


def folder_size(path: Path) -> int:
    """Total size in bytes of the regular files under ``path`` (links not followed)."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def _read_manifest(path: Path) -> dict | None:
    try:
        return json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def describe(installed: Installed) -> str:
    """One line for ``engines list``: name==version, size, build time, date, recipe key, current or stale."""
    m = installed.manifest
    size = m.get("size_bytes")
    size_text = f"{size / 1e6:,.0f} MB" if isinstance(size, int) else "? MB"
    state = "current" if is_current(installed) else "stale recipe"
    head = f"{m['name']}=={m['version']}"
    if isinstance(m.get("source"), dict):
        head = f"{m['name']}@{m['source'].get('path')} (version {m['version']}; {m['source'].get('how')})"
    return (
        f"{head}  {size_text}  built in {m.get('build_seconds', '?')} s on "
        f"{m.get('built_at', '?')}  recipe {m.get('recipe_key', '?')} ({state})  {installed.path}"
    )


def recipe_summary(engine: Engine, version: str) -> str:
    """How the engine is built, in one line (pip steps or the build kind)."""
    recipe = engine.recipe(version)
    if recipe.get("kind") == "pip-venv":
        return "; ".join("pip " + " ".join(step) for step in recipe["steps"])
    text = json.dumps(recipe, sort_keys=True)
    return text if len(text) <= 300 else text[:299] + "…"

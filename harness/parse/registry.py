"""Parser registry: the parsers found by discovery, by name.

Discovery: every module of the plug-in packages :data:`PLUGIN_PACKAGES` (``parsers.own``: the project's parsers,
one per format; ``parsers.reference``: one module per engine) whose name does not start with ``_``, plus the
modules named by the entry points of group :data:`ENTRY_POINT_GROUP` (out-of-tree plug-ins, e.g.
``[project.entry-points."toolcall_harness.parsers"] mine = "mypkg.my_parser"``). A module registers the parsers
of its ``PARSERS = [factory, ...]`` (zero-argument callables returning a :class:`harness.core.protocol.Parser`: a
class, or ``functools.partial(AdapterClass, format)`` as the reference modules write them). A reference module's
parsers are registered in-process only when it sets ``IN_PROCESS = True`` (its library is installed in the harness'
own environment: transformers, mlx-lm); the other engines run out of process (:mod:`harness.engines.environments`).
Adding a parser is adding its module.

Modules are imported lazily, on the first registry call, and each factory is called once then to learn the
parser's name, library and formats. A module that fails to import, or a factory that raises (e.g. a library
that is not installed), makes only those parsers unavailable: :func:`unavailable_parsers` gives the reason.

Names: a parser's full name (``transformers==5.24.0:gemma4``), ``library:format`` (``transformers:gemma4``),
or a library alias — ``transformers``, ``mlx-lm`` (``mlx_lm``), ``toolcall-harness`` (``own``) — which needs a
``format`` unless the library has a single parser (the project's own parsers are one per format: ``own`` is
``toolcall-harness:gemma4`` with format ``gemma4``, ``toolcall-harness:hermes`` with ``hermes``).
:func:`create_parsers` also takes ``all``, engine names with versions (``sglang==0.5.23:gemma4``, run out of
process: :mod:`harness.engines.environments`), engines built from a source (``sglang@/src/sglang:gemma4``),
``cmd:COMMAND`` workers and ``py:MODULE:ATTR`` candidate parsers
(:mod:`harness.parse.loader`).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass

from harness.core.errors import HarnessError, did_you_mean
from harness.core.plugins import entry_point_modules, package_modules
from harness.core.protocol import Parser
from harness.engines.client import WorkerError, WorkerParser, WorkerSpec
from harness.engines.environments import EngineError, engines, parse_spec, split_format, worker_spec
from harness.formats import known_formats
from harness.parse.loader import ParserLoadError, check_protocol, load_parser_object

#: Packages whose modules are parser plug-ins (``own``: the project's parsers; ``reference``: the engines).
PLUGIN_PACKAGES = ("parsers.own", "parsers.reference")
#: Entry-point group naming out-of-tree parser modules.
ENTRY_POINT_GROUP = "toolcall_harness.parsers"
OWN_LIBRARY = "toolcall-harness"

ALIASES: dict[str, str] = {
    "transformers": "transformers",
    "mlx-lm": "mlx-lm",
    "mlx_lm": "mlx-lm",
    "toolcall-harness": "toolcall-harness",
    "own": "toolcall-harness",
}

Factory = Callable[[], Parser]


class UnknownParserError(HarnessError, KeyError):
    """No available parser answers to a name; the message lists the known names and unavailable ones.

    A :class:`~harness.core.errors.HarnessError` (the CLI prints it as one ``error:`` line) and a ``KeyError``.
    """

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class _Entry:
    factory: Factory
    library: str
    formats: tuple[str, ...]


@dataclass
class _Registry:
    entries: dict[str, _Entry]
    unavailable: dict[str, str]


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _module_factories(module) -> list[Factory]:
    if hasattr(module, "PARSERS"):
        return list(module.PARSERS)
    if callable(getattr(module, "create", None)):
        return [module.create]
    found: list[Factory] = [
        obj
        for name, obj in vars(module).items()
        if isinstance(obj, type)
        and not name.startswith("_")
        and obj.__module__ == module.__name__
        and all(hasattr(obj, a) for a in ("parse", "stream", "formats"))
    ]
    if not found:
        raise AttributeError(f"{module.__name__} exposes neither PARSERS nor create() nor a parser class")
    return found


def plugin_modules() -> dict[str, str]:
    """``{module name: library}`` of every parser plug-in module (see the module docstring), in discovery order.
    A reference module's library is its engine's name; an entry point's is its distribution's name."""
    found: dict[str, str] = {}
    for package_name in PLUGIN_PACKAGES:
        for qualified in package_modules(package_name):
            short = qualified.rpartition(".")[2]
            found[qualified] = OWN_LIBRARY if package_name == "parsers.own" else short.replace("_", "-")
    for module, distribution in entry_point_modules(ENTRY_POINT_GROUP).items():
        found.setdefault(module, distribution)
    return found


def _factory_label(module: str, factory: Factory) -> str:
    """``module.Name`` for a class or function, ``module.Class('format')`` for a ``functools.partial``."""
    if isinstance(factory, functools.partial):
        args = ", ".join(repr(a) for a in factory.args)
        return f"{module}.{getattr(factory.func, '__name__', repr(factory.func))}({args})"
    return f"{module}.{getattr(factory, '__name__', repr(factory))}"


def _wants_in_process(module) -> bool:
    return not module.__name__.startswith("parsers.reference.") or bool(getattr(module, "IN_PROCESS", False))


@functools.lru_cache(maxsize=1)
def _registry() -> _Registry:
    entries: dict[str, _Entry] = {}
    unavailable: dict[str, str] = {}
    for qualified in plugin_modules():
        try:
            module = importlib.import_module(qualified)
            if not _wants_in_process(module):
                continue
            factories = _module_factories(module)
        except Exception as exc:  # a broken module costs only its own parsers
            unavailable[qualified] = _reason(exc)
            continue
        for factory in factories:
            label = _factory_label(qualified, factory)
            try:
                parser = factory()
                name, library, formats = parser.name, parser.library, tuple(parser.formats)
            except Exception as exc:
                unavailable[label] = _reason(exc)
                continue
            if name in entries:
                unavailable[label] = f"duplicate parser name {name!r}"
                continue
            entries[name] = _Entry(factory, library, formats)
    return _Registry(entries, unavailable)


def reload() -> None:
    """Forget the registry so the next call imports and probes the modules again (tests, plug-ins)."""
    _registry.cache_clear()


def available_parsers(format: str | None = None) -> dict[str, Factory]:
    """``{name: factory}`` of the parsers that load, optionally only those parsing ``format``."""
    return {name: e.factory for name, e in _registry().entries.items() if format is None or format in e.formats}


def unavailable_parsers() -> dict[str, str]:
    """``{module or module.factory: reason}`` for parsers that failed to import or construct."""
    return dict(_registry().unavailable)


def parser_info(format: str | None = None) -> list[dict]:
    """``[{name, library, formats}]`` of the available parsers (for listings)."""
    return [
        {"name": n, "library": e.library, "formats": list(e.formats)}
        for n, e in _registry().entries.items()
        if format is None or format in e.formats
    ]


def describe_parsers(format: str | None = None) -> list[tuple[str, str]]:
    """``[(name, status)]`` for ``toolcall-harness parsers``: each available parser with its library and
    formats, then each unavailable module with the reason."""
    aliases: dict[str, list[str]] = {}
    for alias, library in ALIASES.items():
        aliases.setdefault(library, []).append(alias)
    rows = [
        (
            info["name"],
            f"available  library={info['library']} formats={','.join(info['formats'])} "
            f"aliases={','.join(aliases.get(info['library'], []))}",
        )
        for info in parser_info(format)
    ]
    rows += [(label, f"unavailable: {reason}") for label, reason in unavailable_parsers().items()]
    return rows


def resolve(name: str, format: str | None = None) -> str:
    """The full parser name that ``name`` (full name, ``library:format`` or alias) designates.

    Raises :class:`UnknownParserError` (a ``KeyError``) when nothing or more than one parser matches.
    """
    reg = _registry()
    if name in reg.entries:
        entry = reg.entries[name]
        if format is not None and format not in entry.formats:
            raise UnknownParserError(
                f"parser {name!r} does not parse format {format!r}{_format_suggestion(format)} "
                f"(it parses {', '.join(entry.formats)})"
            )
        return name
    library, _, given = name.partition(":")
    fmt = given or format
    if "==" in library and fmt and f"{library}:{fmt}" in reg.entries:  # "transformers==5.24.0" in-process
        return f"{library}:{fmt}"
    library = ALIASES.get(library, library)
    matches = [n for n, e in reg.entries.items() if e.library == library and (fmt is None or fmt in e.formats)]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise UnknownParserError(f"parser {name!r} is ambiguous ({', '.join(matches)}); pass a format")
    known = ", ".join(sorted(n for n, e in reg.entries.items() if fmt is None or fmt in e.formats)) or "none"
    message = (
        f"unknown parser {name!r}{_suggestion(name, fmt)}"
        + (f" for format {fmt!r}" if fmt else "")
        + f"{_format_suggestion(fmt)}; known: {known}; "
        f"engines: {_engine_names()} (NAME, NAME==VERSION or NAME@SOURCE: a source tree or wheel); "
        "any protocol worker: cmd:COMMAND"
    )
    if reg.unavailable:
        message += "; unavailable: " + "; ".join(f"{k} ({v})" for k, v in reg.unavailable.items())
    raise UnknownParserError(message)


def _engine_names() -> str:

    return ", ".join(engines()) or "none"


def _suggestion(name: str, fmt: str | None) -> str:
    """Did-you-mean for a parser name: the close ones among full names, ``library:format`` names, aliases and
    engine names (those parsing ``fmt`` when it is a known format)."""
    reg = _registry()
    fmt = fmt if fmt in known_formats() else None
    names = [n for n, e in reg.entries.items() if fmt is None or fmt in e.formats]
    names += [f"{e.library}:{f}" for e in reg.entries.values() for f in e.formats if fmt is None or f == fmt]
    names += [*ALIASES, *(n for n, e in engines().items() if fmt is None or fmt in e.formats)]
    return did_you_mean(name, (n for n in names if n != name))


def _format_suggestion(fmt: str | None) -> str:
    """``" (unknown format; did you mean 'gemma4'?)"`` when ``fmt`` is not a format of :mod:`harness.formats`."""
    if fmt is None or fmt in known_formats():
        return ""
    return f" (not a known format{did_you_mean(fmt, known_formats()).replace(' (', '; ').rstrip(')')})"


def get_parser(name: str, format: str | None = None) -> Parser:
    """A new instance of the parser ``name`` designates (see :func:`resolve`); ``KeyError`` if none."""
    return _registry().entries[resolve(name, format)].factory()


def get_any_parser(name: str, format: str, install_missing: bool = True, log=print) -> Parser:
    """Like :func:`get_parser`, but ``name`` may also be an engine (``sglang==0.5.23``) or a ``cmd:`` worker
    (see :func:`create_parsers`). Raises :class:`UnknownParserError` for an unknown name and
    :class:`~harness.core.errors.HarnessError` when the parser cannot run here (with the reason)."""
    try:
        return _create_one(name, format, install_missing, log)
    except _Unavailable as exc:
        raise HarnessError(f"parser {name!r} is unavailable: {exc}") from None


def create_parsers(
    names: list[str] | None, format: str, install_missing: bool = True, log=print
) -> tuple[list[Parser], dict[str, str]]:
    """Instances for an evaluation of ``format``: ``names`` resolved in order (None: every available
    in-process parser of the format), plus ``{name: reason}`` for the unavailable ones.

    Besides in-process names (see :func:`resolve`), a name may be:

    - ``all``: every in-process parser of the format plus every engine parsing it (SGLang, vLLM, llama.cpp,
      at their default versions; engines that duplicate an in-process library are left out);
    - ``references``: ``all`` without the project's own parser (the engines' verdicts, e.g. to pin them);
    - ``ENGINE[==VERSION][:FORMAT]`` (``sglang``, ``vllm==0.33.0:gemma4``, ``transformers==5.16.0:gemma4``):
      an engine's worker (:mod:`harness.engines.environments`), built first when missing and ``install_missing``;
    - ``ENGINE@SOURCE[:FORMAT]`` (``sglang@/src/sglang:gemma4``, ``vllm@dist/vllm-0.33.0-cp38-abi3-linux_x86_64.whl``):
      the engine built from a local source tree or a wheel file (``docs/engine-sources.md``), named
      ``ENGINE@/absolute/path:FORMAT``;
    - ``cmd:COMMAND LINE``: any executable speaking the worker protocol (``docs/worker-protocol.md``);
    - ``py:pkg.module:Attr`` or ``py:path/file.py:Attr``: a parser class or object loaded in-process by
      :func:`harness.parse.loader.load_parser_object` (a candidate to gate; a load failure raises).

    An engine or worker that cannot be built or started is reported unavailable with the reason; a name
    nobody knows raises :class:`UnknownParserError`. A second parser of the same name is dropped, or renamed when
    its spec names its own code (:func:`names_own_code`).
    """
    reg = _registry()
    if names is None:
        return [factory() for factory in available_parsers(format).values()], dict(reg.unavailable)
    parsers: list[Parser] = []
    specs: dict[str, str] = {}  # parser name: the spec that made it
    unavailable: dict[str, str] = {}
    for name in expand_names(names, format):
        try:
            parser = _create_one(name, format, install_missing, log)
        except _Unavailable as exc:
            unavailable[name] = str(exc)
            continue
        if parser.name in specs:
            if not (names_own_code(name) or names_own_code(specs[parser.name])):  # an alias named twice
                continue
            parser.name += f" [{name}]"
        specs[parser.name] = name
        parsers.append(parser)
    return parsers, unavailable


def names_own_code(spec: str) -> bool:
    """Whether ``spec`` names code of its own rather than a registry entry: a ``cmd:`` worker, a ``py:``
    candidate or an engine built from a source (``NAME@PATH``). When one of two parsers of the same name comes
    from such a spec (a ``py:`` subclass of the own parser keeps its name), the second is told apart by its spec
    appended to its name (``toolcall-harness:gemma4 [py:fix.py:Parser]``); a registry name given twice is dropped."""
    return spec.startswith(("cmd:", "py:")) or "@" in spec.partition(":")[0]


class _Unavailable(Exception):
    """A named parser that exists but cannot run here (reason in the message)."""


def expand_names(names: list[str], format: str) -> list[str]:
    """``names`` with ``all`` and ``references`` replaced by the parser names they stand for (see
    :func:`create_parsers`), duplicates dropped, order kept."""
    out: list[str] = []
    for name in names:
        if name not in ("all", "references"):
            out.append(name)
            continue
        reg = _registry()
        out += [n for n in available_parsers(format) if name == "all" or reg.entries[n].library != OWN_LIBRARY]
        in_process_libraries = {e.library for e in reg.entries.values()}
        out += [
            engine.name
            for engine in engines().values()
            if format in engine.formats and engine.name not in in_process_libraries
        ]
    return list(dict.fromkeys(out))


def _create_one(name: str, format: str, install_missing: bool, log) -> Parser:
    reg = _registry()
    if name.startswith("cmd:"):
        return _worker_parser(_command_spec(name[4:]), format)
    if name.startswith("py:"):
        return _python_parser(name[3:], format)
    try:
        return reg.entries[resolve(name, format)].factory()
    except UnknownParserError as unknown:
        spec, fmt = split_format(name)
        try:
            ref = parse_spec(spec)
        except EngineError as exc:
            raise UnknownParserError(f"parser {name!r}: {exc}") from None
        engine_name = ALIASES.get(ref.name, ref.name)
        if engine_name not in engines():
            library_reasons = [v for k, v in reg.unavailable.items() if _module_library(k) == engine_name]
            if library_reasons:
                raise _Unavailable("; ".join(library_reasons)) from None
            raise unknown from None
        if fmt and fmt != format:
            raise UnknownParserError(
                f"parser {name!r} parses {fmt!r}{_format_suggestion(fmt)}, but this evaluation is of {format!r}"
            ) from None
        try:
            return _worker_parser(worker_spec(engine_name, ref.version, install_missing, log, ref.source), format)
        except EngineError as exc:
            raise _Unavailable(str(exc)) from None


def _python_parser(spec: str, format: str) -> Parser:

    parser = load_parser_object(spec)
    check_protocol(parser, spec)
    if format not in parser.formats:
        raise ParserLoadError(f"parser spec {spec!r}: {parser.name} parses {', '.join(parser.formats)}, not {format!r}")
    return parser


def _command_spec(command: str):

    try:
        return WorkerSpec.from_command(command)
    except ValueError as exc:
        raise _Unavailable(f"cmd: {exc}") from None


def _worker_parser(spec, format: str) -> Parser:

    try:
        return WorkerParser(spec, format)
    except WorkerError as exc:
        raise _Unavailable(str(exc)) from None


def _module_library(label: str) -> str | None:
    modules = plugin_modules()
    return next(
        (library for module, library in modules.items() if label == module or label.startswith(module + ".")), None
    )

"""Loading a parser object named by a ``module:Attr`` path (a candidate parser that is not in the registry).

``load_parser_object("pkg.module:Attr")`` imports ``pkg.module`` (it must be importable: installed, or its
folder on ``PYTHONPATH``), or ``load_parser_object("path/to/file.py:Attr")`` loads that file; ``Attr`` may
be dotted (``Outer.Inner``). A class is instantiated with no arguments; any other object is used as is.
The result must have callable ``parse`` and ``stream`` (:class:`harness.core.protocol.Parser`).

The CLI names such a parser ``py:pkg.module:Attr`` in ``--parsers`` (see :func:`harness.parse.registry.create_parsers`).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

from harness.core.errors import HarnessError

PROTOCOL_ATTRIBUTES = ("name", "library", "version", "formats")
"""Attributes :func:`check_protocol` requires besides ``parse`` and ``stream`` (harness.core.protocol.Parser)."""


class ParserLoadError(HarnessError):
    """A ``module:Attr`` parser spec that cannot be loaded; the message names the spec and the reason."""


def load_parser_object(spec: str, *, require_stream: bool = True):
    """The parser object ``spec`` (``pkg.module:Attr`` or ``path/file.py:Attr``) names, instantiated if a class.

    Raises :class:`ParserLoadError` when the spec is malformed, the module does not import (the message
    carries the exception), the attribute is missing, the class cannot be built without arguments, or the
    object lacks callable ``parse``/``stream`` (``require_stream=False``: only ``parse`` is required; the
    pytest plugin streams such a parser with :class:`harness.core.protocol.BufferedStream`).
    """
    module_part, sep, attr_path = spec.rpartition(":")
    if not sep or not module_part or not attr_path:
        raise ParserLoadError(
            f"parser spec {spec!r}: expected MODULE:ATTR, e.g. mypkg.parsers:MyParser or path/to/file.py:MyParser"
        )
    module = _import(module_part, spec)
    obj = module
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ParserLoadError(f"parser spec {spec!r}: {module.__name__} has no attribute {attr_path!r}") from None
    if isinstance(obj, type):
        try:
            obj = obj()
        except Exception as exc:
            raise ParserLoadError(f"parser spec {spec!r}: {attr_path}() failed: {type(exc).__name__}: {exc}") from None
    needed = ("parse", "stream") if require_stream else ("parse",)
    missing = [m for m in needed if not callable(getattr(obj, m, None))]
    if missing:
        raise ParserLoadError(
            f"parser spec {spec!r}: {type(obj).__name__} has no callable "
            f"{' or '.join(missing)} (a parser needs parse() and stream(): harness/core/protocol.py)"
        )
    return obj


def check_protocol(parser, spec: str) -> None:
    """Raise :class:`ParserLoadError` unless ``parser`` has every attribute an evaluation reads
    (:data:`PROTOCOL_ATTRIBUTES`); ``incremental`` defaults to False when absent."""
    missing = [a for a in PROTOCOL_ATTRIBUTES if not hasattr(parser, a)]
    if missing:
        raise ParserLoadError(
            f"parser spec {spec!r}: {type(parser).__name__} lacks {', '.join(missing)} "
            "(harness/core/protocol.py Parser)"
        )
    if not hasattr(parser, "incremental"):
        parser.incremental = False


def _import(module_part: str, spec: str):
    if module_part.endswith(".py") or "/" in module_part or "\\" in module_part:
        return _import_file(Path(module_part), spec)
    try:
        return importlib.import_module(module_part)
    except Exception as exc:
        raise ParserLoadError(
            f"parser spec {spec!r}: cannot import {module_part}: {type(exc).__name__}: {exc} "
            "(is its folder on PYTHONPATH?)"
        ) from None


def _import_file(path: Path, spec: str):
    if not path.is_file():
        raise ParserLoadError(f"parser spec {spec!r}: {path}: no such file")
    name = f"_toolcall_harness_candidate_{path.stem}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:  # not a Python source or extension file
        raise ParserLoadError(f"parser spec {spec!r}: {path}: not a Python module file")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise ParserLoadError(f"parser spec {spec!r}: {path} failed to load: {type(exc).__name__}: {exc}") from None
    return module

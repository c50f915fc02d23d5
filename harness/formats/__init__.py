"""Format facts, one module per tool-call format family.

Each module ``harness/formats/<format>.py`` defines ``SPEC``, a :class:`FormatSpec` named after the module: its
markers, argument style, vocabulary, template variables and hooks (edge scenarios, where prose before the calls
goes). Formats are found by module discovery (:func:`known_formats`); nothing else in the harness lists them, so
adding a format means adding its module here, its own parser (``parsers/own/<format>.py``), its conformance
config and its catalog rows in ``templates/catalog.toml``.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from functools import cache

from harness.core.errors import HarnessError
from harness.formats._spec import ARGUMENT_STYLES, FormatSpec, FormatSpecError, Markers

__all__ = [
    "ARGUMENT_STYLES",
    "DEFAULT_FORMAT",
    "OTHER_FORMAT",
    "FormatSpec",
    "FormatSpecError",
    "Markers",
    "UnknownFormatError",
    "all_formats",
    "case_formats",
    "format_edge_scenarios",
    "get_format",
    "known_formats",
]

#: the format a command uses when it names none and has no case to take it from (the project's first format).
DEFAULT_FORMAT = "gemma4"
#: the external case format's name for a format family the harness has no module for.
OTHER_FORMAT = "other"


class UnknownFormatError(HarnessError, KeyError):
    """A format name with no module in ``harness/formats``; the message suggests close names and lists all."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


def known_formats() -> list[str]:
    """The format names, sorted: the modules of this package (``_``-prefixed modules are not formats)."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def case_formats() -> tuple[str, ...]:
    """The values a case's ``format`` field may take: every known format, then :data:`OTHER_FORMAT`."""
    return (*known_formats(), OTHER_FORMAT)


def unknown_format_message(name: str, known: list[str] | tuple[str, ...]) -> str:
    """``unknown format 'x' (did you mean 'y'?); known: ...`` (no suggestion when nothing is close)."""
    close = difflib.get_close_matches(str(name), known, n=2)
    hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
    return f"unknown format {name!r}{hint}; known: {', '.join(known)}"


@cache
def get_format(name: str) -> FormatSpec:
    """The :class:`FormatSpec` of format ``name``.

    Raises :class:`UnknownFormatError` (a ``KeyError``) for a name with no module, and :class:`FormatSpecError`
    when the module has a bad field, no ``SPEC``, or a ``SPEC`` named otherwise.
    """
    known = known_formats()
    if name not in known:
        raise UnknownFormatError(unknown_format_message(name, known))
    module = importlib.import_module(f"{__name__}.{name}")
    spec = getattr(module, "SPEC", None)
    if not isinstance(spec, FormatSpec):
        raise FormatSpecError(f"{module.__file__}: defines no SPEC = FormatSpec(...)")
    if spec.name != name:
        raise FormatSpecError(f"{module.__file__}: field 'name' of SPEC is {spec.name!r}; it must be {name!r}")
    return spec


def all_formats() -> dict[str, FormatSpec]:
    """``{name: FormatSpec}`` of every known format, in :func:`known_formats` order."""
    return {name: get_format(name) for name in known_formats()}


def format_edge_scenarios(name: str) -> list:
    """The format's own curated scenarios (``SPEC.edge_scenarios()``), or ``[]`` when it has none."""
    make = get_format(name).edge_scenarios
    return list(make()) if make else []

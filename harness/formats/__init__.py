"""Format facts, one module per tool-call format family.

Each module defines ``SPEC``, a :class:`FormatSpec`, and may define ``edge_scenarios() -> list[Scenario]``:
format-specific shapes (ids ``edge-<format>-...``) that join the curated slice for that format only. Adding
a format means adding its module here, its catalog rows in ``templates/catalog.toml`` and its tests.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field


@dataclass(frozen=True)
class FormatSpec:
    """Facts about one format family, read from its real chat template.

    - ``markers``: every protocol marker string; none may appear in parsed content or reasoning.
    - ``stop_markers``: end-of-generation markers the engine consumes; the corpus strips them from the end
      of a rendered completion, as an inference engine does before parsing.
    - ``call_open``/``call_close``: the markers around one tool call.
    - ``unrepresentable``: substrings a string value cannot contain in this format (the template has no
      escape for them); curated cases containing them are skipped with a note.
    - ``reasoning_markers``: ``(open, close)`` of the reasoning block when the template may pre-fill it after the
      generation prompt (``<think>`` / ``</think>``), so the rendered case's ``prefix`` holds what was pre-filled
      (see :func:`harness.template.render.split_completion`); ``()`` when the format has none or never pre-fills one.
    """

    name: str
    markers: tuple[str, ...]
    stop_markers: tuple[str, ...]
    call_open: str
    call_close: str
    unrepresentable: tuple[str, ...] = ()
    template_vars: dict = field(default_factory=dict)
    source: str = ""
    reasoning_markers: tuple[str, ...] = ()


def get_format(name: str) -> FormatSpec:
    """Return the :class:`FormatSpec` of format ``name``; raises ``KeyError`` naming known formats."""
    try:
        module = importlib.import_module(f"harness.formats.{name}")
    except ModuleNotFoundError:
        raise KeyError(f"unknown format {name!r}; known: {', '.join(known_formats())}") from None
    return module.SPEC


def known_formats() -> list[str]:
    import pkgutil

    return sorted(m.name for m in pkgutil.iter_modules(__path__))


def format_edge_scenarios(name: str) -> list:
    """The format module's own curated scenarios (``edge_scenarios()``), or ``[]`` when it has none."""
    module = importlib.import_module(f"harness.formats.{name}")
    make = getattr(module, "edge_scenarios", None)
    return list(make()) if make else []

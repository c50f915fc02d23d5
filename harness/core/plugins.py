"""Plug-in discovery shared by the registries (standard library only): the public modules of a package and the
modules that entry points name. Nothing is imported but the package itself; the callers import the modules.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import pkgutil


def package_modules(package: str) -> list[str]:
    """Qualified names of ``package``'s modules whose names do not start with ``_``, in name order; ``[]`` when the
    package is not installed (e.g. a wheel without ``parsers``)."""
    try:
        found = importlib.import_module(package)
    except ImportError:
        return []
    return [f"{package}.{info.name}" for info in pkgutil.iter_modules(found.__path__) if not info.name.startswith("_")]


def entry_point_modules(group: str) -> dict[str, str]:
    """``{value: distribution name}`` of the installed entry points of ``group`` (``value`` as written, e.g.
    ``"mypkg.my_engine"``; the point's own name stands in when it has no distribution)."""
    return {
        point.value: point.dist.name if point.dist else point.name
        for point in importlib.metadata.entry_points(group=group)
    }

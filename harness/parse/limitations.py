"""Known limitations of the project's own parsers, as each parser states them.

Each own parser class (``parsers/own/<format>.py``) lists what it cannot do in its ``limitations`` tuple (one
sentence each); :func:`known_limitations` reads it so reports show it next to the results instead of leaving it
in the source. The tuple is the single place to write them.
"""

from __future__ import annotations

import importlib

from harness.core.paths import SOURCE_ROOT

PARSERS_DIR = SOURCE_ROOT / "parsers" / "own"


def known_limitations(fmt: str) -> list[str]:
    """The ``limitations`` of the own parser for ``fmt`` (the first class in ``parsers.own.<fmt>.PARSERS`` that
    reads ``fmt``); ``[]`` when there is no such module or it states none."""
    if not (PARSERS_DIR / f"{fmt}.py").is_file():
        return []
    module = importlib.import_module(f"parsers.own.{fmt}")
    for parser in getattr(module, "PARSERS", ()):
        if fmt in getattr(parser, "formats", ()):
            return list(getattr(parser, "limitations", ()))
    return []

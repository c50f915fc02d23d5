"""Known limitations of the project's own parsers, as each parser module states them.

Each own parser (``parsers/<format>.py``) lists what it cannot do under a ``Known limitations`` heading in its
module docstring; :func:`known_limitations` reads that list so reports show it next to the results instead of
leaving it in the source. The docstring is the single place to write them.
"""

from __future__ import annotations

import ast

from harness.core.paths import SOURCE_ROOT

PARSERS_DIR = SOURCE_ROOT / "parsers" / "own"


def known_limitations(fmt: str) -> list[str]:
    """The ``Known limitations`` items of ``parsers/<fmt>.py``'s docstring, one string per item (a bullet's
    lines joined; text on the heading line is an item too); ``[]`` when the module states none. The section
    ends at the first unindented paragraph that is not a bullet."""
    path = PARSERS_DIR / f"{fmt}.py"
    if not path.is_file():
        return []
    lines = (ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or "").splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("Known limitations")), None)
    if start is None:
        return []
    inline = lines[start].split(":", 1)[1].strip() if ":" in lines[start] else ""
    items, current = [], [inline] if inline else []
    for line in lines[start + 1 :]:
        text = line.strip()
        if not text:
            if current:
                items.append(" ".join(current))
                current = []
        elif text.startswith(("- ", "* ")):
            if current:
                items.append(" ".join(current))
            current = [text[2:]]
        elif current and (line[:1].isspace() or not items):
            current.append(text)  # a bullet's continuation, or the heading's paragraph
        else:
            break
    if current:
        items.append(" ".join(current))
    return items

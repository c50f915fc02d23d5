"""Errors the harness reports to the user as one plain message (no traceback).

Every error a user can cause (an unknown model name, a malformed catalog, a template that will not load
or render, a case the format cannot express) is a :class:`HarnessError`; the CLI prints ``str(error)``
and exits non-zero. Anything else escaping is a bug in the harness.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class HarnessError(Exception):
    """Base of every error the harness reports to the user as a message."""


class CatalogError(HarnessError):
    """``templates/catalog.toml`` is malformed; the message names the file, the row and the field."""


class UnknownModelError(HarnessError, KeyError):
    """A model name that is not in the catalog; the message lists the known names.

    Also a ``KeyError`` so lookups written for a plain dict keep working.
    """

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class TemplateNotFoundError(HarnessError):
    """No source could supply a chat template; the message lists each source tried and why it failed."""


class TemplateRenderError(HarnessError):
    """A chat template failed to compile or render; the message names the template file, the Jinja
    error message and, when known, the template line."""


class TemplateLimitError(TemplateRenderError):
    """A chat template's render went past a bound (time, output size, memory) or killed the render worker: the
    template's failure for the whole run, never a case the format cannot express."""


class UnrepresentableError(HarnessError):
    """A scenario the format cannot express (e.g. a Gemma 4 string containing ``<|"|>``) or that the
    template does not write (e.g. reasoning it drops). The caller skips the case with this note."""


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` naming up to three of ``known`` close to ``name`` (:func:`difflib.get_close_matches`,
    cutoff 0.75), or ``""`` when none is: appended to an "unknown NAME" message right after the name."""
    matches = difflib.get_close_matches(name, list(dict.fromkeys(known)), n=3, cutoff=0.75)
    return f" (did you mean {' or '.join(repr(m) for m in matches)}?)" if matches else ""

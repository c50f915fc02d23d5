"""Comparing parser output with what was expected, under the scoring conventions.

Content ``None`` equals ``""`` and is compared stripped (``corpora/observed/FORMAT.md``); arguments compare as JSON
values with free key order; numbers by exact mathematical value (``1 == 1.0``, ``10**30 != 1e30``), never equal to
their string form, and booleans never equal numbers.
"""

from __future__ import annotations

from typing import Any

from harness.core.messages import Message
from harness.formats import FormatSpec


def json_difference(want: Any, have: Any, path: str = "") -> tuple[str, str, str] | None:
    """First difference between two JSON values as ``(error_type, json_path, detail)``, or ``None``.

    Objects compare with free key order; arrays element-wise; numbers by exact value (module policy).
    """
    if _json_kind(want) != _json_kind(have):
        return (
            "wrong_argument_type",
            path,
            f"expected {_json_kind(want)} {short(want)}, got {_json_kind(have)} {short(have)}",
        )
    if isinstance(want, dict):
        for key in want:
            if key not in have:
                return ("wrong_argument_value", path, f"missing key {key!r}")
        for key in have:
            if key not in want:
                return ("wrong_argument_value", path, f"unexpected key {key!r}")
        for key in want:
            diff = json_difference(want[key], have[key], f"{path}.{key}" if path else str(key))
            if diff:
                return diff
        return None
    if isinstance(want, list):
        if len(want) != len(have):
            return ("wrong_argument_value", path, f"expected {len(want)} items, got {len(have)}")
        for i, (a, b) in enumerate(zip(want, have, strict=False)):
            diff = json_difference(a, b, f"{path}[{i}]")
            if diff:
                return diff
        return None
    if want != have:
        return ("wrong_argument_value", path, f"expected {short(want)}, got {short(have)}")
    return None


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    return type(value).__name__


def messages_equal(a: Message, b: Message) -> bool:
    """Equality of two parser outputs under the scoring conventions (used for stream-vs-one-shot)."""
    if norm(a.content) != norm(b.content) or norm(a.reasoning) != norm(b.reasoning):
        return False
    if len(a.tool_calls) != len(b.tool_calls):
        return False
    return all(
        x.name == y.name and json_difference(x.arguments, y.arguments) is None
        for x, y in zip(a.tool_calls, b.tool_calls, strict=False)
    )


def marker_leak(got: Message, expected: Message, fmt: FormatSpec, tolerated: tuple[str, ...] = ()) -> str | None:
    """The first marker (or trailing marker prefix) in content/reasoning that neither the expected text nor the
    ``tolerated`` text (a drift case's kept stray closer, say) explains; None when there is none."""
    for name in ("content", "reasoning"):
        leak = markup_in(name, without(getattr(got, name), tolerated), getattr(expected, name) or "", fmt)
        if leak:
            return leak
    return None


def delta_markup(delta: str | None, expected: Message, fmt: FormatSpec, tolerated: tuple[str, ...] = ()) -> str | None:
    """A streamed delta's marker that the expected content and reasoning and the ``tolerated`` text do not
    explain (llama.cpp expects call markup kept inside reasoning, say), as a one-line detail; ``None`` otherwise."""
    if not delta:
        return None
    allowed = (expected.content or "") + (expected.reasoning or "") + "".join(tolerated)
    unexplained = [m for m in fmt.markers if m in delta and m not in allowed]
    return f"streamed delta {short(delta)} contains {unexplained[0]!r}" if unexplained else None


def markup_in(name: str, text: str | None, allowed: str, fmt: FormatSpec, whole: bool = True) -> str | None:
    """The first of the format's markers in ``text`` (field ``name``; with ``whole``) or its trailing marker prefix
    that ``allowed`` (the expected text) does not hold, as a one-line detail; ``None`` when there is none."""
    text = text or ""
    for marker in fmt.markers if whole else ():
        if marker in text and marker not in allowed:
            return f"{name} contains {marker!r}"
    partial = trailing_marker_prefix(text, fmt)
    if partial and not allowed.rstrip().endswith(partial[0]):
        return f"{name} ends with {partial[0]!r}, a prefix of {partial[1]!r}"
    return None


def trailing_marker_prefix(text: str | None, fmt: FormatSpec) -> tuple[str, str] | None:
    """``(prefix, marker)`` when ``text`` (trailing whitespace aside) ends with the first 2 or more characters of
    one of the format's markers but not the whole marker; the longest such prefix, else ``None``."""
    tail = (text or "").rstrip()
    found: tuple[str, str] | None = None
    for marker in fmt.markers:
        for cut in range(2, len(marker)):
            if tail.endswith(marker[:cut]) and (found is None or cut > len(found[0])):
                found = (marker[:cut], marker)
    return found


def text_match(want: str | None, have: str | None, whitespace: str = "ignore") -> str | None:
    """How ``have`` matches ``want`` under a whitespace policy (:mod:`harness.score.policy`): ``"pass"``,
    ``"soft"`` (equal only after stripping surrounding whitespace, whitespace-only as absent: canitoolcall's
    soft-v1) or ``None`` (different). ``None`` equals ``""``; ``whitespace="ignore"`` turns "soft" into "pass"
    and ``"strict"`` into ``None``."""
    if (want or "") == (have or ""):
        return "pass"
    if norm(want) != norm(have):
        return None
    return {"ignore": "pass", "soft-v1": "soft"}.get(whitespace)


def without(text: str | None, tolerated: tuple[str, ...]) -> str:
    """``text`` with the tolerated marker text (a kept stray closer, say) taken out."""
    text = text or ""
    for extra in tolerated:
        text = text.replace(extra, "")
    return text


def norm(text: str | None) -> str:
    return (text or "").strip()


def squash(text: str | None) -> str:
    """``text`` with all whitespace removed (``None`` as "")."""
    return "".join((text or "").split())


def short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."

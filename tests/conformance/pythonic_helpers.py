"""Shared helpers of the pythonic conformance tests (``test_llama4_pythonic.py``, ``test_lfm2.py``): calls written
as Python literals, and hypothesis strategies of names, keys and values.
"""

from __future__ import annotations

from hypothesis import strategies as st


def literal(value) -> str:
    """``value`` as a Python literal (``repr`` for strings, ``True``/``None``, nested lists and dicts)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    return repr(value)


def call_list(calls, sep: str = ", ") -> str:
    """``[NAME(k=v, ...), ...]`` of ``calls`` (``[(name, arguments)]``), values as Python literals."""
    return "[" + sep.join(f"{n}(" + ", ".join(f"{k}={literal(v)}" for k, v in a.items()) + ")" for n, a in calls) + "]"


NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}(\.[A-Za-z_][A-Za-z0-9_]{0,8})?", fullmatch=True)
KEYS = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True)


def values(tricky: list[str]):
    """JSON values with strings drawn from ``tricky`` fragments and arbitrary text."""
    strings = st.one_of(
        st.sampled_from(tricky), st.text(max_size=20), st.lists(st.sampled_from(tricky), max_size=4).map("".join)
    )
    scalars = st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), strings
    )
    return st.recursive(
        scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(strings, inner, max_size=4), max_leaves=10
    )

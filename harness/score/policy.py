"""Judging policies: where engines disagree, the judge names the choice and the user picks it (``--policy``).

- ``malformed``: how a parser may answer call markup it cannot recover (a truncated call, a broken opener; the
  outcome classes of :mod:`harness.score.outcomes`): ``lossless`` (``surfaced`` required: the damaged text kept in
  content), ``no-markup`` (``scrubbed``, or ``surfaced`` with no protocol marker left in content: SGLang's fix
  for Gemma 4 marker leaks, ``shared/seeds/004``, and canitoolcall's ``expected_error`` rule) or ``either`` (the
  default: both, reported per class). Under ``no-markup`` and ``either`` a partial marker at the end of the
  content (``...<|tool_c``) is never a pass.
- ``whitespace``: how content and reasoning compare: ``strict`` (exactly; ``None`` equals ``""``), ``soft-v1``
  (canitoolcall's normalization, the default: equal only after stripping surrounding whitespace, a
  whitespace-only text counting as absent, is a ``soft_pass``, shown apart from ``pass``) or ``ignore`` (such a
  difference passes: the harness' rule before policies).
- ``reasoning``: where a parser must put reasoning, llama.cpp's reasoning formats (``common/common.h:421``):
  ``deepseek`` (the default and llama-server's: extracted into the message's reasoning, streamed deltas too; its
  ``auto`` is the same), ``none`` (left in content with its markup, as llama.cpp with ``reasoning_format=none`` or an
  engine run without a reasoning parser returns it) or ``any`` (either form passes). A case states the form its
  expected message was written in (a llama.cpp case with ``reasoning_format=none``), and the judge reads both sides
  into one form before comparing (:mod:`harness.score.reasoning`).

A policy is recorded in ``run.json`` and in every baseline; the gate refuses to compare runs judged under
different policies.
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, fields

from harness.core.errors import HarnessError

MALFORMED = ("either", "lossless", "no-markup")
WHITESPACE = ("soft-v1", "strict", "ignore")
REASONING = ("deepseek", "none", "any")
CHOICES = {"malformed": MALFORMED, "whitespace": WHITESPACE, "reasoning": REASONING}
#: values other tools name that the judge spells differently (the error says which value to use).
SYNONYMS = {("reasoning", "auto"): "deepseek (llama.cpp's auto is deepseek, common/common.h:423)"}


class PolicyError(HarnessError, ValueError):
    """A ``--policy`` text or a recorded policy names an unknown key or value (the message lists the known)."""


@dataclass(frozen=True)
class Policy:
    """The judging policy of a run (module docstring); the defaults are the harness' default policy."""

    malformed: str = "either"
    whitespace: str = "soft-v1"
    reasoning: str = "deepseek"

    def __post_init__(self) -> None:
        for key, known in CHOICES.items():
            value = getattr(self, key)
            if value not in known:
                close = difflib.get_close_matches(value, known, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                if (key, value) in SYNONYMS:
                    hint = f" (use {SYNONYMS[key, value]})"
                raise PolicyError(f"policy {key}={value!r}{hint}; known: {', '.join(known)}")

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict | None) -> Policy:
        """The policy recorded in a run or baseline; ``None`` (written before policies) is the default."""
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise PolicyError(f"policy must be an object, got {type(data).__name__}")
        unknown = sorted(set(data) - set(CHOICES))
        if unknown:
            raise PolicyError(f"policy: unknown key(s) {', '.join(unknown)}; known: {', '.join(CHOICES)}")
        return cls(**{k: str(v) for k, v in data.items()})

    def describe(self) -> str:
        """``malformed=either,whitespace=soft-v1,reasoning=deepseek``: the ``--policy`` text selecting this policy."""
        return ",".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self))


DEFAULT_POLICY = Policy()


def parse_policy(text: str) -> Policy:
    """The policy named by ``--policy`` text: ``KEY=VALUE`` pairs separated by commas, each key at most once, the
    keys not named at their defaults (``""`` is the default policy). Raises :class:`PolicyError`."""
    chosen: dict[str, str] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not value:
            raise PolicyError(f"policy {item!r}: expected KEY=VALUE with KEY one of {', '.join(CHOICES)}")
        if key not in CHOICES:
            close = difflib.get_close_matches(key, list(CHOICES), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise PolicyError(f"policy key {key!r}{hint}; known: {', '.join(CHOICES)}")
        if key in chosen:
            raise PolicyError(f"policy key {key!r} given twice")
        chosen[key] = value
    return Policy(**chosen)

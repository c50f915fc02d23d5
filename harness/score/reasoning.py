"""The judge's view of reasoning: the expected message and the parse read into one form before scoring.

A case whose expected message was written with reasoning left in content (``extra["reasoning_format"] ==
"none"``: a llama.cpp case run with ``reasoning_format=none``) has its expected reasoning block (the format's
``thought_markers``) read out of the content. Under ``--policy reasoning=none`` and ``any``
(:mod:`harness.score.policy`) so has the parser's content; under ``none``, reasoning the parser extracted itself is
wrong.
"""

from __future__ import annotations

from dataclasses import replace

from harness.core.cases import Case
from harness.core.messages import Message
from harness.formats import FormatSpec
from harness.score.policy import Policy


def split_inline(message: Message, fmt: FormatSpec, prefix: str = "") -> Message:
    """``message`` with the reasoning block at the start of its content moved to ``reasoning``
    (:meth:`harness.formats.FormatSpec.inline_reasoning`; after any reasoning it already has); unchanged without one."""
    found = fmt.inline_reasoning(message.content or "", prefix)
    if found is None:
        return message
    moved, content = found
    reasoning = "\n".join(part for part in ((message.reasoning or "").strip(), moved) if part)
    return replace(message, content=content or None, reasoning=reasoning or None)


def judged_view(case: Case, got: Message, fmt: FormatSpec, policy: Policy) -> tuple[Case, Message, str | None]:
    """``(case, got, problem)`` as the judge compares them under ``policy`` (module docstring); ``problem``: why
    ``got`` fails whatever it holds (reasoning extracted under ``reasoning=none``), else ``None``."""
    if case.extra.get("reasoning_format") == "none":
        case = replace(case, expected=split_inline(case.expected, fmt, case.prefix))
    if policy.reasoning == "deepseek":
        return case, got, None
    if policy.reasoning == "none" and (got.reasoning or "").strip():
        return case, got, "reasoning=none: the parser extracted reasoning instead of leaving it in content"
    return case, split_inline(got, fmt, case.prefix), None

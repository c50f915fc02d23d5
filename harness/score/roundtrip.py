"""The round-trip check: parse a rendered case, render the parsed message back through the same chat template,
and require the identical text (llama.cpp's ``tests/test-chat.cpp`` checks its parsers this way).

A parser that reads a call correctly but loses something the template writes (a content piece, reasoning, an
argument's exact value or type) re-renders to a different text; the mismatch is reported as its own error type,
``round_trip_mismatch``, with the first differing position. Only rendered cases whose text is the template's
own (``text_provenance == "full"``, slices ``curated`` and ``generated``) are checked: composed cases hold text
the template would put elsewhere, and observed cases have no render to compare with.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.core.cases import Case
from harness.core.errors import HarnessError
from harness.core.messages import Message
from harness.core.results import Score
from harness.core.scenarios import Scenario
from harness.formats import FormatSpec
from harness.template.render import render_scenario
from harness.template.sources import ChatTemplate

ROUNDTRIP = "roundtrip"
ERROR_TYPE = "round_trip_mismatch"

Check = Callable[[Case, Message], Score]


def applies(case: Case) -> bool:
    """True for cases whose text is exactly what the template wrote."""
    return case.slice in ("curated", "generated") and case.text_provenance == "full"


def roundtrip_check(template: ChatTemplate, fmt: FormatSpec) -> Check:
    """``check(case, parsed) -> Score``: ``pass`` when ``parsed`` re-renders to ``case.text``."""

    def check(case: Case, parsed: Message) -> Score:
        scenario = Scenario(
            id=case.id,
            tools=case.tools or [],  # rendering reads no tools and [] alike
            calls=list(parsed.tool_calls),
            content_after=parsed.content or "",
            reasoning=parsed.reasoning or None,
        )
        try:
            again = render_scenario(template, scenario, fmt, slice=case.slice).text
        except HarnessError as exc:  # the parsed message cannot be rendered (e.g. arguments not an object)
            return Score("fail", ERROR_TYPE, f"the parsed message does not render: {exc}")
        if again == case.text:
            return Score("pass")
        at = next(
            (i for i, (a, b) in enumerate(zip(case.text, again, strict=False)) if a != b),
            min(len(case.text), len(again)),
        )
        return Score(
            "fail",
            ERROR_TYPE,
            f"re-rendered text differs at {at}: rendered {case.text[max(0, at - 20) : at + 30]!r}"
            f", re-rendered {again[max(0, at - 20) : at + 30]!r}",
        )

    return check

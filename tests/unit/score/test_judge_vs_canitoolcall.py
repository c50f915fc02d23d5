"""The judge judged (issue 13, part 3): on canitoolcall 0.1.1's fixtures, the harness' verdict for a parse equals
canitoolcall's own ``checks.run_checks`` + ``case_status`` for the same parse, or the difference is one of the
documented policy differences (:data:`RULES`; the table in ``docs/peers/canitoolcall.md``, "Judge vs canitoolcall").

What is judged, per fixture the harness maps (:mod:`harness.corpus.peers.canitoolcall`) and per judging policy
(:mod:`harness.score.policy`, every ``malformed`` x ``whitespace`` choice):

- ``own``: the own parser of the case's format, ``oneshot`` (``parser.parse``) and ``whole`` (the text as one
  streamed chunk), the harness' verdicts from :func:`harness.score.runner.evaluate_case`; ``both`` is the pair,
  canitoolcall's ``Observation(nonstream, streams={"one": stream})`` against the worse harness verdict.
- probes (:data:`PROBES`, one-shot): answers a parser might give, so the failing and soft paths are judged too
  (the expected message, the raw text surfaced, an empty answer, whitespace around the text, ...), and one
  stream/one-shot pair (``both``: no call one-shot, the raw text surfaced when streamed).
- the fixtures as published, and each ``expected_error`` fixture with its ``accept`` list narrowed to one outcome
  (``#accept=<outcome>``), so that each accepted outcome is judged alone (0.1.1's lists all hold
  ``no_tool_calls``, which accepts any answer without calls).

A harness verdict maps to canitoolcall's statuses as ``pass`` / ``soft_pass`` / anything else ``fail`` (a
parser exception is a parse outcome in both). Run as a script to print the tables the docs hold:
``PYTHONPATH=. python tests/unit/score/test_judge_vs_canitoolcall.py``.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.core.cases import Case
from harness.core.messages import Message, ToolCall
from harness.core.protocol import run_stream
from harness.core.results import Score
from harness.corpus.peers.canitoolcall import ACCEPT, load_suite
from harness.formats import FormatSpec, get_format
from harness.parse.calls import guarded
from harness.parse.registry import get_parser
from harness.score.outcomes import accepted_error
from harness.score.policy import DEFAULT_POLICY, MALFORMED, WHITESPACE, Policy
from harness.score.runner import evaluate_case
from harness.score.verdicts import score

try:
    import canitoolcall
    from canitoolcall import checks as cani_checks
    from canitoolcall.fixtures import ExpectedError, load_families, load_fixtures
    from canitoolcall.results import Observation, ParsedToolCall, ParseResult

    MISSING = None
except ImportError as exc:  # the test extra installs it; its absence is a failure, not a skip
    canitoolcall = None
    MISSING = (
        f"canitoolcall is not importable ({exc}): it is in the test extra, "
        "pip install -e '.[test]' (or pip install canitoolcall==0.1.1)"
    )

VERSION = "0.1.1"
#: the fixtures the harness maps in 0.1.1 (tests/unit/corpus/test_peer_canitoolcall.py pins them per format).
MAPPED = 469
POLICIES = [Policy(malformed=m, whitespace=w) for m in MALFORMED for w in WHITESPACE]
RANK = {"pass": 0, "soft_pass": 1, "fail": 2}
TIMEOUT_S = 10.0


def _status(verdict: str) -> str:
    """A harness verdict as a canitoolcall status."""
    return verdict if verdict in ("pass", "soft_pass") else "fail"


def _worse(a: str, b: str) -> str:
    return max(a, b, key=RANK.__getitem__)


# --- the answers judged ---------------------------------------------------------------------------------------

#: an answer: a message, or ``None`` for a parser that raised.
Answer = Message | None


def _floats(value):
    if isinstance(value, bool) or not isinstance(value, (int, dict, list)):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, dict):
        return {k: _floats(v) for k, v in value.items()}
    return [_floats(v) for v in value]


def _with(expected: Message, **changes) -> Message:
    fields = {"content": expected.content, "reasoning": expected.reasoning, "tool_calls": expected.tool_calls}
    return Message(**{**fields, **changes})


#: one-shot probes: ``name -> answer(case, fmt)``.
PROBES: dict[str, Callable[[Case, FormatSpec], Answer]] = {
    "expected": lambda case, fmt: case.expected,
    "surfaced": lambda case, fmt: Message(content=case.text),
    "surfaced-stripped": lambda case, fmt: Message(content=case.text.strip()),
    "surfaced-reflowed": lambda case, fmt: Message(content=" ".join(case.text.split())),
    "surfaced-after-prose": lambda case, fmt: Message(content="It failed: " + case.text),
    "empty": lambda case, fmt: Message(),
    "padded": lambda case, fmt: _with(
        case.expected,
        content=f"\n{case.expected.content or ''}\n",
        reasoning=f" {case.expected.reasoning}\n" if case.expected.reasoning else None,
    ),
    "marker-in-content": lambda case, fmt: _with(case.expected, content=(case.expected.content or "") + fmt.markers[0]),
    "string-arguments": lambda case, fmt: _with(
        case.expected, tool_calls=[ToolCall(c.name, json.dumps(c.arguments)) for c in case.expected.tool_calls]
    ),
    "float-numbers": lambda case, fmt: _with(
        case.expected, tool_calls=[ToolCall(c.name, _floats(c.arguments)) for c in case.expected.tool_calls]
    ),
    "exception": lambda case, fmt: None,
}
#: stream/one-shot pairs judged as ``both``: ``name -> (one-shot answer, streamed answer)``.
PAIRS: dict[str, Callable[[Case, FormatSpec], tuple[Answer, Answer]]] = {
    "stream-differs": lambda case, fmt: (Message(), Message(content=case.text))
}
PROBE_ERROR = "RuntimeError: probe"


def _parse_result(answer: Answer, error: str = PROBE_ERROR):
    """canitoolcall's ParseResult of a harness answer: arguments as JSON text, an exception as ``Type: msg``."""
    if answer is None:
        return ParseResult(exception=error)
    calls = tuple(ParsedToolCall(c.name, json.dumps(c.arguments, ensure_ascii=False)) for c in answer.tool_calls)
    return ParseResult(content=answer.content, reasoning_content=answer.reasoning, tool_calls=calls)


def _probe_score(case: Case, answer: Answer, fmt: FormatSpec, policy: Policy, oneshot: Answer = None) -> Score:
    if answer is None:
        return accepted_error(case, Score("error", "exception", PROBE_ERROR))
    return score(case, answer, fmt, oneshot=oneshot, policy=policy)


# --- the comparison ---------------------------------------------------------------------------------------------

#: canitoolcall's checks that compare parses with each other, not with the fixture.
STREAM_CHECKS = frozenset({"stream_equals_nonstream", "split_invariance"})


@dataclasses.dataclass
class Judged:
    """One parse judged by both judges under one policy."""

    policy: Policy
    case: Case
    fixture: object  # canitoolcall.fixtures.Fixture
    source: str  # "own" or "probe:<name>"
    mode: str  # "oneshot", "whole" or "both"
    got: Answer  # the answer (the streamed one for whole and both)
    harness: Score
    cani: str  # canitoolcall's status
    rows: list  # canitoolcall's CheckResult rows behind it
    parts: tuple = ()  # for "both": the one-shot and the streamed judgement

    @property
    def agrees(self) -> bool:
        return _status(self.harness.verdict) == self.cani

    @property
    def fixtures(self) -> str:
        """``published`` (as in the wheel) or ``narrowed`` (an accept list cut to one outcome)."""
        return "narrowed" if "#accept=" in self.case.id else "published"

    @property
    def group(self) -> str:
        return f"{'own' if self.source == 'own' else 'probe'} {self.mode}"

    @property
    def failing_checks(self) -> set[str]:
        return {r.check for r in self.rows if r.status.value == "fail"}

    def line(self) -> str:
        return (
            f"{self.policy.describe()} {self.case.id} {self.source} {self.mode}: harness {self.harness.verdict} "
            f"({self.harness.error_type}, {self.harness.outcome}), canitoolcall {self.cani} "
            f"({sorted(self.failing_checks)})"
        )


def _cani_status(rows: list, strategy: str | None) -> tuple[str, list]:
    """canitoolcall's status over all ``rows`` (``strategy=None``), or over one parse's rows against the fixture."""
    picked = [r for r in rows if strategy is None or (r.strategy == strategy and r.check not in STREAM_CHECKS)]
    return cani_checks.case_status(picked).value, picked


def _cases() -> list[tuple[Case, object, object]]:
    """``(case, canitoolcall Fixture, Family)`` for every mapped fixture, plus the narrowed-accept variants."""
    root = Path(canitoolcall.__file__).parent / "_data" / "fixtures"
    fixtures = {f.id: f for f in load_fixtures([root])}
    families = load_families(root)
    out = []
    for case in load_suite().all_cases():
        fixture = fixtures[case.extra["peer"]["id"]]
        assert fixture.raw_output == case.text, case.id  # the same fixture, read by both
        family = families[fixture.family]
        out.append((case, fixture, family))
        error = case.extra.get("expected_error")
        for outcome in ACCEPT if error else ():
            if [outcome] == error["accept"]:
                continue
            narrowed = {**error, "accept": [outcome]}
            variant = dataclasses.replace(
                case, id=f"{case.id}#accept={outcome}", extra={**case.extra, "expected_error": narrowed}
            )
            cani_error = ExpectedError(fixture.expected_error.reason, (outcome,))
            out.append((variant, dataclasses.replace(fixture, expected_error=cani_error), family))
    return out


def _own_parses(case: Case, parser) -> tuple[tuple[Answer, str], tuple[Answer, str]]:
    """``((one-shot answer, exception text), (whole-text streamed answer, exception text))``."""
    oneshot, error = guarded(lambda: parser.parse(case.text, case.tools, case.prefix), TIMEOUT_S)
    streamed, stream_error = guarded(lambda: run_stream(parser, [case.text], case.tools, case.prefix), TIMEOUT_S)
    return (oneshot, error.detail if error else ""), (streamed, stream_error.detail if stream_error else "")


def _rows(fixture, family, oneshot: tuple[Answer, str], streamed: tuple[Answer, str] | None = None) -> list:
    streams = {"one": _parse_result(*streamed)} if streamed else {}
    return cani_checks.run_checks(fixture, family, Observation(nonstream=_parse_result(*oneshot), streams=streams))


def _both(policy: Policy, case: Case, fixture, source: str, rows: list, parts: list[Judged]) -> Judged:
    """A pair judged together: the worse harness verdict against canitoolcall's status over all rows."""
    worst = _worse(*(_status(p.harness.verdict) for p in parts))
    status, _ = _cani_status(rows, None)
    return Judged(policy, case, fixture, source, "both", parts[-1].got, Score(worst), status, rows, tuple(parts))


def _judge_case(case: Case, fixture, family, parser) -> list[Judged]:
    fmt = get_format(case.format)
    own = _own_parses(case, parser)
    own_rows = _rows(fixture, family, *own)
    probes = {name: make(case, fmt) for name, make in PROBES.items()}
    probe_rows = {name: _rows(fixture, family, (answer, PROBE_ERROR)) for name, answer in probes.items()}
    pairs = {name: make(case, fmt) for name, make in PAIRS.items()}
    pair_rows = {name: _rows(fixture, family, (a, PROBE_ERROR), (b, PROBE_ERROR)) for name, (a, b) in pairs.items()}
    out: list[Judged] = []
    for policy in POLICIES:
        records = {
            r.mode: r for r in evaluate_case(case, parser, fmt, ["oneshot", "whole"], 0, TIMEOUT_S, None, policy)
        }
        parts = []
        for mode, (got, _), strategy in zip(("oneshot", "whole"), own, ("nonstream", "one"), strict=True):
            record = records[mode]
            assert record.got == (got.to_json() if got is not None else None), (case.id, mode)  # the same parse
            harness = Score(record.verdict, record.error_type, record.detail or "", record.outcome)
            parts.append(Judged(policy, case, fixture, "own", mode, got, harness, *_cani_status(own_rows, strategy)))
        out += [*parts, _both(policy, case, fixture, "own", own_rows, parts)]
        for name, answer in probes.items():
            harness = _probe_score(case, answer, fmt, policy)
            status, rows = _cani_status(probe_rows[name], None)
            out.append(Judged(policy, case, fixture, f"probe:{name}", "oneshot", answer, harness, status, rows))
        for name, (a, b) in pairs.items():
            parts = [
                Judged(policy, case, fixture, f"probe:{name}", mode, answer, harness, *_cani_status(pair_rows[name], s))
                for mode, answer, harness, s in (
                    ("oneshot", a, _probe_score(case, a, fmt, policy), "nonstream"),
                    ("whole", b, _probe_score(case, b, fmt, policy, oneshot=a), "one"),
                )
            ]
            out.append(_both(policy, case, fixture, f"probe:{name}", pair_rows[name], parts))
    return out


@functools.cache
def judgements() -> tuple[Judged, ...]:
    """Every comparison (module docstring), under every policy."""
    _require_canitoolcall()
    parsers: dict[str, object] = {}
    out: list[Judged] = []
    for case, fixture, family in _cases():
        if case.format not in parsers:
            parsers[case.format] = get_parser(f"toolcall-harness:{case.format}", case.format)
        out += _judge_case(case, fixture, family, parsers[case.format])
    return tuple(out)


# --- the documented differences ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Rule:
    """A documented policy difference: ``applies(judged)`` says whether a disagreement is one of it."""

    name: str
    text: str
    applies: Callable[[Judged], bool]


def _no_call_answer(j: Judged) -> bool:
    """An answer without calls (and without an exception) to an ``expected_error`` fixture."""
    return j.got is not None and not j.got.tool_calls and j.fixture.expected_error is not None


RULES = (
    Rule(
        "lossless-needs-the-text",
        "`malformed=lossless` passes only a surfaced answer (the damaged text kept in content); canitoolcall's "
        "`no_tool_calls` accepts any answer without calls",
        lambda j: (
            j.policy.malformed == "lossless"
            and _no_call_answer(j)
            and j.cani == "pass"
            and j.harness.verdict == "fail"
            and j.harness.outcome != "surfaced"
        ),
    ),
    Rule(
        "no-markup-forbids-markers",
        "`malformed=no-markup` fails content that holds protocol markup (seed 004); canitoolcall accepts it on "
        "`expected_error` fixtures (a passthrough is graceful; `no_leakage` skips content there)",
        lambda j: (
            j.policy.malformed == "no-markup"
            and _no_call_answer(j)
            and j.cani in ("pass", "soft_pass")
            and j.harness.error_type == "marker_leak"
        ),
    ),
    Rule(
        "whitespace-strict",
        "`whitespace=strict` fails a difference in surrounding whitespace that canitoolcall's soft-v1 soft-passes",
        lambda j: j.policy.whitespace == "strict" and j.cani == "soft_pass" and j.harness.verdict == "fail",
    ),
    Rule(
        "whitespace-ignore",
        "`whitespace=ignore` passes a difference in surrounding whitespace that canitoolcall's soft-v1 soft-passes",
        lambda j: j.policy.whitespace == "ignore" and j.cani == "soft_pass" and j.harness.verdict == "pass",
    ),
    Rule(
        "stream-equals-nonstream",
        "canitoolcall also fails a stream that differs from the one-shot parse when both are acceptable "
        "(`stream_equals_nonstream`); the harness judges each mode against the case",
        lambda j: (
            j.mode == "both" and j.cani == "fail" and j.failing_checks <= STREAM_CHECKS and j.harness.verdict != "fail"
        ),
    ),
)


def classify(j: Judged) -> list[str]:
    """The rules that explain a disagreement; for a pair, also those that explain its parts' disagreements."""
    names = [rule.name for rule in RULES if rule.applies(j)]
    for part in j.parts:
        explained = [] if part.agrees else classify(part)
        if not part.agrees and not explained:
            return []  # an unexplained part leaves the pair unexplained
        names += [name for name in explained if name not in names]
    return names


def disagreements(policy: Policy | None = None) -> list[Judged]:
    return [j for j in judgements() if not j.agrees and (policy is None or j.policy == policy)]


#: the table columns: ``(fixture set, parse group)``; a probe group sums the probes.
COLUMNS = (
    ("published", "own oneshot"),
    ("published", "own whole"),
    ("published", "own both"),
    ("published", "probes"),
    ("narrowed", "own oneshot"),
    ("narrowed", "own whole"),
    ("narrowed", "own both"),
    ("narrowed", "probes"),
)


def _column(j: Judged) -> tuple[str, str]:
    return j.fixtures, "probes" if j.source != "own" else f"own {j.mode}"


def _header(first: list[str]) -> list[str]:
    names = first + [f"{f} {g}" for f, g in COLUMNS]
    return ["| " + " | ".join(names) + " |", "|---" * len(names) + "|"]


def agreement_table() -> str:
    """Markdown: the judgements both judges agree on, per policy and column (:data:`COLUMNS`), and in all."""
    counts: dict = collections.defaultdict(lambda: [0, 0])
    for j in judgements():
        for key in ((j.policy, _column(j)), (j.policy, "all")):
            counts[key][0] += j.agrees
            counts[key][1] += 1
    lines = _header(["policy"])
    lines[0] = lines[0] + " all |"
    lines[1] = lines[1] + "---|"
    for policy in POLICIES:
        cells = [f"{counts[(policy, c)][0]}/{counts[(policy, c)][1]}" for c in [*COLUMNS, "all"]]
        lines.append(f"| `{policy.describe()}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def category_table() -> str:
    """Markdown: disagreements per rule (joined when several apply), policy and column (:data:`COLUMNS`)."""
    counts: collections.Counter = collections.Counter()
    for j in disagreements():
        counts[(" + ".join(sorted(classify(j))) or "(unexplained)", j.policy.describe(), _column(j))] += 1
    rows = sorted({(rule, policy) for rule, policy, _ in counts})
    lines = _header(["rule", "policy"])
    for rule, policy in rows:
        cells = [str(counts[(rule, policy, c)]) for c in COLUMNS]
        lines.append(f"| {rule} | `{policy}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def rule_table() -> str:
    return "\n".join(["| rule | difference |", "|---|---|"] + [f"| {r.name} | {r.text} |" for r in RULES])


# --- the tests --------------------------------------------------------------------------------------------------


def _require_canitoolcall() -> None:
    """Fail (never skip) when canitoolcall is not the pinned version: the test extra installs it."""
    if MISSING:
        pytest.fail(MISSING)
    if canitoolcall.__version__ != VERSION:
        pytest.fail(f"canitoolcall {canitoolcall.__version__} is installed; this comparison is pinned to {VERSION}")


def test_every_mapped_fixture_is_judged_by_both_judges():
    published = {j.case.id for j in judgements() if j.fixtures == "published"}
    assert len(published) == MAPPED
    narrowed = [j for j in judgements() if j.fixtures == "narrowed"]
    assert narrowed and all(j.fixture.expected_error.accept == (j.case.id.rsplit("=", 1)[1],) for j in narrowed)


def test_the_comparison_covers_pass_soft_pass_and_fail_on_both_sides():
    agreed = {j.cani for j in judgements() if j.agrees and j.policy == DEFAULT_POLICY}
    assert agreed == {"pass", "soft_pass", "fail"}


def test_under_the_default_policy_the_judges_agree_on_every_parse_but_stream_equality():
    """The default policy (malformed=either, whitespace=soft-v1) is canitoolcall's judgement, one mode at a time."""
    rest = [j for j in disagreements(DEFAULT_POLICY) if classify(j) != ["stream-equals-nonstream"]]
    assert not rest, "\n".join(j.line() for j in rest[:40])
    own = [j for j in disagreements(DEFAULT_POLICY) if j.source == "own"]
    assert not own, "\n".join(j.line() for j in own[:40])


def test_every_disagreement_is_a_documented_policy_difference():
    unexplained = [j for j in disagreements() if not classify(j)]
    print("\n" + agreement_table() + "\n\n" + category_table())
    assert not unexplained, f"{len(unexplained)} unexplained:\n" + "\n".join(j.line() for j in unexplained[:40])


if __name__ == "__main__":
    print(rule_table() + "\n\n" + agreement_table() + "\n\n" + category_table())

"""Minimal failing inputs by delta debugging, for failures that hypothesis did not generate (curated, observed,
drift and sweep cases; generated cases keep hypothesis' shrinking, :func:`harness.corpus.generated.minimal_failing`).

- :func:`ddmin`: Zeller and Hildebrandt's delta debugging ("Simplifying and Isolating Failure-Inducing Input",
  IEEE TSE 2002) over a list: subsets, then complements, at doubling granularity; the result is 1-minimal
  (no single item can go) unless the budget ran out first, in which case it is the smallest failing list found.
- :func:`ddmin_text`: ddmin over the atoms of a text, protocol markers always whole (one token each in real
  output): first word runs whole, then every other character alone.
- :func:`minimize_scenario`: reduction over the structure of a ground-truth scenario (drop prose and reasoning,
  calls, arguments, array items, characters of string values), each candidate re-rendered through the real
  template by the caller's predicate, so the expected message stays exact.
- :func:`minimize_case`: for one failing (case, parser, mode, error type), the first strategy that applies and
  whose predicate holds on the case itself:

  1. ``structure``: the case re-renders from its expected message through the template (curated, generated,
     sweep) — for a drift case, its base case is reduced, re-rendered and damaged again by the same mutator
     (:mod:`harness.corpus.drift`), so the repro keeps the mutation;
  2. ``differential``: given an *oracle* (another parser that passed the case), ddmin over the text where the
     oracle's output on the reduced text is the expected one; it must keep the shape of its reading of the case
     (as many calls, content and reasoning where that reading has them), and the failing parser must still
     disagree with it with the same error type;
  3. ``text``: ddmin over the text with the predicate "same error type", for faults that need no expected
     message (:data:`SELF_CONTAINED`). A predicate on the error type alone may slip to another fault of that
     type (a bad name and a cut-off call both raise ``exception``); the strategies above keep to the fault;
  4. ``none``: left as it is (also every :data:`NOT_MINIMIZED` fault and ``roundtrip`` failures).

Budgets count checks (one parser run of the mode; :class:`Budget`); when spent, the smallest failing input
found so far is returned.
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from harness.core.cases import Case
from harness.core.errors import UnrepresentableError
from harness.core.messages import Message, ToolCall
from harness.core.scenarios import Scenario
from harness.corpus.drift import get_mutator
from harness.corpus.random_calls import random_scenario
from harness.formats import FormatSpec
from harness.parse.calls import alarm_limit, guarded, judged
from harness.score.checks import check_stream, check_truncation
from harness.score.runner import evaluate_case
from harness.score.verdicts import score
from harness.template.render import render_scenario

T = TypeVar("T")

SELF_CONTAINED = ("exception", "timeout", "crash", "protocol", "stream_diverges")
"""Error types whose predicate needs no expected message: the parser alone shows them."""

NOT_MINIMIZED = ("timeout", "crash")
"""Error types not reduced: every failing check would cost the time limit or a worker restart."""

MODE_COST = ("oneshot", "whole", "random", "tokens", "char", "prefix")
"""Modes from cheapest to dearest to re-check (a cluster is minimized in its cheapest failing mode)."""


class BudgetSpent(Exception):
    """Raised by :meth:`Budget.charge` when no checks are left."""


class Budget:
    """A count of checks (parser runs) a minimization may make, and optionally a time limit in seconds (one
    check of a dear mode, e.g. ``prefix`` on a long text, can take seconds); ``used`` counts the checks made."""

    def __init__(self, checks: float, seconds: float | None = None):
        self.left = checks
        self.used = 0
        self.deadline = time.monotonic() + seconds if seconds is not None else None

    def charge(self, checks: int = 1) -> None:
        """Take ``checks`` from the budget; raises :class:`BudgetSpent` when there are not enough left or the
        time limit has passed."""
        if checks > self.left or (self.deadline is not None and time.monotonic() > self.deadline):
            self.left = 0
            raise BudgetSpent
        self.left -= checks
        self.used += checks


def ddmin(
    items: Sequence[T], fails: Callable[[list[T]], bool], budget: Budget | None = None, allow_empty: bool = True
) -> list[T]:
    """The smallest sub-list of ``items`` (order kept) for which ``fails`` holds, by delta debugging.

    ``fails(items)`` is assumed true on entry (not re-checked). Each new candidate costs one check of
    ``budget`` (None: unbounded); results are cached by item positions, so items need not be hashable.
    ``allow_empty``: also try ``[]`` at the end. Never raises :class:`BudgetSpent`: it stops and returns.
    """
    budget = budget or Budget(math.inf)
    items = list(items)
    current = list(range(len(items)))
    seen: dict[tuple, bool] = {tuple(current): True}

    def test(candidate: list[int]) -> bool:
        key = tuple(candidate)
        if key not in seen:
            budget.charge()
            seen[key] = bool(fails([items[i] for i in candidate]))
        return seen[key]

    n = 2
    try:
        while len(current) >= 2:
            size = math.ceil(len(current) / n)
            parts = [current[i : i + size] for i in range(0, len(current), size)]
            reduced = next((p for p in parts if test(p)), None) if len(parts) > 2 else None
            if reduced is not None:
                current, n = reduced, 2
                continue
            complements = ([x for j, p in enumerate(parts) if j != i for x in p] for i in range(len(parts)))
            reduced = next((c for c in complements if test(c)), None)
            if reduced is not None:
                current, n = reduced, max(n - 1, 2)
                continue
            if n >= len(current):
                break
            n = min(len(current), 2 * n)
        if allow_empty and current and test([]):
            current = []
    except BudgetSpent:
        pass
    return [items[i] for i in current]


def text_atoms(text: str, markers: Sequence[str] = (), words: bool = False) -> list[str]:
    """``text`` cut into atoms: each occurrence of a marker (longest first) whole, then (``words``) each run of
    word characters (``\\w+``) whole, every other character alone."""
    ordered = sorted({m for m in markers if m}, key=len, reverse=True)
    atoms, i = [], 0
    while i < len(text):
        marker = next((m for m in ordered if text.startswith(m, i)), None)
        run = _WORD.match(text, i) if words and marker is None else None
        atom = marker or (run.group() if run else text[i])
        atoms.append(atom)
        i += len(atom)
    return atoms


_WORD = re.compile(r"\w+")


def ddmin_text(
    text: str,
    fails: Callable[[str], bool],
    budget: Budget | None = None,
    markers: Sequence[str] = (),
    allow_empty: bool = True,
) -> str:
    """The shortest text found for which ``fails(text)`` holds (``fails(text)`` assumed true): :func:`ddmin`
    over word-and-marker atoms first (fewer, so coarse cuts come cheap), then over single characters (markers
    still whole). ``allow_empty``: whether ``""`` may be the answer."""
    for words in (True, False):
        text = "".join(
            ddmin(text_atoms(text, markers, words), lambda atoms: fails("".join(atoms)), budget, allow_empty)
        )
    return text


# --- structure -------------------------------------------------------------------------------------------


def minimize_scenario(
    scenario: Scenario, fails: Callable[[Scenario], bool], budget: Budget | None = None, markers: Sequence[str] = ()
) -> Scenario:
    """A smaller scenario for which ``fails`` still holds (``fails(scenario)`` assumed true).

    Passes, each keeping what still fails: drop ``content_before``, ``content_after``, ``reasoning``; ddmin over
    the calls; then per call, recursively, ddmin over object items and array items and over the atoms of each
    string value (markers whole). Tools are kept as declared. A candidate the template cannot write should make
    ``fails`` return False. Stops early when ``budget`` is spent.
    """
    budget = budget or Budget(math.inf)
    best = scenario

    def attempt(candidate: Scenario) -> bool:
        nonlocal best
        if fails(candidate):
            best = candidate
            return True
        return False

    try:
        emptied: tuple[tuple[str, Any], ...] = (("content_before", ""), ("content_after", ""), ("reasoning", None))
        for name, empty in emptied:
            if getattr(best, name):
                budget.charge()
                attempt(dataclasses.replace(best, **{name: empty}))
        if len(best.calls) > 1:
            best = dataclasses.replace(
                best,
                calls=ddmin(
                    best.calls, lambda calls: fails(dataclasses.replace(best, calls=calls)), budget, allow_empty=False
                ),
            )
        for i in range(len(best.calls)):

            def with_argument(path, value, i: int = i) -> Scenario:
                return _with_argument(best, i, path, value)  # ``best`` as it is when called

            _reduce_value(best.calls[i].arguments, (), with_argument, attempt, budget, markers)
    except BudgetSpent:
        pass
    return best


def _with_argument(scenario: Scenario, call_index: int, path: tuple, value: Any) -> Scenario:
    calls = list(scenario.calls)
    call = calls[call_index]
    calls[call_index] = ToolCall(call.name, _replaced(call.arguments, path, value))
    return dataclasses.replace(scenario, calls=calls)


def _replaced(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    out = dict(value) if isinstance(value, dict) else list(value)
    out[path[0]] = _replaced(value[path[0]], path[1:], new)
    return out


def _reduce_value(
    value: Any,
    path: tuple,
    build: Callable[[tuple, Any], Scenario],
    attempt: Callable[[Scenario], bool],
    budget: Budget,
    markers: Sequence[str],
) -> Any:
    """Reduce the value at ``path`` (objects, arrays, strings), recording each kept reduction via ``attempt``;
    returns the value kept."""
    if isinstance(value, dict):
        items = ddmin(list(value.items()), lambda items: attempt(build(path, dict(items))), budget) if value else []
        kept = dict(items)
        for key in list(kept):
            kept[key] = _reduce_value(kept[key], path + (key,), build, attempt, budget, markers)
        return kept
    if isinstance(value, list):
        items = ddmin(value, lambda items: attempt(build(path, list(items))), budget) if value else []
        for i in range(len(items)):
            items[i] = _reduce_value(items[i], path + (i,), build, attempt, budget, markers)
        return items
    if isinstance(value, str) and value:
        return ddmin_text(value, lambda s: attempt(build(path, s)), budget, markers)
    return value


def scenario_of(case: Case, template, fmt: FormatSpec) -> Scenario | None:
    """The ground-truth scenario a rendered case came from, when rendering it through ``template`` gives the
    case's text and prefix again (prose as ``content_after``, or ``content_before`` for composed texts); None
    otherwise (observed texts, drift, other templates)."""
    if template is None or not case.source.startswith("rendered:"):
        return None
    content = case.expected.content or ""
    base = Scenario(
        id=case.id,
        tools=case.tools or [],
        calls=list(case.expected.tool_calls),
        reasoning=case.expected.reasoning,
        tags=list(case.tags),
        seed=case.seed,
    )
    options = [dataclasses.replace(base, content_after=content)]
    if content:
        options.append(dataclasses.replace(base, content_before=content))
    for scenario in options:
        try:
            again = render_scenario(template, scenario, fmt, slice=case.slice)
        except Exception:  # a template that refuses the reconstruction: not this scenario
            continue
        if again.text == case.text and again.prefix == case.prefix:
            return scenario
    return None


# --- one failing case ------------------------------------------------------------------------------------


def check_mode(case: Case, parser, fmt: FormatSpec, mode: str, seed: int = 0, timeout_s: float | None = None):
    """Run ``parser`` on ``case`` in ``mode`` (a runner mode but ``roundtrip``).

    Returns the :class:`harness.core.results.Record`."""
    return next(iter(evaluate_case(case, parser, fmt, [mode], seed, timeout_s)))


def minimize_case(
    case: Case,
    parser,
    fmt: FormatSpec,
    mode: str,
    error_type: str,
    template=None,
    budget: int = 150,
    oracle=None,
    seed: int = 0,
    timeout_s: float | None = None,
    seconds: float | None = 60.0,
    base: Case | None = None,
) -> dict:
    """The shortest failing input found for a (case, parser, mode) that fails with ``error_type``.

    Strategies (module doc), the first that applies and whose predicate holds on the case itself:
    ``structure`` when the case re-renders through ``template`` — or, for a drift case (``extra["drift"]``)
    given its rendered ``base`` case, when the base re-renders: each reduced base is rendered and damaged again
    by the case's mutator (:mod:`harness.corpus.drift`), so the repro keeps the mutation; ``differential`` against
    ``oracle`` (a parser that passed the case); ``text`` for :data:`SELF_CONTAINED` error types; else ``none``.
    Text reductions never reach ``""``; a result longer than the case is dropped for the case.

    ``budget``: checks; ``seconds``: time limit. Returns ``{"text", "prefix", "expected", "got", "detail",
    "method", "calls", "original_len"}`` (``expected``/``got`` as message JSON; ``got`` None when the parser
    raised). ``roundtrip`` failures are not re-checked (method ``none``, ``got`` None), nor
    :data:`NOT_MINIMIZED` ones (method ``none``, the record's check run once).
    """
    spent = Budget(budget, seconds)
    markers = (*fmt.markers, *fmt.stop_markers)

    def fails(candidate: Case | None) -> bool:
        if candidate is None:
            return False
        return check_mode(candidate, parser, fmt, mode, seed, timeout_s).error_type == error_type

    def structure() -> tuple[Case, str] | None:

        drift = case.extra.get("drift") if isinstance(case.extra, dict) else None
        mutator = _mutator(drift["mutator"]) if drift and base is not None else None
        if drift and mutator is None:
            return None
        source = base if mutator and base is not None else case  # a mutated case shrinks through its base
        scenario = scenario_of(source, template, fmt)
        if scenario is None:
            return None

        def render(sc: Scenario) -> Case | None:
            try:
                made = render_scenario(template, sc, fmt, slice=source.slice)
            except UnrepresentableError:
                return None
            return mutator.mutate(made, fmt, case.seed) if mutator else made

        if not _first_check(spent, lambda: fails(render(scenario))):
            return None
        found = render(minimize_scenario(scenario, lambda sc: fails(render(sc)), spent, fmt.markers)) or case
        return found, f"structure (mutator {mutator.name})" if mutator else "structure"

    def differential() -> tuple[Case, str] | None:

        if oracle is None:
            return None
        limit = alarm_limit(oracle, timeout_s)

        def reading(t: str) -> Message | None:
            got, error = guarded(lambda: oracle.parse(t, case.tools, case.prefix), limit)
            return None if error else got

        shape = reading(case.text)

        def judged(t: str) -> Case | None:
            got = reading(t)
            if got is None or shape is None or not _same_shape(got, shape):
                return None  # the oracle must keep reading the text as it read the case
            return dataclasses.replace(case, text=t, expected=got)

        if not _first_check(spent, lambda: fails(judged(case.text))):
            return None
        text = ddmin_text(case.text, lambda t: fails(judged(t)), spent, markers, allow_empty=False)
        return judged(text) or case, f"differential (oracle {oracle.name})"

    def text_only() -> tuple[Case, str] | None:
        if error_type not in SELF_CONTAINED or not _first_check(spent, lambda: fails(case)):
            return None
        text = ddmin_text(
            case.text, lambda t: fails(dataclasses.replace(case, text=t)), spent, markers, allow_empty=False
        )
        return dataclasses.replace(case, text=text), "text"

    best, method = case, "none"
    if mode != "roundtrip" and error_type not in NOT_MINIMIZED:
        for strategy in (structure, differential, text_only):
            found = strategy()
            if found is not None:
                best, method = found
                break
    if len(best.text) > len(case.text):  # a re-applied mutation can land one character later
        best, method = case, f"none ({method} found no shorter input)"
    record = check_mode(best, parser, fmt, mode, seed, timeout_s) if mode != "roundtrip" else None
    return {
        "text": best.text,
        "prefix": best.prefix,
        "expected": best.expected.to_json(),
        "got": record.got if record else None,
        "detail": record.detail if record else "",
        "method": method,
        "calls": spent.used,
        "original_len": len(case.text),
    }


def _mutator(name: str):
    """The drift mutator ``name`` (:func:`harness.corpus.drift.get_mutator`), or None when unknown."""
    try:
        return get_mutator(name)
    except KeyError:
        return None


def _first_check(budget: Budget, check: Callable[[], bool]) -> bool:
    """Charge and run the check of the unreduced input; False when it does not fail or no budget is left."""
    try:
        budget.charge()
    except BudgetSpent:
        return False
    return check()


def _same_shape(reading: Message, expected: Message) -> bool:
    """Whether an oracle's reading of a reduced text has the shape of its reading of the case: as many calls,
    and content and reasoning present exactly where that reading has them."""
    return (
        len(reading.tool_calls) == len(expected.tool_calls)
        and bool((reading.content or "").strip()) == bool((expected.content or "").strip())
        and bool((reading.reasoning or "").strip()) == bool((expected.reasoning or "").strip())
    )


def minimize_sweep_failure(
    failure, parser, template, fmt: FormatSpec, seed: int, timeout_s: float | None, budget: int, values: str = "mixed"
) -> dict:
    """Minimal repro of one sweep :class:`harness.score.checks.Failure` (``budget`` checks).

    ``oneshot``/``stream``: the case's scenario rebuilt from ``(seed, index)`` (value profile ``values``) and reduced
    by structure, each
    candidate rendered through ``template`` (predicate: the same check fails with the same error type).
    ``truncation``: the failing cut text reduced by :func:`ddmin_text` (a truncation has no expected message:
    the predicate is that parsing the text raises, hangs or leaks the same way; ``expected`` is None).
    :data:`NOT_MINIMIZED` failures are returned as they are. Returns the dict of :func:`minimize_case`.
    """
    spent = Budget(budget)
    limit = alarm_limit(parser, timeout_s)
    if failure.error_type in NOT_MINIMIZED:
        return {
            "text": failure.text,
            "prefix": failure.prefix,
            "expected": failure.expected,
            "got": failure.got,
            "detail": failure.detail,
            "method": "none",
            "calls": 0,
            "original_len": len(failure.text),
        }

    if failure.check == "truncation":

        def cut(text: str):
            case = Case(
                id=f"sweep-{seed}-{failure.index}",
                format=fmt.name,
                text=text,
                expected=Message(),
                prefix=failure.prefix,
            )
            return check_truncation(case, parser, fmt, len(text), limit)

        text = ddmin_text(
            failure.text,
            lambda t: cut(t)[1].error_type == failure.error_type,
            spent,
            (*fmt.markers, *fmt.stop_markers),
            allow_empty=False,
        )
        got, result = cut(text)
        return {
            "text": text,
            "prefix": failure.prefix,
            "expected": None,
            "got": got.to_json() if got is not None else None,
            "detail": result.detail,
            "method": "text",
            "calls": spent.used,
            "original_len": len(failure.text),
        }

    def render(sc: Scenario) -> Case | None:
        try:
            return render_scenario(template, sc, fmt, slice="sweep")
        except UnrepresentableError:
            return None

    def run(case: Case):
        oneshot, error = guarded(lambda: parser.parse(case.text, case.tools, case.prefix), limit)
        if failure.check == "oneshot":
            return oneshot, judged(oneshot, error, lambda m: score(case, m, fmt))
        return check_stream(case, parser, fmt, oneshot, limit)

    def fails(sc: Scenario) -> bool:
        case = render(sc)
        return case is not None and run(case)[1].error_type == failure.error_type

    original = random_scenario(seed, failure.index, fmt, values)
    case = render(minimize_scenario(original, fails, spent, fmt.markers)) or render(original)
    if case is None:  # the sweep rendered this scenario: only a changed template gets here
        raise ValueError(f"sweep case {failure.index} (seed {seed}) no longer renders")
    got, result = run(case)
    return {
        "text": case.text,
        "prefix": case.prefix,
        "expected": case.expected.to_json(),
        "got": got.to_json() if got is not None else None,
        "detail": result.detail,
        "method": "structure",
        "calls": spent.used,
        "original_len": len(failure.text),
    }

"""The generated slice: reproducible random scenarios and hypothesis-shrunk minimal failures.

:func:`generate_scenarios` draws ``n`` distinct scenarios from :func:`harness.corpus.strategies.scenarios` with
hypothesis' own engine under ``@seed(seed)``; the result is a pure function of ``(n, seed, forbid,
hypothesis version)``: two calls in one process or in two processes (any ``PYTHONHASHSEED``) give equal
lists. Ids are ``gen-{seed}-{i:04d}``, ``Scenario.seed`` is ``seed`` and tags are the shapes present
(:func:`harness.core.scenarios.shape_tags`: ``nested-object``, ``array-of-objects``, ``unicode``,
``parallel``, ...). Speed: see ``tests/unit/corpus/test_corpus_sources.py`` and the module's ``__main__``
(``python -m harness.corpus.generated 300``): about 200 scenarios per second on one core (300 in ~1.5 s,
1000 in ~5 s).

:func:`minimal_failing` runs ``hypothesis.find`` over the same strategy and returns the shrunk (minimal)
scenario a checker rejects.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import random
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, find, given, settings
from hypothesis import seed as hseed
from hypothesis.errors import NoSuchExample, Unsatisfiable

from harness.core.messages import ToolCall
from harness.core.scenarios import Scenario, shape_tags
from harness.corpus.strategies import scenarios, schema_errors

GENERATOR_VERSION = "1"
"""Bump when the generator (this module, harness/corpus/strategies.py, harness/corpus/curated.py) changes what a case
means without changing its text; baselines (:mod:`harness.jobs.gate`) key their corpus hash on it (a text change
is caught by the case digests anyway)."""

MAX_ROUNDS = 20
"""Extra engine runs :func:`generate_scenarios` may make when duplicates leave it short of ``n``."""


def scenario_key(scenario: Scenario) -> str:
    """A canonical text of a scenario's content (tools, calls, prose, reasoning; not id/tags/seed).

    Key order is kept (formats that do not sort keys write them in order), so ``{"a":1,"b":2}`` and
    ``{"b":2,"a":1}`` differ; ``1``, ``1.0`` and ``true`` differ.
    """
    return json.dumps(
        [
            scenario.tools,
            [c.to_json() for c in scenario.calls],
            scenario.content_before,
            scenario.content_after,
            scenario.reasoning,
        ],
        ensure_ascii=False,
    )


@contextmanager
def isolated_from_local_constants() -> Iterator[None]:
    """Stop hypothesis from seeding generation with constants mined from the caller's own modules.

    Recent hypothesis versions (6.170 here) draw, with 5% probability per choice, constants it collects from the
    source of every *local* (non site-packages, non-test) module in ``sys.modules``. That makes the generated values
    depend on which project modules happen to be imported (a pytest run and a script differ) and on their
    source text, which breaks ``(seed, hypothesis version)`` reproducibility. Inside this context the local
    pool is empty; hypothesis' built-in global constants still apply. Uses hypothesis internals
    (``providers._get_local_constants``, ``providers.CONSTANTS_CACHE``); where a version lacks them this is
    a no-op, and the cross-process determinism test tells whether that version is still reproducible.
    Patches module state for its duration: not safe while another thread runs hypothesis.
    """
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants
    except ImportError:  # pragma: no cover - older/newer hypothesis without the feature
        yield
        return
    original = getattr(providers, "_get_local_constants", None)
    cache = getattr(getattr(providers, "CONSTANTS_CACHE", None), "cache", None)
    if original is None or cache is None:  # pragma: no cover
        yield
        return
    empty = Constants()
    providers._get_local_constants = lambda: empty
    cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = original
        cache.clear()


def _round_seed(seed: int, round_no: int) -> int:
    if round_no == 0:
        return seed
    return int.from_bytes(hashlib.sha256(f"{seed}:{round_no}".encode()).digest()[:8], "big")


def generate_scenarios(n: int, seed: int, forbid: tuple[str, ...] = ()) -> list[Scenario]:
    """``n`` distinct scenarios, reproducible from ``seed``; ``forbid``: substrings no string may contain.

    Runs hypothesis' generate phase (no database, no shrinking, no deadline, health checks off) under
    ``@seed(seed)`` with ``max_examples=n`` and keeps the examples whose content (:func:`scenario_key`)
    is new, in generation order, until ``n`` are kept. ``max_examples`` carries a margin (10%, at least 10)
    for repeated content; when still fewer than ``n`` are unique it runs again with seeds derived from
    ``(seed, round)``, up to :data:`MAX_ROUNDS` rounds.

    ``forbid`` is not defaulted to Gemma 4's delimiter here: pass the target format's
    ``FormatSpec.unrepresentable``.

    Raises ``ValueError`` for ``n < 0`` and ``RuntimeError`` if ``n`` unique scenarios cannot be found
    (only conceivable with a ``forbid`` that rejects almost every string, e.g. ``("",)``).
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    out: list[Scenario] = []
    seen: set[str] = set()
    strategy = scenarios(forbid=tuple(forbid))
    for round_no in range(MAX_ROUNDS):
        if len(out) >= n:
            break

        def collect(sc: Scenario) -> None:
            if len(out) >= n:
                return
            key = scenario_key(sc)
            if key in seen:
                return
            seen.add(key)
            out.append(sc)

        run = hseed(_round_seed(seed, round_no))(
            settings(
                # hypothesis starts every run with its simplest example, which repeats across rounds,
                # so ask for a margin over what is missing; collect() stops keeping at n.
                max_examples=(n - len(out)) + max(10, (n - len(out)) // 10),
                database=None,
                derandomize=False,
                phases=[Phase.generate],
                suppress_health_check=list(HealthCheck),
                deadline=None,
                verbosity=Verbosity.quiet,
                print_blob=False,
            )(given(strategy)(collect))
        )
        try:
            with isolated_from_local_constants():
                run()
        except Unsatisfiable as err:
            raise RuntimeError(f"forbid {forbid!r} rejects (almost) every generated string: {err}") from err
    if len(out) < n:
        raise RuntimeError(
            f"only {len(out)} unique scenarios of {n} after {MAX_ROUNDS} rounds (seed {seed}, forbid {forbid!r})"
        )
    for i, sc in enumerate(out):
        sc.id = f"gen-{seed}-{i:04d}"
        sc.seed = seed
        sc.tags = shape_tags(sc)
    return out


class _CheckerRaised(BaseException):
    """Carries an exception raised by a ``fails`` checker out of hypothesis' engine, unshrunk.

    A ``BaseException`` so that hypothesis does not treat it as a failure to shrink."""

    def __init__(self, error: BaseException, scenario: Scenario):
        super().__init__(error)
        self.error = error
        self.scenario = scenario


def minimal_failing(
    fails: Callable[[Scenario], bool], seed: int, max_examples: int = 300, forbid: tuple[str, ...] = ()
) -> Scenario | None:
    """Hypothesis' shrunk minimal scenario for which ``fails(scenario)`` is true; ``None`` if none of
    ``max_examples`` generated scenarios fails.

    Uses ``hypothesis.find`` with ``random.Random(seed)``, no database and no deadline, then a short greedy
    pass (:func:`_simplify_strings`) that tries ``""`` and single characters for each string argument and
    drops prose/reasoning where the failure remains. The result has id
    ``min-{seed}``, ``seed`` and shape tags set. An exception raised by ``fails`` means the checker itself is
    broken: it propagates at once (not shrunk), with a note naming the scenario that triggered it.

    ``forbid``: substrings no string may contain (pass the target format's ``FormatSpec.unrepresentable``).

    Time: generation stops at the first failure (at most ``max_examples`` valid scenarios), then hypothesis
    shrinks (it stops after 500 successful shrink steps or 300 s) and the greedy pass runs. With a cheap
    checker a search takes 0.2-1 s and 75-260 checker calls (measured on the comma predicate); budget the
    time as a few hundred checker calls, ``max_examples`` more when nothing fails. Raises
    ``RuntimeError`` when ``forbid`` rejects (almost) every string.
    """
    forbid = tuple(forbid)

    def condition(sc: Scenario) -> bool:
        try:
            return bool(fails(sc))
        except Exception as err:
            raise _CheckerRaised(err, sc) from err

    config = settings(
        max_examples=max_examples,
        database=None,
        deadline=None,
        phases=[Phase.generate, Phase.shrink],
        verbosity=Verbosity.quiet,
        print_blob=False,
    )
    try:
        with isolated_from_local_constants():
            found = find(scenarios(forbid=forbid), condition, settings=config, random=random.Random(seed))
    except NoSuchExample:
        return None
    except Unsatisfiable as err:
        raise RuntimeError(f"forbid {forbid!r} rejects (almost) every generated string: {err}") from err
    except _CheckerRaised as raised:
        error = raised.error
        if sys.version_info >= (3, 11):  # exception notes are new in 3.11
            error.add_note(f"raised by the checker passed to minimal_failing on scenario {raised.scenario!r}")
        raise error from None
    found = _simplify_strings(found, fails)
    found.id = f"min-{seed}"
    found.seed = seed
    found.tags = shape_tags(found)
    return found


def _string_paths(value: Any, path: tuple = ()) -> Iterator[tuple]:
    if isinstance(value, str):
        yield path
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _string_paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _string_paths(v, path + (i,))


def _replaced(value: Any, path: tuple, new: str) -> Any:
    if not path:
        return new
    out = copy.copy(value)
    out[path[0]] = _replaced(value[path[0]], path[1:], new)
    return out


def _replace_in_enums(schema: Any, old: str, new: str) -> Any:
    """A copy of ``schema`` whose ``enum`` lists have ``old`` replaced by ``new`` (deduplicated)."""
    if isinstance(schema, list):
        return [_replace_in_enums(s, old, new) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _replace_in_enums(v, old, new) for k, v in schema.items()}
    if isinstance(schema.get("enum"), list):
        out["enum"] = list(dict.fromkeys(new if e == old else e for e in schema["enum"]))
    return out


def _simplify_strings(scenario: Scenario, fails: Callable[[Scenario], bool]) -> Scenario:
    """A last, greedy pass after hypothesis' shrinking: drop prose/reasoning, and replace each string
    argument value by ``""`` or by one of its own characters, keeping each change that still fails.

    Arguments must still validate against their tool schema; a string that is an ``enum`` member is
    replaced in the tool's enum too. Hypothesis cannot always move a string between the branches of
    :func:`harness.corpus.strategies.text_values` (e.g. from a code fragment holding a comma to ``","``) nor shrink
    an enum member together with its schema; this pass does, in at most a few dozen checker calls per
    string.
    """
    best = scenario
    emptied: tuple[tuple[str, Any], ...] = (("content_before", ""), ("content_after", ""), ("reasoning", None))
    for field_name, empty in emptied:
        if getattr(best, field_name):
            trial = dataclasses.replace(best, **{field_name: empty})
            if fails(trial):
                best = trial
    for ci in range(len(best.calls)):
        for path in list(_string_paths(best.calls[ci].arguments)):
            current = best.calls[ci].arguments
            for p in path:
                current = current[p]
            for candidate in [""] + list(dict.fromkeys(current)):
                if candidate == current:
                    break
                name = best.calls[ci].name
                args = _replaced(best.calls[ci].arguments, path, candidate)
                tools = best.tools
                schema: dict[str, Any] = next(
                    (t["function"]["parameters"] for t in tools if t["function"]["name"] == name), {}
                )
                if schema_errors(args, schema):
                    tools = _replace_in_enums(tools, current, candidate)
                    schema = next(t["function"]["parameters"] for t in tools if t["function"]["name"] == name)
                    if schema_errors(args, schema):
                        continue
                calls = list(best.calls)
                calls[ci] = ToolCall(name=name, arguments=args)
                trial = dataclasses.replace(best, tools=tools, calls=calls)
                if any(schema_errors(c.arguments, _params(trial, c.name)) for c in trial.calls):
                    continue  # an enum shared with another call's value
                if fails(trial):
                    best = trial
                    break
    return best


def _params(scenario: Scenario, name: str) -> dict:
    return next((t["function"]["parameters"] for t in scenario.tools if t["function"]["name"] == name), {})


if __name__ == "__main__":  # timing helper: python -m harness.corpus.generated [n] [seed]
    import sys
    import time

    n_arg = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    seed_arg = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    t0 = time.perf_counter()
    got = generate_scenarios(n_arg, seed_arg, forbid=('<|"|>',))
    dt = time.perf_counter() - t0
    print(f"{len(got)} scenarios in {dt:.2f}s ({len(got) / dt:.0f}/s)")

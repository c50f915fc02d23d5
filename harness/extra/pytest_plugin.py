"""pytest plugin: run the harness corpus against a parser from any test suite, one test item per (case, mode).

Installed with the package (entry point ``pytest11: toolcall_harness``); it adds options and does nothing else
until ``--toolcall-parser`` is given (the items and their checks are :mod:`harness.extra.corpus_items`)::

    pytest --toolcall-parser mypkg.module:MyParser --toolcall-model gemma-4-e2b
    pytest --toolcall-parser toolcall-harness:gemma4 -m toolcall -k "nested and char" -x -n 4

Options:

- ``--toolcall-parser SPEC``: ``pkg.module:Attr`` or ``path/file.py:Attr`` (a parser class, instantiated with
  no arguments, or instance, loaded by :func:`harness.parse.loader.load_parser_object`; only
  ``parse(text, tools, prefix) -> harness.core.messages.Message`` is required: :class:`UserParser`), or any name
  ``toolcall-harness eval --parsers`` takes (``toolcall-harness:gemma4``, ``transformers``, ``cmd:COMMAND``, an
  engine that is already built). A spec with no ``:``, starting ``cmd:``, or whose part before the last ``:``
  is a harness library alias, an engine name or holds ``==`` is a harness name; any other is imported.
- ``--toolcall-model NAME`` (catalog model, default ``gemma-4-e2b``): its chat template renders the cases, its
  format picks the observed cases and the scoring rules.
- ``--toolcall-slices`` (default ``curated,observed``, plus ``generated`` when ``--toolcall-cases N`` > 0),
  ``--toolcall-cases N`` and ``--toolcall-seed S`` (generated cases are a pure function of ``N``, ``S`` and the
  hypothesis version, so every xdist worker collects the same items).
- ``--toolcall-modes`` (default ``oneshot,char``; ``all`` is every harness mode that applies to the parser:
  :data:`harness.parse.modes.DEFAULT_MODES` filtered by :func:`harness.parse.modes.modes_for`), ``--toolcall-timeout``
  (seconds per parser call, default 10; ``SIGALRM`` in the main thread, which replaces a pytest-timeout alarm
  set in signal mode for the rest of that test).

Items are named ``[SLICE][CASE][MODE]`` under a collector ``toolcall[MODEL]`` (node ids
``toolcall[gemma-4-e2b]::[curated][edge-nested-object][char]``) and carry the marker ``toolcall`` and the
case's slice, kind, mode and tags as keywords, so ``-m toolcall``, ``-k "[edge-nested-object]"``,
``-k "unicode and char"`` select them. They are added, in corpus order, to whatever else the run collects (in
``pytest_collection_modifyitems``, before ``-k``/``-m`` deselection). Verdicts: ``pass`` passes, ``fail`` and
``error`` (the parser raised or timed out) fail, ``surfaced`` (a drift case the parser declined safely, raw
text kept in content) is ``xfailed``. A failure shows the case, error type, detail, the input text, expected
and got as compact JSON, the seed of a generated case, and the smallest input found that fails the same way
(:func:`harness.analysis.minimize.minimize_case`, searched when the failure is reported).

Bad options (unknown model, mode or slice, a parser spec that does not import) stop the run with one
``ERROR:`` line naming the option, never a traceback.
"""

from __future__ import annotations

import pytest

from harness.core.cases import SLICES
from harness.core.guards import MAX_TIME_LIMIT_S
from harness.extra.plugin_defaults import DEFAULT_MODEL, DEFAULT_MODES, MARKER


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("toolcall-harness", "run the toolcall-harness corpus against a parser")
    group.addoption(
        "--toolcall-parser",
        metavar="SPEC",
        default=None,
        help="parser under test: pkg.module:Attr or a harness parser name; enables the corpus items",
    )
    group.addoption(
        "--toolcall-model",
        metavar="NAME",
        default=DEFAULT_MODEL,
        help=f"catalog model whose template renders the cases (default {DEFAULT_MODEL})",
    )
    group.addoption(
        "--toolcall-slices",
        metavar="LIST",
        default=None,
        help=f"comma-separated slices: {', '.join(SLICES)} (default curated,observed, "
        "plus generated with --toolcall-cases)",
    )
    group.addoption(
        "--toolcall-modes",
        metavar="LIST",
        default=",".join(DEFAULT_MODES),
        help="comma-separated modes, or 'all' (default oneshot,char)",
    )
    group.addoption("--toolcall-cases", metavar="N", type=int, default=0, help="number of generated cases (default 0)")
    group.addoption(
        "--toolcall-seed",
        metavar="S",
        type=int,
        default=0,
        help="seed of the generated cases and random chunkings (default 0)",
    )
    group.addoption(
        "--toolcall-timeout",
        metavar="SECONDS",
        type=float,
        default=None,
        help=f"time limit per parser call, more than 0 and at most {MAX_TIME_LIMIT_S:g} s (default 10)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}: a toolcall-harness corpus case run against --toolcall-parser")
    if config.getoption("toolcall_parser"):
        # the one deferred project import: the corpus machinery loads only in runs that ask for it, so the
        # plugin costs nothing in every other pytest session of an environment that has the package
        from harness.extra.corpus_items import CorpusPlugin, settings_from

        config.pluginmanager.register(CorpusPlugin(settings_from(config)), "toolcall-harness-corpus")

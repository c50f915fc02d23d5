"""``toolcall-harness`` command line: ``eval``, ``report`` (re-render a run folder's report files), ``check``,
``parsers``, ``engines``, ``suites``, ``models``, ``template``, ``corpus``, ``baseline save`` and ``gate`` (exit 1
when a case that passed now fails), ``compare`` (two parsers on one corpus, ``compare.md``; exit 1 when the second
regressed), ``sweep`` (the seeded random sweep).

The argument tree is :mod:`harness.cli.arguments`; each command runs from its module here (``evaluate``,
``capture``, ``gate``, ``compare``, ``info``), imported when that command runs, so ``--help`` does not load pandas
or the engines. Bad input (unknown model or parser, malformed case file, a template that fails to render) prints one
``error:`` line and exits with status 2; no traceback reaches the user.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
from collections.abc import Callable

from rich.console import Console

from harness.cli.arguments import build_parser
from harness.core.errors import HarnessError
from harness.core.guards import request_interrupt
from harness.core.paths import cache_dir
from harness.core.textio import escape_unencodable
from harness.template.bounded import prestart, set_render_limits


def main(argv: list[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # a lone surrogate in a value printed is escaped, not a crash
        escape_unencodable(stream)
    args = build_parser().parse_args(argv)
    signal.signal(signal.SIGINT, request_interrupt)
    _keep_hypothesis_files_in_cache()
    console = Console()
    if not console.is_terminal:  # logs and pipes: wide enough for the tables, no colour codes
        console = Console(width=max(console.width, 220), no_color=True)
    if getattr(args, "render_timeout", None) is not None:  # commands that render chat templates
        set_render_limits(args.render_timeout, args.render_max_chars)
        prestart()  # the worker imports transformers while the command loads its parsers and template
    try:
        return _command(args.command)(args, console) or 0
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # an --out path that cannot be written, a file that cannot be read
        where = f": {exc.filename}" if exc.filename else ""
        print(f"error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _command(target: str) -> Callable[..., int]:
    """``"MODULE:FUNCTION"`` (relative to :mod:`harness.cli`) as the function to run."""
    module, _, function = target.partition(":")
    return getattr(importlib.import_module(f"harness.cli.{module}"), function)


def _keep_hypothesis_files_in_cache() -> None:
    """Hypothesis caches Unicode tables in ``./.hypothesis``; the CLI keeps them in the harness cache instead
    of the user's working directory (an explicit ``HYPOTHESIS_STORAGE_DIRECTORY`` wins)."""
    if "HYPOTHESIS_STORAGE_DIRECTORY" not in os.environ:
        from hypothesis.configuration import set_hypothesis_home_dir

        set_hypothesis_home_dir(str(cache_dir() / "hypothesis"))

"""Where the harness' files are: its data (catalog, corpora), its user cache and the reports folder.

- Data: ``templates/`` and ``corpora/`` at the top of the checkout are the source of truth; an installed wheel
  carries copies of both inside the package (``harness/_data/``, written by the build), used when the
  checkout's folders are not there.
- Cache: ``$TOOLCALL_HARNESS_CACHE``, else the platform's user cache folder (``~/.cache/toolcall-harness`` on
  Linux): the sdist, wheels, engines, tokenizers, weights.
- Reports: ``reports/`` under the current directory.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent
#: The folder that holds the ``harness`` and ``parsers`` packages (the checkout, or ``site-packages``); engine
#: workers get it on ``PYTHONPATH``.
SOURCE_ROOT = PACKAGE_DIR.parent


def data_dir(name: str) -> Path:
    """The data folder ``name`` (``templates`` or ``corpora``): the checkout's, else the installed package's copy."""
    checkout = SOURCE_ROOT / name
    if checkout.is_dir():
        return checkout
    return PACKAGE_DIR / "_data" / name


CORPORA_DIR = data_dir("corpora")
CATALOG_FILE = data_dir("templates") / "catalog.toml"
OBSERVED_FILE = CORPORA_DIR / "observed" / "observed_public.jsonl"
SUITES_DIR = CORPORA_DIR / "suites"
FEWSHOT_DIR = CORPORA_DIR / "fewshot"

REPORTS_DIR = Path("reports")
BASELINES_DIR = REPORTS_DIR / "baselines"


def cache_dir() -> Path:
    """Root of the harness' user cache (``$TOOLCALL_HARNESS_CACHE`` overrides the platform default)."""
    root = os.environ.get("TOOLCALL_HARNESS_CACHE")
    if not root:
        import platformdirs  # a light dependency, imported here so this module stays standard-library only

        root = platformdirs.user_cache_dir("toolcall-harness")
    return Path(root)

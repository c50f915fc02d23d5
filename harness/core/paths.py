"""Where the harness' files are: its data (catalog, corpora), its user cache and the reports folder.

- Data: ``templates/`` and ``corpora/`` at the top of the checkout are the source of truth; an installed wheel
  carries copies of both inside the package (``harness/_data/``, written by the build), used when the
  checkout's folders are not there.
- Cache: ``$TOOLCALL_HARNESS_CACHE``, else the platform's user cache folder (``~/.cache/toolcall-harness`` on
  Linux): the sdist, wheels, engines, tokenizers, weights.
- Reports: ``reports/`` under the current directory; a run's own folder comes from :func:`new_run_dir` (a fresh
  name) or :func:`claim_out_dir` (``--out``: refused when it holds anything, unless forced).
"""

from __future__ import annotations

import hashlib
import itertools
import os
from pathlib import Path

from harness.core.errors import HarnessError

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


def new_run_dir(root: Path, name: str) -> Path:
    """Create a fresh run folder ``root/name``, or ``root/name-2``, ``-3``, ... when that is taken, and return it.
    Each is made with a ``mkdir`` that fails when the folder exists, so two runs started in the same second never
    share one. Raises ``OSError`` when ``root`` cannot be created."""
    root.mkdir(parents=True, exist_ok=True)
    for n in itertools.count(1):
        path = root / (name if n == 1 else f"{name}-{n}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise AssertionError("unreachable")


def claim_out_dir(path: Path, force: bool) -> Path:
    """The ``--out`` folder of a new run, created if needed. Raises :class:`HarnessError` when it holds anything and
    ``force`` is false: a run never writes beside another run's records (``--resume`` continues one, ``--force``
    replaces it). Raises ``OSError`` when it cannot be created."""
    path.mkdir(parents=True, exist_ok=True)
    if not force and any(path.iterdir()):
        raise HarnessError(
            f"{path}: the output folder is not empty (another run's files?): pass --resume {path} to continue "
            "that run, --force to replace its files, or another --out"
        )
    return path


def file_sha256(path: str | Path) -> str:
    """sha256 of a file (hex), read in 1 MiB blocks; raises ``OSError``. Standard library only: engine workers'
    virtualenvs import it through :mod:`harness.engines.sources`."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()

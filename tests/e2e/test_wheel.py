"""The built wheel works outside the checkout: `eval` and the pytest plugin run from an empty folder.

The wheel is built from a copy of the checkout (``pip wheel --no-deps --no-build-isolation``) and installed with
``--no-deps`` into a fresh virtualenv in a temporary folder; the dependencies come from the virtualenv running
this test, whose ``site-packages`` the new one sees through a ``.pth`` path line (so no download; that venv's own
``.pth`` files, the editable install of the checkout among them, are not processed). A guard loaded by a second
``.pth`` records every file opened and every folder listed under the checkout (the shared virtualenv excepted, as
it may sit inside it, ``.venv/``) and every module imported from there; each test asserts the record is empty.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED_VENV = Path(sys.prefix).resolve()
MODEL = "gemma-4-e2b"
PARSERS = ("toolcall-harness:gemma4", "transformers==5.24.0:gemma4", "mlx-lm==0.32.2:gemma4")
# not part of a clean clone's build input: VCS, virtualenvs, build outputs, and folders the wheel does not ship
NOT_COPIED = {".git", ".venv", "build", "dist", "reports", "tests", "bench", "docs", ".hypothesis", ".pytest_cache"}

GUARD = '''
"""Records reads of the checkout ($TOOLCALL_GUARD_ROOT) into $TOOLCALL_GUARD_LOG, one JSON line each."""
import atexit, json, os, sys

_root = os.environ.get("TOOLCALL_GUARD_ROOT")
if _root:
    _allow, _log = os.environ["TOOLCALL_GUARD_ALLOW"], os.environ["TOOLCALL_GUARD_LOG"]

    def _inside(path):
        path = os.path.abspath(os.fsdecode(path))
        return (path == _root or path.startswith(_root + os.sep)) and not path.startswith(_allow + os.sep)

    def _record(kind, what):
        with open(_log, "a", encoding="utf-8") as f:
            f.write(json.dumps({"pid": os.getpid(), "kind": kind, "what": what, "argv": sys.argv}) + "\\n")

    def _hook(event, args):
        if event in ("open", "os.listdir", "os.scandir") and args and isinstance(args[0], (str, bytes, os.PathLike)):
            if _inside(args[0]):
                _record(event, os.fsdecode(args[0]))

    def _modules_at_exit():
        for name, module in list(sys.modules.items()):
            file = getattr(module, "__file__", None)
            if file and _inside(file):
                _record("module", f"{name}: {file}")
        for entry in sys.path:
            if entry and _inside(entry):
                _record("sys.path", entry)

    sys.addaudithook(_hook)
    atexit.register(_modules_at_exit)
'''


def clean_env(guard_log: Path) -> dict[str, str]:
    """The environment of a run outside the checkout: no PYTHONPATH, no pytest settings, the guard on."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONPATH", "TOOLCALL_GUARD"))}
    env |= {"HF_HUB_OFFLINE": "1", "TOOLCALL_GUARD_ROOT": str(ROOT), "TOOLCALL_GUARD_ALLOW": str(SHARED_VENV)}
    env["TOOLCALL_GUARD_LOG"] = str(guard_log)
    return env


def guard_records(guard_log: Path) -> list[dict]:
    if not guard_log.exists():
        return []
    return [json.loads(line) for line in guard_log.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("wheel-source") / "toolcall-harness"
    shutil.copytree(
        ROOT,
        source,
        ignore=lambda folder, names: [
            n
            for n in names
            if (Path(folder) == ROOT and n in NOT_COPIED) or n == "__pycache__" or n.endswith(".egg-info")
        ],
    )
    dist = tmp_path_factory.mktemp("dist")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (built,) = dist.glob("toolcall_harness-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(tmp_path_factory, wheel) -> Path:
    """A fresh virtualenv outside the checkout with the wheel installed; the shared dependencies seen by a path."""
    path = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=300)
    python = path / "bin" / "python"
    # installed before the .pth exists, so pip sees no toolcall-harness already installed in the shared venv
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index", str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    site = Path(
        subprocess.check_output(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], text=True
        ).strip()
    )
    shared = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    (site / "zz_shared_dependencies.pth").write_text("".join(f"{p}\n" for p in shared), encoding="utf-8")
    (site / "_toolcall_guard.py").write_text(GUARD, encoding="utf-8")
    (site / "_toolcall_guard.pth").write_text("import _toolcall_guard\n", encoding="utf-8")
    return path


def test_wheel_carries_the_data_folders_the_shim_and_py_typed(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    data = {
        f"harness/_data/{p.relative_to(ROOT).as_posix()}"
        for folder in ("templates", "corpora")
        for p in (ROOT / folder).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert "harness/_data/templates/catalog.toml" in data
    assert "harness/_data/corpora/observed/observed_public.jsonl" in data
    assert data <= names
    shim = {f"parsers/reference/llama_cpp_shim/{p.name}" for p in (ROOT / "parsers/reference/llama_cpp_shim").iterdir()}
    assert shim and shim <= names
    assert "harness/py.typed" in names
    assert not any(n.startswith(("tests/", "templates/", "corpora/")) for n in names)
    for name in data:
        relative = name.removeprefix("harness/_data/")
        assert zipfile.ZipFile(wheel).read(name) == (ROOT / relative).read_bytes(), relative


def test_installed_package_resolves_everything_inside_the_virtualenv(venv, tmp_path):
    log = tmp_path / "guard.jsonl"
    probe = (
        "import json, sys, harness, parsers.own.gemma4\n"
        "from harness.core import paths\n"
        "from parsers.reference import llama_cpp\n"
        "print(json.dumps({'path': sys.path, 'harness': harness.__file__, 'parsers': parsers.own.gemma4.__file__,"
        " 'catalog': str(paths.CATALOG_FILE), 'corpora': str(paths.CORPORA_DIR), 'shim': str(llama_cpp.SHIM_DIR),"
        " 'shim_files': sorted(p.name for p in llama_cpp.SHIM_DIR.iterdir())}))\n"
    )
    proc = subprocess.run(
        [str(venv / "bin" / "python"), "-c", probe], cwd=tmp_path, env=clean_env(log), capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    site = venv.resolve()
    for key in ("harness", "parsers", "catalog", "corpora", "shim"):
        assert Path(seen[key]).resolve().is_relative_to(site), (key, seen[key])
    assert Path(seen["catalog"]).is_file() and Path(seen["corpora"], "observed", "observed_public.jsonl").is_file()
    assert seen["shim_files"] == ["CMakeLists.txt", "shim.cpp"]
    inside = [p for p in seen["path"] if p and Path(p).resolve().is_relative_to(ROOT)]
    assert all(Path(p).resolve().is_relative_to(SHARED_VENV) for p in inside), inside
    assert guard_records(log) == []


def test_the_guard_records_a_run_that_reads_the_checkout(venv, tmp_path):
    """The guard is not vacuous: with the checkout put back on PYTHONPATH it sees the imports and the catalog read."""
    log = tmp_path / "guard.jsonl"
    env = clean_env(log) | {"PYTHONPATH": str(ROOT)}
    probe = "from harness.core import paths; paths.CATALOG_FILE.read_text()"
    proc = subprocess.run([str(venv / "bin" / "python"), "-c", probe], cwd=tmp_path, env=env, capture_output=True)
    assert proc.returncode == 0, proc.stderr
    seen = {(r["kind"], r["what"]) for r in guard_records(log)}
    assert ("open", str(ROOT / "templates" / "catalog.toml")) in seen
    assert ("sys.path", str(ROOT)) in seen
    assert any(kind == "module" and what.startswith("harness.core.paths: ") for kind, what in seen)


def eval_command(*prefix: str) -> list[str]:
    return [*prefix, "eval", "--model", MODEL, "--cases", "10", "--slices", "curated,observed", "--modes", "oneshot"]


def verdicts(run_dir: Path) -> list[tuple[str, str, str, str]]:
    lines = (run_dir / "results.jsonl").read_text(encoding="utf-8").strip("\n").split("\n")  # texts hold U+2028
    return sorted((r["parser"], r["case_id"], r["mode"], r["verdict"]) for r in map(json.loads, lines))


def test_eval_runs_from_an_empty_folder_with_the_checkouts_verdicts(venv, tmp_path):
    log, empty = tmp_path / "guard.jsonl", tmp_path / "empty"
    empty.mkdir()
    proc = subprocess.run(
        eval_command(str(venv / "bin" / "toolcall-harness")),
        cwd=empty,
        env=clean_env(log),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run_dir,) = (empty / "reports" / MODEL).iterdir()
    for name in ("results.jsonl", "summary.csv", "report.md", "report.html", "corpus.jsonl", "run.json"):
        assert (run_dir / name).stat().st_size > 0, name
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    for parser in PARSERS:
        assert parser in proc.stdout and parser in report
    got = verdicts(run_dir)
    assert {p for p, *_ in got} == set(PARSERS) and {m for *_, m, _ in got} == {"oneshot"}
    assert {json.loads(c)["slice"] for c in (run_dir / "corpus.jsonl").read_text().strip("\n").split("\n")} == {
        "curated",
        "observed",
    }
    assert guard_records(log) == []

    # the same command from the checkout gives the same per-case verdicts
    out = tmp_path / "checkout"
    out.mkdir()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    ref = subprocess.run(
        eval_command(sys.executable, "-m", "harness.cli"), cwd=out, env=env, capture_output=True, text=True, timeout=900
    )
    assert ref.returncode == 0, ref.stderr[-3000:]
    (ref_dir,) = (out / "reports" / MODEL).iterdir()
    assert got == verdicts(ref_dir)


def summary_counts(output: str) -> Counter:
    """The counts of pytest's last summary line (``3 failed, 2 passed, 1 xfailed in 0.5s``)."""
    last = output.strip().splitlines()[-1]
    return Counter({word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|xfailed|deselected|errors?)", last)})


def test_pytest_plugin_runs_from_an_empty_folder(venv, tmp_path):
    from harness.corpus.build import build_corpus
    from harness.formats import get_format
    from harness.score.runner import evaluate_case
    from harness.template.sources import load_template
    from parsers.own.gemma4 import Gemma4Parser

    fmt, modes = get_format("gemma4"), ["oneshot", "char"]
    corpus = build_corpus(load_template(MODEL), fmt, seed=0, n_generated=0, slices=("curated", "observed"))
    outcome = {"pass": "passed", "fail": "failed", "error": "failed", "surfaced": "xfailed"}
    expected = Counter(
        outcome[r.verdict] for case in corpus.cases for r in evaluate_case(case, Gemma4Parser(), fmt, modes, seed=0)
    )

    log, empty = tmp_path / "guard.jsonl", tmp_path / "empty"
    empty.mkdir()
    args = ["-m", "pytest", "-p", "no:cacheprovider", "-q", "--toolcall-parser", "parsers.own.gemma4:Gemma4Parser"]
    proc = subprocess.run(
        [str(venv / "bin" / "python"), *args, "--toolcall-model", MODEL, "--toolcall-modes", ",".join(modes)],
        cwd=empty,
        env=clean_env(log),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    counts = summary_counts(proc.stdout)
    assert counts["passed"] > 0 and counts["failed"] == 0
    assert counts == expected
    assert list(empty.iterdir()) == []
    assert guard_records(log) == []

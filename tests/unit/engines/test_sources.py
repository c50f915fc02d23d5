"""Engine sources without building anything: spec parsing, locating and checking a source, a tree's identity
(git commit, dirty state, a hash of the uncommitted changes; a file hash outside git), the pip steps a source
turns into, and the one-line errors for bad sources (via the CLI, as a user sees them)."""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from harness.engines import environments as engines
from harness.engines.environments import EngineError, EngineSpec, parse_spec, split_format
from harness.engines.sources import describe_identity, identity, locate, tree_version

ROOT = Path(__file__).resolve().parents[3]


def test_parse_spec_takes_a_version_or_a_source():
    assert parse_spec("sglang") == EngineSpec("sglang")
    assert parse_spec("sglang==0.5.23") == EngineSpec("sglang", "0.5.23")
    assert parse_spec("sglang@/src/sglang") == EngineSpec("sglang", source="/src/sglang")
    assert parse_spec("llama.cpp@~/llama.cpp") == EngineSpec("llama.cpp", source="~/llama.cpp")
    assert str(parse_spec("vllm@x.whl")) == "vllm@x.whl"
    with pytest.raises(EngineError, match="not both"):
        parse_spec("sglang==0.5.23@/src")
    with pytest.raises(EngineError, match="must follow '@'"):
        parse_spec("sglang@")


def test_split_format_reads_the_format_after_a_source():
    assert split_format("sglang@/src/sglang:gemma4") == ("sglang@/src/sglang", "gemma4")
    assert split_format("sglang@/src/a:b/tree") == ("sglang@/src/a:b/tree", "")
    assert split_format("vllm==0.33.0:hermes") == ("vllm==0.33.0", "hermes")
    assert split_format("llama.cpp@/src/llama.cpp") == ("llama.cpp@/src/llama.cpp", "")


def _tree(root: Path, name: str = "sglang", version: str = "0.5.23") -> Path:
    (root / "python" / name).mkdir(parents=True)
    (root / "python" / name / "__init__.py").write_text("")
    (root / "python" / "pyproject.toml").write_text(f'[project]\nname = "{name}"\nversion = "{version}"\n')
    return root


def _git(folder: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    return subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True, text=True, env=env).stdout


def test_a_tree_is_found_in_its_python_folder_with_its_version(tmp_path):
    source = locate(str(_tree(tmp_path)), "sglang", ("", "python"))
    assert (source.kind, source.project) == ("tree", tmp_path / "python")
    assert tree_version(source, "sglang") == "0.5.23"


def test_identity_of_a_git_tree_names_commit_and_dirty_state(tmp_path):
    tree = _tree(tmp_path)
    _git(tree, "init", "-q")
    _git(tree, "add", ".")
    _git(tree, "commit", "-qm", "base")
    source = locate(str(tree), "sglang", ("", "python"))
    clean = identity(source)
    assert clean["commit"] == _git(tree, "rev-parse", "HEAD").strip() and clean["dirty"] is False
    assert "clean" in describe_identity(clean)
    (tree / "python" / "sglang" / "__init__.py").write_text("X = 1\n")
    edited = identity(source)
    assert edited["dirty"] is True and edited["changes_sha256"] != clean["changes_sha256"]
    (tree / "python" / "sglang" / "new.py").write_text("Y = 2\n")  # untracked files count too
    untracked = identity(source)
    assert untracked["changes_sha256"] not in (clean["changes_sha256"], edited["changes_sha256"])
    assert "dirty" in describe_identity(untracked)


def test_identity_outside_git_hashes_the_files(tmp_path):
    source = locate(str(_tree(tmp_path)), "sglang", ("", "python"))
    first = identity(source)
    assert "commit" not in first and len(first["tree_sha256"]) == 64
    (tmp_path / "python" / "sglang" / "__pycache__").mkdir()
    (tmp_path / "python" / "sglang" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert identity(source) == first  # byte code is not source
    (tmp_path / "python" / "sglang" / "__init__.py").write_text("X = 1\n")
    assert identity(source)["tree_sha256"] != first["tree_sha256"]


def _wheel(folder: Path, dist: str, version: str) -> Path:
    path = folder / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as whl:
        whl.writestr(f"{dist}/__init__.py", "")
    return path


def test_a_wheel_is_keyed_by_its_sha256_and_versioned_by_its_name(tmp_path):
    wheel = _wheel(tmp_path, "sglang", "0.5.24")
    source = engines.locate_source(engines.get_engine("sglang"), str(wheel))
    assert source.kind == "wheel" and identity(source)["sha256"]
    assert engines.get_engine("sglang").sources.version(source) == "0.5.24"
    steps = engines.get_engine("sglang").sources.recipe(source)["steps"]
    assert steps[-1] == ["install", "--no-deps", "{wheel}"]  # not the path: a copied wheel keeps its environment
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    copy = moved / wheel.name
    copy.write_bytes(wheel.read_bytes())
    assert engines.source_env_dir(engines.get_engine("sglang"), source) == engines.source_env_dir(
        engines.get_engine("sglang"), engines.locate_source(engines.get_engine("sglang"), str(copy))
    )


def test_an_editable_tree_replaces_the_release_requirement(tmp_path):
    engine = engines.get_engine("sglang")
    source = engines.locate_source(engine, str(_tree(tmp_path)))
    recipe = engine.sources.recipe(source)
    assert recipe["steps"][-1] == ["install", "--no-deps", "-e", str(tmp_path / "python")]
    assert "editable install" in engine.sources.how(source)
    before = engines.source_env_dir(engine, source)
    (tmp_path / "python" / "sglang" / "__init__.py").write_text("X = 1\n")
    assert engines.source_env_dir(engine, source) == before  # code edits: same environment (editable)
    (tmp_path / "python" / "pyproject.toml").write_text('[project]\nname = "sglang"\nversion = "0.5.23"\n# deps\n')
    assert engines.source_env_dir(engine, source) != before  # the dependency file: a new one


def test_vllm_tree_is_python_only_over_the_release_of_its_version(tmp_path):
    engine = engines.get_engine("vllm")
    (tmp_path / "vllm").mkdir()
    (tmp_path / "vllm" / "_version.py").write_text("__version__ = version = '0.33.0'\n")
    (tmp_path / "setup.py").write_text("setup(name='vllm')\n")
    source = engines.locate_source(engine, str(tmp_path))
    assert engine.sources.version(source) == "0.33.0"
    assert engine.sources.how(source).startswith("python-only over vllm==0.33.0")
    assert ["install", "--no-deps", "vllm==0.33.0"] in engine.sources.recipe(source)["steps"]
    (tmp_path / "vllm" / "_version.py").write_text("__version__ = '0.34.1.dev12+g1a2b3c'\n")
    assert engine.sources.version(source) == engine.default_version  # a development version: the pinned release


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, cwd=ROOT, timeout=300
    )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("sglang@{tmp}/missing", "locating the source: no such file or folder"),
        ("sglang@{tmp}/other", "checking the tree: not a sglang source tree"),
        ("vllm@{tmp}/other", "checking the tree: not a vllm source tree"),
        ("sglang@{tmp}/transformers-5.16.0-py3-none-any.whl", "is a wheel of 'transformers', not of 'sglang'"),
        ("sglang@{tmp}/notes.txt", "is a file but not a wheel"),
        ("vllm@{tmp}/vllm-0.20.0-py3-none-any.whl", "checking the wheel: the vLLM adapter drives"),
        ("llama.cpp@{tmp}/other", "checking the tree: not a llama.cpp source tree"),
        ("llama.cpp@{tmp}/transformers-5.16.0-py3-none-any.whl", "builds from a source tree, not a wheel"),
    ],
)
def test_a_bad_source_is_one_error_line_naming_it_and_the_step(tmp_path, spec, message):
    _tree(tmp_path / "other", name="transformers")
    _wheel(tmp_path, "transformers", "5.16.0")
    _wheel(tmp_path, "vllm", "0.20.0")
    (tmp_path / "notes.txt").write_text("x")
    spec = spec.format(tmp=tmp_path)
    with pytest.raises(EngineError) as refused:
        engines.install(spec, log=lambda line: None)  # refused before anything is built
    text = str(refused.value)
    assert "\n" not in text and text.startswith(f"{spec}: ") and message in text


def test_the_cli_prints_a_bad_source_as_one_error_line(tmp_path):
    spec = f"sglang@{tmp_path}/missing"
    out = _cli("engines", "install", spec)
    assert out.returncode != 0 and out.stdout == ""
    assert out.stderr.strip().splitlines() == [
        f"error: {spec}: locating the source: no such file or folder {str(tmp_path / 'missing')!r}"
    ]


def test_a_bad_source_in_a_parser_list_is_unavailable_with_the_reason(tmp_path):
    from harness.parse.registry import create_parsers

    parsers, unavailable = create_parsers([f"sglang@{tmp_path}/missing:gemma4"], "gemma4", install_missing=False)
    assert parsers == [] and "no such file or folder" in unavailable[f"sglang@{tmp_path}/missing:gemma4"]


def test_the_python_only_overlay_imports_the_tree_first_and_the_release_behind_it(tmp_path):
    """vLLM's python-only mode in miniature: the tree's modules win, what only the release has (its compiled
    extensions, here a stand-in ``_C.py``) is still found, in subpackages too; run by a fresh interpreter that
    reads the ``.pth`` file as a virtualenv's site-packages would."""
    from harness.engines.sources import write_overlay

    files = {
        "site/pkg/__init__.py": "W = 'release'",
        "site/pkg/a.py": "W = 'release'",
        "site/pkg/_C.py": "W = 'release compiled'",
        "site/pkg/sub/__init__.py": "W = 'release'",
        "site/pkg/sub/x.py": "W = 'release only'",
        "tree/pkg/__init__.py": "W = 'tree'",
        "tree/pkg/a.py": "W = 'tree'",
        "tree/pkg/sub/__init__.py": "W = 'tree'",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text + "\n")
    write_overlay(tmp_path / "site", tmp_path / "tree", "pkg")
    code = (
        f"import site; site.addsitedir({str(tmp_path / 'site')!r}); import pkg, pkg.a, pkg._C, pkg.sub, pkg.sub.x; "
        "print([pkg.W, pkg.a.W, pkg._C.W, pkg.sub.W, pkg.sub.x.W])"
    )
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert out.stdout.strip() == str(["tree", "tree", "release compiled", "tree", "release only"])

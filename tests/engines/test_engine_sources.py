"""Engines built from a local source tree (``NAME@FOLDER``): a tree made here from the pinned release (its wheel or
sdist unpacked, with the ``pyproject.toml`` a checkout has), one line of its Gemma 4 or Hermes parser patched to
reintroduce a fault, installed the way the project documents for development, run on a few cases; a second edit
is picked up at the next worker start without rebuilding the environment (its manifest unchanged; llama.cpp:
an incremental build, counted in ``refreshes.json``).

Cold and warm costs are printed (``-s``) and quoted in ``docs/engine-sources.md``. The first run builds each
source environment (SGLang and vLLM: as their release environments; llama.cpp: the cmake build of the tree).
"""

import time
from pathlib import Path

import pytest
from engine_common import CALL, OFF, TOOLS

from harness.assets.pypi import open_wheel
from harness.core.messages import ToolCall
from harness.core.paths import cache_dir
from harness.engines import environments as engines
from harness.engines.client import WorkerParserError
from harness.jobs.evaluate import _worker_provenance
from harness.parse.registry import get_any_parser

pytestmark = pytest.mark.timeout(3600)  # cold builds on shared cores: 40+ min measured for llama.cpp

BOOL_CALL = '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3,note:true}<tool_call|>'


def _git(folder: Path, *args: str) -> str:
    import os
    import subprocess

    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    out = subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True, text=True, env=env)
    return out.stdout.strip()


def fresh_tree(name: str) -> Path:
    """An empty folder at a fixed place in the cache (``<cache>/test-sources/<name>``, emptied first): a tree's
    environment is keyed by its path, so every run of these tests reuses the environments of the last."""
    import shutil

    tree = cache_dir() / "test-sources" / name
    shutil.rmtree(tree, ignore_errors=True)
    tree.mkdir(parents=True)
    return tree


def unpack_wheel(requirement: str, package: str, dest: Path) -> Path:
    """The Python package ``package`` of the wheel of ``requirement`` (downloaded once into the cache) extracted
    into ``dest`` (compiled ``*.so`` files left out: a checkout has none), with a ``pyproject.toml`` naming it."""
    name, _, version = requirement.partition("==")
    with open_wheel(requirement, cache_dir() / "test-sources" / "wheels" / requirement) as whl:
        for member in whl.namelist():
            if member.startswith(f"{package}/") and not member.endswith(".so"):
                whl.extract(member, dest)
    (dest / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "{name}"\nversion = "{version}"\n\n'
        f'[tool.setuptools.packages.find]\ninclude = ["{package}*"]\n'
    )
    return dest


def patch(path: Path, old: str, new: str) -> None:
    """Replace the one occurrence of ``old`` in ``path``."""
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in {path}"
    path.write_text(text.replace(old, new))


def started(spec: str, fmt: str):
    """``(parser, seconds)``: the worker of ``spec`` for ``fmt``, built first when missing, and how long that took."""
    began = time.monotonic()
    parser = get_any_parser(spec, fmt)
    return parser, round(time.monotonic() - began, 1)


# ------------------------------------------------------------------------------------------------------ SGLang


@pytest.fixture(scope="module")
def sglang_tree():
    """An SGLang checkout's layout (the package under ``python/``), from the 0.5.23 wheel, committed to git."""
    tree = fresh_tree("sglang")
    unpack_wheel("sglang==0.5.23", "sglang", tree / "python")
    _git(tree, "init", "-q")
    _git(tree, "add", ".")
    _git(tree, "commit", "-qm", "sglang 0.5.23")
    return tree


def test_sglang_tree_is_editable_and_an_edit_needs_no_rebuild(sglang_tree):
    detector = sglang_tree / "python" / "sglang" / "srt" / "function_call" / "gemma4_detector.py"
    spec = f"sglang@{sglang_tree}"
    parser, cold = started(spec, "gemma4")
    try:
        assert parser.name == f"sglang@{sglang_tree}:gemma4" and parser.version == "0.5.23"
        source = parser.spec.source
        assert source["commit"] == _git(sglang_tree, "rev-parse", "HEAD") and source["dirty"] is False
        assert source["how"].startswith("editable install")
        assert parser.parse(CALL, TOOLS, OFF).tool_calls == [ToolCall("get_weather", {"city": "Paris", "days": 3})]
    finally:
        parser.close()
    installed = engines.install(spec)
    print(f"\nsglang@tree: cold {cold} s (install {installed.manifest['build_seconds']} s)")

    # the fault: numbers kept as strings
    patch(detector, "        return int(value_str)\n", "        return value_str  # patched\n")
    parser, warm = started(spec, "gemma4")
    try:
        assert parser.parse(CALL, TOOLS, OFF).tool_calls == [ToolCall("get_weather", {"city": "Paris", "days": "3"})]
        source = parser.spec.source
        assert source["dirty"] is True and source["commit"] == _git(sglang_tree, "rev-parse", "HEAD")
        provenance = _worker_provenance([parser])[parser.name]  # what run.json records
        assert provenance["source"]["changes_sha256"] == source["changes_sha256"]
        first_change = source["changes_sha256"]
    finally:
        parser.close()
    # a second edit: numbers back, booleans broken
    patch(detector, "        return value_str  # patched\n", "        return int(value_str)\n")
    patch(
        detector,
        '    if value_str == "true":\n        return True\n',
        '    if value_str == "true":\n        return "true"\n',
    )
    parser, second = started(spec, "gemma4")
    try:
        assert parser.parse(BOOL_CALL, TOOLS, OFF).tool_calls == [
            ToolCall("get_weather", {"city": "Paris", "days": 3, "note": "true"})
        ]
        assert parser.spec.source["changes_sha256"] != first_change
    finally:
        parser.close()
    assert engines.install(spec).manifest == installed.manifest  # the same environment, not rebuilt
    print(f"sglang@tree: after an edit {warm} s, after a second edit {second} s (worker start, no rebuild)")


# ------------------------------------------------------------------------------------------------ transformers


def unpack_sdist(requirement: str, dest: Path) -> Path:
    """The sdist of ``requirement`` (downloaded once with pip into the cache) extracted into ``dest`` (its top folder
    stripped): a release's source tree, with its ``PKG-INFO``, ``setup.py`` and ``pyproject.toml``."""
    import subprocess
    import sys
    import tarfile

    folder = cache_dir() / "test-sources" / "sdists" / requirement
    folder.mkdir(parents=True, exist_ok=True)
    if not list(folder.glob("*.tar.gz")):
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-q", "-d", str(folder)]
            + [requirement],
            check=True,
            capture_output=True,
        )
    (archive,) = folder.glob("*.tar.gz")
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            top, _, rest = member.name.partition("/")
            if rest and (member.isfile() or member.isdir()):
                member.name = rest
                tar.extract(member, dest, filter="data")
    return dest


def test_transformers_tree_is_editable_and_an_edit_needs_no_rebuild():
    tree = unpack_sdist("transformers==5.16.0", fresh_tree("transformers"))
    fallbacks = tree / "src" / "transformers" / "cli" / "serving" / "utils.py"
    spec = f"transformers@{tree}"
    parser, cold = started(spec, "gemma4")
    try:
        assert parser.name == f"transformers@{tree}:gemma4" and parser.version == "5.16.0"
        assert parser.spec.source["how"].startswith("editable install") and "tree_sha256" in parser.spec.source
        assert parser.parse(CALL, TOOLS, OFF).tool_calls == [ToolCall("get_weather", {"city": "Paris", "days": 3})]
    finally:
        parser.close()
    installed = engines.install(spec)
    print(f"\ntransformers@tree: cold {cold} s (install {installed.manifest['build_seconds']} s)")
    # the fault: a tool name stops at its first underscore
    patch(
        fallbacks,
        r'"open_pattern": r"<\|tool_call>call:(?P<name>\w+)",',
        r'"open_pattern": r"<\|tool_call>call:(?P<name>[a-z]+)",',
    )
    parser, warm = started(spec, "gemma4")
    try:
        try:
            names = [c.name for c in parser.parse(CALL, TOOLS, OFF).tool_calls]
        except WorkerParserError as exc:  # the arguments no longer parse
            names = [f"error: {exc}"]
        assert names and names != ["get_weather"]
    finally:
        parser.close()
    patch(fallbacks, r"(?P<name>[a-z]+)", r"(?P<name>\w+)")  # the fix, second edit
    parser, second = started(spec, "gemma4")
    try:
        assert parser.parse(CALL, TOOLS, OFF).tool_calls == [ToolCall("get_weather", {"city": "Paris", "days": 3})]
    finally:
        parser.close()
    assert engines.install(spec).manifest == installed.manifest
    print(f"transformers@tree: after an edit {warm} s, after a second edit {second} s (worker start, no rebuild)")


def test_transformers_wheel_is_installed_and_keyed_by_its_sha256():
    from harness.core.paths import file_sha256

    with open_wheel("transformers==5.16.0", cache_dir() / "test-sources" / "wheels" / "transformers==5.16.0") as whl:
        wheel = Path(whl.filename)
    parser, cold = started(f"transformers@{wheel}", "gemma4")
    try:
        assert parser.name == f"transformers@{wheel}:gemma4" and parser.version == "5.16.0"
        assert parser.spec.source["sha256"] == file_sha256(wheel) and parser.spec.source["kind"] == "wheel"
        assert parser.parse(CALL, TOOLS, OFF).tool_calls == [ToolCall("get_weather", {"city": "Paris", "days": 3})]
    finally:
        parser.close()
    print(f"\ntransformers@wheel: cold {cold} s")


# --------------------------------------------------------------------------------------------------- llama.cpp

# llama.cpp's Gemma 4 argument writer (common/chat-peg-parser.cpp, gemma4_to_json): numbers, booleans and null are
# copied as JSON; the patch quotes them, so every scalar argument becomes a string.
GEMMA4_SCALARS = '        return std::string(node.text);\n    }\n\n    if (node.rule == "gemma4-string-content")'
GEMMA4_QUOTED = (
    '        return "\\"" + std::string(node.text) + "\\"";\n    }\n\n    if (node.rule == "gemma4-string-content")'
)


def synced_llama_cpp_tree(name: str, scratch: Path) -> Path:
    """``<cache>/test-sources/<name>``: the sdist's llama.cpp, files that differ from it (a patch left by an
    interrupted run) rewritten with a new mtime, the others left as they are, so the kept build folder of a
    previous run stays valid and an interrupted cold build continues where it stopped."""
    import filecmp
    import shutil

    from parsers.reference.llama_cpp import _extract_llama_cpp

    _extract_llama_cpp(scratch, print)
    tree = cache_dir() / "test-sources" / name
    for path in scratch.rglob("*"):
        target = tree / path.relative_to(scratch)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        elif not target.is_file() or not filecmp.cmp(path, target, shallow=False):
            shutil.copyfile(path, target)
    return tree


def test_llama_cpp_tree_builds_incrementally(tmp_path):
    tree = synced_llama_cpp_tree("llama.cpp", tmp_path / "extracted")
    writer = tree / "common" / "chat-peg-parser.cpp"
    spec = f"llama.cpp@{tree}"
    parser, cold = started(spec, "gemma4")
    try:
        assert parser.name == f"llama.cpp@{tree}:gemma4"
        assert parser.spec.source["how"].startswith("cmake build")
        assert parser.parse(CALL, TOOLS, OFF).tool_calls == [ToolCall("get_weather", {"city": "Paris", "days": 3})]
    finally:
        parser.close()
    installed = engines.install(spec)  # already built: nothing to compile
    refreshes = engines.read_refreshes(installed.path)
    assert refreshes["runs"][-1]["compiled"] == 0 and refreshes["runs"][-1]["configured"] is False
    first = refreshes["runs"][-2]
    what = "configured and " if first["configured"] else ""
    print(f"\nllama.cpp@tree: first start {cold} s ({what}{first['compiled']} build steps in {first['seconds']} s)")

    patch(writer, GEMMA4_SCALARS, GEMMA4_QUOTED)
    parser, warm = started(spec, "gemma4")
    try:
        assert parser.parse(CALL, TOOLS, OFF).tool_calls == [ToolCall("get_weather", {"city": "Paris", "days": "3"})]
    finally:
        parser.close()
    edit = engines.read_refreshes(installed.path)["runs"][-1]
    # one object, the llama-common archive, the worker's link: not the 150-odd steps of the cold build
    assert 0 < edit["compiled"] <= 4 and edit["configured"] is False
    patch(writer, GEMMA4_QUOTED, GEMMA4_SCALARS)  # the fix, second edit
    parser, second = started(spec, "gemma4")
    try:
        assert parser.parse(CALL, TOOLS, OFF).tool_calls == [ToolCall("get_weather", {"city": "Paris", "days": 3})]
    finally:
        parser.close()
    assert engines.install(spec).manifest == installed.manifest  # the same environment, its build folder reused
    print(
        f"llama.cpp@tree: after an edit {warm} s ({edit['compiled']} build steps in {edit['seconds']} s), "
        f"after a second edit {second} s"
    )


def test_llama_cpp_build_failure_is_one_line_naming_the_log():
    from parsers.reference.llama_cpp import _extract_llama_cpp

    tree = fresh_tree("llama.cpp-broken")
    _extract_llama_cpp(tree, print)
    with open(tree / "common" / "CMakeLists.txt", "a") as cmake:  # fails at configure: seconds, not a build
        cmake.write('message(FATAL_ERROR "broken on purpose")\n')
    with pytest.raises(engines.EngineError) as failed:
        engines.install(f"llama.cpp@{tree}", log=lambda line: None)
    message = str(failed.value)
    assert "\n" not in message and message.startswith(f"llama.cpp@{tree}: building failed: step failed")
    log = Path(message.rsplit("(log: ", 1)[1].rstrip(")"))
    assert log.is_file() and "broken on purpose" in log.read_text()


# -------------------------------------------------------------------------------------------------------- vLLM

SPACED_CALL = '<|tool_call>call:get_weather{city:<|"|>  Paris<|"|>,days:3}<tool_call|>'


def test_vllm_tree_runs_python_only_over_the_release():
    tree = unpack_wheel("vllm==0.33.0", "vllm", fresh_tree("vllm"))  # vllm/_version.py says 0.33.0
    gemma4 = tree / "vllm" / "parser" / "gemma4.py"
    spec = f"vllm@{tree}"
    parser, cold = started(spec, "gemma4")
    try:
        assert parser.name == f"vllm@{tree}:gemma4" and parser.version == "0.33.0"
        assert parser.spec.source["how"].startswith("python-only over vllm==0.33.0")
        assert parser.parse(SPACED_CALL, TOOLS, OFF).tool_calls == [
            ToolCall("get_weather", {"city": "  Paris", "days": 3})
        ]
    finally:
        parser.close()
    installed = engines.install(spec)
    print(f"\nvllm@tree: cold {cold} s (install {installed.manifest['build_seconds']} s)")
    # the fault: string values stripped of their spaces; imported from the tree, not the release
    patch(gemma4, "result[key] = args_str[val_start:end_pos]\n", "result[key] = args_str[val_start:end_pos].strip()\n")
    parser, warm = started(spec, "gemma4")
    try:
        assert parser.parse(SPACED_CALL, TOOLS, OFF).tool_calls == [
            ToolCall("get_weather", {"city": "Paris", "days": 3})
        ]
    finally:
        parser.close()
    patch(gemma4, "args_str[val_start:end_pos].strip()\n", "args_str[val_start:end_pos]\n")  # second edit
    parser, second = started(spec, "gemma4")
    try:
        assert parser.parse(SPACED_CALL, TOOLS, OFF).tool_calls[0].arguments["city"] == "  Paris"
    finally:
        parser.close()
    assert engines.install(spec).manifest == installed.manifest
    print(f"vllm@tree: after an edit {warm} s, after a second edit {second} s (worker start, no rebuild)")


def test_a_run_records_the_source_of_its_engine(sglang_tree, tmp_path):
    """`eval` with a tree as parser, end to end: run.json and report.md name the path, commit and dirty state."""
    import json
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    (sglang_tree / "python" / "sglang" / "NOTES.txt").write_text("an untracked file: the tree is dirty\n")
    out = subprocess.run(
        [sys.executable, "-m", "harness.cli", "eval", "--model", "gemma-4-e2b", "--cases", "3"]
        + ["--parsers", f"sglang@{sglang_tree}:gemma4", "--modes", "oneshot", "--no-shrink", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=root,
        timeout=900,
    )
    assert out.returncode in (0, 1), out.stderr
    run = json.loads((tmp_path / "run.json").read_text())
    source = run["workers"][f"sglang@{sglang_tree}:gemma4"]["source"]
    assert source["path"] == str(sglang_tree) and source["commit"] == _git(sglang_tree, "rev-parse", "HEAD")
    assert source["dirty"] is True and source["how"].startswith("editable install")
    report = (tmp_path / "report.md").read_text()
    assert f"built from source `{sglang_tree} (git {source['commit'][:12]}, dirty" in report


def test_compare_of_the_release_and_a_patched_tree_reports_exactly_the_cases_it_breaks(tmp_path):
    """`compare` between the transformers 5.16.0 wheel (A) and its sdist tree with the tool-name pattern narrowed
    to ``[a-z]+`` (B): exactly the cases A passes whose calls name a tool with another character regress."""
    import json
    import re
    import subprocess
    import sys

    with open_wheel("transformers==5.16.0", cache_dir() / "test-sources" / "wheels" / "transformers==5.16.0") as whl:
        wheel = Path(whl.filename)
    tree = unpack_sdist("transformers==5.16.0", fresh_tree("transformers"))
    fallbacks = tree / "src" / "transformers" / "cli" / "serving" / "utils.py"
    patch(fallbacks, r"call:(?P<name>\w+)", r"call:(?P<name>[a-z]+)")
    a, b = f"transformers@{wheel}:gemma4", f"transformers@{tree}:gemma4"
    out = subprocess.run(
        [sys.executable, "-m", "harness.cli", "compare", "--model", "gemma-4-e2b", "--parsers", f"{a},{b}"]
        + ["--slices", "curated", "--modes", "oneshot,char", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        timeout=1800,
    )
    assert out.returncode == 1, out.stderr[-2000:]  # a regression
    comparison = json.loads((tmp_path / "run.json").read_text())["comparison"]
    corpus = [json.loads(line) for line in (tmp_path / "corpus.jsonl").read_text().split("\n") if line]
    results = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().split("\n") if line]
    named_otherwise = {
        case["id"]
        for case in corpus
        if any(not re.fullmatch("[a-z]+", call["name"]) for call in (case["expected"] or {}).get("tool_calls") or [])
    }
    broken = {
        (r["case_id"], r["mode"])
        for r in results
        if r["parser"] == a and r["verdict"] in ("pass", "soft_pass") and r["case_id"] in named_otherwise
    }
    assert broken and {(r["case_id"], r["mode"]) for r in comparison["regressions"]} == broken
    assert comparison["fixes"] == []
    report = (tmp_path / "compare.md").read_text()
    assert f"- B is built from source `{tree} (not a git checkout; files sha256" in report
    assert "- A is built from source" in report and "(wheel sha256" in report


def _has_int(value) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    if isinstance(value, dict):
        return any(_has_int(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_int(v) for v in value)
    return False


def _has_padded_string(value) -> bool:
    if isinstance(value, str):
        return value != value.strip()
    if isinstance(value, dict):
        return any(_has_padded_string(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_padded_string(v) for v in value)
    return False


def _compare_curated(a: str, b: str, out: Path) -> tuple[dict, dict, str]:
    """``compare --parsers A,B`` on the curated cases, one-shot: (``run.json``'s comparison, each case's expected
    calls by id, ``compare.md``); asserts exit status 1 (a regression)."""
    import json
    import subprocess
    import sys

    argv = [sys.executable, "-m", "harness.cli", "compare", "--model", "gemma-4-e2b", "--parsers", f"{a},{b}"]
    argv += ["--slices", "curated", "--modes", "oneshot", "--no-minimize", "--out", str(out)]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2], timeout=1800)
    assert done.returncode == 1, done.stderr[-2000:]
    comparison = json.loads((out / "run.json").read_text())["comparison"]
    lines = (out / "corpus.jsonl").read_text().split("\n")  # not splitlines: U+2028 sits inside strings
    calls = {c["id"]: c["expected"].get("tool_calls") or [] for c in map(json.loads, filter(None, lines))}
    return comparison, calls, (out / "compare.md").read_text()


def test_compare_of_the_sglang_release_and_a_patched_tree(sglang_tree, tmp_path):
    """`compare` between ``sglang==0.5.23`` (A) and the same code as a tree whose ``Gemma4Detector`` keeps numbers as
    strings (B): B regresses, only on cases whose expected arguments hold an integer, and fixes nothing."""
    detector = sglang_tree / "python" / "sglang" / "srt" / "function_call" / "gemma4_detector.py"
    _git(sglang_tree, "checkout", "--", str(detector.relative_to(sglang_tree)))  # undo the other tests' edits
    patch(detector, "        return int(value_str)\n", "        return value_str  # patched\n")
    comparison, calls, report = _compare_curated("sglang==0.5.23:gemma4", f"sglang@{sglang_tree}:gemma4", tmp_path)
    regressed = {r["case_id"] for r in comparison["regressions"]}
    with_ints = {case for case, expected in calls.items() if any(_has_int(t["arguments"]) for t in expected)}
    assert regressed and regressed <= with_ints and comparison["fixes"] == []
    assert f"- B is built from source `{sglang_tree} (git " in report


def test_compare_of_the_vllm_release_and_a_patched_python_only_tree(tmp_path):
    """`compare` between ``vllm==0.33.0`` (A) and its Python sources as a tree, run python-only over the release,
    whose Gemma 4 parser strips string values (B): B regresses only on cases with a string padded by whitespace."""
    tree = unpack_wheel("vllm==0.33.0", "vllm", fresh_tree("vllm"))
    patch(
        tree / "vllm" / "parser" / "gemma4.py",
        "result[key] = args_str[val_start:end_pos]\n",
        "result[key] = args_str[val_start:end_pos].strip()\n",
    )
    comparison, calls, report = _compare_curated("vllm==0.33.0:gemma4", f"vllm@{tree}:gemma4", tmp_path)
    regressed = {r["case_id"] for r in comparison["regressions"]}
    padded = {case for case, expected in calls.items() if any(_has_padded_string(t["arguments"]) for t in expected)}
    assert regressed and regressed <= padded and comparison["fixes"] == []
    assert "python-only over vllm==0.33.0" in report


def _has_scalar(value) -> bool:
    """Whether ``value`` holds a number, boolean or null (what llama.cpp's Gemma 4 writer copies as JSON)."""
    if isinstance(value, dict):
        return any(_has_scalar(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_scalar(v) for v in value)
    return not isinstance(value, str)


def test_compare_of_the_llama_cpp_release_and_a_patched_tree(tmp_path):
    """`compare` between ``llama.cpp==0.3.36`` (A) and the same llama.cpp as a tree whose Gemma 4 argument writer
    quotes numbers, booleans and null (B, rebuilt incrementally): B regresses only on cases holding such a value."""
    tree = synced_llama_cpp_tree("llama.cpp", tmp_path / "extracted")
    writer = tree / "common" / "chat-peg-parser.cpp"
    patch(writer, GEMMA4_SCALARS, GEMMA4_QUOTED)
    try:
        comparison, calls, report = _compare_curated(
            "llama.cpp==0.3.36:gemma4", f"llama.cpp@{tree}:gemma4", tmp_path / "run"
        )
    finally:
        patch(writer, GEMMA4_QUOTED, GEMMA4_SCALARS)
    regressed = {r["case_id"] for r in comparison["regressions"]}
    scalars = {case for case, expected in calls.items() if any(_has_scalar(t["arguments"]) for t in expected)}
    assert regressed and regressed <= scalars and comparison["fixes"] == []
    assert f"- B is built from source `{tree}" in report and "cmake build" in report

"""Engine: llama.cpp's C++ chat-output parser (``common/chat.h``: ``common_chat_templates_apply`` +
``common_chat_parse``), as llama-server's ``/v1/chat/completions`` runs it, behind a small C++ protocol worker
(``parsers/reference/llama_cpp_shim/shim.cpp``, built with cmake against the llama.cpp vendored in the pinned
llama-cpp-python 0.3.36 sdist; parser names ``llama.cpp==0.3.36:<format>``).

:data:`FORMATS`: how the worker serves each format, as ``llama-server --jinja`` started on that model's GGUF would
(its chat template, ``--reasoning``, ``--chat-template-kwargs``); :data:`UNSUPPORTED` gives the reason for every
other format. There is no Python adapter: the worker speaks the protocol itself. Build, request handling, each
setting's source and the measured faults: ``docs/engines/llama_cpp.md``.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness.assets.sdist import LLAMA_CPP_DIR, SDIST_NAME, SDIST_SHA256, SDIST_VERSION, sdist_archive, sdist_file
from harness.engines.sources import Source, SourceError, identity, locate
from harness.engines.spec import Engine, EngineBuildError, Log, SourceBuild, run_step

NAME = "llama.cpp"
VERSION = "0.3.36"  # the llama-cpp-python sdist whose vendored llama.cpp is built
LLAMA_CPP_COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"  # its .git/modules/vendor/llama.cpp/HEAD


@dataclass(frozen=True)
class Launch:
    """How the worker serves one format: as ``llama-server --jinja`` started on that model's GGUF would.

    - ``template``: the chat template (a file of the sdist's ``vendor/llama.cpp``), standing for the GGUF's
      embedded one; llama.cpp picks its parser from the template text;
    - ``reasoning``: llama-server's ``--reasoning on|off|auto`` (``auto``, the default: thinking on when the
      template supports it); a request's prefix that only the other setting produces still selects it, as a
      client's ``chat_template_kwargs: {"enable_thinking": ...}`` would;
    - ``kwargs``: llama-server's ``--chat-template-kwargs`` (template variables).
    """

    template: str
    reasoning: str = "auto"
    kwargs: dict = field(default_factory=dict)


# Llama 3.x: llama.cpp passes date_string = today into every template (common/chat.cpp:
# common_chat_extra_context); pinned, as `--chat-template-kwargs '{"date_string": "26 Jul 2024"}'` would, to
# Llama 3.1's own default (the date harness.formats.llama3_json renders with too).
LLAMA3_DATE_STRING = "26 Jul 2024"

FORMATS: dict[str, Launch] = {
    "gemma4": Launch("models/templates/google-gemma-4-31B-it.jinja"),
    # hermes: Qwen 2.5's template (the Hermes 3 tool-use template gives the same parser: docs, "Hermes").
    "hermes": Launch("models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"),
    "glm45": Launch("models/templates/GLM-4.6.jinja"),
    "glm47": Launch("models/templates/GLM-4.7-Flash.jinja", reasoning="off"),
    "qwen3_coder": Launch("models/templates/Qwen3-Coder.jinja"),
    "minimax_m2": Launch("models/templates/MiniMax-M2.jinja"),
    "llama3_json": Launch(
        "models/templates/meta-llama-Llama-3.1-8B-Instruct.jinja", kwargs={"date_string": LLAMA3_DATE_STRING}
    ),
    "mistral": Launch("models/templates/Mistral-Small-3.2-24B-Instruct-2506.jinja"),
    "kimi_k2": Launch("models/templates/moonshotai-Kimi-K2.jinja"),
    # Ministral 3 Reasoning: llama.cpp's own parser for the template (test-chat.cpp, "Ministral-3-14B-Reasoning-2512")
    "mistral_reasoning": Launch("models/templates/mistralai-Ministral-3-14B-Reasoning-2512.jinja"),
    "deepseek_v3": Launch("models/templates/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"),
    # Kimi K3: llama.cpp's own XTML parser (test-chat.cpp, "Kimi-K3 tests"); thinking on, the template's default.
    "kimi_k3": Launch("models/templates/Kimi-K3.jinja"),
    "deepseek_v31": Launch("models/templates/deepseek-ai-DeepSeek-V3.1.jinja", reasoning="off"),
    "deepseek_v32": Launch("models/templates/deepseek-ai-DeepSeek-V3.2.jinja"),
    "deepseek_v4": Launch("models/templates/deepseek-ai-DeepSeek-V4.jinja"),
    "harmony": Launch("models/templates/openai-gpt-oss-120b.jinja"),
    # Command R7B: llama.cpp's autoparser on its tool_use template (Cohere2MoE.jinja has a specialized handler,
    # common_chat_params_init_cohere2moe); thinking on, the template's default.
    "cohere": Launch("models/templates/CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja"),
    # Command R+: llama.cpp's autoparser on its tool_use template, with its Command R+ patch (content wrapped in
    # <|CHATBOT_TOKEN|> ... <|END_OF_TURN_TOKEN|>, common/chat-diff-analyzer.cpp); no thinking.
    "command_r": Launch("models/templates/CohereForAI-c4ai-command-r-plus-tool_use.jinja"),
    # Functionary v3.1: the autoparser on its template with its "Functionary 3.1" patch (common/chat-diff-analyzer.cpp:
    # no tool-call section delimiter, <function=NAME>{...}</function>); test-chat.cpp's peg_tester cases.
    "functionary_v31": Launch("models/templates/meetkai-functionary-medium-v3.1.jinja"),
    # Functionary v3.2: llama.cpp's specialized handler (common/chat.cpp, common_chat_params_init_functionary_v3_2).
    "functionary_v32": Launch("models/templates/meetkai-functionary-medium-v3.2.jinja"),
    # FireFunction v2: llama.cpp's auto-parser derives functools[...] from the template (test-chat.cpp, "FireFunction").
    "firefunction_v2": Launch("models/templates/fireworks-ai-llama-3-firefunction-v2.jinja"),
    # MiniMax-M3 and Ling 3.0: llama.cpp's dedicated parsers (common/parsers/minimax-m3.cpp, ling3.cpp), picked from
    # the template text (common/chat.cpp).
    "minimax_m3": Launch("models/templates/MiniMax-M3.jinja"),
    "ling3": Launch("models/templates/inclusionai-ling-3.0-flash.jinja"),
    "seed_oss": Launch("models/templates/ByteDance-Seed-OSS.jinja"),
    "apriel": Launch("models/templates/Apriel-1.6-15b-Thinker-fixed.jinja"),
    "nemotron_v2": Launch("models/templates/NVIDIA-Nemotron-Nano-v2.jinja"),
    "gigachat3": Launch("models/templates/GigaChat3-10B-A1.8B.jinja"),
    "gigachat31": Launch("models/templates/GigaChat3.1-10B-A1.8B.jinja"),
    "minicpm5": Launch("models/templates/openbmb-MiniCPM5-1B.jinja"),
    # Apertus: the generator derives the name-as-key list from the template (test-chat.cpp, "FUNC_NAME_AS_KEY");
    # Muse Glimmer: its dedicated parser (common/parsers/muse-glimmer.cpp), thinking on (supports_thinking).
    "apertus": Launch("models/templates/Apertus-8B-Instruct.jinja"),
    "muse_glimmer": Launch("models/templates/muse-glimmer.jinja"),
    # LFM2.5-8B-A1B: llama.cpp's LFM2.5 handler (common/parsers/lfm2.cpp, picked by "List of tools: [" in the template);
    # an optional <think> block is reasoning.
    "lfm2": Launch("models/templates/LFM2.5-8B-A1B.jinja"),
}
UNSUPPORTED = {
    "deepseek_v41": "the pinned sdist has no DeepSeek V4.1 template (its V4 templates write <｜DSML｜tool_calls>), and "
    "llama.cpp derives its parser from the template",
    "functiongemma": "llama.cpp has no FunctionGemma handler and the pinned sdist no FunctionGemma template to derive "
    "a parser from (google/functiongemma-270m-it is gated; offline there is no template at all)",
    "llama4_pythonic": "the pinned sdist has no Llama 4 template, and llama.cpp derives its parser from the template "
    "(meta-llama/Llama-4-Scout-17B-16E-Instruct is gated; offline there is no template at all)",
}
SHIM_DIR = Path(__file__).resolve().parent / "llama_cpp_shim"
SHIM_FILES = ("shim.cpp", "CMakeLists.txt")
BINARY = "llama-cpp-worker"
JOBS = 2

# Top-level entries of vendor/llama.cpp the build needs (docs, models, tools, tests are left out).
SOURCE_ENTRIES = ("CMakeLists.txt", "LICENSE", "cmake", "common", "ggml", "include", "licenses", "src", "vendor")

# llama.cpp's own options are forced in parsers/reference/llama_cpp_shim/CMakeLists.txt (one list, whose sha256 is in
# the recipe); only the build type is given here.
CMAKE_FLAGS = ("-DCMAKE_BUILD_TYPE=Release",)


def check_version(version: str) -> None:
    if version != VERSION:
        raise ValueError(
            f"llama.cpp engine: only version {VERSION} (the llama.cpp vendored in the pinned, sha256-checked "
            f"llama-cpp-python {VERSION} sdist, the one source available offline) can be built; got {version!r}"
        )


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def recipe(version: str) -> dict:
    """How the environment is built; the shim's sources are hashed in, so editing them rebuilds."""
    check_version(version)
    return {
        "kind": "cmake",
        "source": f"llama-cpp-python=={version} sdist, vendor/llama.cpp",
        "sdist_sha256": SDIST_SHA256,
        "llama_cpp_commit": LLAMA_CPP_COMMIT,
        "cmake_flags": list(CMAKE_FLAGS),
        "target": BINARY,
        "jobs": JOBS,
        "shim_sha256": {name: _sha256(SHIM_DIR / name) for name in SHIM_FILES},
    }


def _extract_llama_cpp(dest: Path, log: Log) -> str:
    """Extract the needed parts of the sdist's ``vendor/llama.cpp`` into ``dest``; return the llama.cpp commit."""
    root = f"{SDIST_NAME.replace('-', '_')}-{SDIST_VERSION}"
    vendor = f"{root}/{LLAMA_CPP_DIR}/"
    head = f"{root}/.git/modules/{LLAMA_CPP_DIR}/HEAD"
    archive = sdist_archive()
    log(f"extracting {LLAMA_CPP_DIR} from {archive.name} into {dest}")
    commit = LLAMA_CPP_COMMIT
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar:
            if member.name == head and member.isfile():
                head_file = tar.extractfile(member)
                assert head_file is not None  # member.isfile()
                commit = head_file.read().decode().strip() or commit
                continue
            if not member.name.startswith(vendor):
                continue
            rel = member.name[len(vendor) :]
            if rel.split("/", 1)[0] not in SOURCE_ENTRIES or not (member.isfile() or member.isdir()):
                continue
            member.name = rel
            if hasattr(tarfile, "data_filter"):
                tar.extract(member, dest, filter="data")
            elif ".." not in Path(rel).parts and not rel.startswith("/"):
                tar.extract(member, dest)
    return commit


def install(env_dir: Path, version: str, log: Log) -> None:
    """Extract llama.cpp, configure and build the worker; leaves ``env_dir/bin/llama-cpp-worker``."""
    check_version(version)
    if shutil.which("cmake") is None:
        raise EngineBuildError("llama.cpp engine: cmake is not installed (and a C++17 compiler is needed)")
    src = env_dir / "src"
    build = env_dir / "build"
    commit = _extract_llama_cpp(src / "llama.cpp", log)
    shim = src / "shim"
    shim.mkdir(parents=True, exist_ok=True)
    for name in SHIM_FILES:
        shutil.copyfile(SHIM_DIR / name, shim / name)

    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    run_step(
        [
            "cmake",
            "-S",
            str(shim),
            "-B",
            str(build),
            *generator,
            *CMAKE_FLAGS,
            f"-DLLAMA_CPP_DIR={src / 'llama.cpp'}",
            f"-DLLAMA_BUILD_COMMIT={commit[:9]}",
            "-DLLAMA_BUILD_NUMBER=0",
            f"-DWORKER_VERSION={version}",
        ],
        log,
    )
    run_step(["cmake", "--build", str(build), "--target", BINARY, "--parallel", str(JOBS)], log)

    built = build / BINARY
    if not built.exists():
        raise EngineBuildError(f"the build finished but {built} is missing")
    (env_dir / "bin").mkdir(exist_ok=True)
    shutil.copy2(built, env_dir / "bin" / BINARY)
    log(
        f"built {env_dir / 'bin' / BINARY} ({(env_dir / 'bin' / BINARY).stat().st_size / 1e6:.1f} MB); "
        "removing the build tree and sources"
    )
    shutil.rmtree(build, ignore_errors=True)
    shutil.rmtree(src, ignore_errors=True)


def worker_command(env_dir: Path, version: str) -> tuple[list[str], dict[str, str]]:
    """``llama-cpp-worker --template FORMAT=<template> [--reasoning FORMAT=...] [--chat-template-kwargs FORMAT=...]``
    for every :data:`FORMATS` entry (the sdist's templates, extracted into the cache)."""
    return _worker_argv(env_dir / "bin" / BINARY, sdist_file), {}


def _worker_argv(binary: Path, template: Callable[[str], Path]) -> list[str]:
    argv = [str(binary)]
    for fmt, setup in FORMATS.items():
        argv += ["--template", f"{fmt}={template(setup.template)}"]
        if setup.reasoning != "auto":
            argv += ["--reasoning", f"{fmt}={setup.reasoning}"]
        if setup.kwargs:
            argv += ["--chat-template-kwargs", f"{fmt}={json.dumps(setup.kwargs, separators=(',', ':'))}"]
    return argv


# ------------------------------------------------------------------------------------------------------ sources
# llama.cpp@TREE: the shim built against a llama.cpp checkout, with a cmake build folder kept in the environment
# (CMake build folders cannot move, so the build runs in place at each worker start: ninja rebuilds what changed).


def locate_tree(text: str) -> Source:
    """A llama.cpp checkout: a folder whose ``CMakeLists.txt`` declares ``project("llama.cpp" ...)`` and that has
    ``common/chat.h``; raises :class:`SourceError`."""
    source = locate(text, "", wheels=False)
    cmake = source.path / "CMakeLists.txt"
    declared = cmake.is_file() and 'project("llama.cpp"' in cmake.read_text(errors="replace")
    if not declared or not (source.path / "common" / "chat.h").is_file():
        raise SourceError(
            f'checking the tree: not a llama.cpp source tree (no CMakeLists.txt with project("llama.cpp") and '
            f"common/chat.h in {str(source.path)!r})"
        )
    return source


def source_recipe(source: Source) -> dict:
    """The build of the shim against the tree: its path (the code is rebuilt incrementally, not keyed), flags and
    the shim's sources."""
    return {
        "kind": "cmake-tree",
        "tree": str(source.path),
        "cmake_flags": list(CMAKE_FLAGS),
        "target": BINARY,
        "jobs": JOBS,
        "shim_sha256": {name: _sha256(SHIM_DIR / name) for name in SHIM_FILES},
    }


def source_install(env_dir: Path, source: Source, log: Log) -> None:
    """Copy the shim into the environment; the build itself is :func:`source_refresh` (it must run in place)."""
    if shutil.which("cmake") is None:
        raise EngineBuildError("llama.cpp engine: cmake is not installed (and a C++17 compiler is needed)")
    (env_dir / "shim").mkdir()
    for name in SHIM_FILES:
        shutil.copyfile(SHIM_DIR / name, env_dir / "shim" / name)


def source_refresh(env_dir: Path, source: Source, log: Log) -> dict:
    """Configure (the first time) and build the shim against the tree in ``env_dir/build``, then copy the worker to
    ``env_dir/bin``; returns ``{"configured": bool, "compiled": number of build steps run}`` (0: nothing changed)."""
    build = env_dir / "build"
    configured = False
    # configured = the generator's files are there (a failed configure leaves a CMakeCache.txt without them)
    if not any((build / name).is_file() for name in ("build.ninja", "Makefile")):
        commit = identity(source).get("commit", "unknown")
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        run_step(
            [
                "cmake",
                "-S",
                str(env_dir / "shim"),
                "-B",
                str(build),
                *generator,
                *CMAKE_FLAGS,
                f"-DLLAMA_CPP_DIR={source.path}",
                f"-DLLAMA_BUILD_COMMIT={commit[:9]}",
                "-DLLAMA_BUILD_NUMBER=0",
                f"-DWORKER_VERSION={source_version(source)}",
            ],
            log,
        )
        configured = True
    out = run_step(["cmake", "--build", str(build), "--target", BINARY, "--parallel", str(JOBS)], log)
    compiled = len(re.findall(r"^\[\d+/\d+\] |^\[ *\d+%\] Building", out, re.M))
    built = build / BINARY
    if not built.exists():
        raise EngineBuildError(f"the build finished but {built} is missing")
    (env_dir / "bin").mkdir(exist_ok=True)
    target = env_dir / "bin" / BINARY
    if configured or compiled or not target.exists():
        shutil.copy2(built, target)
    return {"configured": configured, "compiled": compiled}


def source_version(source: Source) -> str:
    """What the worker reports as its version: ``tree`` (a checkout has no release number of its own; the run
    records its commit)."""
    return "tree"


def source_worker_command(env_dir: Path, source: Source) -> tuple[list[str], dict[str, str]]:
    """As :func:`worker_command`, with the tree's own chat templates where it has them (a branch may change a
    template, which selects llama.cpp's parser), else the sdist's."""

    def template(rel: str) -> Path:
        own = source.path / rel
        return own if own.is_file() else sdist_file(rel)

    return _worker_argv(env_dir / "bin" / BINARY, template), {}


ENGINE = Engine(
    name=NAME,
    default_version=VERSION,
    formats=tuple(FORMATS),
    cold_install="~3.5 min on 2 cores (cmake/ninja build of llama.cpp's common library and the shim from the "
    "cached llama-cpp-python 0.3.36 sdist; needs cmake and a C++17 compiler); 9.4 MB installed",
    recipe=recipe,
    install=install,
    worker_command=worker_command,
    check_version=check_version,
    note="C++ worker over common_chat_templates_apply / common_chat_parse, driven as llama-server drives them",
    sources=SourceBuild(
        locate=locate_tree,
        recipe=source_recipe,
        install=source_install,
        worker_command=source_worker_command,
        how=lambda source: "cmake build of the tree's common library with the shim (incremental)",
        version=source_version,
        refresh=source_refresh,
        cost="the release's cmake build (about 3.5 min on 2 idle cores), run at the first worker start; an edit: an "
        "incremental build at the next start (3 steps, 5-6 s on 2 shared cores, after an edit to "
        "common/chat-peg-parser.cpp)",
    ),
)

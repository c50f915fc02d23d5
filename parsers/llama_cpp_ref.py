"""Engine: llama.cpp's C++ chat-output parser, as llama-server runs it, behind a small C++ protocol worker.

llama.cpp parses model output only in C++ (``common/chat.h``; llama-cpp-python 0.3.36 has no output parser in
Python and plain ctypes cannot call a C++ API), so this engine builds ``parsers/llama_cpp_shim/shim.cpp``
against the llama.cpp vendored in the pinned llama-cpp-python **0.3.36** sdist (llama.cpp commit
``0c1e57098``, the one the sdist's ``.git/modules/vendor/llama.cpp/HEAD`` names; the shallow submodule has no
build number, so the worker reports the engine version ``0.3.36`` and the commit in ``llama_cpp_commit``).

Build (``install``): ``vendor/llama.cpp`` is extracted from the cached, sha256-checked sdist
(:func:`harness.sdist.sdist_archive`; only ``CMakeLists.txt``, ``LICENSE``, ``cmake/``, ``common/``,
``ggml/``, ``include/``, ``licenses/``, ``src/``, ``vendor/``), the shim's ``CMakeLists.txt`` adds it as a
static subproject (``BUILD_SHARED_LIBS=OFF``, ``LLAMA_BUILD_COMMON=ON``, tests/tools/examples/server/app OFF,
``LLAMA_OPENSSL=OFF``, ``GGML_NATIVE=OFF``, ``GGML_OPENMP=OFF``, ``GGML_LLAMAFILE=OFF``) and only the
``llama-cpp-worker`` target is built (it pulls ``llama-common``, ``llama``, ``ggml``), with 2 jobs. The
binary is self-contained apart from libstdc++/libc and lands in ``ENV/bin/llama-cpp-worker``; the build
tree is deleted afterwards.

Library calls (``common/chat.h``), per request, mirroring llama-server's ``/v1/chat/completions``
(``tools/server/server-common.cpp: oaicompat_chat_params_parse``, ``server-schema.cpp``,
``server-task.cpp: task_result_state::update_chat_msg``):

- ``common_chat_templates_init(nullptr, <template source>)`` once per format: the worker is started with
  ``--template gemma4=<google-gemma-4-31B-it.jinja from the same sdist>``; llama.cpp's template detection
  (the source contains ``'<|tool_call>call:'``) picks ``common_chat_params_init_gemma4`` →
  ``COMMON_CHAT_FORMAT_PEG_GEMMA4``;
- ``common_chat_templates_inputs``: one user message, ``tools = common_chat_tools_parse_oaicompat(tools)``,
  ``tool_choice`` auto, ``add_generation_prompt = true``, ``reasoning_format = deepseek`` (the server
  default), ``parallel_tool_calls`` from ``common_chat_templates_get_caps``; ``enable_thinking`` is chosen
  from the case's ``prefix``: the worker applies the template with thinking on, then off, and keeps the first
  whose ``generation_prompt`` ends with the prefix — for Gemma 4, ``""`` → thinking on (generation prompt
  ``"<|turn>model\\n"``, the server's default), ``"<|channel>thought\\n<channel|>"`` → thinking off
  (``"<|turn>model\\n<|channel>thought\\n<channel|>"``);
- ``common_chat_templates_apply`` → ``common_chat_params``; ``common_chat_parser_params(chat_params)`` plus
  ``reasoning_format = deepseek``, ``parse_tool_calls = true`` and ``parser.load(chat_params.parser)``,
  exactly the fields the server forwards; the result is cached per (format, tools, prefix);
- one-shot: ``common_chat_parse(text, is_partial=false, params)`` → ``common_chat_msg``; ``content`` and
  ``reasoning_content`` (empty → null) and ``tool_calls[i].{name, arguments}``, ``arguments`` being the JSON
  string llama.cpp builds (the harness decodes it). The parser prepends ``generation_prompt`` to the text.
- streaming: every chunk is appended and the whole text re-parsed with ``is_partial=true``; tool-call ids are
  assigned (``set_tool_call_ids``) and ``common_chat_msg_diff::compute_diffs(previous, current)`` gives the
  deltas (reasoning, content, ``{index, name?, arguments?}``), as the server streams them; ``finish``
  re-parses with ``is_partial=false`` and emits the last diffs.

Errors: any ``std::exception`` from the library (``"The model produced output that does not match the
expected peg-gemma4 format"``, ``"Invalid diff: ..."`` when a re-parse shrinks what was already streamed,
``"Failed to parse tools: ..."``) → ``parser_error`` with ``what()``; a failed ``feed`` closes the stream.
llama.cpp's log goes to stderr, at error level unless the worker gets ``--verbose``.

Measured behaviour (this worker, the 436-case Gemma 4 corpus, tools and prefix per case): one-shot 263 pass,
4 drift cases surfaced, 169 fail, no errors; streaming whole-text is identical to one-shot; streaming by
single characters and by real Gemma 4 token pieces passes the same 263 cases. The failures:

- ``None`` (117 cases): the Gemma 4 template renders JSON null as ``None``, but llama.cpp's grammar accepts
  only ``null`` (``gemma4-null`` = ``json_null``). The PEG parser has no end anchor and runs leniently, so
  the call holding ``None`` and everything after it are dropped **without an error** (the worker reports the
  dropped tail in ``diagnostics``, by re-running the same PEG parse; the library itself says nothing).
  Streaming instead raises ``Invalid diff: now finding less tool calls!`` from ``compute_diffs`` (85
  cases: a call already streamed vanishes) or, when the final parse is empty (the server then skips the
  diff), leaves a truncated arguments fragment such as ``{"cursor":`` (32 cases, ``stream_diverges``);
- content after the last ``<tool_call|>`` is dropped (47 more cases): the tool grammar is
  ``start + (thought + content)* + scan-to-toolcall + tool_call{0,n}`` with nothing after the calls;
- ``tools: null`` (5 strict cases): without declared tools llama.cpp builds a content-only parser, so calls
  stay in content (the 4 drift cases count as surfaced). Calls to tools not declared in the request are
  dropped likewise; every tool name is a literal in the grammar.

Also measured: keys written ``<|"|>my key<|"|>:`` keep their markers (``{"<|\"|>my key<|\"|>":1}``); an
unterminated call at the end of the text still yields a call whose arguments are invalid JSON (``{"a":1``);
reasoning is extracted with reasoning_format deepseek; names are streamed once, whole, with the first
arguments fragment; nesting deeper than ~3,500 levels overflows the 8 MB stack in the recursive PEG parser
(SIGSEGV, as it would in llama-server), which the harness records as a ``crash``. Speed: the 436 one-shot
requests take 1.3 s including start-up; all four modes (103,046 requests) 3-4 s.

Hermes (``llama.cpp==0.3.36:hermes``): the same worker also gets ``--template hermes=<Qwen-Qwen2.5-7B-Instruct.jinja
from the sdist>`` (:data:`FORMAT_TEMPLATES`), i.e. llama-server started on a Qwen 2.5 GGUF with its embedded
template. No dedicated handler in this commit's detection list matches that template, so
``common_chat_templates_apply`` falls through to llama.cpp's automatic parser generator (``chat-auto-parser``:
it renders the template with and without tool calls and derives a PEG parser from the difference): format
``peg-native``. Started with ``NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja`` instead it answers every
Hermes text identically, but that template's own ``basic_type_map[json_spec.type]`` cannot take a JSON-schema
type list (``["string", "null"]``): any request declaring one fails before parsing ("Unable to generate parser
for this template. Automatic parser generation failed: ... Object key of unhashable type: Array"). With
``Qwen-Qwen3-0.6B.jinja`` the parser also extracts ``<think>`` reasoning; Qwen 2.5's template has none, so
``<think>`` blocks stay content here.

Measured behaviour (Hermes texts rendered by the Qwen 2.5 template; one-shot, streamed whole, by characters and
by token-like pieces -- all modes alike): one and several calls, nested values, escapes, non-ASCII, ``null``,
``<tool_call>``, ``</tool_call>`` or ``<|im_end|>`` inside a string (the arguments are parsed as JSON) and an
unterminated last call all parse; content before a call keeps the newline before ``<tool_call>``
(``"Let me check.\\n"``). Faults:

- the parse fails (``parser_error`` "The model produced output that does not match the expected peg-native
  format", in every mode) for text after the last call, a call to a tool not declared in the request, a call
  without ``"arguments"`` and invalid JSON;
- ``"arguments"`` written as a JSON string (``"{\"city\": ...}"``) gives arguments ``{}`` without an error;
- ``<tool_call>{...}</tool_call>`` without the template's newlines is not a call (it stays content);
- without tools the parser is content-only: calls stay in content, markup included.
"""

from __future__ import annotations

import hashlib
import shutil
import tarfile
from pathlib import Path

from harness.engine_spec import Engine, EngineBuildError, Log, run_step

NAME = "llama.cpp"
VERSION = "0.3.36"  # the llama-cpp-python sdist whose vendored llama.cpp is built
LLAMA_CPP_COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"  # its .git/modules/vendor/llama.cpp/HEAD
# The chat template each format's worker is started with; llama.cpp picks its parser from the template text.
# hermes: Qwen 2.5's template (the Hermes 3 tool-use template gives the same parser: see "Hermes" above).
FORMAT_TEMPLATES = {
    "gemma4": "models/templates/google-gemma-4-31B-it.jinja",
    "hermes": "models/templates/Qwen-Qwen2.5-7B-Instruct.jinja",
}
SHIM_DIR = Path(__file__).resolve().parent / "llama_cpp_shim"
SHIM_FILES = ("shim.cpp", "CMakeLists.txt")
BINARY = "llama-cpp-worker"
JOBS = 2

# Top-level entries of vendor/llama.cpp the build needs (docs, models, tools, tests are left out).
SOURCE_ENTRIES = ("CMakeLists.txt", "LICENSE", "cmake", "common", "ggml", "include", "licenses", "src", "vendor")

# llama.cpp's own options are forced in parsers/llama_cpp_shim/CMakeLists.txt (one list, whose sha256 is in
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
    from harness.sdist import SDIST_SHA256

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
    from harness.sdist import LLAMA_CPP_DIR, SDIST_NAME, SDIST_VERSION, sdist_archive

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
                commit = tar.extractfile(member).read().decode().strip() or commit
                continue
            if not member.name.startswith(vendor):
                continue
            rel = member.name[len(vendor):]
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
    run_step(["cmake", "-S", str(shim), "-B", str(build), *generator, *CMAKE_FLAGS,
              f"-DLLAMA_CPP_DIR={src / 'llama.cpp'}", f"-DLLAMA_BUILD_COMMIT={commit[:9]}",
              "-DLLAMA_BUILD_NUMBER=0", f"-DWORKER_VERSION={version}"], log)
    run_step(["cmake", "--build", str(build), "--target", BINARY, "--parallel", str(JOBS)], log)

    built = build / BINARY
    if not built.exists():
        raise EngineBuildError(f"the build finished but {built} is missing")
    (env_dir / "bin").mkdir(exist_ok=True)
    shutil.copy2(built, env_dir / "bin" / BINARY)
    log(f"built {env_dir / 'bin' / BINARY} ({(env_dir / 'bin' / BINARY).stat().st_size / 1e6:.1f} MB); "
        "removing the build tree and sources")
    shutil.rmtree(build, ignore_errors=True)
    shutil.rmtree(src, ignore_errors=True)


def worker_command(env_dir: Path, version: str) -> tuple[list[str], dict[str, str]]:
    """``llama-cpp-worker --template FORMAT=<template> ...``, one per :data:`FORMAT_TEMPLATES` entry (the sdist's
    Gemma 4 and Qwen 2.5 templates, extracted into the cache)."""
    from harness.sdist import sdist_file

    argv = [str(env_dir / "bin" / BINARY)]
    for fmt, relpath in FORMAT_TEMPLATES.items():
        argv += ["--template", f"{fmt}={sdist_file(relpath)}"]
    return argv, {}


ENGINE = Engine(
    name=NAME,
    default_version=VERSION,
    formats=tuple(FORMAT_TEMPLATES),
    cold_install="~3.5 min on 2 cores (cmake/ninja build of llama.cpp's common library and the shim from the "
                 "cached llama-cpp-python 0.3.36 sdist; needs cmake and a C++17 compiler); 9.4 MB installed",
    recipe=recipe,
    install=install,
    worker_command=worker_command,
    check_version=check_version,
    note="C++ worker over common_chat_templates_apply / common_chat_parse, driven as llama-server drives them",
)

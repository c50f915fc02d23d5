"""Reference adapter: vllm-mlx's tool-call and reasoning parsers behind its OpenAI server's own request handling
(``vllm_mlx.server``), run on text: one-shot, ``_prepare_chat_completion_invocation``, the engine's
``clean_output_text`` and ``_extract_reasoning_and_tool_calls`` (what ``create_chat_completion`` does after
``engine.chat``); streamed, ``stream_chat_completion`` fed one engine output per chunk by a stand-in engine.

Parsers ``vllm-mlx==<installed version>:<format>``, one per :data:`FORMATS` entry (the ``serve`` flags and the
served model of vllm-mlx's docs for that model); :data:`UNSUPPORTED` gives the reason for every other format.
vllm-mlx runs in its own virtualenv (:data:`ENGINE`: the package without its dependencies, plus what
``vllm_mlx.server`` imports) behind ``python -m harness.engines.server parsers.reference.vllm_mlx``. Its parsers
read text only, so no tokenizer is loaded. How it is driven, each setting's source and the measured faults:
``docs/engines/vllm_mlx.md``.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.metadata
import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from harness.core.guards import captured_logs
from harness.core.messages import Message, ToolCall, parse_arguments
from harness.core.protocol import Delta, ToolCallDelta
from harness.engines.spec import PipEngine
from harness.formats import get_format
from parsers.reference._stop_cut import StopCut


def _thinking_off_after(marker: str) -> Callable[[str], bool]:
    """``enable_thinking`` for a case: false when the template pre-filled a closed (empty) reasoning block."""
    return lambda prefix: not prefix.rstrip().endswith(marker)


@dataclass(frozen=True)
class Launch:
    """How ``vllm-mlx serve`` is started for a model of one format, and what a client's request carries."""

    tool_parser: str  # --enable-auto-tool-choice --tool-call-parser
    reasoning_parser: str | None  # --reasoning-parser (None: not given)
    model: str  # the served model (the docs' example, else the catalog repository): the engine's model_name
    # chat_template_kwargs {"enable_thinking": ...} a request sends for a case's prefix (None: none sent)
    thinking: Callable[[str], bool] | None = None


_DEEPSEEK_THINKING = _thinking_off_after("</think>")
# Sources of every entry: docs/engines/vllm_mlx.md, "Parser map".
FORMATS: dict[str, Launch] = {
    "gemma4": Launch("gemma4", "gemma4", "mlx-community/gemma-4-26b-a4b-it-4bit", _thinking_off_after("<channel|>")),
    "hermes": Launch("hermes", None, "NousResearch/Hermes-3-Llama-3.1-8B"),
    "qwen3_coder": Launch("qwen3_coder", None, "Qwen/Qwen3-Coder-30B-A3B-Instruct"),
    "glm45": Launch("glm4", "glm4", "zai-org/GLM-4.5", _DEEPSEEK_THINKING),
    "glm47": Launch("glm47", "glm4", "lmstudio-community/GLM-4.7-Flash-MLX-8bit", _DEEPSEEK_THINKING),
    "ling3": Launch("glm47", "glm4", "inclusionAI/Ling-3.0-flash", _DEEPSEEK_THINKING),
    "llama3_json": Launch("llama", None, "mlx-community/Llama-3.2-3B-Instruct-4bit"),
    "mistral": Launch("mistral", None, "mlx-community/Devstral-Small-2507-4bit"),
    "mistral_reasoning": Launch("mistral", "mistral", "mistralai/Ministral-3-14B-Reasoning-2512"),
    "minimax_m2": Launch("minimax", "qwen3", "MiniMaxAI/MiniMax-M2"),
    "kimi_k2": Launch("kimi", None, "mlx-community/Kimi-K2-Instruct-4bit"),
    "deepseek_v3": Launch(
        "deepseek", "deepseek_r1", "mlx-community/DeepSeek-R1-Distill-Qwen-7B-4bit", _DEEPSEEK_THINKING
    ),
    "deepseek_v4": Launch("deepseek_v4", "deepseek_v4", "deepseek-ai/DeepSeek-V4-Flash", _DEEPSEEK_THINKING),
    "harmony": Launch("harmony", "harmony", "openai/gpt-oss-20b"),
    "functionary_v31": Launch("functionary", None, "meetkai/functionary-medium-v3.1"),
}
# vllm-mlx 0.6.0 registers 38 parser names (19 classes); what none of them reads (docs/engines/vllm_mlx.md).
UNSUPPORTED: dict[str, str] = {
    "deepseek_v31": "no parser reads it: vllm-mlx's deepseek parser (DeepSeek V3 / R1) requires the V3 "
    "'function<｜tool▁sep｜>NAME\\n```json' call, which V3.1 does not write",
    "deepseek_v32": "no parser reads it: the deepseek_v4 (dsml) parser knows <｜DSML｜tool_calls>, not V3.2's "
    "<｜DSML｜function_calls>",
    "deepseek_v41": "no parser reads it: the deepseek_v4 (dsml) parser knows <｜DSML｜tool_calls>, not V4.1's "
    "spaced <｜DSML｜ calls>",
    "llama4_pythonic": "no Llama 4 template offline to render cases; the docs' parser for Llama 4.x (llama) reads "
    "JSON calls, not Llama 4's pythonic [f(a=1)] list",
    "lfm2": "no parser reads <|tool_call_start|>[f(a=1)]<|tool_call_end|> (vllm-mlx has no pythonic parser)",
    "cohere": "no parser reads <|START_ACTION|> calls",
    "command_r": "no parser reads Command R+'s Action: ```json [...]``` block",
    "seed_oss": "no parser reads <seed:tool_call> calls",
    "apriel": "no parser reads Apriel's <tool_calls>[...] JSON list",
    "nemotron_v2": "no parser reads <TOOLCALL>[...]: vllm-mlx's nemotron parser reads Nemotron 3's "
    "<tool_call><function=...> XML",
    "gigachat3": "no parser reads GigaChat's function call<|role_sep|> calls",
    "gigachat31": "no parser reads GigaChat 3.1's <|function_call|> calls",
    "minicpm5": 'no parser reads MiniCPM5\'s <function name="..."> calls',
    "minimax_m3": "no parser reads MiniMax-M3's ]<]minimax[>[<tool_call> calls (the minimax parser reads M2's "
    "<minimax:tool_call>)",
    "functionary_v32": "no parser reads >>>NAME segments: the docs' parser for MeetKai Functionary (functionary) "
    "reads v3.1's <function=NAME> and the older <|recipient|> form",
    "firefunction_v2": "no parser reads FireFunction's functools[...] list",
    "functiongemma": "no parser reads FunctionGemma's <start_function_call> calls (the gemma4 parser reads "
    "<|tool_call>)",
    "kimi_k3": "no parser reads Kimi K3's <|open|>tools<|sep|> calls (the kimi parser reads K2's sections)",
    "apertus": 'no parser reads Apertus\'s <|tools_prefix|>[{"NAME": {...}}] lists',
    "muse_glimmer": "no parser reads Muse Glimmer's <atem:function_calls> blocks (nor its to=NAME messages)",
}


class _Vocabulary:
    """The engine tokenizer the parsers are given: ``get_vocab()`` of the format's protocol and stop tokens. The
    only parser that reads it, mistral's, looks ``[TOOL_CALLS]`` up and never uses the id."""

    def __init__(self, tokens: tuple[str, ...]) -> None:
        self._vocab = {t: i for i, t in enumerate(dict.fromkeys(tokens))}

    def get_vocab(self) -> dict[str, int]:
        return dict(self._vocab)


class _Engine:
    """The stand-in for ``SimpleEngine``: what the server reads of its engine (``model_name``, ``tokenizer``, the
    prompt ``_apply_chat_template`` renders for the implicit-thinking probe: the case prefix, which ends the real
    prompt) and ``stream_chat``, an async generator of the ``GenerationOutput`` objects :meth:`put` queues (None
    ends it). ``waiting`` is set while it waits for the next one."""

    is_mllm = False

    def __init__(self, launch: Launch, vocabulary: _Vocabulary, prefix: str) -> None:
        self.model_name = launch.model
        self.tokenizer = vocabulary
        self._prompt_end = prefix
        self.queue: asyncio.Queue = asyncio.Queue()
        self.waiting = asyncio.Event()

    def _apply_chat_template(self, messages: list, **kwargs: Any) -> str:
        return self._prompt_end

    async def stream_chat(self, messages: list, **kwargs: Any):
        while True:
            self.waiting.set()
            output = await self.queue.get()
            self.waiting.clear()
            if output is None:
                return
            yield output


class _Runtime:
    """The vllm-mlx objects one parser instance shares across calls (vllm-mlx imported here, lazily), and the
    server's configuration for its format, set on the ``vllm_mlx.server`` module for each call (one worker
    serves every format, and the server keeps its configuration in module globals)."""

    def __init__(self, fmt: str) -> None:
        self.format, self.config = fmt, FORMATS[fmt]
        self.spec = get_format(fmt)
        from vllm_mlx import server
        from vllm_mlx.api.models import AssistantMessage, ChatCompletionRequest
        from vllm_mlx.api.utils import clean_output_text
        from vllm_mlx.engine.base import GenerationOutput
        from vllm_mlx.reasoning import get_parser
        from vllm_mlx.tool_parsers import ToolParserManager

        logging.getLogger("vllm_mlx").setLevel(logging.WARNING)  # its per-request INFO lines, off stderr
        self.server, self.AssistantMessage, self.clean_output_text = server, AssistantMessage, clean_output_text
        self.ChatCompletionRequest, self.GenerationOutput = ChatCompletionRequest, GenerationOutput
        ToolParserManager.get_tool_parser(self.config.tool_parser)  # KeyError for a name this version lacks
        # cli.serve_command: the --reasoning-parser instance, made once.
        reasoning = self.config.reasoning_parser
        self._reasoning = get_parser(reasoning)() if reasoning else None
        self._tool_instance = None  # the server's cached non-streaming tool parser (_get_or_init_tool_parser)
        self.vocabulary = _Vocabulary(self.spec.markers + self.spec.stop_markers)

    @contextmanager
    def serving(self, diagnostics: list[str]) -> Iterator[None]:
        """The server configured as ``cli.serve_command`` sets it up for this format, its warnings collected."""
        server = self.server
        server._enable_auto_tool_choice = True
        server._tool_call_parser = self.config.tool_parser
        server._tool_parser_instance = self._tool_instance
        server._reasoning_parser = self._reasoning
        server._reasoning_parser_name = self.config.reasoning_parser
        server._default_chat_template_kwargs = None
        try:
            with captured_logs("vllm_mlx", diagnostics):
                yield
        finally:
            self._tool_instance = server._tool_parser_instance

    def request(self, tools: list | None, prefix: str, stream: bool) -> tuple[Any, _Engine, Any]:
        """The client's request (validated as the HTTP layer validates the body), the engine, and the server's
        prepared invocation (``_prepare_chat_completion_invocation``: chat kwargs with the stop strings)."""
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": [{"role": "user", "content": "Please help me with this request."}],
            "stream": stream,
        }
        if self.config.thinking is not None:
            body["chat_template_kwargs"] = {"enable_thinking": self.config.thinking(prefix)}
        if tools:  # an empty list is sent as no tools, as the other engine adapters send it
            body["tools"] = tools
        request = self.ChatCompletionRequest.model_validate(body)
        engine = _Engine(self.config, self.vocabulary, prefix)
        server = self.server
        prepared = server._prepare_chat_completion_invocation(
            engine, request, server._resolve_request_max_tokens(request.max_tokens)
        )
        return request, engine, prepared

    def stop_cut(self, prepared: Any) -> StopCut:
        """Where generation ends: at an eos token of the model (the format's stop markers; mlx-lm never
        detokenizes one), or after one of the request's stop strings (``LLM.stream_generate`` keeps its text)."""
        return StopCut(self.spec.stop_markers, tuple(prepared.chat_kwargs.get("stop") or ()))

    def notes(self, request: Any, text: str, cut: StopCut) -> list[str]:
        notes = []
        if cut.stopped is not None and cut.ignored:
            notes.append(f"generation stops at {cut.stopped!r}: {cut.ignored} characters after it never reach vllm-mlx")
        if not request.tools and self.spec.call_open in text:
            notes.append("the request declares no tools: vllm-mlx's server skips tool parsing")
        return notes


class VllmMlxParser:
    """vllm-mlx's tool parser and reasoning parser for ``format`` (:data:`FORMATS`) behind its server.

    ``parse(text, tools, prefix) -> Message``; ``stream(tools, prefix)`` -> :class:`VllmMlxStream`. Construction
    imports vllm-mlx (raises ``ImportError`` when it is missing, ``KeyError`` when it lacks the parser).
    Exceptions the server does not swallow propagate.
    """

    library = "vllm-mlx"
    incremental = True

    def __init__(self, format: str) -> None:
        self.format, self.formats = format, (format,)
        self.version = importlib.metadata.version("vllm-mlx")
        self.name = f"vllm-mlx=={self.version}:{format}"
        self._rt = _Runtime(format)

    def parse(self, text: str, tools: list | None = None, prefix: str = "") -> Message:
        rt, server = self._rt, self._rt.server
        diagnostics: list[str] = []
        with rt.serving(diagnostics):
            request, engine, prepared = rt.request(tools, prefix, stream=False)
            cut = rt.stop_cut(prepared)
            generated = cut.feed(text) + cut.flush()
            # SimpleEngine.chat: the output text is cleaned of special tokens; then create_chat_completion.
            reasoning, cleaned, tool_calls = server._extract_reasoning_and_tool_calls(
                rt.clean_output_text(generated),
                request,
                allow_reasoning=not server._thinking_disabled(request, prepared.chat_kwargs),
                engine=engine,
            )
            message = rt.AssistantMessage(
                content=rt.clean_output_text(cleaned) if cleaned else None, reasoning=reasoning, tool_calls=tool_calls
            )
        return Message(
            content=message.content or None,
            reasoning=message.reasoning or None,
            tool_calls=[
                ToolCall(tc.function.name, parse_arguments(tc.function.arguments)) for tc in message.tool_calls or []
            ],
            diagnostics=diagnostics + rt.notes(request, text, cut),
        )

    def stream(self, tools: list | None = None, prefix: str = "") -> VllmMlxStream:
        return VllmMlxStream(self._rt, tools, prefix)


class VllmMlxStream:
    """One streamed chat completion: ``stream_chat_completion`` runs on an event loop of its own; each ``feed`` is
    one engine output (one generated token's text), ``finish`` the final one (no text, ``finished``). The deltas
    are the SSE chunks the server yields in between. ``diagnostics``: vllm-mlx warnings, the stop and no-tools
    notes."""

    def __init__(self, rt: _Runtime, tools: list | None, prefix: str) -> None:
        self._rt = rt
        self.diagnostics: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._sse: list[str] = []
        self._text = ""
        self._generated = ""
        self._finished = False
        with rt.serving(self.diagnostics):
            self._request, self._engine, prepared = rt.request(tools, prefix, stream=True)
            self._cut = rt.stop_cut(prepared)
            # _build_chat_streaming_response, without its transport wrappers (disconnect guard, [DONE] guard).
            events = rt.server.stream_chat_completion(
                self._engine,
                prepared.messages,
                self._request,
                thinking_processor=prepared.thinking_processor,
                **prepared.chat_kwargs,
            )
            self._task = self._loop.create_task(self._collect(events))
            self._run()

    async def _collect(self, events: Any) -> None:
        async for event in events:
            self._sse.append(event)

    def _run(self) -> list[Delta]:
        """Run the server until it waits for the next engine output (or ends); the deltas it yielded."""

        async def settle() -> None:
            waiter = asyncio.ensure_future(self._engine.waiting.wait())
            await asyncio.wait({waiter, self._task}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()

        self._loop.run_until_complete(settle())
        if self._task.done():
            self._task.result()  # the server's exception, if it raised
        events, self._sse = self._sse, []
        return _deltas(events)

    def _output(self, text: str, finished: bool) -> list[Delta]:
        self._generated += text
        output = self._rt.GenerationOutput(
            text=self._generated, new_text=text, finished=finished, finish_reason="stop" if finished else None
        )
        self._engine.waiting.clear()
        self._engine.queue.put_nowait(output)
        with self._rt.serving(self.diagnostics):
            return self._run()

    def feed(self, chunk: str, token_ids: list[int] | None = None) -> list[Delta]:
        self._text += chunk
        if self._finished:
            return []
        text = self._cut.feed(chunk)
        if self._cut.stopped in self._cut.kept_markers:  # a stop string: its output is the last
            self._finished = True
            return self._output(text, finished=True)
        return self._output(text, finished=False) if text else []

    def finish(self) -> list[Delta]:
        deltas: list[Delta] = []
        if not self._finished:
            held = self._cut.flush()
            if held:
                deltas += self._output(held, finished=False)
            # SimpleEngine.stream_generate: the eos token ends the iterator; the last output has no text.
            deltas += self._output("", finished=True)
            self._finished = True
        self._engine.waiting.clear()
        self._engine.queue.put_nowait(None)
        with self._rt.serving(self.diagnostics):
            deltas += self._run()
        self._loop.close()
        self.diagnostics += self._rt.notes(self._request, self._text, self._cut)
        return deltas


def _deltas(events: list[str]) -> list[Delta]:
    """The ``data: {...}`` SSE chunks as harness deltas (``reasoning_content`` is the server's reasoning field)."""
    deltas = []
    for event in events:
        body = event.strip().removeprefix("data: ")
        if body == "[DONE]":
            continue
        for choice in json.loads(body).get("choices") or []:
            delta = choice.get("delta") or {}
            calls = []
            for tc in delta.get("tool_calls") or []:
                fn = tc.get("function") or {}
                calls.append(ToolCallDelta(tc.get("index", 0), fn.get("name"), fn.get("arguments"), tc.get("id")))
            content, reasoning = delta.get("content"), delta.get("reasoning_content")
            if content or reasoning or calls:
                deltas.append(Delta(content=content or None, reasoning=reasoning or None, tool_calls=calls))
    return deltas


PARSERS = [functools.partial(VllmMlxParser, fmt) for fmt in FORMATS]


# --------------------------------------------------------------------------------------------------------------
# the engine: vllm-mlx without its dependencies, plus what its server module imports


def _steps(version: str) -> list[list[str]]:
    """pip steps (measured for 0.6.0): what ``import vllm_mlx.server`` needs, in the ranges vllm-mlx 0.6.0
    declares (mlx as ``mlx[cpu]``: mlx-lm's own mlx dependency is macOS-only; python-multipart for its upload
    routes), then vllm-mlx itself without dependencies (they pull mlx-vlm, gradio, torchvision, opencv, mcp, ...)."""
    return [
        [
            "install",
            "mlx[cpu]>=0.29.0",
            "mlx-lm>=0.31.3,<0.32.0",
            "transformers>=5.0.0",
            "fastapi>=0.100.0",
            "starlette>=1.0.1",
            "uvicorn>=0.23.0",
            "jsonschema>=4.0.0",
            "requests>=2.28.0",
            "python-multipart",
        ],
        ["install", "--no-deps", f"vllm-mlx=={version}"],
    ]


def _check_engine_version(version: str) -> None:
    """The adapter drives the server functions of 0.6 (``_prepare_chat_completion_invocation``,
    ``_extract_reasoning_and_tool_calls``, ``stream_chat_completion``), measured with 0.6.0 only."""
    parts = version.split(".")
    try:
        major_minor = (int(parts[0]), int(parts[1]))
    except (IndexError, ValueError):
        raise ValueError(f"not a release number: {version!r}") from None
    if major_minor < (0, 6):
        raise ValueError(f"the vllm-mlx adapter drives the server of vllm-mlx 0.6 and later; {version} predates it")


ENGINE = PipEngine(
    name="vllm-mlx",
    default_version="0.6.0",
    formats=tuple(FORMATS),
    cold_install="about 1 min on 2 cores (mlx CPU wheel, mlx-lm, transformers, vllm-mlx without its deps), 390 MB",
    steps=_steps,
    worker_module="parsers.reference.vllm_mlx",
    check_version=_check_engine_version,
).engine()

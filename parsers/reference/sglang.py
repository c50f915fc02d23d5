"""Reference adapter: SGLang's reasoning and tool-call parsers (``ReasoningParser``, ``FunctionCallParser``) driven as
its OpenAI server drives them (``sglang/srt/entrypoints/openai/serving_chat.py``: one-shot ``_build_chat_response``
/ ``_process_tool_calls``, streaming ``_process_reasoning_stream`` / ``_process_tool_call_stream``).

Parsers ``sglang==<installed version>:<format>``, one per :data:`FORMATS` entry (how the server is launched for
that format, :mod:`parsers.reference._sglang_formats`); :data:`UNSUPPORTED` gives the reason for every other format.
SGLang runs in its own virtualenv (:data:`ENGINE`, CPU torch) behind ``python -m harness.engines.server
parsers.reference.sglang``; library calls past :data:`CALL_LIMIT_S` are stopped (:class:`LibraryHang`). How it
is driven, each setting's source and the measured faults: ``docs/engines/sglang.md``.
"""

from __future__ import annotations

import functools
import importlib.metadata
import inspect
import json
import logging
import os
from typing import Any

from harness.core.guards import captured_logs, time_limit
from harness.core.messages import Message, ToolCall, parse_arguments
from harness.core.protocol import Delta, ToolCallDelta
from harness.engines.spec import PipEngine
from parsers.reference._sglang_formats import FORMATS, UNSUPPORTED, Launch  # noqa: F401 (UNSUPPORTED: re-exported)

VERSION = "0.5.23"


# Seconds one library call may take before the adapter stops it (docs/engines/sglang.md, "Hangs"); the
# slowest call measured on the corpus takes 5 ms. Below the harness' default per-call limit (10 s).
CALL_LIMIT_S = 5.0

# Dependencies measured to import sglang's parsers without its CUDA stack (shared/notes/reference_parsers.md).
# torch==2.13.0 is named explicitly: on the harness machines it resolves to the local CPU wheel
# (torch-2.13.0+cpu); left to sglang's own requirements pip would pull a CUDA torch and its >5 GB of libraries.
DEPENDENCIES = (
    "torch==2.13.0",
    "transformers==5.19.0",
    "pydantic",
    "orjson",
    "partial_json_parser",
    "msgspec",
    "regex",
    "xgrammar==0.2.7",
    "openai==2.8.0",
    "openai-harmony==0.0.4",
    "psutil",
    "pybase64",
    "requests",
    "pillow",
    "starlette",
    "pyzmq",
    "IPython",
    "aiohttp",
)


def _steps(version: str) -> list[list[str]]:
    return [["install", *DEPENDENCIES], ["install", "--no-deps", f"sglang=={version}"]]


ENGINE = PipEngine(
    name="sglang",
    default_version=VERSION,
    formats=tuple(FORMATS),
    cold_install="about 1 min on 2 cores from this machine's package mirrors (55-75 s measured; about 2.5 min "
    "downloading from PyPI), 2.5 GB (CPU torch, no CUDA packages); the worker imports in about 3.5 s",
    steps=_steps,
    worker_module="parsers.reference.sglang",
    note="sglang installed with --no-deps over a CPU torch; only its parser modules are imported",
    # an SGLang checkout keeps its package in python/ (its docs: `pip install -e "python"`)
    project_dirs=("", "python"),
).engine()


def restore_kept_stop(text: str, config: Launch) -> str:
    """The output text as the server's detokenizer hands it to the parsers: ``text`` plus the stop token the
    detokenizer keeps (``config.kept_stop``) when the generation must have stopped on it.

    Harmony (the only such format): ``trim_matched_stop`` (``sglang/srt/managers/detokenizer_manager.py``)
    keeps ``<|call|>`` (id 200012) when the server runs the ``gpt-oss`` tool-call parser; the generation
    stopped on ``<|call|>`` exactly when its last message is addressed to a tool (``to=`` in the header of the
    last ``<|message|>``), since ``<|return|>`` ends a final answer and ``<|end|>`` does not stop."""
    stop = config.kept_stop
    if not stop or text.endswith(stop):
        return text
    body = text.rfind("<|message|>")
    if body < 0:
        return text
    head = text.rfind("<|start|>", 0, body)
    return text + stop if "to=" in text[max(head, 0) : body] else text


class _Runtime:
    """The SGLang classes one parser instance uses (imported once, lazily: sglang is only in the engine's venv),
    and what the server computes once at start-up for its flags."""

    def __init__(self, fmt: str) -> None:
        from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest, ToolChoice
        from sglang.srt.function_call.function_call_parser import FunctionCallParser
        from sglang.srt.parser.reasoning_parser import ReasoningParser

        self.config = config = FORMATS[fmt]
        self.ChatCompletionRequest = ChatCompletionRequest
        self.ToolChoice = ToolChoice
        self.FunctionCallParser = FunctionCallParser
        self.ReasoningParser = ReasoningParser
        # the server refuses to start with an unknown parser name; so does the adapter
        if config.tool_call_parser not in FunctionCallParser.ToolCallParserEnum:
            raise ValueError(
                f"sglang {importlib.metadata.version('sglang')} has no tool-call parser {config.tool_call_parser!r}"
            )
        self.detector_class = FunctionCallParser.ToolCallParserEnum[config.tool_call_parser]
        # Older releases (0.5.4.post2: no template detection, FunctionCallParser(tools, tool_call_parser)) get
        # only the arguments their constructors take, as their own server passed (docs: "Older releases").
        self.parser_args = set(inspect.signature(FunctionCallParser.__init__).parameters)
        self.reasoning_args = set(inspect.signature(ReasoningParser.__init__).parameters)
        self.template_detection = _has_module("sglang.srt.parser.template_detection")
        # OpenAIServingChat.__init__: a streaming ReasoningParser built once, whose detector's
        # ``reasoning_default`` decides thinking when the template has no toggle config.
        self.reasoning_default = None
        if config.reasoning_parser is not None:
            detector = ReasoningParser(model_type=config.reasoning_parser, stream_reasoning=True).detector
            self.reasoning_default = getattr(detector, "reasoning_default", None)

    def request(self, tools: list | None, prefix: str) -> Any:
        """The chat request a client sends for this case (only the fields the parsers read matter)."""
        return self.ChatCompletionRequest(
            model=self.config.model_name,
            messages=[{"role": "user", "content": "."}],
            tools=tools or None,
            chat_template_kwargs=self.config.request_kwargs(prefix),
        )

    def reasoning_from_request(self, request: Any) -> bool:
        """``OpenAIServingChat._get_reasoning_from_request`` (the branches for this adapter's parsers); without
        template detection, the older server's ``_get_enable_thinking_from_request``."""
        if not self.config.reasoning_parser:
            return False
        kwargs = request.chat_template_kwargs
        if self.config.reasoning_parser == "minimax-m3":  # its own branch: the template's thinking_mode
            return (kwargs or {}).get("thinking_mode") == "enabled"
        if not self.template_detection:
            key = {"qwen3": "enable_thinking", "glm45": "enable_thinking", "deepseek-v3": "thinking"}
            name = key.get(self.config.reasoning_parser)
            return bool(kwargs and name and kwargs.get(name, False))
        toggle = self.config.template_toggle
        if toggle is None:  # parser-level default (the detector's reasoning_default)
            mode = self.reasoning_default
            if mode is None:
                return False
            if mode == "always":
                return True
            if mode in ("thinking", "enable_thinking"):
                return not kwargs or kwargs.get(mode) is not False
            if mode in ("explicit_thinking", "explicit_enable_thinking"):
                return kwargs is not None and kwargs.get(mode.replace("explicit_", "")) is True
            return False  # the server logs "Unknown reasoning_default mode"
        if toggle.special_case == "always":
            return True
        if toggle.toggle_param is None or toggle.default_enabled is None:
            return False
        if toggle.default_enabled:
            return not kwargs or kwargs.get(toggle.toggle_param) is not False
        return kwargs is not None and kwargs.get(toggle.toggle_param) is True


class _Call:
    """State of one request: the request object, its tools and the server's decisions about it."""

    def __init__(self, rt: _Runtime, tools: list | None, prefix: str):
        self.rt = rt
        self.config = config = rt.config
        self.request = rt.request(tools, prefix)
        self.tools = list(self.request.tools or [])  # _effective_tools (no system-message tools)
        self.force_reasoning = config.template_force_reasoning or rt.reasoning_from_request(self.request)
        # _tool_call_parsing_active: with tools, tool_choice != "none"; without, whether the detector parses
        # markup for undeclared tools (``parses_without_tools()``; False for every parser used here)
        parses_without_tools = getattr(rt.detector_class, "parses_without_tools", lambda: False)
        self.tool_parsing_active = self.request.tool_choice != "none" if self.tools else parses_without_tools()
        # ``self.reasoning_parser and request.separate_reasoning`` in the server
        self.separate_reasoning = config.reasoning_parser is not None and self.request.separate_reasoning
        self.diagnostics: list[str] = []

    def reasoning_parser(self, stream_reasoning: bool) -> Any:
        kwargs = {"request": self.request, "tool_call_parser_active": self.tool_parsing_active}
        return self.rt.ReasoningParser(
            model_type=self.config.reasoning_parser,
            stream_reasoning=stream_reasoning,
            force_reasoning=self.force_reasoning,
            **{k: v for k, v in kwargs.items() if k in self.rt.reasoning_args},
        )

    def function_call_parser(self) -> Any:
        kwargs = {
            "tool_choice": self.request.tool_choice,
            "prefix": getattr(self.request, "_response_parser_prefix", ""),
            "constrained": False,
        }
        return self.rt.FunctionCallParser(
            tools=self.tools,
            tool_call_parser=self.config.tool_call_parser,
            **{k: v for k, v in kwargs.items() if k in self.rt.parser_args},
        )


def _captured_sglang_logs(sink: list[str]):
    """Collect what SGLang logs through its ``sglang.*`` loggers meanwhile, and keep it off the console."""
    return captured_logs("sglang", sink, level=logging.DEBUG, keep_off_console=True)


class LibraryHang(TimeoutError):
    """A library call ran past :data:`CALL_LIMIT_S` and was interrupted (the worker answers ``timeout``)."""


def _time_limit(what: str):
    """Interrupt the calls made meanwhile after :data:`CALL_LIMIT_S` seconds with :class:`LibraryHang`, naming
    the function SGLang was in (``SIGALRM``: only in the main thread of a Unix process, i.e. the worker)."""

    def hang(frame) -> LibraryHang:
        where = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_code.co_name}" if frame else "?"
        return LibraryHang(
            f"sglang did not return within {CALL_LIMIT_S:g} s ({what}; stopped in {where}): "
            f"it loops, as the server would"
        )

    return time_limit(CALL_LIMIT_S, hang)


class SglangParser:
    """SGLang's reasoning + tool-call parsers for ``format`` (:data:`FORMATS`) behind its OpenAI server's logic.

    ``parse(text, tools, prefix) -> Message``; ``stream(tools, prefix)`` → :class:`SglangStream`. Construction
    imports sglang (about 3.5 s) and raises ``ImportError`` where it is not installed.
    """

    library = "sglang"
    incremental = True

    def __init__(self, format: str) -> None:
        self.format, self.formats = format, (format,)
        self.version = importlib.metadata.version("sglang")
        self.name = f"sglang=={self.version}:{format}"
        self._rt = _Runtime(format)

    def parse(self, text: str, tools: list | None = None, prefix: str = "") -> Message:
        """``_build_chat_response`` for one choice: reasoning first, then ``_process_tool_calls``."""
        call = _Call(self._rt, tools, prefix)
        calls: list[ToolCall] = []
        text = restore_kept_stop(text, call.config)
        with _captured_sglang_logs(call.diagnostics), _time_limit("one-shot parse"):
            reasoning_text = None
            if call.separate_reasoning:
                reasoning_text, text = call.reasoning_parser(stream_reasoning=False).parse_non_stream(text)
            if call.tool_parsing_active:
                calls, text = self._process_tool_calls(call, text)
        return Message(
            content=text or None, reasoning=reasoning_text or None, tool_calls=calls, diagnostics=call.diagnostics
        )

    @staticmethod
    def _process_tool_calls(call: _Call, text: str) -> tuple[list[ToolCall], str]:
        """``OpenAIServingChat._process_tool_calls`` with tool_choice "auto": the calls and the content text as
        the server returns them; what it swallows is recorded in ``call.diagnostics``."""
        parser = call.function_call_parser()
        tool_choice = call.request.tool_choice
        is_required = tool_choice == "required" or isinstance(tool_choice, call.rt.ToolChoice)
        should_try_parser = not is_required or getattr(parser, "owns_tool_format", lambda: False)()
        if not (should_try_parser and parser.has_tool_call(text)):
            return [], text
        try:
            normal_text, items = parser.parse_non_stream(text)
        except LibraryHang:  # the server would still be looping, not catching
            raise
        except Exception as exc:  # the server logs "Tool call parsing error" and keeps the text as it was
            call.diagnostics.append(
                f"sglang server: tool call parsing error ({type(exc).__name__}: {exc}); the text stays content"
            )
            return [], text
        if not items:
            call.diagnostics.append(
                "sglang server: tool call marker present but no complete call parsed; dropping the incomplete call"
            )
            return [], normal_text
        return [ToolCall(item.name, parse_arguments(item.parameters)) for item in items], normal_text

    def stream(self, tools: list | None = None, prefix: str = "") -> SglangStream:
        return SglangStream(_Call(self._rt, tools, prefix))


class SglangStream:
    """One streamed request: each ``feed`` is one step of ``_generate_stream_content`` (the generated text grew
    by ``chunk``); ``finish`` is the final step (empty delta with a finish reason: both parsers flush).

    Deltas come out in the server's order: reasoning, then content, then one delta per tool-call item
    (``index`` = the item's ``tool_index``, ``name`` on the first item of a call only, ``arguments`` = the
    item's JSON fragment). ``token_ids`` are ignored: SGLang's parsers read decoded text only.
    """

    def __init__(self, call: _Call):
        self._call = call
        self.diagnostics = call.diagnostics
        with _captured_sglang_logs(call.diagnostics):
            self._reasoning = (
                call.reasoning_parser(stream_reasoning=call.request.stream_reasoning)
                if call.separate_reasoning
                else None
            )
            self._tools = call.function_call_parser() if call.tool_parsing_active else None
        self._finished = False
        self._text = ""  # what was fed, for restore_kept_stop

    def feed(self, chunk: str, token_ids: list[int] | None = None) -> list[Delta]:
        self._text += chunk
        return self._step(chunk, finish=False)

    def finish(self) -> list[Delta]:
        """The last step; a stop token the detokenizer keeps arrives in it (see :func:`restore_kept_stop`)."""
        return self._step(restore_kept_stop(self._text, self._call.config)[len(self._text) :], finish=True)

    def _step(self, delta: str, finish: bool) -> list[Delta]:
        if self._finished:
            raise RuntimeError("stream already finished")
        self._finished = finish
        out: list[Delta] = []
        with _captured_sglang_logs(self.diagnostics), _time_limit("finish" if finish else "feed"):
            if self._reasoning is not None:  # _process_reasoning_stream
                reasoning_text, delta = self._reasoning.parse_stream_chunk(delta)
                if finish and hasattr(self._reasoning, "parse_stream_end"):  # older releases: no flush
                    end_reasoning, end_normal = self._reasoning.parse_stream_end()
                    if end_reasoning:
                        reasoning_text = (reasoning_text or "") + end_reasoning
                    if end_normal:
                        delta = (delta or "") + end_normal
                if reasoning_text:
                    out.append(Delta(reasoning=reasoning_text))
            delta = delta or ""
            if self._tools is None:  # the server's plain-content branch
                if delta:
                    out.append(Delta(content=delta))
                return out
            # _process_tool_call_stream
            normal_text, items = self._tools.parse_stream_chunk(delta)
            if finish and hasattr(self._tools, "parse_stream_end"):
                end_text, end_items = self._tools.parse_stream_end()
                normal_text = (normal_text or "") + end_text
                items = list(items) + list(end_items)
            if normal_text:
                out.append(Delta(content=normal_text))
            for item in items:
                out.append(
                    Delta(
                        tool_calls=[
                            ToolCallDelta(index=item.tool_index, name=item.name or None, arguments=item.parameters)
                        ]
                    )
                )
            if finish:
                rest = _unstreamed_tool_args(self._tools)
                if rest is not None:
                    out.append(Delta(tool_calls=[ToolCallDelta(index=rest[0], arguments=rest[1])]))
        return out


def _has_module(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def _unstreamed_tool_args(parser: Any) -> tuple[int, str] | None:
    """``OpenAIServingChat._check_for_unstreamed_tool_args``: the arguments text of the last tracked call that
    was not streamed yet, as ``(index, text)``, or ``None``."""
    detector = getattr(parser, "detector", parser)
    prev = getattr(detector, "prev_tool_call_arr", None)
    streamed = getattr(detector, "streamed_args_for_tool", None)
    if not prev or not streamed:
        return None
    index = len(prev) - 1
    if index < 0 or index >= len(streamed):
        return None
    expected = prev[index].get("arguments", {})
    expected_text = expected if isinstance(expected, str) else json.dumps(expected, ensure_ascii=False)
    actual = streamed[index]
    remaining = expected_text[len(actual) :] if expected_text.startswith(actual) else ""
    return (index, remaining) if remaining else None


def served_formats() -> list[str]:
    """The :data:`FORMATS` whose tool-call and reasoning parsers the installed sglang has (an older release lacks
    newer ones: 0.5.4.post2 has no ``gemma4``); every one where sglang is not installed."""
    if not _has_module("sglang"):
        return list(FORMATS)
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    reasoning = {name.lower() for name in getattr(ReasoningParser, "DetectorMap", {})}
    return [
        fmt
        for fmt, launch in FORMATS.items()
        if launch.tool_call_parser in FunctionCallParser.ToolCallParserEnum
        and (launch.reasoning_parser is None or not reasoning or launch.reasoning_parser in reasoning)
    ]


PARSERS = [functools.partial(SglangParser, fmt) for fmt in served_formats()]

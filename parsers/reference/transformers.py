"""Reference adapter: transformers' response parser with its built-in response templates, read as ``transformers serve``
reads it (one-shot ``parse_response`` + ``parse_assistant_message``; streaming ``ResponseParser`` +
``response_events_to_chunks``).

Parsers ``transformers==<installed version>:<format>``, one per :data:`FORMATS` entry (the model type whose
built-in template the server falls back to, and that model's generation-prompt end); :data:`UNSUPPORTED` gives the
reason for every other format. In-process (transformers is a dependency of the harness) and, at other versions, as
the ``transformers`` engine. How it is driven, each setting's source and the measured faults:
``docs/engines/transformers.md``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from harness.core.messages import Message, ToolCall, parse_arguments
from harness.core.protocol import Delta, ToolCallDelta
from harness.engines.spec import PipEngine


@dataclass(frozen=True)
class Launch:
    """How ``transformers serve`` parses the output of one format's models."""

    model_type: str  # whose built-in response template the server falls back to (_RESPONSE_TEMPLATE_FALLBACKS)
    generation_prompt_tail: str  # the end of that model's generation prompt: the template's start_anchor


FORMATS: dict[str, Launch] = {
    "gemma4": Launch("gemma4", "<|turn>model\n"),
    # The fallback keyed by qwen2 ... qwen3_vl_moe: Qwen 2.5's and Qwen3's JSON-in-<tool_call> format. Hermes 3
    # (model type llama) has none: served by transformers it needs a response template of its own.
    "hermes": Launch("qwen2", "<|im_start|>assistant\n"),
    # The fallback keyed by qwen3_5 ...: the only built-in template for the <tool_call><function=NAME><parameter=KEY>
    # markup that Qwen3-Coder and Nemotron-3-Nano write (docs/engines/transformers.md, "Qwen3-Coder").
    "qwen3_coder": Launch("qwen3_5", "<|im_start|>assistant\n"),
}
UNSUPPORTED: dict[str, str] = {
    fmt: "no built-in response template (transformers.cli.serving.utils._RESPONSE_TEMPLATE_FALLBACKS has none for "
    "its models' types)"
    for fmt in (
        "glm45",
        "glm47",
        "minimax_m2",
        "llama3_json",
        "mistral",
        "mistral_reasoning",
        "kimi_k2",
        "deepseek_v3",
        "kimi_k3",
        "deepseek_v31",
        "deepseek_v32",
        "deepseek_v4",
        "deepseek_v41",
        "firefunction_v2",
        "functionary_v31",
        "functionary_v32",
        "harmony",
        "functiongemma",
        "llama4_pythonic",
        "lfm2",
        "cohere",
        "command_r",
        "minimax_m3",
        "ling3",
        "seed_oss",
        "apriel",
        "nemotron_v2",
        "gigachat3",
        "gigachat31",
        "minicpm5",
        "apertus",
        "muse_glimmer",
    )
}


def builtin_template(model_type: str) -> dict:
    """The response template ``transformers serve`` falls back to for ``model_type`` (a dict, as the library
    holds it). Raises ``LookupError`` if the installed transformers has no fallback keyed by it."""
    from transformers.cli.serving.utils import _RESPONSE_TEMPLATE_FALLBACKS

    for model_types, template in _RESPONSE_TEMPLATE_FALLBACKS.items():
        if model_type in model_types:
            return template
    raise LookupError(
        f"transformers has no built-in response template for {model_type!r}; keys: {list(_RESPONSE_TEMPLATE_FALLBACKS)}"
    )


class TransformersParser:
    """transformers' response parser with the built-in template of ``format`` (:data:`FORMATS`).

    ``parse(text, tools, prefix) -> Message``; ``stream(tools, prefix)`` → :class:`TransformersStream`.
    ``tools`` are OpenAI-style declarations; the library uses them to cast string arguments to the declared
    JSON-schema types. Raises ``ImportError`` at construction when transformers is missing, ``LookupError``
    when this version has no built-in template for the format.
    """

    library = "transformers"
    incremental = True

    def __init__(self, format: str) -> None:
        import inspect

        import transformers
        from transformers.cli.serving import utils as serving_utils
        from transformers.utils.chat_parsing.response_templates import load_response_template

        self.format, self.formats = format, (format,)
        self.version = transformers.__version__
        self.name = f"transformers=={self.version}:{format}"
        self._server_passes_tools = "tools" in inspect.signature(serving_utils.parse_assistant_message).parameters
        launch = FORMATS[format]
        self.model_type, self._prompt_tail = launch.model_type, launch.generation_prompt_tail
        self.template_dict = builtin_template(self.model_type)
        self._template = load_response_template(self.template_dict)

    def parse(self, text: str, tools: list | None = None, prefix: str = "") -> Message:
        """One-shot parse; raises ``ValueError`` where the library does."""
        from transformers.utils.chat_parsing import parse_response

        parsed = parse_response(text, self._template, prefix=self._prompt_tail + prefix, tools=self._tools(tools))
        return message_from_parsed(parsed)

    def stream(self, tools: list | None = None, prefix: str = "") -> TransformersStream:
        return TransformersStream(self._template, self._tools(tools), self._prompt_tail + prefix)

    def _tools(self, tools: list | None) -> list | None:
        """``tools`` when this version's server passes them to the parser (``parse_assistant_message`` has a
        ``tools`` parameter, as in 5.24), else None (older servers parse without them)."""
        return tools if self._server_passes_tools else None


def message_from_parsed(parsed: dict) -> Message:
    """Map the library's message dict to a :class:`Message` as ``parse_assistant_message`` reads it."""
    from transformers.cli.serving.utils import _normalize_tool_call
    from transformers.utils import chat_template_utils

    # Before 5.2x the server read only "thinking" (``parsed.get("thinking")`` in parse_assistant_message).
    fields = getattr(chat_template_utils, "_REASONING_FIELDS", ("thinking",))
    reasoning = next((parsed[f] for f in fields if parsed.get(f) is not None), None)
    calls = []
    for raw in parsed.get("tool_calls") or []:
        call = _normalize_tool_call(raw)
        calls.append(ToolCall(call.name, parse_arguments(call.arguments)))
    return Message(content=parsed.get("content") or None, reasoning=reasoning or None, tool_calls=calls)


class TransformersStream:
    """One streaming session over ``ResponseParser``; deltas as ``transformers serve`` emits them.

    Content and reasoning text arrive as the parser releases it (it holds back only bytes that may start a
    delimiter); a tool call arrives whole — name and complete arguments JSON — when its region closes.
    ``diagnostics`` lists what ``finish`` swallowed (the server's ``finalize()`` error handling).
    """

    def __init__(self, template: Any, tools: list | None, full_prefix: str):
        from transformers.utils.chat_parsing import ResponseParser

        self._parser = ResponseParser(template, prefix=full_prefix, tools=tools)
        self._tool_index = 0
        self.diagnostics: list[str] = []
        # Events from consuming the prefix (e.g. the empty pre-filled thought channel) go out first.
        self._pending = self._deltas(self._parser.initial_events)

    def feed(self, chunk: str, token_ids: list[int] | None = None) -> list[Delta]:
        """Feed decoded text (``token_ids`` is ignored); raises ``ValueError`` where the library does."""
        out, self._pending = self._pending, []
        out.extend(self._deltas(self._parser.feed(chunk)))
        return out

    def finish(self) -> list[Delta]:
        out, self._pending = self._pending, []
        try:
            _message, events = self._parser.finalize()
        except (ValueError, RuntimeError) as exc:  # as DirectStreamer.end / CBStreamer.end do
            self.diagnostics.append(
                f"transformers serve drops the final events: ResponseParser.finalize() failed: "
                f"{type(exc).__name__}: {exc}"
            )
            events = []
        out.extend(self._deltas(events))
        return out

    def _deltas(self, events: list[dict]) -> list[Delta]:
        from transformers.cli.serving.utils import ReasoningText, response_events_to_chunks
        from transformers.cli.serving.utils import ToolCall as ServerToolCall

        deltas = []
        for item in response_events_to_chunks(events):
            if isinstance(item, ServerToolCall):
                deltas.append(Delta(tool_calls=[ToolCallDelta(self._tool_index, item.name, item.arguments)]))
                self._tool_index += 1
            elif isinstance(item, ReasoningText):
                deltas.append(Delta(reasoning=str(item)))
            else:
                deltas.append(Delta(content=item))
        return deltas


#: transformers and mlx-lm are installed in the harness' own environment: the registry also runs these in-process.
IN_PROCESS = True
PARSERS = [functools.partial(TransformersParser, fmt) for fmt in FORMATS]

# transformers at another version than the main environment's, in its own virtualenv, serving this same
# adapter over the worker protocol. 5.16.0 is the oldest release whose server has the Gemma 4 response
# template; its Gemma 4 key quoting also rewrites key-like text inside string values (fixed later).
ENGINE = PipEngine(
    name="transformers",
    default_version="5.16.0",
    formats=tuple(FORMATS),
    cold_install="about 20 s, 270 MB",
    steps=lambda version: [["install", f"transformers=={version}", "jinja2"]],
    worker_module="parsers.reference.transformers",
).engine()

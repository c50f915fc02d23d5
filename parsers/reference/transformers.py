"""Reference adapter: transformers' own response parser with its built-in Gemma 4 and Qwen response templates.

One parser per format (:data:`FORMATS`: the model type whose built-in template ``transformers serve`` falls back
to, and that model's generation-prompt end): ``transformers==5.24.0:gemma4`` (:class:`TransformersGemma4Parser`,
described first), ``transformers==5.24.0:hermes`` (:class:`TransformersHermesParser`, section "Hermes" below) and
``transformers==5.24.0:qwen3_coder`` (:class:`TransformersQwen3CoderParser`, section "Qwen3-Coder"). The other
formats have no built-in template (section "Formats without a built-in template", :data:`UNSUPPORTED`).

Library calls (transformers 5.24.0, the version pinned in ``pyproject.toml``; the adapter reads the
installed version at run time and names itself after it):

- template: the value of ``transformers.cli.serving.utils._RESPONSE_TEMPLATE_FALLBACKS`` whose key tuple
  contains ``"gemma4"`` — the fallback ``transformers serve`` uses for ``model_type == "gemma4"`` — compiled
  once with ``transformers.utils.chat_parsing.response_templates.load_response_template``;
- one-shot: ``transformers.utils.chat_parsing.parse_response(text, template, prefix=..., tools=...)`` →
  ``{"role", "content"?, "reasoning_content"?, "tool_calls"?: [{"type", "function": {"name", "arguments"}}]}``,
  read the way ``transformers.cli.serving.utils.parse_assistant_message`` reads it (reasoning from the first
  of ``chat_template_utils._REASONING_FIELDS``, each call through ``_normalize_tool_call``, which turns the
  arguments into a JSON string, decoded here with :func:`harness.core.messages.parse_arguments`);
- streaming: ``transformers.utils.chat_parsing.ResponseParser(template, prefix=..., tools=...)``;
  ``initial_events`` and every ``.feed(chunk)``'s events go through the server's own
  ``transformers.cli.serving.utils.response_events_to_chunks`` (``str`` → content delta, ``ReasoningText`` →
  reasoning delta, ``ToolCall`` → one tool-call delta with the whole arguments JSON, numbered 0, 1, ... in
  arrival order as ``chat_completion.py`` numbers them); ``.finalize()`` closes the stream.

Prefix: the server passes ``prefix=tokenizer.decode(input_ids)`` — the whole rendered prompt — and the
parser keeps only what follows the template's last ``start_anchor`` (``"<|turn>model\\n"`` or
``"<tool_response|>"``; ``ResponseTemplate.truncate_past_last_anchor``), then runs that tail through the
parser (``ResponseParser._consume_prefix``). A case's ``prefix`` holds only the text the chat template
pre-fills after the generation prompt (``"<|channel>thought\\n<channel|>"`` with thinking off, ``""`` with it
on), so the adapter passes ``"<|turn>model\\n" + prefix``: the anchor is found as in the server and the
parser sees exactly the tail it sees in the server (passing the bare pre-fill would give the same tail for
Gemma 4, but only by the library's "anchor not found, use the whole prefix" fallback, which it logs).

Errors, as in the server: a region the library cannot parse raises ``ValueError`` (from the ``json``
content parser) — from ``parse`` and from ``feed`` (where the server aborts the stream with an error).
At ``finish`` the server catches ``ValueError``/``RuntimeError`` from ``finalize()`` and drops the final
events (``DirectStreamer.end``); the session does the same and records the reason in its ``diagnostics``.

Measured behaviour (transformers 5.24.0): tool names must match ``\\w+`` (``manim-video`` or ``ns.f`` raise);
nested objects and arrays parse; bare ``null`` parses to None but the template's own rendering of null,
``None``, raises; a ``<tool_call|>`` inside a ``<|"|>`` string ends the region early and raises; ASCII quotes
inside strings are fine; one-shot ``content`` is stripped and only the *last* content region survives
(``"Sure.<call>Done."`` → ``"Done."``) while streaming delivers every piece unstripped (``"Sure.Done."``;
reasoning ``"I think\n"`` streamed vs ``"I think"`` one-shot); an unclosed call at the end still parses.

Hermes (``transformers==5.24.0:hermes``): transformers has a real parsing API for this format -- the built-in
response template keyed by ``("qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl", "qwen3", ...)``, the fallback
``transformers serve`` uses for Qwen 2.5 and Qwen3 checkpoints: ``start_anchor`` ``"<|im_start|>assistant\\n"``,
reasoning between ``<think>`` and ``</think>``, repeated ``tool_calls`` regions opened by ``\\s*<tool_call>`` and
closed by ``</tool_call>`` holding ``{"name", "arguments"}`` JSON, content closed by ``<|im_end|>`` /
``<|endoftext|>`` / ``<|eot_id|>``. Hermes 3 (model type ``llama``) has no fallback: served by transformers it
would need a response template in its own checkpoint. Same calls as for Gemma 4, with prefix
``"<|im_start|>assistant\\n" + case prefix``. (5.16.0, the engine's default, has the same template with the
reasoning field named ``thinking``.)

Measured behaviour (Hermes texts rendered by the Qwen 2.5 template; one-shot, streamed whole, by characters and
by token-like pieces): one and several calls, nested values, escapes, non-ASCII, ``null``, calls to undeclared
tools, calls without newlines, ``<tool_call>`` or ``<|im_end|>`` inside a string: parsed, every mode alike;
``\\s*<tool_call>`` swallows the newline before a call (content ``"Let me check."`` everywhere); ``<think>`` is
reasoning (``"hmm"`` one-shot, ``"\\nhmm\\n"`` streamed); text after the calls: ``"Done."`` one-shot (only the
last content region, stripped), ``"\\nDone."`` streamed. Faults:

- ``</tool_call>`` inside a string value closes the region there and the json content parser raises
  ``ValueError`` ("could not parse region as JSON ... Unterminated string"), one-shot and streaming alike (the
  server answers an error / aborts the stream);
- a call without ``"arguments"``: ``KeyError: 'arguments'`` from the server's ``_normalize_tool_call``;
- Qwen3's thinking-off pre-fill ``"<think>\\n\\n</think>\\n\\n"`` as prefix: streaming emits the pre-filled empty
  block's whitespace (``initial_events``: reasoning ``"\\n\\n"``, content ``"\\n\\n"`` before the first chunk);
  one-shot does not.

Qwen3-Coder (``transformers==5.24.0:qwen3_coder``): transformers 5.24.0 holds three built-in response templates
(``transformers.cli.serving.utils._RESPONSE_TEMPLATE_FALLBACKS``, keyed by model type: Qwen 2 / Qwen3, Qwen 3.5,
Gemma 4) and no other (``transformers/utils/chat_parsing`` ships none; model repositories may add their own
``response_template`` to ``tokenizer_config.json``, which the offline hub cannot show). The Qwen 3.5 one, keyed by
``("qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text")`` (5.16.0: ``("qwen3_5", "qwen3_5_moe")``, reasoning
field ``thinking``), reads exactly the markup Qwen3-Coder and Nemotron-3-Nano write: ``open_pattern``
``\\s*<tool_call>\\s*<function=(?P<name>[^>\\n]+)>``, ``close_pattern`` ``</function>\\s*</tool_call>`` (``utils.py``
lines 237-238), arguments by the ``xml-inline`` content parser with ``tag_pattern``
``<parameter=(?P<key>[^>\\n]+)>\\s*(?P<value>.*?)\\s*</parameter>`` (line 242), ``<think>`` reasoning, content closed by
``<|im_end|>`` / ``<|endoftext|>``, ``start_anchor`` ``"<|im_start|>assistant\\n"`` (the Qwen3-Coder generation prompt's
end). It is the only built-in template for this format, so it is this format's reference. Caveat: ``transformers
serve`` picks it by model type only, and the catalog's models are not of a Qwen 3.5 type: Qwen3-Coder-30B-A3B is
``qwen3_moe``, which falls back to the Qwen 2 / Qwen3 JSON template (its ``json`` content parser rejects
``<function=...>``: every call is an error, see the tests), and Nemotron-3-Nano (``nemotron_h``) has none (no
parsing at all). Serving them with transformers' parser means giving the tokenizer this template
(``tokenizer.response_template``), which is what this adapter models. Same calls as for Gemma 4, prefix
``"<|im_start|>assistant\\n" + case prefix``.

Measured behaviour (texts rendered by the Qwen3-Coder and Nemotron-3-Nano templates; every mode alike unless
said): one and two calls, content before the calls, ``</tool_call>`` inside a string value (the region closes only
on ``</function>`` + ``</tool_call>``): parsed. Values are text cast by the request's tool schema
(``transformers/utils/chat_parsing/response_parser.py``, ``_coerce``, lines 43-70: the declared types tried in
order, ``string`` and failed casts keep the text); the 5.16.0 server passes no tools, so every value stays a string
there. Faults:

- the ``tag_pattern``'s ``\\s*`` around the value (``utils.py`` line 242) strips every value: a whitespace-only
  string becomes ``""`` and a value's own leading or trailing newlines are lost (``wrong_argument_value``);
- a value ends at the first ``</parameter>`` and a call at the first ``</function>`` + ``</tool_call>`` inside it;
- under a schema allowing several types, ``_coerce`` takes the first that casts: ``"001"`` under
  ``anyOf [integer, string]`` becomes ``1`` (``response_parser.py`` lines 45-47);
- Nemotron-3-Nano writes ``\\n`` after each ``</tool_call>``. On the case text, which ends there (the harness
  removes the stop token), that newline opens the implicit content region, and its close at the end of the text
  overwrites the content before the calls with ``""``: one-shot loses that content, streaming keeps it
  (``stream_diverges``). This is not what the server sees: ``generate_non_streaming`` keeps the stop token in
  ``generated_ids`` (``utils.py`` line 888, ``sequences[0, input_len:]``), and with ``<|im_end|>`` at the end the
  content ``close_pattern`` ``\\s*<|im_end|>`` swallows the newline and the content survives (tested);
- Nemotron-3-Nano's pre-fills reach the parser as the case prefix after the start anchor
  (``"<|im_start|>assistant\\n" + prefix``, consumed by ``ResponseParser._consume_prefix``): thinking off
  (``<think></think>``) closes an empty reasoning block, thinking on (``<think>\\n``) leaves the parser inside the
  reasoning region, so a thinking-on text's ``REASONING\\n</think>`` is reasoning in every mode.

Formats without a built-in template (not registered, :data:`UNSUPPORTED`): ``glm45``, ``glm47``, ``minimax_m2``,
``llama3_json``, ``mistral``, ``kimi_k2``, ``deepseek_v31``, ``deepseek_v32``, ``harmony``, ``functiongemma``:
``_RESPONSE_TEMPLATE_FALLBACKS`` has no entry for their models' types (e.g. ``llama`` for Llama 3.x, ``gpt_oss``,
``deepseek_v3``), so ``transformers serve`` returns their raw text unparsed unless the checkpoint's tokenizer
brings its own ``response_template``, and transformers ships no template a user could select for them.
"""

from __future__ import annotations

from typing import Any

from harness.core.messages import Message, ToolCall, parse_arguments
from harness.core.protocol import Delta, ToolCallDelta
from harness.engines.spec import PipEngine

# Per format: the model type whose built-in response template ``transformers serve`` falls back to, and the end
# of that model's generation prompt (the template's start_anchor).
FORMATS: dict[str, tuple[str, str]] = {
    "gemma4": ("gemma4", "<|turn>model\n"),
    # The fallback keyed by qwen2 ... qwen3_vl_moe: Qwen 2.5's and Qwen3's JSON-in-<tool_call> format. Hermes 3
    # (model type llama) has none: served by transformers it needs a response template of its own.
    "hermes": ("qwen2", "<|im_start|>assistant\n"),
    # The fallback keyed by qwen3_5 ...: the only built-in template for the <tool_call><function=NAME><parameter=KEY>
    # markup that Qwen3-Coder and Nemotron-3-Nano write (see "Qwen3-Coder" in the module docstring).
    "qwen3_coder": ("qwen3_5", "<|im_start|>assistant\n"),
}
# Formats transformers has no built-in response template for (see "Formats without a built-in template").
UNSUPPORTED: dict[str, str] = {
    fmt: "no built-in response template (transformers.cli.serving.utils._RESPONSE_TEMPLATE_FALLBACKS has none for "
    "its models' types)"
    for fmt in (
        "glm45",
        "glm47",
        "minimax_m2",
        "llama3_json",
        "mistral",
        "kimi_k2",
        "deepseek_v31",
        "deepseek_v32",
        "harmony",
        "functiongemma",
    )
}
# The end of the Gemma 4 generation prompt, i.e. the start_anchor of the built-in response template.
GENERATION_PROMPT_TAIL = FORMATS["gemma4"][1]


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


def builtin_gemma4_template() -> dict:
    """The Gemma 4 response template ``transformers serve`` falls back to (``model_type == "gemma4"``)."""
    return builtin_template("gemma4")


def server_prefix(prefix: str, fmt: str = "gemma4") -> str:
    """The ``prefix=`` the adapter passes for a case prefix: the generation prompt's tail plus the pre-fill."""
    return FORMATS[fmt][1] + prefix


class TransformersParser:
    """transformers' response parser with the built-in template of one format (see the module docstring);
    subclasses fix the format.

    ``parse(text, tools, prefix) -> Message``; ``stream(tools, prefix)`` → :class:`TransformersStream`.
    ``tools`` are OpenAI-style declarations; the library uses them to cast string arguments to the declared
    JSON-schema types. Raises ``ImportError`` at construction when transformers is missing, ``LookupError``
    when this version has no built-in template for the format.
    """

    library = "transformers"
    format = ""
    incremental = True

    def __init__(self) -> None:
        import transformers
        from transformers.utils.chat_parsing.response_templates import load_response_template

        self.formats = (self.format,)
        self.version = transformers.__version__
        self.name = f"transformers=={self.version}:{self.format}"
        import inspect

        from transformers.cli.serving import utils as serving_utils

        self._server_passes_tools = "tools" in inspect.signature(serving_utils.parse_assistant_message).parameters
        self.model_type, self._prompt_tail = FORMATS[self.format]
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


class TransformersGemma4Parser(TransformersParser):
    """The built-in Gemma 4 response template (``model_type == "gemma4"``)."""

    format = "gemma4"


class TransformersHermesParser(TransformersParser):
    """The built-in Qwen2/Qwen3 response template (``model_type == "qwen2"``): JSON between ``<tool_call>`` and
    ``</tool_call>``, reasoning between ``<think>`` and ``</think>``."""

    format = "hermes"


class TransformersQwen3CoderParser(TransformersParser):
    """The built-in Qwen 3.5 response template (``model_type == "qwen3_5"``): ``<tool_call><function=NAME>`` regions
    whose ``<parameter=KEY>VALUE</parameter>`` pairs the ``xml-inline`` content parser reads."""

    format = "qwen3_coder"


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
PARSERS = [TransformersGemma4Parser, TransformersHermesParser, TransformersQwen3CoderParser]

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

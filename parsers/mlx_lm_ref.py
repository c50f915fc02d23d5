"""Reference adapter: mlx-lm's Gemma 4 and Hermes (JSON) tool parsers, driven the way ``mlx_lm.server`` drives them.

One parser per format (:data:`FORMATS`: the tool-parser module, the special tokens of the vocabulary, the end
of the generation prompt and the stop tokens): ``mlx-lm==0.32.2:gemma4`` (:class:`MlxLmGemma4Parser`, described
first) and ``mlx-lm==0.32.2:hermes`` (:class:`MlxLmHermesParser`, section "Hermes" at the end).

mlx-lm has no per-format streaming parser; its server splits the decoded text of each generated token
with a text state machine and parses every tool-call segment once it closes. This adapter runs those same
library objects on text (mlx-lm 0.32.2, the version pinned in ``pyproject.toml``; the installed version is
read at run time and names the parser):

- ``mlx_lm.tokenizer_utils.TokenizerWrapper(tokenizer, tool_call_start=..., tool_call_end=...,
  tool_parser=...)`` built as ``mlx_lm.tokenizer_utils.load`` builds it for a tokenizer whose tool parser is
  ``mlx_lm.tool_parsers.gemma4`` (``tool_call_start="<|tool_call>"``, ``tool_call_end="<tool_call|>"``,
  ``parse_tool_call``). The wrapped tokenizer is a character-level stand-in (:class:`_CharTokenizer`) whose
  vocabulary holds the Gemma 4 special tokens, so the library's own ``_infer_thinking`` picks
  ``think_start="<|channel>thought"`` / ``think_end="<channel|>"`` from it;
- ``mlx_lm.generate.make_text_state_machine(wrapper, stop_words=[])`` → ``TextStateMachine`` with the
  transitions normal→reasoning on ``<|channel>thought``, reasoning→normal on ``<channel|>``, normal/reasoning
  →tool on ``<|tool_call>``, tool→normal on ``<tool_call|>``; the state machine matches *text* (its docstring:
  robust to tokenization), so it runs unchanged on strings;
- the initial state as ``mlx_lm.server.ResponseGenerator._tokenize`` picks it: ``reasoning`` when the prompt's
  last ``think_start`` comes after its last ``think_end`` (``wrapper.rfind_think_start/rfind_think_end`` on
  the prompt ``"<|turn>model\\n" + prefix``, encoded one token per character; with the real tokenizer the
  search runs on token ids — same answer for the Gemma 4 prompts, which either close the thought channel or
  never open it);
- per chunk, the loop body of ``mlx_lm.server.APIHandler.handle_completion`` (mirrored here, since it is not
  a function): ``TextStateMachine.split`` → text routed by state into content, reasoning and tool text; a
  tool segment is collected when the state returns to ``normal``; streaming emits a chunk whenever the state
  is not ``tool`` and something is pending; at the end a ``finish_reason="stop"`` step
  (``TextStateMachine.discard``: partial markers held back are dropped) and a still-open tool segment is kept;
- tool segments go through the server's own ``mlx_lm.server.ToolCallFormatter(tool_parser, tools, stream)``,
  which calls ``mlx_lm.tool_parsers.gemma4.parse_tool_call(segment, tools)`` and, on ``ValueError`` /
  ``JSONDecodeError``, logs a warning and **drops the call**. The adapter returns what the server returns
  and records each warning in ``Message.diagnostics`` (and the session's ``diagnostics``); the warning is
  captured, not printed.

End of generation: the server never decodes the final stop token. Gemma 4 generation ends on ``<eos>``,
``<turn|>`` or ``<|tool_response>`` (``harness.formats.gemma4.SPEC.stop_markers``, llama.cpp's stop set for
this vocabulary); the adapter treats the first of them in the text as that token: text before it is parsed,
the marker and anything after it never reach the library (recorded in diagnostics when non-empty).

Other versions (the ``mlx-lm`` engine, e.g. ``mlx-lm==0.31.3:gemma4``): the same adapter runs in the engine's
own virtualenv and follows the installed version's server:

- 0.31.x tracks states on token ids inside the generator: ``ResponseGenerator._generate`` matches each token
  against the ``SequenceStateMachine`` that ``ResponseGenerator._make_state_machine`` builds, and
  ``_process_control_tokens`` blanks the text of matched marker sequences before ``handle_completion`` sorts
  each token's text by its state. The adapter calls those three (``_make_state_machine`` on a stand-in
  ``self`` holding only its cache) with the stand-in tokenizer's one id per character, so markers are matched
  as the character sequences they spell, and runs the loop body once per token (:class:`_TokenLoop`). The
  states need the whole generation, so streaming collects the text and replays the token loop at ``finish``
  (the server's SSE chunks, all sent at the end). No eos ids are declared: the stop token is cut as text.
- 0.32.0 advances ``TextStateMachine`` with ``step`` (one state for a whole generated piece) where 0.32.2
  calls ``split``, and has no ``response_initial_state``; the adapter calls whichever the installed version
  has. A piece that holds a marker and text (the one-shot replay, where the whole generation is one piece)
  therefore fails in 0.32.0 and passes in 0.31.3 and 0.32.2; token by token the three agree.
- Releases before 0.31 are refused (``_check_engine_version``); 0.31.0 and 0.31.1 ship no Gemma 4 parser (the
  worker then fails to start, and the parser is reported unavailable with the ``ImportError``).

Measured behaviour (mlx-lm 0.32.2): names match ``[\\w-]+`` (``manim-video`` parses; ``ns.f`` is dropped with
"No function provided."); nested objects and arrays parse; bare ``null`` → None, the template's ``None`` →
dropped (JSONDecodeError); ``<tool_call|>`` inside a string ends the segment early, the call is dropped and
the rest of the string lands in content; ASCII quotes inside strings are fine; content before and after
calls is concatenated unstripped; reasoning keeps the ``\\n`` after ``<|channel>thought``.

Hermes (``mlx-lm==0.32.2:hermes``): ``mlx_lm.tool_parsers.json_tools`` (``tool_call_start="<tool_call>"``,
``tool_call_end="</tool_call>"``, ``parse_tool_call(text, tools) = json.loads(text.strip())``), the module
``tokenizer_utils._infer_tool_parser`` picks for a chat template holding ``<tool_call>`` and ``tool_call.name``
(Qwen 2.5's and Hermes 3's). The stand-in vocabulary holds the format's special tokens (``<tool_call>``,
``</tool_call>``, ``<|im_start|>``, ``<|im_end|>``, ``<tool_response>``, ``</tool_response>``, ``<|endoftext|>``)
and, like Qwen 2.5's and Hermes 3's vocabularies, no ``<think>``: ``_infer_thinking`` finds no thinking, so the
loop starts and stays in ``normal`` (a Qwen3 vocabulary has ``<think>``; Qwen3's reasoning is not modelled
here). Generation ends at ``<|im_end|>`` or ``<|endoftext|>``; the generation prompt ends
``"<|im_start|>assistant\\n"``.

Measured behaviour (0.32.2; Hermes texts rendered by the Qwen 2.5 template; one-shot, streamed whole, by
characters and by token-like pieces, every mode alike): one and several calls, nested values, escapes,
non-ASCII, ``null``, calls to undeclared tools, calls without newlines, ``<tool_call>`` inside a string: parsed.
Text outside the segments is content, unstripped: ``"Let me check.\\n"`` before a call, the ``"\\n"`` between two
calls, ``"\\n\\nDone."`` after two; ``<think>`` blocks stay content. Faults:

- ``</tool_call>`` inside a string value ends the segment: the call is dropped (``JSONDecodeError``, the
  server's warning in ``diagnostics``) and the rest of the string leaks into content (``' b"}}\\n</tool_call>'``);
- ``<|im_end|>`` inside a string value is the stop token: generation ends there and the cut call is dropped;
- a call without ``"arguments"`` raises ``KeyError`` in ``ToolCallFormatter._format``, which the server does not
  catch (the request fails);
- ``"arguments"`` written as a JSON string is JSON-encoded again: the call's arguments are a string.

Older versions through the engine: 0.31.3 agrees with 0.32.2 on the Hermes texts; 0.32.0's ``step`` (one state
per generated piece) finds no call in any piece that holds ``<tool_call>`` and text together (one-shot and
whole: the JSON ends up in content), as for Gemma 4.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import os
import threading
import types
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

from harness.engine_spec import PipEngine
from harness.formats import gemma4 as _gemma4_format
from harness.formats import hermes as _hermes_format
from harness.model import Message, ToolCall, parse_arguments
from harness.protocol import Delta, ToolCallDelta



# Special tokens of each model family's vocabulary: all the wrapper reads of it (``_infer_thinking`` looks for
# ``<think>``/``</think>``; the text state machine matches marker text). Sources in the module docstring.
_GLM_VOCAB = ("<|endoftext|>", "[MASK]", "[gMASK]", "[sMASK]", "<sop>", "<eop>", "<|system|>", "<|user|>",
              "<|assistant|>", "<|observation|>", "<think>", "</think>", "<tool_call>", "</tool_call>",
              "<tool_response>", "</tool_response>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>",
              "/nothink")
_QWEN3_VOCAB = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>",
                "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>",
                "<tool_response>", "</tool_response>", "<think>", "</think>")
_MINIMAX_VOCAB = ("]~!b[", "]~b]", "[e~[", "<think>", "</think>", "<minimax:tool_call>", "</minimax:tool_call>")
_MISTRAL_VOCAB = ("<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
                  "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
                  "[TOOL_CONTENT]", "[ARGS]", "[CALL_ID]")
_KIMI_K2_VOCAB = ("[BOS]", "[EOS]", "<|im_end|>", "<|im_user|>", "<|im_assistant|>", "<|start_header_id|>",
                  "<|end_header_id|>", "[EOT]", "<|im_system|>", "<|tool_calls_section_begin|>",
                  "<|tool_calls_section_end|>", "<|tool_call_begin|>", "<|tool_call_argument_begin|>",
                  "<|tool_call_end|>", "<|im_middle|>", "[UNK]", "[PAD]")
_FUNCTIONGEMMA_VOCAB = ("<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>",
                        "<start_function_declaration>", "<end_function_declaration>", "<start_function_call>",
                        "<end_function_call>", "<start_function_response>", "<end_function_response>", "<escape>")


@dataclass(frozen=True)
class FormatConfig:
    """What ``mlx_lm.tokenizer_utils.load`` would set up for a model of one format: its tool parser module, the
    special tokens of its vocabulary (all the wrapper inspects), the end of its generation prompt and its stop
    tokens."""

    tool_module: str                       # mlx_lm.tool_parsers.<tool_module>
    special_tokens: tuple[str, ...]        # the stand-in vocabulary (thinking is inferred from it)
    generation_prompt_tail: str
    stop_markers: tuple[str, ...]          # the text of the tokens generation stops on


FORMATS: dict[str, FormatConfig] = {
    # tool parser inferred from a template holding "<|tool_call>" and "<tool_call|>"; thinking from the
    # <|channel>/<channel|> tokens. Stop tokens: llama.cpp's stop set for this vocabulary.
    "gemma4": FormatConfig("gemma4", _gemma4_format.SPEC.markers + ("<eos>", "<bos>"), "<|turn>model\n",
                           _gemma4_format.SPEC.stop_markers),
    # json_tools: what _infer_tool_parser picks for a template holding "<tool_call>" and "tool_call.name" (Qwen
    # 2.5's and Hermes 3's). The vocabulary has no <think>/</think> (Qwen 2.5, Hermes 3), so mlx-lm infers no
    # thinking; generation stops at <|im_end|> (or <|endoftext|>).
    "hermes": FormatConfig("json_tools", _hermes_format.SPEC.markers + ("<|endoftext|>",),
                           "<|im_start|>assistant\n", _hermes_format.SPEC.stop_markers),
    # The formats below: see "Newer formats" in the module docstring for where each fact comes from. Tool parser:
    # what ``_infer_tool_parser`` picks for the catalog presets' templates; vocabulary: the special tokens of the
    # model's tokenizer; prompt tail: the generation prompt of the request (thinking off where the template has a
    # switch); stop markers: the format's (``harness.formats.<format>.SPEC.stop_markers``).
    "glm45": FormatConfig("glm47", _GLM_VOCAB, "<|assistant|>\n<think></think>",
                          ("<|user|>", "<|observation|>", "<|endoftext|>")),
    "glm47": FormatConfig("glm47", _GLM_VOCAB, "<|assistant|></think>",
                          ("<|user|>", "<|observation|>", "<|endoftext|>")),
    "qwen3_coder": FormatConfig("qwen3_coder", _QWEN3_VOCAB, "<|im_start|>assistant\n",
                                ("<|im_end|>", "<|endoftext|>")),
    "minimax_m2": FormatConfig("minimax_m2", _MINIMAX_VOCAB, "]~b]ai\n<think>\n", ("[e~[",)),
    "mistral": FormatConfig("mistral", _MISTRAL_VOCAB, "[/INST]", ("</s>",)),
    "kimi_k2": FormatConfig("kimi_k2", _KIMI_K2_VOCAB, "<|im_assistant|>assistant<|im_middle|>", ("<|im_end|>",)),
    "functiongemma": FormatConfig("function_gemma", _FUNCTIONGEMMA_VOCAB, "<start_of_turn>model\n",
                                  ("<start_function_response>", "<end_of_turn>", "<eos>")),
}
# Formats mlx-lm has no tool parser for (see "Not supported" in the module docstring).
UNSUPPORTED: dict[str, str] = {
    "llama3_json": "no tool parser: _infer_tool_parser finds none of its markers in the Llama 3.1 / 3.2 templates "
                   "and the vocabulary has no <|tool_call_start|>",
    "deepseek_v31": "no tool parser: _infer_tool_parser finds none of its markers in the DeepSeek-V3.1 template",
    "deepseek_v32": "no tool parser: mlx-lm ships a DeepSeek-V3.2 chat template (mlx_lm/chat_templates/deepseek_v32.py)"
                    " but no tool_parsers module for its DSML calls",
    "harmony": "no tool parser: _infer_tool_parser finds none of its markers in the gpt-oss template",
}
_SERVER_PATH = os.path.join("mlx_lm", "server.py")


class _CharTokenizer:
    """Character-level stand-in for the HF tokenizer inside ``TokenizerWrapper``: one id per character
    (``ord``), plus a vocabulary naming the Gemma 4 special tokens, which is all the wrapper inspects."""

    chat_template = None
    eos_token_id = None

    def __init__(self, special_tokens: tuple[str, ...]):
        self._vocab = {token: 0x110000 + i for i, token in enumerate(special_tokens)}

    def get_vocab(self) -> dict[str, int]:
        return dict(self._vocab)

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [ord(ch) for ch in text]

    def decode(self, ids: list[int], **kwargs: Any) -> str:
        return "".join(chr(i) for i in ids if i < 0x110000)

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the stand-in tokenizer only drives mlx-lm's text state machine")


class _Runtime:
    """The mlx-lm objects one parser instance shares across calls (built once; imports mlx lazily)."""

    def __init__(self, fmt: str) -> None:
        self.config = config = FORMATS[fmt]
        # ``mlx_lm.generate`` is also the name of a function re-exported by ``mlx_lm``: import by path.
        generate = importlib.import_module("mlx_lm.generate")
        server = importlib.import_module("mlx_lm.server")
        tokenizer_utils = importlib.import_module("mlx_lm.tokenizer_utils")
        tool_module = importlib.import_module(f"mlx_lm.tool_parsers.{config.tool_module}")

        self.tool_module = tool_module
        self.server = server
        # Before 0.32 the server tracks states on token ids inside the generator (``SequenceStateMachine``);
        # the stop token never reaches it here (``_StopCut`` ends the text), so no eos ids are declared.
        self.per_token = not hasattr(generate, "TextStateMachine")
        self.tokenizer = tokenizer_utils.TokenizerWrapper(
            _CharTokenizer(config.special_tokens),
            tool_call_start=tool_module.tool_call_start,
            tool_call_end=tool_module.tool_call_end,
            tool_parser=tool_module.parse_tool_call,
            **({"eos_token_ids": []} if self.per_token else {}),
        )
        if not self.per_token:
            self.text_sm = generate.make_text_state_machine(self.tokenizer, [])
            self.TextStateMachine = generate.TextStateMachine
        self.ToolCallFormatter = server.ToolCallFormatter

    def token_states(self, text: str, initial: str) -> Iterator[tuple[str | None, str]]:
        """mlx-lm 0.31: ``(state, text)`` per generated token as ``handle_completion`` receives them — the
        state machine of ``ResponseGenerator._make_state_machine`` matched token by token (as
        ``ResponseGenerator._generate`` does), then ``_process_control_tokens`` blanking the text of matched
        marker sequences. Tokens are characters (the stand-in tokenizer), so markers are matched as the
        character sequences they spell."""
        server = self.server
        holder = types.SimpleNamespace(_state_machine_cache={})
        sm, sequences = server.ResponseGenerator._make_state_machine(holder, None, self.tokenizer, [],
                                                                      initial_state=initial)

        def generated():
            state = sm.make_state()
            for token in self.tokenizer.encode(text, add_special_tokens=False):
                state, match, current = sm.match(state, token)
                finish = "stop" if match is not None and current is None else None
                yield server.Response(self.tokenizer.decode([token]), token, current, match, 0.0, finish, ())

        for response in server._process_control_tokens(types.SimpleNamespace(sequences=sequences), generated()):
            yield response.state, response.text

    def initial_state(self, prompt: str) -> str:
        """``ResponseGenerator._tokenize``'s choice between ``normal`` and ``reasoning``."""
        tokenizer = self.tokenizer
        state = "normal"
        if tokenizer.has_thinking:
            ids = tokenizer.encode(prompt, add_special_tokens=False)
            if tokenizer.rfind_think_start(ids) > tokenizer.rfind_think_end(ids):
                state = "reasoning"
        # ``response_initial_state`` exists from 0.32.2 on (the 0.32.0 server has no such override).
        if "response_initial_state" not in dir(type(tokenizer)):
            return state
        return tokenizer.response_initial_state or state


@contextmanager
def _captured_server_warnings() -> Iterator[list[str]]:
    """Collect (and keep off the console) the warnings ``mlx_lm.server`` logs on the root logger from this
    thread. Temporarily: a root-logger filter, a NullHandler when the root has none (so ``logging.warning``
    does not call ``basicConfig``), and level WARNING when the root is set higher."""
    messages: list[str] = []
    thread = threading.get_ident()

    def _filter(record: logging.LogRecord) -> bool:
        if record.thread == thread and record.pathname.endswith(_SERVER_PATH):
            messages.append(record.getMessage())
            return False
        return True

    root = logging.getLogger()
    null = logging.NullHandler() if not root.handlers else None
    level = root.level
    if null is not None:
        root.addHandler(null)
    if not root.isEnabledFor(logging.WARNING):
        root.setLevel(logging.WARNING)
    root.addFilter(_filter)
    try:
        yield messages
    finally:
        root.removeFilter(_filter)
        root.setLevel(level)
        if null is not None:
            root.removeHandler(null)


class _StopCut:
    """Ends the text at the first stop marker, as a stop token ends generation; holds back a chunk tail
    that may be the start of one (chunks are arbitrary, a real stop token is never split)."""

    def __init__(self, stop_markers: tuple[str, ...]) -> None:
        self.stop_markers = stop_markers
        self._held = ""
        self.stopped: str | None = None
        self.ignored = 0

    def feed(self, chunk: str) -> str:
        if self.stopped is not None:
            self.ignored += len(chunk)
            return ""
        text = self._held + chunk
        hits = [(text.find(m), m) for m in self.stop_markers if m in text]
        if hits:
            pos, marker = min(hits)
            self.stopped, self._held = marker, ""
            self.ignored += len(text) - pos - len(marker)
            return text[:pos]
        keep = max((n for m in self.stop_markers for n in range(1, len(m)) if text.endswith(m[:n])), default=0)
        self._held = text[len(text) - keep:] if keep else ""
        return text[: len(text) - keep]

    def flush(self) -> str:
        held, self._held = self._held, ""
        return held


class _ServerLoop:
    """State of one ``handle_completion`` request: the loop body per generated chunk, and its ending."""

    def __init__(self, runtime: _Runtime, tools: list | None, prefix: str, stream: bool):
        self.rt, self.stream = runtime, stream
        self.formatter = runtime.ToolCallFormatter(runtime.tokenizer.tool_parser, tools, stream)
        initial = runtime.initial_state(runtime.config.generation_prompt_tail + prefix)
        self.initial = initial
        self.sm_state = None if runtime.per_token else runtime.text_sm.make_state(initial)
        self.prev_state = initial
        self.current_state = initial
        self.text = ""
        self.reasoning_text = ""
        self.tool_text = ""
        self.tool_calls: list[str] = []
        self.made_tool_call = False
        self.cut = _StopCut(runtime.config.stop_markers)
        self.diagnostics: list[str] = []

    def step(self, chunk: str) -> list[dict]:
        """One generated chunk; returns the stream chunks the server would send (``[]`` when not streaming)."""
        text = self.cut.feed(chunk)
        return self._step(text) if text else []

    def finish(self) -> list[dict]:
        """The final stop step and the closing response; returns the remaining stream chunks (or, when not
        streaming, one dict: the complete ``{text, reasoning_text, tool_calls}``)."""
        out = []
        held = self.cut.flush()
        if held:
            out.extend(self._step(held))
        out.extend(self._step("", finish_reason="stop"))
        return out + self._close()

    def _close(self) -> list[dict]:
        """After the last generated piece: keep a still-open tool segment, send the closing response."""
        if self.prev_state == "tool" and self.tool_text:
            self.tool_calls.append(self.tool_text)
            self.made_tool_call = True
        if self.cut.stopped is not None and self.cut.ignored:
            self.diagnostics.append(f"generation stops at the stop token {self.cut.stopped!r}: "
                                    f"{self.cut.ignored} characters after it never reach mlx-lm")
        return [self._emit()]

    def _step(self, text: str, finish_reason: str | None = None) -> list[dict]:
        TSM = self.rt.TextStateMachine
        if finish_reason == "stop":
            self.sm_state, current_state = TSM.discard(self.sm_state)
            segments = [(current_state, "")]
        elif hasattr(TSM, "split"):
            self.sm_state, segments = TSM.split(self.sm_state, text)
        else:  # before 0.32.2 the loop called ``step``: one chunk, one state (the state after the chunk)
            self.sm_state, clean_text, current_state = TSM.step(self.sm_state, text)
            segments = [(current_state, clean_text)]
        return self._apply(segments)

    def _apply(self, segments: list[tuple[str | None, str]]) -> list[dict]:
        """The loop body for one generated piece already split into ``(state, clean text)`` segments."""
        for current_state, clean_text in segments:
            if current_state == "reasoning":
                self.reasoning_text += clean_text
            elif current_state == "tool":
                self.tool_text += clean_text
            elif current_state == "normal":
                if self.prev_state == "tool":
                    self.tool_calls.append(self.tool_text)
                    self.tool_text = ""
                    self.made_tool_call = True
                self.text += clean_text
            self.prev_state = current_state
            self.current_state = current_state
        if self.stream and self.current_state != "tool" and (self.text or self.tool_calls or self.reasoning_text):
            return [self._emit()]
        return []

    def _emit(self) -> dict:
        out = {"text": self.text, "reasoning_text": self.reasoning_text, "tool_calls": self._format(self.tool_calls)}
        self.text, self.reasoning_text, self.tool_calls = "", "", []
        return out

    def _format(self, tool_texts: list[str]) -> list[dict]:
        result = []
        for tool_text in tool_texts:
            with _captured_server_warnings() as warnings:
                formatted = self.formatter([tool_text])
            for warning in warnings:
                self.diagnostics.append(f"mlx-lm server dropped tool call {tool_text!r}: {warning}")
            result.extend(formatted)
        return result


def _calls(formatted: list[dict]) -> list[ToolCall]:
    return [ToolCall(tc["function"]["name"], parse_arguments(tc["function"]["arguments"])) for tc in formatted]


class MlxLmParser:
    """mlx-lm's tool parser for one format (:data:`FORMATS`) behind the mlx-lm server's splitting loop (see the
    module docstring); subclasses fix the format.

    ``parse(text, tools, prefix) -> Message`` (drops recorded in ``diagnostics``); ``stream(tools, prefix)``
    → :class:`MlxLmStream`. Construction imports mlx-lm (and mlx: on Linux it needs ``mlx[cpu]``) and raises
    ``ImportError`` when they are missing. Exceptions other than the ones the server swallows propagate.
    """

    library = "mlx-lm"
    format = ""
    incremental = True

    def __init__(self) -> None:
        self.formats = (self.format,)
        self.version = importlib.metadata.version("mlx-lm")
        self.name = f"mlx-lm=={self.version}:{self.format}"
        self._rt = _Runtime(self.format)

    def parse(self, text: str, tools: list | None = None, prefix: str = "") -> Message:
        loop = self._loop(tools, prefix, stream=False)
        loop.step(text)
        (final,) = loop.finish()
        return Message(
            content=final["text"] or None,
            reasoning=final["reasoning_text"] or None,
            tool_calls=_calls(final["tool_calls"]),
            diagnostics=loop.diagnostics,
        )

    def stream(self, tools: list | None = None, prefix: str = "") -> "MlxLmStream":
        return MlxLmStream(self._loop(tools, prefix, stream=True))

    def _loop(self, tools: list | None, prefix: str, stream: bool) -> _ServerLoop:
        """The server loop of the installed version: per text piece (0.32+) or per token (0.31)."""
        return (_TokenLoop if self._rt.per_token else _ServerLoop)(self._rt, tools, prefix, stream)


class MlxLmGemma4Parser(MlxLmParser):
    """``mlx_lm.tool_parsers.gemma4`` (Gemma 4's vocabulary: thinking on ``<|channel>thought``/``<channel|>``)."""

    format = "gemma4"


class MlxLmHermesParser(MlxLmParser):
    """``mlx_lm.tool_parsers.json_tools`` (Qwen 2.5 / Hermes 3 vocabulary, no thinking tokens)."""

    format = "hermes"


class _TokenLoop(_ServerLoop):
    """mlx-lm 0.31: the same loop body, run once per generated token (:meth:`_Runtime.token_states`). The
    per-token states need the whole generation, so the text is collected and the server's token loop replayed
    at ``finish``: the deltas are the server's SSE chunks, all sent at the end."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.pending: list[str] = []

    def step(self, chunk: str) -> list[dict]:
        self.pending.append(self.cut.feed(chunk))
        return []

    def finish(self) -> list[dict]:
        text = "".join(self.pending) + self.cut.flush()
        out = []
        for state, piece in self.rt.token_states(text, self.initial):
            out.extend(self._apply([(state, piece)]))
        return out + self._close()


class MlxLmStream:
    """One streaming session: each ``feed`` is one server loop step; deltas are the server's SSE chunks
    (content/reasoning text as it is released, tool calls whole with ``index`` when their segment closes).
    ``diagnostics`` lists dropped calls and ignored text."""

    def __init__(self, loop: _ServerLoop):
        self._loop = loop
        self.diagnostics = loop.diagnostics

    def feed(self, chunk: str, token_ids: list[int] | None = None) -> list[Delta]:
        return _deltas(self._loop.step(chunk))

    def finish(self) -> list[Delta]:
        return _deltas(self._loop.finish())


def _deltas(chunks: list[dict]) -> list[Delta]:
    deltas = []
    for chunk in chunks:
        calls = [ToolCallDelta(tc["index"], tc["function"]["name"], tc["function"]["arguments"])
                 for tc in chunk["tool_calls"]]
        if chunk["text"] or chunk["reasoning_text"] or calls:
            deltas.append(Delta(content=chunk["text"] or None, reasoning=chunk["reasoning_text"] or None,
                                tool_calls=calls))
    return deltas


PARSERS = [MlxLmGemma4Parser, MlxLmHermesParser]


def _check_engine_version(version: str) -> None:
    """The adapter drives the server loops of 0.31 (per-token ``SequenceStateMachine``) and 0.32+
    (``TextStateMachine``); earlier servers split text otherwise, and 0.31.0/0.31.1 have no Gemma 4 parser."""
    parts = version.split(".")
    try:
        major_minor = (int(parts[0]), int(parts[1]))
    except (IndexError, ValueError):
        raise ValueError(f"not a release number: {version!r}") from None
    if major_minor < (0, 31):
        raise ValueError(f"the mlx-lm adapter drives the server loops of mlx-lm 0.31 and later; "
                         f"{version} predates them")


# mlx-lm at another version than the main environment's, in its own virtualenv, serving this same adapter
# over the worker protocol. mlx[cpu] because mlx-lm's own mlx dependency is macOS-only.
ENGINE = PipEngine(
    name="mlx-lm", default_version="0.32.0", formats=tuple(FORMATS),
    cold_install="about 35 s, 340 MB",
    steps=lambda version: [["install", f"mlx-lm=={version}", "mlx[cpu]"]],
    worker_module="parsers.mlx_lm_ref",
    check_version=_check_engine_version,
).engine()

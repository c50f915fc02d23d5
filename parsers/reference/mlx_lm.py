"""Reference adapter: mlx-lm's tool parsers behind ``mlx_lm.server``'s own splitting loop (``TokenizerWrapper`` +
``make_text_state_machine`` + the ``handle_completion`` loop body + ``ToolCallFormatter``), run on text.

Parsers ``mlx-lm==<installed version>:<format>``, one per :data:`FORMATS` entry (the tool-parser module, the special
tokens of the model's vocabulary, the end of its generation prompt and its stop tokens); :data:`UNSUPPORTED` gives
the reason for every other format. In-process (mlx-lm is a dependency of the harness) and, at other versions
(0.31 per-token, 0.32.0 ``step``), as the ``mlx-lm`` engine. Calls the server drops are kept in ``diagnostics``.
How it is driven, each setting's source and the measured faults: ``docs/engines/mlx_lm.md``.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import logging
import os
import threading
import types
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from harness.core.messages import Message, ToolCall, parse_arguments
from harness.core.protocol import Delta, ToolCallDelta
from harness.engines.spec import PipEngine
from harness.formats import gemma4 as _gemma4_format
from harness.formats import hermes as _hermes_format
from parsers.reference._mlx_lm_vocab import FUNCTIONGEMMA_VOCAB as _FUNCTIONGEMMA_VOCAB
from parsers.reference._mlx_lm_vocab import GLM_VOCAB as _GLM_VOCAB
from parsers.reference._mlx_lm_vocab import KIMI_K2_VOCAB as _KIMI_K2_VOCAB
from parsers.reference._mlx_lm_vocab import KIMI_K3_VOCAB as _KIMI_K3_VOCAB
from parsers.reference._mlx_lm_vocab import LFM2_VOCAB as _LFM2_VOCAB
from parsers.reference._mlx_lm_vocab import LING3_VOCAB as _LING3_VOCAB
from parsers.reference._mlx_lm_vocab import MINIMAX_VOCAB as _MINIMAX_VOCAB
from parsers.reference._mlx_lm_vocab import MISTRAL_VOCAB as _MISTRAL_VOCAB
from parsers.reference._mlx_lm_vocab import MUSE_GLIMMER_VOCAB as _MUSE_GLIMMER_VOCAB
from parsers.reference._mlx_lm_vocab import QWEN3_VOCAB as _QWEN3_VOCAB
from parsers.reference._stop_cut import StopCut


@dataclass(frozen=True)
class Launch:
    """What ``mlx_lm.tokenizer_utils.load`` would set up for a model of one format: its tool parser module, the
    special tokens of its vocabulary (all the wrapper inspects), the end of its generation prompt and its stop
    tokens."""

    tool_module: str  # mlx_lm.tool_parsers.<tool_module>
    special_tokens: tuple[str, ...]  # the stand-in vocabulary (thinking is inferred from it)
    generation_prompt_tail: str  # the prompt's end before the case prefix (see prompt_end)
    stop_markers: tuple[str, ...]  # the text of the tokens generation stops on


FORMATS: dict[str, Launch] = {
    # tool parser inferred from a template holding "<|tool_call>" and "<tool_call|>"; thinking from the
    # <|channel>/<channel|> tokens. Stop tokens: llama.cpp's stop set for this vocabulary.
    "gemma4": Launch(
        "gemma4", _gemma4_format.SPEC.markers + ("<eos>", "<bos>"), "<|turn>model\n", _gemma4_format.SPEC.stop_markers
    ),
    # json_tools: what _infer_tool_parser picks for a template holding "<tool_call>" and "tool_call.name" (Qwen
    # 2.5's and Hermes 3's). The vocabulary has no <think>/</think> (Qwen 2.5, Hermes 3), so mlx-lm infers no
    # thinking; generation stops at <|im_end|> (or <|endoftext|>). The ChatML markers only: the format's Granite 4
    # turn markers (<|start_of_role|>, <|end_of_text|>) are not in a Qwen 2.5 / Hermes 3 vocabulary.
    "hermes": Launch(
        "json_tools",
        _hermes_format.CHATML_MARKERS + ("<|endoftext|>",),
        "<|im_start|>assistant\n",
        _hermes_format.CHATML_STOPS,
    ),
    # The formats below: see "Newer formats" in docs/engines/mlx_lm.md for where each fact comes from. Tool parser:
    # what ``_infer_tool_parser`` picks for the catalog presets' templates; vocabulary: the special tokens of the
    # model's tokenizer; prompt tail: the generation prompt before the thinking switch's pre-fill, which the case
    # prefix carries (MiniMax-M2's is written in every prompt); stop markers: the format's
    # (``harness.formats.<format>.SPEC.stop_markers``).
    "glm45": Launch("glm47", _GLM_VOCAB, "<|assistant|>\n", ("<|user|>", "<|observation|>", "<|endoftext|>")),
    "glm47": Launch("glm47", _GLM_VOCAB, "<|assistant|>", ("<|user|>", "<|observation|>", "<|endoftext|>")),
    "qwen3_coder": Launch("qwen3_coder", _QWEN3_VOCAB, "<|im_start|>assistant\n", ("<|im_end|>", "<|endoftext|>")),
    "minimax_m2": Launch("minimax_m2", _MINIMAX_VOCAB, "]~b]ai\n<think>\n", ("[e~[",)),
    "mistral": Launch("mistral", _MISTRAL_VOCAB, "[/INST]", ("</s>",)),
    "kimi_k2": Launch("kimi_k2", _KIMI_K2_VOCAB, "<|im_assistant|>assistant<|im_middle|>", ("<|im_end|>",)),
    "kimi_k3": Launch("kimi_k3", _KIMI_K3_VOCAB, '<|open|>message role="assistant"<|sep|>', ("<|end_of_msg|>",)),
    "functiongemma": Launch(
        "function_gemma",
        _FUNCTIONGEMMA_VOCAB,
        "<start_of_turn>model\n",
        ("<start_function_response>", "<end_of_turn>", "<eos>"),
    ),
    # pythonic: what _infer_tool_parser picks for a template holding <|tool_call_start|> (LFM2.5-8B-A1B.jinja) or
    # <|tool_list_start|> (LFM2-8B-A1B.jinja), or a vocabulary with both call tokens (LFM2.5-Instruct.jinja).
    "lfm2": Launch("pythonic", _LFM2_VOCAB, "<|im_start|>assistant\n", ("<|im_end|>",)),
    # glm47: what _infer_tool_parser picks for a template holding <arg_key> (inclusionai-ling-3.0-flash.jinja);
    # vocabulary: the tokens llama.cpp's Ling 3.0 parser preserves (common/parsers/ling3.cpp).
    "ling3": Launch("glm47", _LING3_VOCAB, "<role>ASSISTANT</role>", ("<|role_end|>",)),
    # muse_spark: what _infer_tool_parser picks for a template holding <atem:function_calls> (muse-glimmer.jinja). Muse
    # Spark's message format (chat_templates/muse_spark.py: headers dropped, to=self as reasoning) is set only for
    # muse_spark checkpoints (models/muse_spark.py TOKENIZER_DEFAULTS); models/muse_glimmer.py sets none. Untested.
    "muse_glimmer": Launch("muse_spark", _MUSE_GLIMMER_VOCAB, "<|start|>assistant", ("<|eot|>",)),
}
UNSUPPORTED: dict[str, str] = {
    "cohere": "no tool parser: mlx-lm has no tool_parsers module for <|START_ACTION|> (and _infer_tool_parser "
    "finds none of its markers in the Command R7B / Cohere2 MoE templates)",
    "llama3_json": "no tool parser: _infer_tool_parser finds none of its markers in the Llama 3.1 / 3.2 templates "
    "and the vocabulary has no <|tool_call_start|>",
    "deepseek_v3": "no tool parser: _infer_tool_parser finds none of its markers in the DeepSeek-R1-Distill-Qwen-32B "
    "template",
    "deepseek_v31": "no tool parser: _infer_tool_parser finds none of its markers in the DeepSeek-V3.1 template",
    "deepseek_v32": "no tool parser: mlx-lm ships a DeepSeek-V3.2 chat template (mlx_lm/chat_templates/deepseek_v32.py)"
    " but no tool_parsers module for its DSML calls",
    "deepseek_v4": "no tool parser: _infer_tool_parser finds none of its markers in the DeepSeek-V4 template",
    **dict.fromkeys(
        ("deepseek_v41", "functionary_v31", "functionary_v32", "firefunction_v2"),
        "no mlx-lm tool parser reads its calls",
    ),
    "harmony": "no tool parser: _infer_tool_parser finds none of its markers in the gpt-oss template",
    "mistral_reasoning": "no [THINK] reasoning: _infer_thinking knows <think>, <longcat_think>, <|think:start|> and "
    "two multi-token openers, not [THINK], so the reasoning block would stay content (the mistral tool parser reads "
    "the calls)",
    **dict.fromkeys(("seed_oss", "minicpm5"), "no tool parser: mlx-lm has no tool_parsers module for its XML calls"),
    **dict.fromkeys(("apriel", "nemotron_v2", "gigachat3", "gigachat31"), "no tool parser: none reads its JSON calls"),
    "command_r": "no tool parser: none reads Command R+'s Action: code block (and _infer_tool_parser finds none of its "
    "markers in the template)",
    "llama4_pythonic": "no tool parser: no Llama 4 template offline, and _infer_tool_parser finds none of its markers "
    "in Meta's Llama 4 template (it writes <|python_start|>, which no mlx-lm tool parser names)",
    "apertus": "no tool parser: mlx-lm has no tool_parsers module for <|tools_prefix|> (and _infer_tool_parser finds "
    "none of its markers in the Apertus template)",
    "minimax_m3": "no MiniMax-M3 tool parser: _infer_tool_parser picks json_tools for MiniMax-M3.jinja (it holds "
    "<tool_call> and tool_call.name), which reads JSON calls, not M3's ]<]minimax[>[ elements",
}
_SERVER_PATH = os.path.join("mlx_lm", "server.py")


class _CharTokenizer:
    """Character-level stand-in for the HF tokenizer inside ``TokenizerWrapper``: the format's special tokens
    (:data:`FORMATS`) are single tokens, as in the real vocabulary (an HF tokenizer splits added tokens out
    first), every other character is one token (``ord``). The vocabulary names only the special tokens, which
    is all the wrapper inspects."""

    chat_template = None
    eos_token_id = None

    def __init__(self, special_tokens: tuple[str, ...]):
        import re

        self._vocab = {token: 0x110000 + i for i, token in enumerate(special_tokens)}
        self._names = {i: token for token, i in self._vocab.items()}
        alternatives = sorted(self._vocab, key=len, reverse=True)
        self._split = re.compile("(" + "|".join(re.escape(t) for t in alternatives) + ")") if alternatives else None

    def get_vocab(self) -> dict[str, int]:
        return dict(self._vocab)

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        if self._split is None:
            return [ord(ch) for ch in text]
        ids: list[int] = []
        for i, part in enumerate(self._split.split(text)):
            if i % 2:
                ids.append(self._vocab[part])
            else:
                ids.extend(ord(ch) for ch in part)
        return ids

    def decode(self, ids: list[int], **kwargs: Any) -> str:
        return "".join(self._names[i] if i in self._names else chr(i) for i in ids)

    def convert_ids_to_tokens(self, ids: Any) -> Any:
        if isinstance(ids, int):
            return self._names.get(ids) or chr(ids)
        return [self._names.get(i) or chr(i) for i in ids]

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the stand-in tokenizer only drives mlx-lm's text state machine")


def prompt_end(config: Launch, prefix: str) -> str:
    """The end of the prompt of a case with pre-fill ``prefix``: the generation prompt's tail followed by the
    pre-fill, which the tail may already hold (MiniMax-M2's ``<think>\\n``, written in every prompt)."""
    tail = config.generation_prompt_tail
    return tail if tail.endswith(prefix) else tail + prefix


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
        # Before 0.32 the server tracks states on token ids inside the generator (``SequenceStateMachine``). The
        # stop token never reaches it here (``StopCut`` ends the text), but its id is declared as the model's eos
        # id, as a real tokenizer declares it: ``_make_state_machine`` adds it to every state's transitions (a
        # state with none, Mistral's "tool" without an end marker, would be an empty edge list, which
        # ``SequenceStateMachine`` cannot build). The ids are the stand-in vocabulary's, never produced by the
        # character encoding, so they never match.
        self.per_token = not hasattr(generate, "TextStateMachine")
        char_tokenizer = _CharTokenizer(
            config.special_tokens + tuple(m for m in config.stop_markers if m not in config.special_tokens)
        )
        eos_ids = [char_tokenizer.get_vocab()[m] for m in config.stop_markers]
        self.tokenizer = tokenizer_utils.TokenizerWrapper(
            char_tokenizer,
            tool_call_start=tool_module.tool_call_start,
            tool_call_end=tool_module.tool_call_end,
            tool_parser=tool_module.parse_tool_call,
            **({"eos_token_ids": eos_ids} if self.per_token else {}),
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
        sm, sequences = server.ResponseGenerator._make_state_machine(
            holder, None, self.tokenizer, [], initial_state=initial
        )

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


class _ServerLoop:
    """State of one ``handle_completion`` request: the loop body per generated chunk, and its ending."""

    def __init__(self, runtime: _Runtime, tools: list | None, prefix: str, stream: bool):
        self.rt, self.stream = runtime, stream
        self.formatter = runtime.ToolCallFormatter(runtime.tokenizer.tool_parser, tools, stream)
        initial = runtime.initial_state(prompt_end(runtime.config, prefix))
        self.initial = initial
        self.sm_state = None if runtime.per_token else runtime.text_sm.make_state(initial)
        self.prev_state: str | None = initial
        self.current_state: str | None = initial
        self.text = ""
        self.reasoning_text = ""
        self.tool_text = ""
        self.tool_calls: list[str] = []
        self.made_tool_call = False
        self.cut = StopCut(runtime.config.stop_markers)
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
            self.diagnostics.append(
                f"generation stops at the stop token {self.cut.stopped!r}: "
                f"{self.cut.ignored} characters after it never reach mlx-lm"
            )
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
    """mlx-lm's tool parser for ``format`` (:data:`FORMATS`) behind the mlx-lm server's splitting loop.

    ``parse(text, tools, prefix) -> Message`` (drops recorded in ``diagnostics``); ``stream(tools, prefix)``
    → :class:`MlxLmStream`. Construction imports mlx-lm (and mlx: on Linux it needs ``mlx[cpu]``) and raises
    ``ImportError`` when they are missing; a version without the format's tool-parser module raises
    ``ModuleNotFoundError`` on each call instead, so the worker serves its other formats. Exceptions other than
    the ones the server swallows propagate.
    """

    library = "mlx-lm"
    incremental = True

    def __init__(self, format: str) -> None:
        self.format, self.formats = format, (format,)
        self.version = importlib.metadata.version("mlx-lm")
        self.name = f"mlx-lm=={self.version}:{format}"
        self._missing: ModuleNotFoundError | None = None
        try:
            self._rt = _Runtime(format)
        except ModuleNotFoundError as exc:  # an older mlx-lm without this format's tool parser: its cases raise
            if not (exc.name or "").startswith("mlx_lm.tool_parsers."):
                raise
            self._missing = exc

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

    def stream(self, tools: list | None = None, prefix: str = "") -> MlxLmStream:
        return MlxLmStream(self._loop(tools, prefix, stream=True))

    def _loop(self, tools: list | None, prefix: str, stream: bool) -> _ServerLoop:
        """The server loop of the installed version: per text piece (0.32+) or per token (0.31)."""
        if self._missing is not None:
            raise ModuleNotFoundError(f"mlx-lm {self.version} has no {self._missing.name}")
        return (_TokenLoop if self._rt.per_token else _ServerLoop)(self._rt, tools, prefix, stream)


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
        calls = [
            ToolCallDelta(tc["index"], tc["function"]["name"], tc["function"]["arguments"])
            for tc in chunk["tool_calls"]
        ]
        if chunk["text"] or chunk["reasoning_text"] or calls:
            deltas.append(
                Delta(content=chunk["text"] or None, reasoning=chunk["reasoning_text"] or None, tool_calls=calls)
            )
    return deltas


#: transformers and mlx-lm are installed in the harness' own environment: the registry also runs these in-process.
IN_PROCESS = True
PARSERS = [functools.partial(MlxLmParser, fmt) for fmt in FORMATS]


def _check_engine_version(version: str) -> None:
    """The adapter drives the server loops of 0.31 (per-token ``SequenceStateMachine``) and 0.32+
    (``TextStateMachine``); earlier servers split text otherwise, and 0.31.0/0.31.1 have no Gemma 4 parser."""
    parts = version.split(".")
    try:
        major_minor = (int(parts[0]), int(parts[1]))
    except (IndexError, ValueError):
        raise ValueError(f"not a release number: {version!r}") from None
    if major_minor < (0, 31):
        raise ValueError(
            f"the mlx-lm adapter drives the server loops of mlx-lm 0.31 and later; {version} predates them"
        )


# mlx-lm at another version than the main environment's, in its own virtualenv, serving this same adapter
# over the worker protocol. mlx[cpu] because mlx-lm's own mlx dependency is macOS-only.
ENGINE = PipEngine(
    name="mlx-lm",
    default_version="0.32.0",
    formats=tuple(FORMATS),
    cold_install="about 35 s, 340 MB",
    steps=lambda version: [["install", f"mlx-lm=={version}", "mlx[cpu]"]],
    worker_module="parsers.reference.mlx_lm",
    check_version=_check_engine_version,
).engine()

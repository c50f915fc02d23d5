"""Capture backend ``llama-cpp``: a GGUF model through llama-cpp-python, on CPU (GPU where the wheel was built so).

The prompt is the chat template's rendering (``Request.prompt_text``), tokenized with ``special=True`` and no
extra BOS (the template writes it), and completed token by token with ``Llama.generate`` — the loop
``Llama.create_completion`` runs, kept here so each token id is recorded with its text
(``Llama.detokenize(ids, special=True)``: markers stay in the text). Generation stops at an end-of-generation
token (``llama_vocab_is_eog``, as ``create_completion`` does), at a stop string, or at ``max_tokens``.

Options: ``grammar`` (GBNF text, ``LlamaGrammar.from_string``; token references such as ``<|tool_call>`` make
llama.cpp emit the real special-token ids), ``n_ctx``, ``n_threads``, ``n_gpu_layers``. ``Request.force_text``
(fixture models) is enforced by a logits processor that allows only the next token of the forced text's own
tokenization, then an end-of-generation token.

Library: llama-cpp-python (0.3.36 here, installed from the wheel :mod:`harness.engines.wheels` builds).
"""

from __future__ import annotations

from harness.capture.backends import BackendError, Generation, PieceCollector, Request, Weights, generate_local

N_CTX = 4096
_BAD_GRAMMAR = (
    "llama.cpp's grammar parser rejected the GBNF grammar (its `parse: error ...` line is on stderr): "
    "a syntax error, an undefined rule, or a special token the model's vocabulary does not have"
)


def create(
    weights: Weights,
    *,
    grammar: str | None = None,
    n_ctx: int = N_CTX,
    n_threads: int | None = None,
    n_gpu_layers: int | None = None,
) -> LlamaCppBackend:
    """Load ``weights`` (a GGUF). ``n_gpu_layers`` None offloads every layer when the wheel was built with GPU
    support (``llama_supports_gpu_offload``), else none. Raises :class:`BackendError` when llama-cpp-python is
    missing or the file does not load."""
    return LlamaCppBackend(weights, grammar=grammar, n_ctx=n_ctx, n_threads=n_threads, n_gpu_layers=n_gpu_layers)


class LlamaCppBackend:
    """See the module docstring. Not thread-safe: ``max_concurrency`` is 1."""

    name = "llama-cpp"
    max_concurrency = 1

    def __init__(
        self, weights: Weights, *, grammar: str | None, n_ctx: int, n_threads: int | None, n_gpu_layers: int | None
    ) -> None:
        try:
            import llama_cpp
        except ImportError:
            raise BackendError(
                "llama-cpp-python is not installed: `python -m harness.engines.wheels --install` builds "
                "(10-13 min on 2 cores, once) and installs it"
            ) from None
        self.weights, self.grammar, self._llama_cpp = weights, grammar, llama_cpp
        if n_gpu_layers is None:
            n_gpu_layers = -1 if llama_cpp.llama_supports_gpu_offload() else 0
        self.n_gpu_layers = n_gpu_layers
        try:
            self.llm = llama_cpp.Llama(
                model_path=weights.path, n_ctx=n_ctx, n_threads=n_threads, n_gpu_layers=n_gpu_layers, verbose=False
            )
        except (ValueError, RuntimeError) as exc:
            raise BackendError(f"llama-cpp-python cannot load {weights.path}: {exc}") from None
        if grammar is not None and not self.grammar_ok(grammar):
            raise BackendError(_BAD_GRAMMAR)

    def grammar_ok(self, grammar: str) -> bool:
        """True when llama.cpp's grammar parser accepts ``grammar`` with this model's vocabulary (token
        references included). ``LlamaGrammar`` does not check: an invalid grammar crashes the process later
        (llama-cpp-python 0.3.36), so it is tried here with ``llama_sampler_init_grammar``, which returns NULL."""
        lib = self._llama_cpp
        sampler = lib.llama_sampler_init_grammar(self.llm._model.vocab, grammar.encode("utf-8"), b"root")
        if not sampler:
            return False
        lib.llama_sampler_free(sampler)
        return True

    def versions(self) -> dict[str, str]:
        return {"llama-cpp-python": self._llama_cpp.__version__, "n_gpu_layers": str(self.n_gpu_layers)}

    def generate(self, request: Request, on_piece=None) -> Generation:
        return generate_local(request, on_piece, self._decode, self._run)

    def _run(self, request: Request, collector: PieceCollector) -> str:
        llm, s = self.llm, request.sampling
        prompt = llm.tokenize(request.prompt_text.encode("utf-8"), add_bos=False, special=True)
        if len(prompt) + s.max_tokens > llm.n_ctx():
            raise ValueError(f"prompt of {len(prompt)} tokens + max_tokens {s.max_tokens} exceed n_ctx {llm.n_ctx()}")
        llm.set_seed(s.seed)
        processors = None
        if request.force_text is not None:
            forced = llm.tokenize(request.force_text.encode("utf-8"), add_bos=False, special=True)
            processors = self._llama_cpp.LogitsProcessorList([_Forcer(forced, llm.token_eos(), len(prompt))])
        grammar = request.grammar or self.grammar
        if request.grammar and not self.grammar_ok(request.grammar):
            raise ValueError(_BAD_GRAMMAR)
        tokens = llm.generate(
            prompt,
            temp=s.temperature,
            top_p=s.top_p,
            top_k=0 if s.temperature else 40,
            min_p=0.0,
            repeat_penalty=1.0,
            logits_processor=processors,
            grammar=self._llama_cpp.LlamaGrammar.from_string(grammar, verbose=False) if grammar else None,
        )
        for n, token in enumerate(tokens, start=1):
            if self._llama_cpp.llama_vocab_is_eog(llm._model.vocab, token):
                return "stop"
            if collector.add(token):
                return "stop"
            if n >= s.max_tokens:
                return "length"
        return "stop"

    def _decode(self, ids: list) -> str:
        return self.llm.detokenize(ids, special=True).decode("utf-8", errors="replace")

    def close(self) -> None:
        self.llm.close()


class _Forcer:
    """Logits processor: the ``n``-th generated token must be ``forced[n]``, then end of generation."""

    def __init__(self, forced: list, eos: int, prompt_len: int) -> None:
        self.forced, self.eos, self.prompt_len = forced, eos, prompt_len

    def __call__(self, input_ids, scores):
        step = len(input_ids) - self.prompt_len
        allowed = self.forced[step] if step < len(self.forced) else self.eos
        kept = scores[allowed]
        scores[:] = -float("inf")
        scores[allowed] = kept if kept > -float("inf") else 0.0
        return scores

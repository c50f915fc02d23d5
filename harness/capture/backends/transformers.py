"""Capture backend ``transformers``: a Hugging Face model folder with ``AutoModelForCausalLM``, on CPU (CUDA when
present and ``device="auto"``).

The prompt is the chat template's rendering (``Request.prompt_text``) tokenized with ``add_special_tokens=False``
(the template writes BOS). ``model.generate`` runs with a streamer that receives each new token id; the text of
each piece is ``tokenizer.decode(ids, skip_special_tokens=False)`` — with the default ``skip_special_tokens=True``
protocol markers such as ``<|tool_call>`` would vanish. Generation stops at the model's EOS ids
(``generation_config.eos_token_id``), at a stop string (a ``StoppingCriteria``), or at ``max_tokens``.
``Request.force_text`` (fixture models) is enforced by a ``LogitsProcessor`` that allows only the next token of
the forced text's tokenization, then EOS. Greedy when temperature is 0, else sampling with ``torch.manual_seed``.

Libraries: transformers (5.24.0 here) and torch (2.13.0+cpu here; ``pip install torch==2.13.0``).
"""

from __future__ import annotations

from harness.capture.backends import BackendError, Generation, PieceCollector, Request, Weights, generate_local


def create(weights: Weights, *, device: str = "auto", dtype: str = "float32") -> TransformersBackend:
    """Load the model folder ``weights.path`` on ``device`` (``auto``: CUDA when torch sees a GPU, else CPU).
    Raises :class:`BackendError` when torch is missing or the folder does not load."""
    return TransformersBackend(weights, device=device, dtype=dtype)


class TransformersBackend:
    """See the module docstring. ``max_concurrency`` is 1."""

    name = "transformers"
    max_concurrency = 1

    def __init__(self, weights: Weights, *, device: str, dtype: str) -> None:
        try:
            import torch
            import transformers
        except ImportError as exc:
            raise BackendError(
                f"the transformers backend needs torch and transformers ({exc}): "
                f"pip install torch==2.13.0 (CPU build) or `make` (installs the capture extra)"
            ) from None
        self.torch, self.transformers, self.weights = torch, transformers, weights
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = device
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(weights.path)
            self.model = (
                transformers.AutoModelForCausalLM.from_pretrained(weights.path, dtype=getattr(torch, dtype))
                .to(device)
                .eval()
            )
        except (OSError, ValueError, KeyError) as exc:
            raise BackendError(f"transformers cannot load {weights.path}: {exc}") from None
        eos = self.model.generation_config.eos_token_id
        self.eos_ids = [eos] if isinstance(eos, int) else list(eos or [self.tokenizer.eos_token_id])

    def versions(self) -> dict[str, str]:
        return {"transformers": self.transformers.__version__, "torch": self.torch.__version__, "device": self.device}

    def generate(self, request: Request, on_piece=None) -> Generation:
        return generate_local(request, on_piece, self._decode, self._run)

    def _run(self, request: Request, collector: PieceCollector) -> str:
        torch, tf, s = self.torch, self.transformers, request.sampling
        prompt = self.tokenizer(request.prompt_text, add_special_tokens=False, return_tensors="pt").to(self.device)
        streamer = _Streamer(collector, self.eos_ids)
        processors = tf.LogitsProcessorList()
        if request.force_text is not None:
            forced = self.tokenizer(request.force_text, add_special_tokens=False)["input_ids"]
            processors.append(_Forcer(forced, self.eos_ids[0], prompt["input_ids"].shape[1]))
        torch.manual_seed(s.seed)
        sampling = (
            {"do_sample": True, "temperature": s.temperature, "top_p": s.top_p}
            if s.temperature
            else {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}
        )
        with torch.no_grad():
            self.model.generate(
                **prompt,
                max_new_tokens=s.max_tokens,
                streamer=streamer,
                logits_processor=processors,
                eos_token_id=self.eos_ids,
                stopping_criteria=tf.StoppingCriteriaList([_StopWhen(streamer)]),
                pad_token_id=self.tokenizer.pad_token_id or self.eos_ids[0],
                **sampling,
            )
        if streamer.stopped:
            return "stop"
        return "length" if collector.tokens >= s.max_tokens else "stop"

    def _decode(self, ids: list) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=False)

    def close(self) -> None:
        del self.model


class _Streamer:
    """``generate``'s streamer: the first ``put`` is the prompt; then one token per call."""

    def __init__(self, collector: PieceCollector, eos_ids: list) -> None:
        self.collector, self.eos_ids, self.prompt_seen, self.stopped = collector, eos_ids, False, False

    def put(self, value) -> None:
        if not self.prompt_seen:
            self.prompt_seen = True
            return
        for token in value.reshape(-1).tolist():
            if self.stopped:
                return
            if token in self.eos_ids or self.collector.add(token):
                self.stopped = True

    def end(self) -> None:
        pass


class _StopWhen:
    """Stopping criterion: stop once the streamer saw EOS or a stop string."""

    def __init__(self, streamer: _Streamer) -> None:
        self.streamer = streamer

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        return torch.full((input_ids.shape[0],), self.streamer.stopped, dtype=torch.bool)


class _Forcer:
    """Logits processor: the ``n``-th generated token must be ``forced[n]``, then EOS."""

    def __init__(self, forced: list, eos: int, prompt_len: int) -> None:
        self.forced, self.eos, self.prompt_len = forced, eos, prompt_len

    def __call__(self, input_ids, scores):
        step = input_ids.shape[1] - self.prompt_len
        allowed = self.forced[step] if step < len(self.forced) else self.eos
        mask = scores.new_full(scores.shape, float("-inf"))
        mask[:, allowed] = 0.0
        return mask

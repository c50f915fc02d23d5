"""Capture backend ``mlx-lm``: a model folder loaded with ``mlx_lm.load`` (Metal on Apple silicon; on Linux the
CPU build ``mlx[cpu]``).

The prompt is the chat template's rendering (``Request.prompt_text``), encoded without adding BOS (the template
writes it). Tokens come from ``mlx_lm.generate.generate_step`` — the generator ``stream_generate`` loops over,
used directly so each token id is recorded with its text (``tokenizer.decode(ids, skip_special_tokens=False)``:
markers stay in the text). Like ``stream_generate`` it stops at ``tokenizer.eos_token_ids``; also at a stop string
or ``max_tokens``. Sampling: ``mlx_lm.sample_utils.make_sampler(temp, top_p)`` after ``mx.random.seed``.
``Request.force_text`` (fixture models) is enforced by a logits processor (``generate_step``'s
``logits_processors``) that allows only the next forced token, then EOS.

Library: mlx-lm (0.32.2 here) with mlx (0.32.4, CPU build here: the Metal path cannot be exercised on Linux).
"""

from __future__ import annotations

from typing import Any

from harness.capture.backends import BackendError, Generation, PieceCollector, Request, Weights, generate_local


def create(weights: Weights) -> MlxLmBackend:
    """Load the folder ``weights.path`` (an MLX conversion or a Hugging Face folder of an architecture mlx-lm
    supports). Raises :class:`BackendError` when mlx-lm is missing or cannot load it."""
    return MlxLmBackend(weights)


class MlxLmBackend:
    """See the module docstring. ``max_concurrency`` is 1."""

    name = "mlx-lm"
    max_concurrency = 1

    def __init__(self, weights: Weights) -> None:
        try:
            import mlx.core as mx
            import mlx_lm
            from mlx_lm.generate import generate_step
            from mlx_lm.sample_utils import make_sampler
        except ImportError as exc:
            raise BackendError(f"mlx-lm is not installed ({exc}): pip install mlx-lm 'mlx[cpu]' (Linux)") from None
        self.mx, self.mlx_lm, self.generate_step, self.make_sampler = mx, mlx_lm, generate_step, make_sampler
        self.weights = weights
        try:
            loaded = mlx_lm.load(weights.path)  # (model, tokenizer), plus the config with return_config=True
            self.model, self.tokenizer = loaded[0], loaded[1]
        except Exception as exc:  # mlx-lm raises ValueError / FileNotFoundError / KeyError for unsupported folders
            raise BackendError(f"mlx-lm cannot load {weights.path}: {type(exc).__name__}: {exc}") from None

    def versions(self) -> dict[str, str]:
        import importlib.metadata as md

        return {"mlx-lm": md.version("mlx-lm"), "mlx": md.version("mlx")}

    def generate(self, request: Request, on_piece=None) -> Generation:
        return generate_local(request, on_piece, self._decode, self._run)

    def _run(self, request: Request, collector: PieceCollector) -> str:
        mx, s = self.mx, request.sampling
        prompt = self.tokenizer.encode(request.prompt_text, add_special_tokens=False)
        eos = set(self.tokenizer.eos_token_ids)
        processors: list[Any] = []  # logits processors: (tokens, logits) -> logits
        if request.force_text is not None:
            forced = self.tokenizer.encode(request.force_text, add_special_tokens=False)
            processors.append(_Forcer(forced, min(eos), len(prompt), mx))
        mx.random.seed(s.seed)
        steps = self.generate_step(
            mx.array(prompt),
            self.model,
            max_tokens=s.max_tokens,
            sampler=self.make_sampler(temp=s.temperature, top_p=s.top_p if s.temperature else 0.0),
            logits_processors=processors,
        )
        for n, (token, _) in enumerate(steps, start=1):
            token_id = int(token)
            if token_id in eos or collector.add(token_id):
                return "stop"
            if n >= s.max_tokens:
                return "length"
        return "stop"

    def _decode(self, ids: list) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=False)

    def close(self) -> None:
        del self.model


class _Forcer:
    """mlx-lm logits processor ``(tokens, logits) -> logits``: only ``forced[n]`` at step n, then EOS."""

    def __init__(self, forced: list, eos: int, prompt_len: int, mx) -> None:
        self.forced, self.eos, self.prompt_len, self.mx = forced, eos, prompt_len, mx

    def __call__(self, tokens, logits):
        step = tokens.size - self.prompt_len
        allowed = self.forced[step] if step < len(self.forced) else self.eos
        mask = self.mx.full(logits.shape, -float("inf"), dtype=logits.dtype)
        index = self.mx.arange(logits.shape[-1]) == allowed
        return self.mx.where(index, self.mx.zeros_like(logits), mask)

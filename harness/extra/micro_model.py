"""A micro Gemma 4 with the real tokenizer and chat template, built in seconds: a fixture for pipeline tests.

What it is. ``transformers.Gemma4ForCausalLM`` (``Gemma4TextConfig``, model_type ``gemma4_text``) with random
weights from a fixed seed: hidden size 64, 2 layers (layer 0 sliding-window attention with head_dim 32,
layer 1 full attention with head_dim 64 and Gemma 4's "proportional" partial RoPE), 2 query heads, 1 KV head,
MLP 128, final logit soft-capping 30, no per-layer input embeddings, tied embeddings, the full 262,144-token
vocabulary: 16,864,000 parameters (16.8 M of them the embedding), saved as bf16. It writes nonsense, but
every token id, marker and template is the real Gemma 4 one, so the text it emits exercises the same
tokenizer, template and tool-call parsing paths as a real Gemma 4.

Sources (all from the pinned llama-cpp-python sdist, :mod:`harness.assets.sdist`):

- tokenizer: :func:`harness.assets.tokenizers.tokenizer_dir` (``models/ggml-vocab-gemma-4.gguf`` converted by
  transformers), with the 12 added tokens the vocab GGUF marks as control tokens (``<|turn>``, ``<turn|>``,
  ``<|tool>``, ``<tool|>``, ``<|think|>``, the image/audio/video markers) registered as extra special tokens.
  The converter marks only ``all_special_ids`` as control tokens; without this llama.cpp splits ``<|turn>``
  into 4 pieces. The 7 "visible" markers (``<|tool_call>``, ``<tool_call|>``, ``<|"|>``, ``<|channel>``,
  ``<channel|>``, ``<|tool_response>``, ``<tool_response|>``) stay non-special in transformers (as in the
  vocab GGUF's transformers conversion) and the converter writes them as USER_DEFINED, as llama.cpp's vocab
  GGUF has them. The converted GGUF's token list, scores, types, merges and special ids then equal
  ``ggml-vocab-gemma-4.gguf``'s (``tests/e2e/test_micro_model.py`` checks it).
- chat template: ``models/templates/google-gemma-4-31B-it.jinja``, saved as ``chat_template.jinja`` and
  embedded by the converter as the GGUF's ``tokenizer.chat_template``.
- GGUF: ``vendor/llama.cpp/convert_hf_to_gguf.py`` (with its ``conversion/`` package and ``gguf-py/``),
  extracted once into the cache and run in a subprocess, ``--outtype bf16`` (lossless from the bf16 weights).

``config.json`` also carries ``global_head_dim`` (the full-attention head size): transformers derives it
from ``per_layer_config`` and ignores the key, but mlx-lm's ``gemma4_text`` reads it (default 512) and
without it ``mlx_lm.load`` fails with "Expected shape (1024, 64) but received shape (128, 64) for parameter
model.layers.1.self_attn.q_proj.weight". With it, ``mlx_lm.load(hf_dir)`` loads the folder directly.

Cache. :func:`micro_gemma4` builds once into ``cache_dir() / "models" / f"micro-gemma4-{key}"`` (``hf/``,
``micro-gemma4-<outtype>.gguf``, ``provenance.json``), ``key`` hashing the :class:`MicroSpec`, the builder
version, the sdist's sha256 and the transformers / torch / tokenizers / gguf versions. It builds in a
temporary folder and renames it into place, so a concurrent or interrupted build never leaves a half
folder. Measured on 2 CPU cores: 21-29 s cold (tokenizer ~3 s, converter ~14 s, most of it writing the 262k
vocab and 515k merges), ~10 ms warm; ``hf/`` 66 MB (weights 33.7 MB, tokenizer.json 32 MB), GGUF 49.5 MB.

A rebuild is byte-identical (same safetensors and GGUF sha256, checked once with torch 2.13.0+cpu), so the
GGUF sha256 in the provenance names the fixture. ``python -m harness.extra.micro_model`` builds it (if needed) and
prints the paths.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from importlib import metadata as _im
from pathlib import Path

from harness.assets.sdist import LLAMA_CPP_DIR, SDIST_NAME, SDIST_SHA256, SDIST_VERSION, sdist_archive, sdist_file
from harness.assets.tokenizers import tokenizer_dir, tokenizer_provenance
from harness.core.paths import cache_dir, file_sha256
from harness.core.textio import write_text

__all__ = [
    "MicroModel",
    "MicroModelError",
    "MicroSpec",
    "converter_dir",
    "init_model",
    "micro_gemma4",
    "micro_gemma4_key",
]

# Bump when the build changes its output for the same spec and versions (invalidates cached builds).
BUILDER_VERSION = 1
TEMPLATE = "models/templates/google-gemma-4-31B-it.jinja"  # relative to the sdist's vendor/llama.cpp
# What the converter needs from vendor/llama.cpp: the script, its model classes, and its own gguf package.
CONVERTER_PARTS = ("convert_hf_to_gguf.py", "conversion/", "gguf-py/")


class MicroModelError(RuntimeError):
    """The fixture could not be built: the converter failed (message: its exit status and output tail)."""


@dataclass(frozen=True)
class MicroSpec:
    """The builder's parameters (all hashed into the cache key). Sizes are counts of units, not bytes."""

    hidden_size: int = 64
    intermediate_size: int = 128
    num_attention_heads: int = 2
    num_key_value_heads: int = 1
    head_dim: int = 32  # sliding-window layers
    global_head_dim: int = 64  # full-attention layers
    layer_types: tuple[str, ...] = ("sliding_attention", "full_attention")  # the last must be full attention
    sliding_window: int = 128  # tokens
    max_position_embeddings: int = 8192  # tokens; becomes the GGUF's context_length
    final_logit_softcapping: float = 30.0
    seed: int = 0  # torch.manual_seed before the weights are initialised
    dtype: str = "bfloat16"  # torch dtype of the saved weights
    gguf_outtype: str = "bf16"  # convert_hf_to_gguf.py --outtype


@dataclass(frozen=True)
class MicroModel:
    """A built fixture. ``hf_dir``: a Hugging Face model folder (config.json, generation_config.json,
    model.safetensors, tokenizer.json, tokenizer_config.json, chat_template.jinja); ``gguf``: the GGUF
    converted from it; ``sha256``: the GGUF's sha256 (hex); ``provenance``: the facts of the build."""

    hf_dir: Path
    gguf: Path
    sha256: str
    provenance: dict = field(compare=False, hash=False)


def _version(dist: str) -> str:
    try:
        return _im.version(dist)
    except _im.PackageNotFoundError:
        return "not installed"


def _versions() -> dict[str, str]:
    return {d: _version(d) for d in ("transformers", "torch", "tokenizers", "gguf", "safetensors")}


def micro_gemma4_key(spec: MicroSpec = MicroSpec()) -> str:
    """The cache key of ``spec`` (16 hex digits): sha256 of the spec, :data:`BUILDER_VERSION`, the sdist's
    sha256 (vocabulary, template, converter) and the library versions. Imports nothing heavy."""
    blob = json.dumps(
        {"spec": asdict(spec), "builder": BUILDER_VERSION, "sdist_sha256": SDIST_SHA256, "versions": _versions()},
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _replace_into(tmp: Path, folder: Path, marker: str) -> None:
    """Rename the finished ``tmp`` to ``folder``; if another process got there first, keep its folder."""
    try:
        os.replace(tmp, folder)
    except OSError:
        if not (folder / marker).is_file():
            raise


def converter_dir() -> Path:
    """The sdist's ``vendor/llama.cpp`` converter (:data:`CONVERTER_PARTS`, ~2 MB) extracted once into
    ``cache_dir() / "sdist" / "<sdist>" / "converter"``; returns that folder (holding ``convert_hf_to_gguf.py``).

    Raises :class:`harness.assets.sdist.SdistError` when the sdist cannot be fetched.
    """
    folder = cache_dir() / "sdist" / f"{SDIST_NAME}-{SDIST_VERSION}" / "converter"
    if (folder / CONVERTER_PARTS[0]).is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".converter.", dir=folder.parent))
    prefix = f"{SDIST_NAME.replace('-', '_')}-{SDIST_VERSION}/{LLAMA_CPP_DIR}/"
    try:
        with tarfile.open(sdist_archive(), "r:gz") as tar:
            for info in tar:
                rel = info.name[len(prefix) :] if info.name.startswith(prefix) else ""
                if (
                    not info.isfile()
                    or ".." in Path(rel).parts
                    or not any(rel == p or (p.endswith("/") and rel.startswith(p)) for p in CONVERTER_PARTS)
                ):
                    continue
                dest = tmp / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                src = tar.extractfile(info)
                assert src is not None  # info.isfile() above
                with src:
                    dest.write_bytes(src.read())
        os.chmod(tmp, 0o755)
        _replace_into(tmp, folder, CONVERTER_PARTS[0])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def micro_gemma4(log: Callable[[str], object] = print, *, spec: MicroSpec = MicroSpec()) -> MicroModel:
    """The micro Gemma 4 fixture of ``spec``, built on first use (20-30 s on 2 cores) and reused after (~10 ms).

    ``log`` gets one line per build step (nothing when the cache is reused). Raises :class:`MicroModelError`
    when the GGUF conversion fails and :class:`harness.assets.sdist.SdistError` when the sdist cannot be fetched.
    """
    key = micro_gemma4_key(spec)
    folder = cache_dir() / "models" / f"micro-gemma4-{key}"
    if not (folder / "provenance.json").is_file():
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".micro-gemma4-{key}.", dir=folder.parent))
        try:
            log(f"micro Gemma 4: building {folder.name} (once) ...")
            _build(spec, key, tmp, log)
            os.chmod(tmp, 0o755)
            _replace_into(tmp, folder, "provenance.json")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    provenance = json.loads((folder / "provenance.json").read_text(encoding="utf-8"))
    return MicroModel(
        hf_dir=folder / "hf",
        gguf=folder / provenance["gguf_file"],
        sha256=provenance["gguf_sha256"],
        provenance=provenance,
    )


def _model_config(spec: MicroSpec):
    """The ``Gemma4TextConfig`` of ``spec``; pad/eos/bos ids are the tokenizer's (0, 1, 2: the defaults)."""
    from transformers import Gemma4TextConfig

    config = Gemma4TextConfig(
        vocab_size=262_144,
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=len(spec.layer_types),
        layer_types=list(spec.layer_types),
        num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads,
        head_dim=spec.head_dim,
        global_head_dim=spec.global_head_dim,
        sliding_window=spec.sliding_window,
        max_position_embeddings=spec.max_position_embeddings,
        final_logit_softcapping=spec.final_logit_softcapping,
        hidden_size_per_layer_input=0,  # no per-layer input embeddings (they would add 262k x layers x width)
        tie_word_embeddings=True,
    )
    config.global_head_dim = spec.global_head_dim  # serialised for mlx-lm and the converter (see module doc)
    return config


def init_model(spec: MicroSpec = MicroSpec()):
    """The ``Gemma4ForCausalLM`` of ``spec`` with its seeded random weights, in ``spec.dtype``.

    Bit-identical for the same spec and torch version; the global torch RNG state is left as it was.
    """
    import torch
    from transformers import Gemma4ForCausalLM

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(spec.seed)
        model = Gemma4ForCausalLM(_model_config(spec))
    return model.to(getattr(torch, spec.dtype)).eval()


def _save_tokenizer(out: Path) -> list[str]:
    """Save the real Gemma 4 tokenizer and template into ``out``; return the extra special tokens registered."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tokenizer_dir("gemma4"))
    # every added token transformers marks special (= llama.cpp's CONTROL tokens) must be in all_special_ids
    extra = [
        t.content for i, t in sorted(tok.added_tokens_decoder.items()) if t.special and i not in tok.all_special_ids
    ]
    tok.add_special_tokens({"extra_special_tokens": extra})
    tok.chat_template = sdist_file(TEMPLATE).read_text(encoding="utf-8")
    tok.save_pretrained(str(out))
    return extra


def _convert(hf_dir: Path, outfile: Path, outtype: str) -> str:
    """Run the sdist's ``convert_hf_to_gguf.py`` on ``hf_dir``; return its output. Raises MicroModelError."""
    conv = converter_dir()
    env = {k: v for k, v in os.environ.items() if k != "NO_LOCAL_GGUF"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(conv / "gguf-py"), env.get("PYTHONPATH")) if p)
    cmd = [
        sys.executable,
        str(conv / "convert_hf_to_gguf.py"),
        str(hf_dir),
        "--outfile",
        str(outfile),
        "--outtype",
        outtype,
        "--model-name",
        "micro-gemma4",
    ]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0 or not outfile.is_file():
        raise MicroModelError(f"convert_hf_to_gguf.py failed (exit {proc.returncode}): {output.strip()[-2000:]}")
    return output


def _build(spec: MicroSpec, key: str, out: Path, log: Callable[[str], object]) -> None:
    """Write ``hf/``, the GGUF and ``provenance.json`` into ``out``."""
    t0 = time.perf_counter()
    hf_dir = out / "hf"
    model = init_model(spec)
    model.save_pretrained(str(hf_dir))
    n_params = sum(p.numel() for p in model.parameters())
    log(f"  model: {n_params:,} parameters, {spec.dtype} ({time.perf_counter() - t0:.1f} s)")
    t1 = time.perf_counter()
    extra = _save_tokenizer(hf_dir)
    log(f"  tokenizer + chat template ({time.perf_counter() - t1:.1f} s)")
    t2 = time.perf_counter()
    gguf_path = out / f"micro-gemma4-{spec.gguf_outtype}.gguf"
    _convert(hf_dir, gguf_path, spec.gguf_outtype)
    log(f"  GGUF: {gguf_path.stat().st_size / 1e6:.1f} MB ({time.perf_counter() - t2:.1f} s)")

    tok_prov = tokenizer_provenance("gemma4")
    sdist = f"{SDIST_NAME} {SDIST_VERSION} sdist (sha256 {SDIST_SHA256})"
    provenance = {
        "name": "micro-gemma4",
        "key": key,
        "builder_version": BUILDER_VERSION,
        "spec": asdict(spec),
        "seed": spec.seed,
        "model_class": type(model).__name__,
        "parameters": n_params,
        "config": json.loads((hf_dir / "config.json").read_text(encoding="utf-8")),
        "tokenizer": {k: tok_prov[k] for k in ("gguf_file", "gguf_source", "gguf_sha256", "vocab_size", "builder")},
        "extra_special_tokens": extra,
        "chat_template": {
            "source": f"{sdist}, {LLAMA_CPP_DIR}/{TEMPLATE}",
            "sha256": file_sha256(hf_dir / "chat_template.jinja"),
        },
        "converter": f"{sdist}, {LLAMA_CPP_DIR}/convert_hf_to_gguf.py --outtype {spec.gguf_outtype}",
        "safetensors_sha256": file_sha256(hf_dir / "model.safetensors"),
        "gguf_file": gguf_path.name,
        "gguf_bytes": gguf_path.stat().st_size,
        "gguf_sha256": file_sha256(gguf_path),
        "versions": {"python": platform.python_version(), **_versions()},
        "build_seconds": round(time.perf_counter() - t0, 2),
    }
    write_text(out / "provenance.json", json.dumps(provenance, indent=2) + "\n")
    log(f"  built in {provenance['build_seconds']:.1f} s")


def main() -> None:
    m = micro_gemma4(log=lambda line: print(line, file=sys.stderr, flush=True))
    print(f"hf_dir  {m.hf_dir}\ngguf    {m.gguf}\nsha256  {m.sha256}")


if __name__ == "__main__":
    main()

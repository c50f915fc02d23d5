"""Real tokenizers for token-level streaming: which text pieces an inference engine emits, token by token.

Source. The Gemma 4 tokenizer is built from the vocab-only GGUF that llama.cpp ships,
``models/ggml-vocab-gemma-4.gguf`` in the pinned llama-cpp-python 0.3.36 sdist (see :mod:`harness.sdist`;
262,144 tokens, 514,906 merges, 15.8 MB). The build goes through transformers' own GGUF tokenizer
conversion (``transformers.integrations.gguf.gguf_tokenizer_mapping.convert_gguf_tokenizer`` and
``GemmaTokenizer``, the code behind ``GemmaTokenizer.from_pretrained(dir, gguf_file=...)``), with one change:
the GGUF metadata is read by :func:`harness.gguf_meta.read_gguf_metadata`, because transformers' GGUF reader imports torch at
module level and this project does not install torch (``gguf.GGUFReader`` works too but takes ~17 s on this
file). The result reproduces llama.cpp's own test vectors for this vocabulary (``ggml-vocab-gemma-4.gguf.inp`` /
``.out``, 46/46; ``tests/test_tokens.py`` checks them).

Caching. The first build (~3.5 s, transformers imported) saves the tokenizer with ``save_pretrained`` under
``harness.sdist.cache_dir() / "tokenizers" / "<name>-<gguf sha256[:16]>-tf<transformers>-tk<tokenizers>"``
(``tokenizer.json``, ``tokenizer_config.json``, ``chat_template.jinja``, ``provenance.json``). Later processes
load ``tokenizer.json`` with ``tokenizers.Tokenizer.from_file`` (~0.8 s, no transformers import); within a process
the object is kept. :func:`tokenizer_dir` gives the folder, for code that wants a transformers object
(``GemmaTokenizer.from_pretrained(tokenizer_dir())``, ~3 s more).

Token pieces. :func:`token_pieces` splits a text into the chunks an engine streams: each token's text (the
decoder's rules: ``▁`` -> space, ``<0xNN>`` byte-fallback tokens -> that byte, special/added tokens -> their
text), with byte-fallback tokens that only together make a character held back and merged into one chunk
(as incremental detokenization holds incomplete UTF-8).
"""

from __future__ import annotations

import codecs
import json
import os
import re
import shutil
import tempfile
import threading
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata as _im
from pathlib import Path
from typing import Any

from harness.gguf_meta import read_gguf_metadata
from harness.sdist import SDIST_NAME, SDIST_VERSION, LLAMA_CPP_DIR, cache_dir, sdist_file, sha256_file

__all__ = [
    "TOKENIZERS",
    "load_tokenizer",
    "tokenizer_dir",
    "tokenizer_provenance",
    "encode",
    "token_pieces",
    "token_pieces_checked",
    "read_gguf_metadata",
]


@dataclass(frozen=True)
class TokenizerSource:
    """Where a named tokenizer comes from: a vocab GGUF inside the sdist's ``vendor/llama.cpp``."""

    gguf: str  # path relative to vendor/llama.cpp, for sdist_file()
    tokenizer_class: str  # the transformers class that gets the converted backend


TOKENIZERS: dict[str, TokenizerSource] = {
    "gemma4": TokenizerSource(gguf="models/ggml-vocab-gemma-4.gguf", tokenizer_class="GemmaTokenizer"),
}

_LOCK = threading.Lock()
_LOADED: dict[str, tuple[Any, dict]] = {}  # name -> (tokenizers.Tokenizer, provenance)


def _source(name: str) -> TokenizerSource:
    try:
        return TOKENIZERS[name]
    except KeyError:
        raise ValueError(f"no real tokenizer named {name!r}; known: {', '.join(sorted(TOKENIZERS))}") from None


# --------------------------------------------------------------------------------------------------------------
# build, cache, load


def _version(dist: str) -> str:
    try:
        return _im.version(dist)
    except _im.PackageNotFoundError:
        return "not installed"


@lru_cache(maxsize=None)
def _gguf_sha256(path: str, size: int, mtime_ns: int) -> str:
    return sha256_file(Path(path))


def _gguf(name: str) -> tuple[Path, str]:
    path = sdist_file(_source(name).gguf)
    st = path.stat()
    return path, _gguf_sha256(str(path), st.st_size, st.st_mtime_ns)


def tokenizer_dir(name: str = "gemma4") -> Path:
    """The cache folder of tokenizer ``name``, built on first use (a ``save_pretrained`` folder).

    Raises ``ValueError`` for an unknown name, :class:`harness.sdist.SdistError` when the sdist cannot be fetched.
    """
    path, sha = _gguf(name)
    key = f"{name}-{sha[:16]}-tf{_version('transformers')}-tk{_version('tokenizers')}"
    folder = cache_dir() / "tokenizers" / key
    if (folder / "tokenizer.json").is_file() and (folder / "provenance.json").is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=folder.parent))
    os.chmod(tmp, 0o755)
    try:
        _build(name, path, sha, tmp)
        try:
            os.replace(tmp, folder)
        except OSError:  # another process finished first: use its folder
            if not (folder / "tokenizer.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def _build(name: str, gguf_path: Path, sha: str, out: Path) -> None:
    """Convert the GGUF's tokenizer with transformers' GGUF code and ``save_pretrained`` it into ``out``.

    Mirrors ``transformers.integrations.gguf.gguf_tokenizer_mapping.get_gguf_tokenizer`` (grouping of the
    ``tokenizer.*`` keys, special-token names, ``add_bos_token=False`` for gemma4 as the reference tokenizer has)
    but with :func:`read_gguf_metadata` as the reader.
    """
    import transformers
    from transformers.integrations.gguf.gguf_tokenizer_mapping import (
        _SPECIAL_TOKENS,
        GGUF_TOKENIZER_MAPPING,
        convert_gguf_tokenizer,
    )

    meta = read_gguf_metadata(gguf_path)
    grouped = {
        group: {new: meta[f"tokenizer.{old}"] for old, new in renames.items() if f"tokenizer.{old}" in meta}
        for group, renames in GGUF_TOKENIZER_MAPPING.items()
    }
    tok_dict, tok_config = grouped["tokenizer"], grouped["tokenizer_config"]
    if tok_dict.get("tokenizer_type") == "llama":
        tok_config.setdefault("add_bos_token", True)
    elif tok_dict.get("tokenizer_type") == "gemma4":
        tok_config["add_bos_token"] = False
    for attr, key in _SPECIAL_TOKENS.items():
        token_id = meta.get(f"tokenizer.ggml.{key}")
        tok_config[attr] = tok_dict["tokens"][token_id] if token_id is not None else None
    backend, extra = convert_gguf_tokenizer(meta["general.architecture"], tok_dict)
    cls = getattr(transformers, _source(name).tokenizer_class)
    hf = cls(tokenizer_object=backend, **tok_config, **extra)
    hf.save_pretrained(str(out))
    provenance = {
        "name": name,
        "gguf_file": _source(name).gguf,
        "gguf_source": f"{SDIST_NAME} {SDIST_VERSION} sdist, {LLAMA_CPP_DIR}/{_source(name).gguf}",
        "gguf_sha256": sha,
        "vocab_size": backend.get_vocab_size(with_added_tokens=True),
        "builder": f"transformers {transformers.__version__} "
                   f"integrations.gguf convert_gguf_tokenizer + {_source(name).tokenizer_class}",
        "transformers": transformers.__version__,
        "tokenizers_at_build": _version("tokenizers"),
    }
    (out / "provenance.json").write_text(json.dumps(provenance, indent=2) + "\n", encoding="utf-8")


def _load(name: str) -> tuple[Any, dict]:
    with _LOCK:
        if name not in _LOADED:
            from tokenizers import Tokenizer

            folder = tokenizer_dir(name)
            tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
            prov = json.loads((folder / "provenance.json").read_text(encoding="utf-8"))
            prov["tokenizers"] = _version("tokenizers")
            prov["library"] = f"tokenizers {prov['tokenizers']} (built with {prov['builder']})"
            prov["cache_dir"] = str(folder)
            _LOADED[name] = (tok, prov)
        return _LOADED[name]


def load_tokenizer(name: str = "gemma4"):
    """The fast tokenizer ``name`` as a ``tokenizers.Tokenizer`` (kept per process; built and cached on disk once).

    Encode with ``add_special_tokens=False`` (no BOS), as :func:`encode` does. Raises ``ValueError`` for an
    unknown name and :class:`harness.sdist.SdistError` if the sdist cannot be fetched.
    """
    return _load(name)[0]


def tokenizer_provenance(name: str = "gemma4") -> dict:
    """Facts for reports: ``gguf_file``, ``gguf_source``, ``gguf_sha256``, ``vocab_size``, ``builder``,
    ``transformers``, ``tokenizers``, ``library`` (one line), ``cache_dir``."""
    return dict(_load(name)[1])


def encode(text: str, name: str = "gemma4") -> list[int]:
    """Token ids of ``text`` without BOS/EOS; special tokens written in the text become their single ids."""
    return load_tokenizer(name).encode(text, add_special_tokens=False).ids


# --------------------------------------------------------------------------------------------------------------
# token pieces

_BYTE_TOKEN = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")
_TOKEN_BYTES: dict[str, dict[int, bytes]] = {}


def _token_bytes(name: str, tok, token_id: int) -> bytes:
    """The bytes one token stands for in the output: the decoder's rules applied to that token alone."""
    table = _TOKEN_BYTES.setdefault(name, {})
    got = table.get(token_id)
    if got is None:
        piece = tok.id_to_token(token_id)
        m = _BYTE_TOKEN.match(piece) if piece is not None else None
        if m:
            got = bytes([int(m.group(1), 16)])
        else:
            got = tok.decode([token_id], skip_special_tokens=False).encode("utf-8")
        table[token_id] = got
    return got


def token_pieces_checked(text: str, name: str = "gemma4") -> tuple[list[tuple[str, list[int]]], bool]:
    """:func:`token_pieces` and whether it had to fall back to offset slicing (``True`` = fallback used)."""
    tok = load_tokenizer(name)
    enc = tok.encode(text, add_special_tokens=False)
    ids, offsets = enc.ids, enc.offsets
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    pieces: list[tuple[str, list[int]]] = []
    starts: list[int] = []  # offset (characters) of each piece's first token
    pending: list[int] = []
    pending_start = 0
    for i, token_id in enumerate(ids):
        if not pending:
            pending_start = offsets[i][0]
        pending.append(token_id)
        out = decoder.decode(_token_bytes(name, tok, token_id))
        if out:
            pieces.append((out, pending))
            starts.append(pending_start)
            pending = []
    tail = decoder.decode(b"", final=True)  # incomplete UTF-8 at the end (cannot happen for a str input)
    if pending or tail:
        pieces.append((tail, pending))
        starts.append(pending_start)
    if "".join(p for p, _ in pieces) == text:
        return pieces, False
    return _slice_by_offsets(text, pieces, starts), True


def _slice_by_offsets(text: str, pieces: list[tuple[str, list[int]]], starts: list[int]) -> list[tuple[str, list[int]]]:
    """Fallback: the same token groups, each given the original text from its first token's offset to the next
    group's. The chunks then concatenate to ``text`` by construction; a group whose span is empty gives its ids
    to the group before it (or after it, at the start)."""
    bounds = [0]
    for s in starts[1:]:
        bounds.append(min(max(s, bounds[-1]), len(text)))
    bounds.append(len(text))
    out: list[tuple[str, list[int]]] = []
    carry: list[int] = []
    for k, (_, group_ids) in enumerate(pieces):
        chunk = text[bounds[k]:bounds[k + 1]]
        if chunk:
            out.append((chunk, carry + list(group_ids)))
            carry = []
        elif out:
            out[-1] = (out[-1][0], out[-1][1] + list(group_ids))
        else:
            carry += list(group_ids)
    if carry:  # only possible when text is empty but produced tokens: keep the ids on an empty chunk
        out.append(("", carry))
    return out


def token_pieces(text: str, name: str = "gemma4") -> list[tuple[str, list[int]]]:
    """Split ``text`` into the chunks an engine streams when it generates ``text``'s tokens one by one.

    Returns ``[(chunk, [token ids]), ...]``: usually one id per chunk; byte-fallback tokens that only together
    make a character (emoji, rare CJK) share one chunk. Special and added tokens (``<|tool_call>`` = 48,
    ``<|"|>`` = 52, ``<|channel>`` = 100, ``<|turn>`` = 105, ...) are single tokens with their own text as chunk.
    ``""`` gives ``[]``.

    Invariant: ``"".join(c for c, _ in token_pieces(t)) == t`` for every ``t``. The chunks are the decoder's text
    wherever that round-trips, which is every text except ones the Gemma normalizer cannot give back: a literal
    ``▁`` (U+2581) in the input is tokenized like a space and decodes to ``" "``. For such a text the same token
    groups are cut from the original text by the tokenizer's offsets instead (:func:`token_pieces_checked` tells
    when). Raises ``ValueError`` for an unknown tokenizer name; text must be encodable as UTF-8 (no lone
    surrogates), else the tokenizer raises.
    """
    return token_pieces_checked(text, name)[0]

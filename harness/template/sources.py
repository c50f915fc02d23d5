"""Load a model's real chat template, recording where it came from.

:func:`load_template` takes the template from the first source that supplies one. Sources the user names
(a model directory, a GGUF file) are tried first, and one of them must supply it: a named source that cannot
be used is an error, not a silent switch to another template. Otherwise the hub is tried, then the sdist.

1. ``local_dir`` -- a model directory the user gave (``model_dir``): ``chat_template.jinja``, else
   ``chat_template.json`` (``{"chat_template": ...}``), else ``tokenizer_config.json``'s ``chat_template``
   (a string, or a list of ``{"name", "template"}`` from which ``tool_use``, else ``default``, is taken) -- the files
   transformers saves a chat template in, the standalone ``.jinja`` first as transformers 5.x reads it.
2. ``hub`` -- the catalog's ``hf_repo``/``hf_file``/``hf_revision`` through ``huggingface_hub``. A copy
   already in the HF cache (``$HF_HUB_CACHE``, ``$HF_HOME/hub`` or the default, read at call time) is used
   via ``hf_hub_download(local_files_only=True)`` without any request -- so a cached template is not
   refreshed (corpora stay reproducible; the sha256 in the provenance says which text was used). If it is
   not cached and we are not offline (``offline=True``, ``$HF_HUB_OFFLINE`` true now or when
   huggingface_hub was imported), one HEAD request (``get_hf_file_metadata``: no retries, timeout
   :data:`HUB_TIMEOUT_S` or ``$TOOLCALL_HARNESS_HUB_TIMEOUT``) checks the hub answers before
   ``hf_hub_download`` fetches the file into the HF cache. The probe exists because ``hf_hub_download``
   retries a failed connection five times with back-off when nothing is cached (measured: 23 s with no
   network); with it an unreachable hub costs one failed request (measured: 0.12 s when DNS fails, 2.1 s
   against a server that never answers). Hub requests made here carry no telemetry (see
   :func:`_no_hub_telemetry`).
3. ``gguf`` -- a GGUF path the user gives: its ``tokenizer.chat_template`` metadata string (tried right
   after ``local_dir``, before the hub: a file the user names wins). Read by
   :func:`read_gguf_metadata_string` (:mod:`harness.assets.gguf`, which skips to the key: ``gguf.GGUFReader``
   decodes every array and takes 16 s on the 15.8 MB ``ggml-vocab-gemma-4.gguf``).
4. ``sdist`` -- the catalog's ``offline_template`` from the pinned llama-cpp-python sdist
   (:func:`harness.assets.sdist.sdist_file`): llama.cpp's copy of a model repository's template. For a model with
   no copy of its own (Gemma 4 E2B/E4B) another model's template stands in; the catalog says so and the
   provenance repeats it. A row with no ``offline_template`` (FunctionGemma: the sdist has no template for it)
   fails this source, and the :class:`~harness.core.errors.TemplateNotFoundError` then says what to download.

Every failed source is recorded in ``provenance["attempts"]`` with a short reason. When every source
fails, :class:`~harness.core.errors.TemplateNotFoundError` lists them. Unknown model names raise
:class:`~harness.core.errors.UnknownModelError`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.assets.gguf import read_gguf_metadata
from harness.assets.sdist import SDIST_NAME, SDIST_VERSION, SdistError, sdist_file
from harness.core.errors import HarnessError, TemplateNotFoundError
from harness.core.textio import NotUtf8Error, read_utf8
from harness.template.catalog import ModelEntry, get_model, list_models

__all__ = [
    "ChatTemplate",
    "load_template",
    "template_from_text",
    "read_gguf_metadata_string",
    "HUB_TIMEOUT_S",
    "SOURCES",
]

SOURCES = ("local_dir", "hub", "gguf", "sdist")
#: seconds the hub reachability probe (and the download's etag request) may take.
HUB_TIMEOUT_S = 2.0
GGUF_TEMPLATE_KEY = "tokenizer.chat_template"
_TRUE = {"1", "ON", "YES", "TRUE"}  # huggingface_hub's ENV_VARS_TRUE_VALUES


@dataclass
class ChatTemplate:
    """A chat template's text and where it came from.

    ``provenance`` (JSON-ready) always has:

    - ``source``: ``local_dir`` | ``hub`` | ``gguf`` | ``sdist``
    - ``location``: the directory, repo id, GGUF path or sdist name==version it was read from
    - ``file``: the file name the text came from (``chat_template.jinja``, ``tokenizer_config.json``,
      the GGUF's file name, the sdist template's name)
    - ``sha256``: sha256 of ``text`` encoded as UTF-8
    - ``fallback``: True when the template is the offline default or an earlier source failed
    - ``fallback_note``: plain words on what stands in for what and why ("" when not a fallback)
    - ``attempts``: ``[{"source", "error"}]`` for each source tried before, with a short reason

    and, by source: ``key`` (tokenizer_config/GGUF key), ``revision`` (hub commit), ``cached`` (hub: taken
    from the HF cache without a request), ``template_of`` (sdist: the catalog model whose template it is).
    """

    text: str
    model: str
    format: str
    provenance: dict = field(default_factory=dict)

    @property
    def source(self) -> str:
        return self.provenance["source"]

    @property
    def file(self) -> str:
        return self.provenance["file"]

    @property
    def sha256(self) -> str:
        return self.provenance["sha256"]

    @property
    def fallback(self) -> bool:
        return bool(self.provenance.get("fallback"))

    def summary(self) -> dict:
        """The short provenance kept on each case: ``source``, ``file``, ``sha256`` (+ ``fallback``)."""
        out = {k: self.provenance[k] for k in ("source", "file", "sha256")}
        if self.fallback:
            out["fallback"] = True
        return out


class _SourceFailed(Exception):
    """One source could not supply a template; the message is the short reason recorded."""


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _short(exc: BaseException, limit: int = 200) -> str:
    """A one-line reason for ``exc``: its first non-empty message line, or its type name."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    msg = lines[0] if lines else type(exc).__name__
    return msg if len(msg) <= limit else msg[: limit - 3] + "..."


def template_from_text(text: str, model: str, format: str, **provenance) -> ChatTemplate:
    """Wrap template ``text`` (e.g. from a test or another tool) in a :class:`ChatTemplate`.

    ``provenance`` supplies at least ``source``, ``location`` and ``file``; ``sha256`` is computed and
    ``fallback``/``fallback_note``/``attempts`` default to not-a-fallback.
    """
    prov = {"fallback": False, "fallback_note": "", "attempts": [], **provenance, "sha256": _sha256(text)}
    return ChatTemplate(text=text, model=model, format=format, provenance=prov)


def _read_text(path: Path) -> str:
    """The UTF-8 text of template file ``path``; :class:`_SourceFailed` names the file for one that cannot be read
    or is not UTF-8 (the first byte that is not, its line and offset)."""
    try:
        return read_utf8(path)
    except NotUtf8Error as exc:
        raise _SourceFailed(str(exc)) from None
    except OSError as exc:
        raise _SourceFailed(f"{path}: {exc.strerror or exc}") from None


# --- source 1: a local model directory -------------------------------------------------------------


def _template_in_json(path: Path) -> tuple[str, str] | None:
    """``(text, key)`` of the chat template in a ``chat_template.json`` / ``tokenizer_config.json``, None when it has
    no ``chat_template``. A named list (``[{"name", "template"}]``, Cohere's) gives ``tool_use`` when it has one, as
    transformers' ``apply_chat_template`` picks it for a request with tools (every render here has them), else
    ``default``. Raises :class:`_SourceFailed` for invalid JSON or a value of another shape."""
    raw = _read_text(path)
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise _SourceFailed(f"{path}: not valid JSON: {_short(exc)}") from None
    except RecursionError:
        raise _SourceFailed(f"{path}: not valid JSON: nested too deeply") from None
    value = data.get("chat_template") if isinstance(data, dict) else None
    if value is None or isinstance(value, str):
        return None if value is None else (value, "chat_template")
    if isinstance(value, list):
        named = {t.get("name"): t.get("template") for t in value if isinstance(t, dict)}
        for wanted in ("tool_use", "default"):
            text = named.get(wanted)
            if isinstance(text, str):
                return text, f"chat_template[{wanted}]"
        raise _SourceFailed(
            f"{path}: chat_template list has no 'tool_use' or 'default' template "
            f"(names: {', '.join(map(str, named)) or 'none'})"
        )
    raise _SourceFailed(f"{path}: chat_template is a {type(value).__name__}, not a string or list")


def _from_local_dir(model_dir: str) -> tuple[str, dict]:
    root = Path(model_dir)
    if not root.is_dir():
        raise _SourceFailed(f"{model_dir}: not a directory")
    jinja = root / "chat_template.jinja"
    if jinja.is_file():
        return _read_text(jinja), {"location": str(root), "file": jinja.name}
    for name in ("chat_template.json", "tokenizer_config.json"):
        path = root / name
        if path.is_file():
            found = _template_in_json(path)
            if found is not None:
                return found[0], {"location": str(root), "file": name, "key": found[1]}
    raise _SourceFailed(
        f"{model_dir}: no chat_template.jinja, and no chat_template in chat_template.json or tokenizer_config.json"
    )


# --- source 2: the Hugging Face hub -----------------------------------------------------------------


def _env_offline() -> bool:
    """``$HF_HUB_OFFLINE`` as it is now, or as huggingface_hub read it when first imported."""
    if (os.environ.get("HF_HUB_OFFLINE") or "").upper() in _TRUE:
        return True
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def _hf_cache_dir() -> str | None:
    """The hub cache directory as the environment says *now* (huggingface_hub reads it at import)."""
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(var):
            return os.environ[var]
    if os.environ.get("HF_HOME"):
        return os.path.join(os.environ["HF_HOME"], "hub")
    return None


def _hub_timeout() -> float:
    try:
        return float(os.environ.get("TOOLCALL_HARNESS_HUB_TIMEOUT") or HUB_TIMEOUT_S)
    except ValueError:
        return HUB_TIMEOUT_S


@contextlib.contextmanager
def _no_hub_telemetry():
    """Requests made here carry no telemetry (as ``HF_HUB_DISABLE_TELEMETRY=1`` would do).

    With telemetry on, huggingface_hub 2.x builds the user-agent header of every call -- even a
    ``local_files_only`` cache lookup -- by first fetching ``/api/agent-harnesses`` (once per process, its
    own 3 s timeout). Against a network that swallows packets that added 3 s to an unreachable hub
    (measured 5.1 s instead of 2.1 s).
    """
    from huggingface_hub import constants

    saved = constants.HF_HUB_DISABLE_TELEMETRY
    constants.HF_HUB_DISABLE_TELEMETRY = True
    try:
        yield
    finally:
        constants.HF_HUB_DISABLE_TELEMETRY = saved


def _hub_reason(exc: BaseException, entry: ModelEntry) -> str:
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(exc, OfflineModeIsEnabled):
        return "huggingface_hub is in offline mode (HF_HUB_OFFLINE was set when it was imported)"
    if isinstance(exc, GatedRepoError):
        return f"{entry.hf_repo} is gated: accept its licence on huggingface.co and log in (hf auth login)"
    if isinstance(exc, RevisionNotFoundError):
        return f"{entry.hf_repo} has no revision {entry.hf_revision!r}"
    if isinstance(exc, RepositoryNotFoundError):
        return f"{entry.hf_repo} not found (or private)"
    if isinstance(exc, EntryNotFoundError):
        return f"{entry.hf_repo} has no file {entry.hf_file}"
    return f"unreachable ({_short(exc, 120)})"


def _from_hub(entry: ModelEntry, offline: bool) -> tuple[str, dict]:
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url
    from huggingface_hub.errors import LocalEntryNotFoundError

    kwargs: dict[str, Any] = dict(
        repo_id=entry.hf_repo, filename=entry.hf_file, revision=entry.hf_revision, cache_dir=_hf_cache_dir()
    )
    info: dict = {"location": entry.hf_repo, "file": entry.hf_file}
    with _no_hub_telemetry():
        try:
            path = hf_hub_download(**kwargs, local_files_only=True)
            info["cached"] = True
        except LocalEntryNotFoundError:
            if offline:
                raise _SourceFailed(f"offline, and {entry.hf_repo}/{entry.hf_file} is not in the HF cache") from None
            timeout = _hub_timeout()
            try:
                # One request, no retries: fails in about `timeout` when the hub is unreachable.
                get_hf_file_metadata(
                    hf_hub_url(entry.hf_repo, entry.hf_file, revision=entry.hf_revision), timeout=timeout
                )
                path = hf_hub_download(**kwargs, etag_timeout=timeout)
            except Exception as exc:  # any failure of the hub is one recorded attempt, never fatal
                raise _SourceFailed(_hub_reason(exc, entry)) from None
            info["cached"] = False
        except Exception as exc:
            raise _SourceFailed(_hub_reason(exc, entry)) from None
    parts = Path(path).parts
    if "snapshots" in parts:  # .../models--org--name/snapshots/<commit>/<file>
        info["revision"] = parts[parts.index("snapshots") + 1]
    if entry.hf_file.endswith(".json"):  # tokenizer_config.json / chat_template.json: the template is a field
        found = _template_in_json(Path(path))
        if found is None:
            raise _SourceFailed(f"{entry.hf_repo}/{entry.hf_file} has no chat_template")
        info["key"] = found[1]
        return found[0], info
    return _read_text(Path(path)), info


# --- source 3: GGUF metadata ------------------------------------------------------------------------


def read_gguf_metadata_string(path: str | os.PathLike, key: str = GGUF_TEMPLATE_KEY) -> str | None:
    """The string value of metadata ``key`` in GGUF file ``path``, or None when the key is absent.

    Reads only the header up to ``key`` (:func:`harness.assets.gguf.read_gguf_metadata`). Raises
    ``ValueError`` for a file that is not GGUF, is truncated, or holds ``key`` with a non-string value;
    ``OSError`` when it cannot be read.
    """
    value = read_gguf_metadata(path, {key}).get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{key} is a {type(value).__name__}, not a string")
    return value


def _from_gguf(gguf: str) -> tuple[str, dict]:
    try:
        text = read_gguf_metadata_string(gguf, GGUF_TEMPLATE_KEY)
    except (OSError, ValueError) as exc:
        raise _SourceFailed(f"{gguf}: {_short(exc)}") from None
    if text is None:
        raise _SourceFailed(f"{gguf}: no {GGUF_TEMPLATE_KEY} metadata")
    return text, {"location": str(gguf), "file": os.path.basename(gguf), "key": GGUF_TEMPLATE_KEY}


# --- source 4: the pinned sdist ---------------------------------------------------------------------


def _from_sdist(entry: ModelEntry) -> tuple[str, dict]:

    if not entry.offline_template:
        raise _SourceFailed(
            f"{SDIST_NAME}=={SDIST_VERSION} has no template for {entry.name} (the catalog names no offline template)"
        )
    try:
        path = sdist_file(entry.offline_template_relpath)
    except (SdistError, OSError) as exc:
        raise _SourceFailed(_short(exc, 300)) from None
    text = _read_text(path)
    return text, {
        "location": f"{SDIST_NAME}=={SDIST_VERSION}",
        "file": entry.offline_template,
        "template_of": entry.offline_template_model,
    }


# --- the chain --------------------------------------------------------------------------------------


def _fallback_note(entry: ModelEntry, source: str, file: str, attempts: list[dict]) -> str:
    """E.g. ``google-gemma-4-31B-it.jinja (gemma-4-31b) stands in for gemma-4-e2b: hub unreachable (...).
    Catalog: the sdist has no E2B template: ...``."""
    why = "; ".join(f"{a['source']} {a['error']}" for a in attempts)
    if source == "sdist":
        if entry.offline_stands_in:
            head = f"{file} ({entry.offline_template_model}) stands in for {entry.name}"
        else:
            head = f"{file} (llama.cpp's copy in the sdist) is used for {entry.name}"
        return f"{head}: {why or 'no other source was tried'}. Catalog: {entry.offline_note}"
    return f"{source} template used for {entry.name} after earlier sources failed: {why}" if attempts else ""


def load_template(
    model: str, model_dir: str | None = None, gguf: str | None = None, offline: bool | None = None
) -> ChatTemplate:
    """Load model ``model``'s chat template (see the module doc for the sources).

    - ``model``: a catalog name (``harness.template.catalog``), e.g. ``gemma-4-e2b``; it fixes the format and the hub
      repo even when the template comes from ``model_dir`` or ``gguf``.
    - ``model_dir`` / ``gguf``: sources the user names. They are tried first (directory, then GGUF) and one of
      them must supply the template: a path that is missing or holds no template is an error, never a
      silent fall back to another template.
    - ``offline``: True skips the network (the HF cache is still used); None reads ``$HF_HUB_OFFLINE``
      (now, and huggingface_hub's import-time value).

    Returns a :class:`ChatTemplate`. Raises :class:`UnknownModelError`, :class:`CatalogError`, or
    :class:`TemplateNotFoundError` (listing every source tried and why it failed).
    """
    entry = get_model(model)
    named = []
    if model_dir is not None:
        named.append(("local_dir", lambda: _from_local_dir(model_dir)))
    if gguf is not None:
        named.append(("gguf", lambda: _from_gguf(gguf)))
    if named:
        return _first_source(entry, named, "the template source you named could not be used")
    offline = _env_offline() if offline is None else offline
    return _first_source(
        entry,
        [("hub", lambda: _from_hub(entry, offline)), ("sdist", lambda: _from_sdist(entry))],
        f"no chat template for {entry.name}",
    )


def first_offline_template(fmt: str) -> tuple[str, ChatTemplate] | tuple[None, str]:
    """``(model name, ChatTemplate)`` for the first catalog model of format ``fmt`` whose template loads offline (the
    HF cache, then the sdist), or ``(None, reason)`` naming the last model tried and why it failed (benchmarks and
    fuzz seeds: any template of the format will do)."""
    reason = "no catalog model"
    for entry in list_models():
        if entry.format != fmt:
            continue
        try:
            return entry.name, load_template(entry.name, offline=True)
        except HarnessError as exc:
            reason = f"{entry.name}: {str(exc).split(';')[0]}"
    return None, reason


def _first_source(entry: ModelEntry, chain: list, failure: str) -> ChatTemplate:
    """The template of the first source in ``chain`` (``[(source, load)]``) that supplies one."""
    attempts: list[dict] = []
    for source, load in chain:
        try:
            text, info = load()
        except _SourceFailed as exc:
            attempts.append({"source": source, "error": str(exc)})
            continue
        fallback = source == "sdist" or bool(attempts)
        provenance = {
            "source": source,
            **info,
            "sha256": _sha256(text),
            "fallback": fallback,
            "fallback_note": _fallback_note(entry, source, info["file"], attempts) if fallback else "",
            "attempts": attempts,
        }
        return ChatTemplate(text=text, model=entry.name, format=entry.format, provenance=provenance)
    tried = "; ".join(f"{a['source']}: {a['error']}" for a in attempts)
    hint = ""
    if not entry.offline_template and any(a["source"] == "sdist" for a in attempts):
        hint = (
            f". There is no offline template for {entry.name}: download {entry.hf_repo}'s {entry.hf_file} "
            f"(`hf download {entry.hf_repo} {entry.hf_file}`, into the HF cache) or pass a model folder "
            f"(--model-dir) or a GGUF (--gguf) that holds it. Catalog: {entry.offline_note}"
        )
    raise TemplateNotFoundError(f"{failure}: {tried}{hint}")

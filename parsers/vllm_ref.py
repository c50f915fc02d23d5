"""vLLM engine (draft)."""

from __future__ import annotations

import importlib.metadata

from harness.engine_spec import PipEngine

FORMAT = "gemma4"
TOKENIZER_ENV = "TOOLCALL_HARNESS_TOKENIZER_GEMMA4"


def _steps(version: str) -> list[list[str]]:
    return [
        ["install", "torch==2.13.0", "transformers>=5.16.1,<5.21", "openai>=2.25", "pydantic",
         "partial-json-parser", "regex", "cachetools", "msgspec", "pyyaml", "psutil", "fastapi<0.137",
         "starlette", "cloudpickle", "pyzmq", "cbor2", "urllib3", "aiohttp", "requests", "openai-harmony",
         "pillow", "pybase64", "prometheus_client", "uvloop", "py-cpuinfo", "xgrammar", "ijson",
         "mistral_common"],
        ["install", "--no-deps", f"vllm=={version}"],
        ["uninstall", "-y", "triton"],
    ]


def _worker_env() -> dict[str, str]:
    import harness.tokens

    return {TOKENIZER_ENV: str(harness.tokens.tokenizer_dir())}


ENGINE = PipEngine(
    name="vllm", default_version="0.33.0", formats=(FORMAT,), cold_install="TBD",
    steps=_steps, worker_module="parsers.vllm_ref", worker_env=_worker_env,
).engine()

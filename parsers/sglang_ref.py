"""(draft)"""
from __future__ import annotations

from harness.engine_spec import PipEngine

VERSION = "0.5.23"
DEPS = [
    "torch==2.13.0", "transformers==5.19.0", "pydantic", "orjson", "partial_json_parser", "msgspec", "regex",
    "xgrammar==0.2.7", "openai==2.8.0", "openai-harmony==0.0.4", "psutil", "pybase64", "requests", "pillow",
    "starlette", "pyzmq", "IPython", "aiohttp",
]

ENGINE = PipEngine(
    name="sglang", default_version=VERSION, formats=("gemma4",),
    cold_install="draft",
    steps=lambda v: [["install", *DEPS], ["install", "--no-deps", f"sglang=={v}"]],
    worker_module="parsers.sglang_ref",
).engine()

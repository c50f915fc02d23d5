"""Coverage ratchet: every own parser the registry discovers (``parsers.own``) has a conformance config.

A config is a :class:`conformance.suite.ParserConformance` subclass with a ``CONFIG`` for the format in a module
``tests/conformance/test_<format>.py``. The failure names the formats without one.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from conformance.suite import OWN_LIBRARY, ParserConformance
from harness.parse import registry

HERE = Path(__file__).parent


def own_formats() -> set[str]:
    registry.reload()
    try:
        return {f for info in registry.parser_info() if info["library"] == OWN_LIBRARY for f in info["formats"]}
    finally:
        registry.reload()


def configured_formats() -> dict[str, str]:
    """``{format: module}`` of every conformance config under ``tests/conformance/``."""
    out = {}
    for path in sorted(HERE.glob("test_*.py")):
        module = importlib.import_module(f"conformance.{path.stem}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, ParserConformance) and hasattr(value, "CONFIG"):
                out[value.CONFIG.format] = module.__name__
    return out


def test_every_own_parser_has_a_conformance_config():
    formats = own_formats()
    assert len(formats) >= 13
    configured = configured_formats()
    missing = sorted(formats - set(configured))
    assert not missing, f"own parsers without a conformance config in tests/conformance/test_<format>.py: {missing}"
    assert set(configured) <= formats, f"configs for no own parser: {sorted(set(configured) - formats)}"


def test_each_config_lives_in_its_formats_file():
    for fmt, module in configured_formats().items():
        assert module == f"conformance.test_{fmt}", (fmt, module)

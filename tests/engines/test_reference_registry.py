"""The parser registry on the reference adapters: names, aliases and versions, ``--parsers all`` for every
engine and format, a broken plugin module, and which formats each library registers for."""

from __future__ import annotations

import pytest

from harness.parse import registry


@pytest.fixture
def fresh_registry():
    registry.reload()
    yield
    registry.reload()


def test_registry_lists_reference_parsers(fresh_registry):
    names = registry.available_parsers("gemma4")
    assert {"transformers==5.24.0:gemma4", "mlx-lm==0.32.2:gemma4"} <= set(names)
    assert not {"transformers==5.24.0:gemma4", "mlx-lm==0.32.2:gemma4"} & set(registry.available_parsers("glm47"))
    own = [n for n, f in names.items() if f().library == "toolcall-harness"]
    # the project's own parser is either registered or listed with the reason it is not
    assert own or any(k.startswith("parsers.own.gemma4") for k in registry.unavailable_parsers())


@pytest.mark.parametrize(
    "name, cls",
    [
        ("transformers", "TransformersParser"),
        ("transformers:gemma4", "TransformersParser"),
        ("transformers==5.24.0:gemma4", "TransformersParser"),
        ("mlx-lm", "MlxLmParser"),
        ("mlx_lm", "MlxLmParser"),
        ("mlx-lm==0.32.2:gemma4", "MlxLmParser"),
    ],
)
def test_get_parser_names_and_aliases(fresh_registry, name, cls):
    parser = registry.get_parser(name, format="gemma4")
    assert type(parser).__name__ == cls
    assert registry.get_parser(name, format="gemma4") is not parser  # a new instance per call


def test_get_parser_unknown_raises_keyerror_listing_names(fresh_registry):
    with pytest.raises(KeyError, match=r"unknown parser 'nope'.*transformers==5\.24\.0:gemma4"):
        registry.get_parser("nope")
    with pytest.raises(KeyError, match="does not parse format 'glm47'"):
        registry.get_parser("transformers==5.24.0:gemma4", format="glm47")
    with pytest.raises(KeyError):
        registry.get_parser("transformers", format="glm47")


def test_broken_module_only_makes_its_parsers_unavailable(fresh_registry, monkeypatch):
    discovered = registry.plugin_modules()
    monkeypatch.setattr(registry, "plugin_modules", lambda: {**discovered, "parsers.no_such_parser_module": "nolib"})
    registry.reload()
    assert "ModuleNotFoundError" in registry.unavailable_parsers()["parsers.no_such_parser_module"]
    assert "transformers==5.24.0:gemma4" in registry.available_parsers()
    with pytest.raises(KeyError, match="no_such_parser_module"):
        registry.get_parser("nolib", format="gemma4")
    got, unavailable = registry.create_parsers(["transformers", "nolib"], "gemma4")
    assert [p.name for p in got] == ["transformers==5.24.0:gemma4"]
    assert "ModuleNotFoundError" in unavailable["nolib"]


def test_create_parsers(fresh_registry):
    got, _ = registry.create_parsers(None, "gemma4")
    assert {"transformers==5.24.0:gemma4", "mlx-lm==0.32.2:gemma4"} <= {p.name for p in got}
    got, unavailable = registry.create_parsers(["mlx-lm", "transformers", "transformers:gemma4"], "gemma4")
    assert [p.name for p in got] == ["mlx-lm==0.32.2:gemma4", "transformers==5.24.0:gemma4"] and unavailable == {}
    with pytest.raises(KeyError):
        registry.create_parsers(["nope"], "gemma4")


def test_registry_lists_hermes_references_and_all_names_every_engine(fresh_registry):
    names = registry.available_parsers("hermes")
    assert {"transformers==5.24.0:hermes", "mlx-lm==0.32.2:hermes"} <= set(names)
    assert registry.get_parser("transformers", format="hermes").name == "transformers==5.24.0:hermes"
    assert registry.get_parser("mlx-lm:hermes").name == "mlx-lm==0.32.2:hermes"
    expanded = registry.expand_names(["all"], "hermes")
    assert {"sglang", "vllm", "llama.cpp"} <= set(expanded)
    assert {"transformers==5.24.0:hermes", "mlx-lm==0.32.2:hermes"} <= set(expanded)


def test_all_names_sglang_for_every_format_it_parses(fresh_registry):
    """``--parsers all`` adds the SGLang engine for each format its module configures, and not for FunctionGemma,
    which SGLang has no parser for (parsers/reference/sglang.py)."""
    from parsers.reference.sglang import FORMATS, UNSUPPORTED

    for fmt in FORMATS:
        assert "sglang" in registry.expand_names(["all"], fmt), fmt
    for fmt in UNSUPPORTED:
        assert "sglang" not in registry.expand_names(["all"], fmt), fmt


def test_all_names_llama_cpp_for_every_format_it_parses(fresh_registry):
    """``--parsers all`` adds the llama.cpp engine for each format its module configures, and not for
    FunctionGemma, which llama.cpp cannot be set up for offline (parsers/reference/llama_cpp.py)."""
    from parsers.reference.llama_cpp import FORMATS, UNSUPPORTED

    for fmt in FORMATS:
        assert "llama.cpp" in registry.expand_names(["all"], fmt), fmt
    for fmt in UNSUPPORTED:
        assert "llama.cpp" not in registry.expand_names(["all"], fmt), fmt


def test_tf_registers_only_formats_with_a_builtin_template(fresh_registry):
    from parsers.reference.transformers import FORMATS, UNSUPPORTED

    assert not set(FORMATS) & set(UNSUPPORTED)
    assert "transformers==5.24.0:qwen3_coder" in registry.expand_names(["all"], "qwen3_coder")
    for fmt in UNSUPPORTED:
        assert not [n for n in registry.available_parsers(fmt) if n.startswith("transformers")], fmt


def test_mlx_registry_and_all_name_every_newer_format(fresh_registry):
    from parsers.reference.mlx_lm import FORMATS, UNSUPPORTED

    for fmt in set(FORMATS) - {"gemma4", "hermes"}:
        name = f"mlx-lm==0.32.2:{fmt}"
        assert name in registry.available_parsers(fmt) and name in registry.expand_names(["all"], fmt), fmt
        assert registry.get_parser("mlx-lm", format=fmt).name == name
    for fmt in UNSUPPORTED:
        assert not [n for n in registry.available_parsers(fmt) if n.startswith("mlx-lm")], fmt


def test_all_names_mistral_common_for_the_mistral_formats_only(fresh_registry):
    """``--parsers all`` adds the mistral-common engine for the two formats its decoder reads; every other format has
    the reason, and a release before the endpoint decoded ``[THINK]`` chunks is refused before any build."""
    from harness.engines import environments as engines
    from harness.formats import known_formats
    from parsers.reference.mistral_common import FORMATS, UNSUPPORTED

    assert set(FORMATS) | set(UNSUPPORTED) == set(known_formats()) and not set(FORMATS) & set(UNSUPPORTED)
    for fmt in known_formats():
        assert ("mistral-common" in registry.expand_names(["all"], fmt)) == (fmt in FORMATS), fmt
    with pytest.raises(engines.EngineError, match=r"mistral-common==1\.8\.2: .*1\.8\.3 and later"):
        engines.install("mistral-common==1.8.2")

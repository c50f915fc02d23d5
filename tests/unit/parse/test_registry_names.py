"""Registry names: reference adapters register one factory per format of their ``FORMATS`` table, unknown parser
names and formats get did-you-mean suggestions, and a factory that cannot build is labelled with its format."""

import functools
import sys
import textwrap

import pytest

from harness.parse import registry


@pytest.fixture
def fresh_registry():
    registry.reload()
    yield
    registry.reload()


def test_each_reference_module_has_one_adapter_and_a_factory_per_format():
    import importlib

    from harness.core.plugins import package_modules

    adapters = 0
    for name in package_modules("parsers.reference"):
        module = importlib.import_module(name)
        if hasattr(module, "UNAVAILABLE"):  # listed with its reason only (Ollama: Go, no module proxy)
            continue
        assert not set(module.FORMATS) & set(module.UNSUPPORTED), name
        assert set(module.ENGINE.formats) == set(module.FORMATS), name
        if not hasattr(module, "PARSERS"):  # an engine whose worker is not Python (llama.cpp)
            continue
        adapters += 1
        assert [f.args for f in module.PARSERS] == [(fmt,) for fmt in module.FORMATS], name
        assert len({f.func for f in module.PARSERS}) == 1, name  # one adapter class, parametrized by the format
    assert adapters >= 4


def test_unknown_parser_names_the_close_ones(fresh_registry):
    with pytest.raises(
        registry.UnknownParserError, match=r"unknown parser 'transfomers' \(did you mean 'transformers'"
    ):
        registry.get_parser("transfomers", format="gemma4")
    with pytest.raises(registry.UnknownParserError, match=r"unknown parser 'ownn' \(did you mean 'own'\?\)"):
        registry.get_parser("ownn", format="hermes")
    with pytest.raises(registry.UnknownParserError, match=r"'sglangg' \(did you mean 'sglang'\?\)"):
        registry.create_parsers(["sglangg"], "gemma4", install_missing=False)


def test_unknown_format_names_the_close_ones(fresh_registry):
    with pytest.raises(
        registry.UnknownParserError, match=r"for format 'gema4' \(not a known format; did you mean 'gemma4'"
    ):
        registry.get_parser("transformers:gema4")
    with pytest.raises(
        registry.UnknownParserError, match=r"does not parse format 'hermess' \(not a known format; did you"
    ):
        registry.get_parser("transformers==5.24.0:gemma4", format="hermess")


def test_a_factory_that_fails_is_listed_under_its_class_and_format(fresh_registry, tmp_path, monkeypatch):
    (tmp_path / "toy_adapter_module.py").write_text(
        textwrap.dedent(
            """
            import functools

            class ToyParser:
                def __init__(self, format):
                    raise ImportError(f"toy library missing for {format}")

            PARSERS = [functools.partial(ToyParser, fmt) for fmt in ("gemma4", "hermes")]
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("toy_adapter_module", None)
    discovered = registry.plugin_modules()
    monkeypatch.setattr(registry, "plugin_modules", lambda: {**discovered, "toy_adapter_module": "toy"})
    registry.reload()
    unavailable = registry.unavailable_parsers()
    assert unavailable["toy_adapter_module.ToyParser('gemma4')"] == "ImportError: toy library missing for gemma4"
    assert unavailable["toy_adapter_module.ToyParser('hermes')"] == "ImportError: toy library missing for hermes"
    sys.modules.pop("toy_adapter_module", None)


def test_factory_label():
    class Adapter:
        pass

    assert registry._factory_label("m", functools.partial(Adapter, "glm45")) == "m.Adapter('glm45')"
    assert registry._factory_label("m", Adapter) == "m.Adapter"


def test_references_is_all_without_the_own_parser(fresh_registry):
    """``--parsers references`` (what ``make pin-engines`` pins): every in-process reference and engine of the
    format, in the order of ``all``, without ``toolcall-harness:<format>``."""
    for fmt in ("gemma4", "hermes", "harmony", "functiongemma"):
        everything = registry.expand_names(["all"], fmt)
        references = registry.expand_names(["references"], fmt)
        assert f"toolcall-harness:{fmt}" in everything and f"toolcall-harness:{fmt}" not in references
        assert references == [n for n in everything if n != f"toolcall-harness:{fmt}"]
    assert {"transformers==5.24.0:gemma4", "mlx-lm==0.32.2:gemma4", "sglang", "vllm", "vllm-mlx", "llama.cpp"} == set(
        registry.expand_names(["references"], "gemma4")
    )
    assert registry.expand_names(["own", "references", "vllm"], "harmony") == [
        "own",
        *registry.expand_names(["references"], "harmony"),
    ]


def test_ollama_is_listed_as_unavailable_with_its_reason(fresh_registry):
    """Ollama's parsers are Go and cannot be built here: ``parsers`` says so, and ``all`` does not include it."""
    rows = dict(registry.describe_parsers())
    assert rows["parsers.reference.ollama.ollama"].startswith("unavailable: OllamaUnavailable: Ollama's parsers are Go")
    assert "Go module proxy" in rows["parsers.reference.ollama.ollama"]
    assert not [n for n in registry.expand_names(["all"], "gemma4") if "ollama" in n]

"""Engines are found by discovery: the modules of ``parsers.reference`` that define ``ENGINE`` and the modules named
by entry points of group ``toolcall_harness.engines``; broken ones are listed with the reason; an unknown engine
name is one error line with the close names."""

import importlib.metadata
import sys
import textwrap

import pytest

from harness.core import plugins
from harness.core.errors import did_you_mean
from harness.engines import environments

PLUG_IN = """
from harness.engines.spec import Engine

ENGINE = Engine(
    name={name!r},
    default_version="1.0",
    formats=("gemma4",),
    cold_install="none",
    recipe=lambda version: {{"kind": "test"}},
    install=lambda env_dir, version, log: None,
    worker_command=lambda env_dir, version: (["true"], {{}}),
)
"""


@pytest.fixture
def fresh_engines():
    environments.reload()
    yield
    environments.reload()


@pytest.fixture
def plug_ins(tmp_path, monkeypatch, fresh_engines):
    """Write modules into an importable folder and declare them as entry points of the engines group."""
    monkeypatch.syspath_prepend(str(tmp_path))
    declared: dict[str, str] = {}
    monkeypatch.setattr(
        environments, "entry_point_modules", lambda group: declared if group == environments.ENTRY_POINT_GROUP else {}
    )

    def add(module: str, source: str, value: str | None = None) -> None:
        (tmp_path / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        sys.modules.pop(module, None)
        declared[value or module] = "some-dist"
        environments.reload()

    yield add
    for module in declared:
        sys.modules.pop(module.partition(":")[0], None)


def test_the_reference_modules_defining_engine_are_the_engines(fresh_engines):
    import importlib

    found = environments.engines()
    defining = {
        importlib.import_module(m).ENGINE.name
        for m in plugins.package_modules("parsers.reference")
        if hasattr(importlib.import_module(m), "ENGINE")
    }
    assert {"sglang", "vllm", "llama.cpp", "transformers", "mlx-lm"} <= defining == set(found)
    assert environments.broken_engines() == {}
    candidates = environments.engine_modules()
    assert "parsers.reference.sglang" in candidates
    assert not [m for m in candidates if m.rpartition(".")[2].startswith("_")]  # private helpers are not candidates


def test_an_entry_point_adds_an_out_of_tree_engine(plug_ins):
    plug_ins("toy_engine_module", PLUG_IN.format(name="toy"))
    assert environments.get_engine("toy").formats == ("gemma4",)
    assert "sglang" in environments.engines() and environments.broken_engines() == {}
    plug_ins("toy_engine_other", PLUG_IN.format(name="other").replace("ENGINE =", "MINE ="), "toy_engine_other:MINE")
    assert "other" in environments.engines()


def test_broken_plug_ins_are_listed_with_the_reason_and_hide_nothing(plug_ins):
    plug_ins("toy_engine_broken", "import no_such_library_here\n")
    plug_ins("toy_engine_empty", "X = 1\n")
    plug_ins("toy_engine_duplicate", PLUG_IN.format(name="sglang"))
    broken = environments.broken_engines()
    assert "ModuleNotFoundError" in broken["toy_engine_broken"]
    assert broken["toy_engine_empty"] == "ENGINE is NoneType, not an Engine (entry point of some-dist)"
    assert broken["toy_engine_duplicate"] == "duplicate engine name 'sglang' (also defined by parsers.reference.sglang)"
    assert environments.get_engine("sglang").default_version == "0.5.23"  # the package's module wins


def test_unknown_engine_names_the_close_ones(fresh_engines):
    with pytest.raises(
        environments.EngineError, match=r"unknown engine 'sglangg' \(did you mean 'sglang'\?\); known: "
    ):
        environments.get_engine("sglangg")
    with pytest.raises(environments.EngineError, match=r"unknown engine 'vlm' \(did you mean 'vllm'\?\)"):
        environments.install("vlm==1")


def test_did_you_mean():
    assert did_you_mean("gema4", ["gemma4", "glm45", "hermes"]) == " (did you mean 'gemma4'?)"
    assert did_you_mean("transfomers", ["transformers", "transformers:gemma4"]) == " (did you mean 'transformers'?)"
    assert did_you_mean("glm46", ["glm45", "glm47", "gemma4"]) == " (did you mean 'glm47' or 'glm45'?)"  # best first
    assert did_you_mean("zzz", ["gemma4"]) == ""


def test_plugin_helpers(monkeypatch):
    assert plugins.package_modules("no_such_package_here") == []
    assert "parsers.reference.vllm" in plugins.package_modules("parsers.reference")
    assert "parsers.reference._vllm_tokenizers" not in plugins.package_modules("parsers.reference")
    point = importlib.metadata.EntryPoint(name="mine", value="mypkg.engine", group="toolcall_harness.engines")
    monkeypatch.setattr(
        plugins.importlib.metadata, "entry_points", lambda group: [point] if group == point.group else []
    )
    assert plugins.entry_point_modules("toolcall_harness.engines") == {"mypkg.engine": "mine"}
    assert plugins.entry_point_modules("other") == {}

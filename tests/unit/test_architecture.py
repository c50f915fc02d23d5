"""The package layout holds: no import cycles between project modules (module- and function-level imports alike),
each stage imports only ``core`` and earlier stages, and the plug-in packages import only what they may."""

from __future__ import annotations

import ast
import collections
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The stages of ``harness/`` in dependency order: a module may import its own stage and earlier ones.
STAGES = (
    "core",
    "formats",
    "assets",
    "engines",
    "template",
    "corpus",
    "capture",
    "parse",
    "score",
    "analysis",
    "report",
    "jobs",
    "extra",
    "cli",
)
#: What ``parsers/`` (plug-ins, discovered by the registry) may import from ``harness``.
PLUGIN_MAY_IMPORT = ("core", "formats", "assets", "engines")


def project_modules() -> dict[str, Path]:
    mods = {}
    for package in ("harness", "parsers"):
        for path in (ROOT / package).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            mods[name] = path
    return mods


def import_edges(mods: dict[str, Path]) -> dict[str, set[str]]:
    """``{module: project modules it imports}``, every import statement counted (also inside functions)."""
    edges: dict[str, set[str]] = collections.defaultdict(set)
    for name, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for target in targets:
                while target and target not in mods:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges[name].add(target)
    return edges


def stage(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "parsers":
        return "plugin"
    return "core" if len(parts) == 1 else parts[1]


def test_no_import_cycles():
    mods = project_modules()
    edges = import_edges(mods)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def connect(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for module in mods:
        if module not in index:
            connect(module)
    assert cycles == []


def test_stages_import_only_earlier_stages():
    mods = project_modules()
    wrong = []
    for module, targets in import_edges(mods).items():
        for target in targets:
            here, there = stage(module), stage(target)
            if here == "plugin":
                if there not in (*PLUGIN_MAY_IMPORT, "plugin"):
                    wrong.append(f"{module} -> {target}")
            elif there == "plugin" or STAGES.index(there) > STAGES.index(here):
                wrong.append(f"{module} -> {target}")
    assert wrong == []


def test_every_harness_module_is_in_a_stage():
    assert {stage(m) for m in project_modules() if m.startswith("harness")} <= set(STAGES)

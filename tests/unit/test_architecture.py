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


#: Modules that may import project modules inside a function, and why (everything else imports at the top).
DEFERRED_IMPORTS = {
    # the pytest11 entry point loads in every pytest session of an environment that has the package: the corpus
    # machinery (harness.extra.corpus_items) loads only when --toolcall-parser is given
    "harness.extra.pytest_plugin": "inert entry point"
}


def test_project_imports_sit_at_module_level():
    """Function-level imports are for heavy third-party libraries only (torch, pandas, engine packages)."""
    deferred = []
    for name, path in project_modules().items():
        if name in DEFERRED_IMPORTS:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for func in ast.walk(tree):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(func):
                if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith(PROJECT)):
                    deferred.append(f"{name}:{node.lineno} from {node.module}")
                elif isinstance(node, ast.Import) and any(a.name.startswith(PROJECT) for a in node.names):
                    deferred.append(f"{name}:{node.lineno} import {node.names[0].name}")
    assert deferred == []


PROJECT = ("harness", "parsers")
#: The most lines a module may hold; data tables (rows, not logic) are exempt, each with its reason.
MAX_LINES = 600
DATA_TABLES = {"harness.corpus.curated": "the curated scenarios: one row per case, each with its source"}


def test_no_module_over_the_line_limit():
    long = {
        name: n
        for name, path in project_modules().items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES and name not in DATA_TABLES
    }
    assert long == {}

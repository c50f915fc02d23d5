"""Format facts live in ``harness/formats`` only: no module outside it keys a table by a format's name, compares a
value with one, or imports one format's module; code reads the :class:`~harness.formats.FormatSpec` instead.

An AST scan over ``harness/`` and ``parsers/`` (string literals equal to a known format name):

- ``harness/`` outside ``formats/``: no comparison (``==``, ``in``, ...), index (``x["gemma4"]``), dict key,
  collection literal (``("glm45", "glm47")``), ``case`` pattern, default (``fmt or "gemma4"``, ``x if c else
  "gemma4"``, a parameter default), nor import of ``harness.formats.<format>`` (also by a computed
  ``f"harness.formats.{name}"``: a module's hook is a spec field).
- ``parsers/own/``: no comparison, index, dict key or ``case`` pattern (a parser declares the format it parses,
  ``formats = ("gemma4",)``, and imports that format's facts).
- ``parsers/reference/``: no comparison or ``case`` pattern. Its engine configuration tables (``FORMATS`` /
  ``UNSUPPORTED``: how the engine's server is configured per format, and why a format is not) are keyed by format
  name by design, as are the catalog rows (``templates/catalog.toml``, not Python).

:data:`ALLOWED` lists the few literals that are not format names although they spell one.
"""

from __future__ import annotations

import ast
from pathlib import Path

from harness.formats import known_formats

ROOT = Path(__file__).resolve().parents[2]
NAMES = frozenset(known_formats())
ALL_KINDS = frozenset({"compare", "index", "dict key", "collection", "case", "default", "import"})
#: what is checked per folder (the first prefix that matches a file's path).
CHECKED = (
    ("harness/formats/", frozenset()),
    ("harness/", ALL_KINDS),
    ("parsers/own/", frozenset({"compare", "index", "dict key", "case"})),
    ("parsers/reference/", frozenset({"compare", "case"})),
    ("parsers/", ALL_KINDS),
)
#: ``(file, literal): why it is no format name``.
ALLOWED = {
    ("harness/assets/tokenizers.py", "gemma4"): "the Gemma 4 vocabulary's name (TOKENIZERS) and GGUF tokenizer_type",
    ("harness/assets/vocabularies.py", "harmony"): "the name of gpt-oss's tokenizer package (TOKENIZER_PACKAGES)",
    ("parsers/reference/_vllm_tokenizers.py", "harmony"): "vLLM's tokenizer kind for gpt-oss (Launch.tokenizer)",
    ("harness/corpus/peers/canitoolcall.py", "mistral"): "canitoolcall's tokenizer mode (tokenizer.mode: hf | mistral)",
}


def _is_name(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in NAMES


def _names(node: ast.AST) -> list[str]:
    """The format names a literal or a literal tuple/list/set holds."""
    if _is_name(node):
        return [node.value]  # type: ignore[attr-defined]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if _is_name(e)]  # type: ignore[attr-defined]
    return []


def findings(source: str) -> list[tuple[int, str, str]]:
    """``[(line, kind, format name)]`` of every place ``source`` spells a format name in a table or a test."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            out += [(node.lineno, "compare", n) for operand in (node.left, *node.comparators) for n in _names(operand)]
        elif isinstance(node, ast.Subscript):
            out += [(node.lineno, "index", n) for n in _names(node.slice)]
        elif isinstance(node, ast.Dict):
            out += [(k.lineno, "dict key", k.value) for k in node.keys if k is not None and _is_name(k)]  # type: ignore[attr-defined]
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            out += [(node.lineno, "collection", n) for n in _names(node)]
        elif isinstance(node, ast.MatchValue):
            out += [(node.lineno, "case", n) for n in _names(node.value)]
        elif isinstance(node, (ast.BoolOp, ast.IfExp)):
            operands = node.values if isinstance(node, ast.BoolOp) else [node.body, node.orelse]
            out += [(node.lineno, "default", n) for operand in operands for n in _names(operand)]
        elif isinstance(node, ast.arguments):
            out += [(d.lineno, "default", n) for d in (*node.defaults, *node.kw_defaults) if d for n in _names(d)]
        elif isinstance(node, ast.JoinedStr) and node.values and _spells_formats_package(node.values[0]):
            out.append((node.lineno, "import", "<computed>"))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                modules = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            for module in modules:
                parts = module.split(".")
                if parts[:2] == ["harness", "formats"] and len(parts) > 2 and parts[2] in NAMES:
                    out.append((node.lineno, "import", parts[2]))
    return out


def _spells_formats_package(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and str(node.value).startswith("harness.formats.")


def _checked(rel: str) -> frozenset[str]:
    return next(kinds for prefix, kinds in CHECKED if rel.startswith(prefix))


def test_no_table_or_conditional_keyed_by_a_format_name_outside_formats():
    bad = []
    for package in ("harness", "parsers"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            kinds = _checked(rel)
            for line, kind, name in findings(path.read_text(encoding="utf-8")):
                if kind in kinds and (rel, name) not in ALLOWED:
                    bad.append(f"{rel}:{line}: {kind} by format name {name!r}")
    assert not bad, "read the FormatSpec instead:\n" + "\n".join(bad)


def test_the_scan_finds_each_kind():
    source = """
from harness.formats import gemma4
import harness.formats.hermes
if fmt.name == "gemma4" or name in ("glm45", "x"):
    TABLE = {"mistral": 1}
    TABLE["kimi_k2"]
match fmt.name:
    case "harmony":
        pass
parser = get_parser(args.format or "gemma4", "llama3_json" if x else None)
def f(name="minimax_m2"):
    return importlib.import_module(f"harness.formats.{name}")
"""
    found = {(kind, name) for _, kind, name in findings(source)}
    assert found == {
        ("import", "gemma4"),
        ("import", "hermes"),
        ("compare", "gemma4"),
        ("compare", "glm45"),
        ("collection", "glm45"),
        ("dict key", "mistral"),
        ("index", "kimi_k2"),
        ("case", "harmony"),
        ("default", "gemma4"),
        ("default", "llama3_json"),
        ("default", "minimax_m2"),
        ("import", "<computed>"),
    }
    assert findings('fmt.arguments == "quote-token"\nget_format(DEFAULT_FORMAT)\nx = "gemma4 docs"') == []

"""JSON schemas the harness is given (tool ``parameters`` in case files and suites): checked before anything
validates against them or a parser reads them, so a broken schema is the file's error, never a parser's.

:func:`schema_problem` says why a schema cannot be used (not an object, rejected by the Draft 2020-12 meta-schema,
a ``$ref`` that cannot be followed or a ``$ref`` cycle: :func:`ref_problem`); :func:`check_tools` checks a list of
OpenAI-style tool declarations field by field (:mod:`harness.core.fields` wording). ``jsonschema`` is imported when
a schema is checked, so the core still imports with the standard library alone (engine virtualenvs import it).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from harness.core import fields
from harness.core.fields import MISSING, FieldProblem

_IN_PLACE = ("allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas")


def _target(schema: Any, ref: str) -> tuple | None:
    """The path (keys and indexes) that local ``$ref`` ``ref`` (``#`` or a JSON pointer ``#/a/0``) names when it
    resolves to a schema inside ``schema``, else None."""
    if ref != "#" and not ref.startswith("#/"):
        return None
    node, path = schema, []
    for raw in ref[2:].split("/") if ref != "#" else ():
        part: Any = unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            part = int(part)
        elif not (isinstance(node, dict) and part in node):
            return None
        node = node[part]
        path.append(part)
    return tuple(path) if isinstance(node, (dict, bool)) else None


def _in_place(node: dict, at: tuple) -> list[tuple]:
    """Paths of the subschemas ``node`` (at ``at``) applies to the same value: ``allOf`` items, ``not``, ``if``..."""
    out = []
    for key in _IN_PLACE:
        sub = node.get(key)
        if isinstance(sub, list):
            out += [(*at, key, i) for i in range(len(sub))]
        elif isinstance(sub, dict) and key == "dependentSchemas":
            out += [(*at, key, name) for name in sub]
        elif isinstance(sub, dict):
            out.append((*at, key))
    return out


def ref_problem(schema: Any) -> str | None:
    """Why ``schema``'s ``$ref`` s cannot be followed, or None: a ``$ref`` that is neither a local JSON pointer
    resolving inside the schema nor one of its ``$anchor`` s (nothing is fetched), or a cycle of ``$ref`` s and
    in-place applicators (``allOf``, ``not``, ``if``...) that comes back to a schema without descending into the
    value, so validation would recurse without end (``{"$ref": "#/$defs/a", "$defs": {"a": {"$ref":
    "#/$defs/a"}}}``). A recursive schema that descends (a tree through ``properties`` or ``items``) is fine.
    Iterative: any depth."""
    nodes: dict[tuple, dict] = {}
    stack: list[tuple[tuple, Any]] = [((), schema)]
    while stack:  # every object of the schema, by path
        at, node = stack.pop()
        if isinstance(node, dict):
            nodes[at] = node
            stack.extend(((*at, k), v) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend(((*at, i), v) for i, v in enumerate(node))
    names = ("$anchor", "$dynamicAnchor")
    anchors = {f"#{n[k]}": at for at, n in nodes.items() for k in names if isinstance(n.get(k), str)}
    edges: dict[tuple, list[tuple]] = {}
    for at, node in nodes.items():
        edges[at] = _in_place(node, at)
        for key in ("$ref", "$dynamicRef"):
            if isinstance(node.get(key), str):
                target = anchors[node[key]] if node[key] in anchors else _target(schema, node[key])
                if target is None:
                    return f"{_show(at)}: {key} {node[key]!r} names no part of this schema (only local refs are read)"
                edges[at].append(target)
    done: set[tuple] = set()
    for start in edges:
        if start in done:
            continue
        path, on_path = [(start, iter(edges[start]))], {start}
        while path:  # depth-first, without recursion
            at, children = path[-1]
            nxt = next(children, None)
            if nxt is None:
                done.add(at)
                on_path.discard(at)
                path.pop()
            elif nxt in on_path:
                cycle = [p for p, _ in path]
                cycle = cycle[cycle.index(nxt) :] + [nxt]
                return f"$ref cycle {' -> '.join(map(_show, cycle))} (validation would never end)"
            elif nxt in edges and nxt not in done:
                on_path.add(nxt)
                path.append((nxt, iter(edges[nxt])))
    return None


def _show(path: tuple) -> str:
    return "#" + "".join(f"/{str(p).replace('~', '~0').replace('/', '~1')}" for p in path)


def schema_problem(schema: Any) -> str | None:
    """Why ``schema`` is not a JSON schema the harness can validate against, or None: not an object, rejected by
    the Draft 2020-12 meta-schema (``jsonschema``'s message and where, ``at #/properties/a/type``), or a
    :func:`ref_problem`. A schema nested deeper than :data:`harness.core.jsonl.MAX_JSON_DEPTH` never gets here
    from a file."""
    if not isinstance(schema, dict):
        return f"expected a JSON-schema object, got {fields.json_type(schema)}"
    from jsonschema import Draft202012Validator  # here, not at the top: see the module docstring
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = f" (at {_show(tuple(exc.path))})" if exc.path else ""
        return f"{exc.message}{where}"
    return ref_problem(schema)


def check_tools(value: Any, field: str = "tools") -> list | None:
    """``value`` when it is null or a list of OpenAI-style tool declarations, each ``{"type": "function",
    "function": {"name": non-empty string, "description": string (optional), "parameters": a JSON schema object
    (optional, :func:`schema_problem`)}}`` (``type`` may be left out; other keys are kept); else raise
    :class:`~harness.core.fields.FieldProblem` naming the field: ``field 'tools[0].function.parameters': not a
    valid JSON schema: $ref cycle ...``."""
    tools = fields.array(value, field, null=True)
    for i, tool in enumerate(tools or ()):
        at = f"{field}[{i}]"
        fields.obj(tool, at)
        if tool.get("type", "function") != "function":
            raise FieldProblem(f"{at}.type", f"field '{at}.type': expected 'function', got {tool['type']!r}")
        function = fields.obj(tool.get("function", MISSING), f"{at}.function")
        fields.string(function.get("name", MISSING), f"{at}.function.name", empty=False)
        if "description" in function:
            fields.string(function["description"], f"{at}.function.description", null=True)
        if "parameters" in function:
            where = f"{at}.function.parameters"
            if not isinstance(function["parameters"], dict):
                raise fields.problem(where, "a JSON-schema object", function["parameters"])
            reason = schema_problem(function["parameters"])
            if reason:
                raise FieldProblem(where, f"field {where!r}: not a valid JSON schema: {reason}")
    return tools

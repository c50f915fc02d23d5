"""A JSON-aware mutation for the reader targets of ``fuzz/targets.py`` (atheris' ``custom_mutator``), kept out of the
instrumented modules so that its own branches do not count as the targets' coverage."""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Iterator

#: values a mutated JSON node may become: every JSON type, edges of each (a lone surrogate, a newline, huge numbers)
ODD_VALUES: tuple = (
    None,
    True,
    False,
    0,
    -1,
    1.5,
    10**30,
    1e308,
    "",
    "x",
    "a\nb",
    "\ud800",
    "\r",
    [],
    {},
    [1],
    {"a": 1},
)


def _nodes(value, path=()) -> Iterator[tuple]:
    yield path, value
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        yield from _nodes(item, (*path, key))


_DELETE = object()


def _replace(value, path: tuple, new):
    if not path:
        return new
    parent = value
    for key in path[:-1]:
        parent = parent[key]
    if new is _DELETE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = new
    return value


def mutate_json(data: bytes, max_size: int, seed: int, fallback: Callable[[bytes, int], bytes]) -> bytes:
    """A mutation of ``data`` for libFuzzer (atheris' ``custom_mutator``): when one of its lines is JSON, one node of
    it changed (replaced by one of :data:`ODD_VALUES` or another node of the line, deleted, or given a key another
    object of the line has), the line written back; otherwise, and for a third of the calls, ``fallback`` (atheris'
    own byte mutation). Byte mutations alone seldom keep a line JSON: this reaches the readers' field checks."""
    rng = random.Random(seed)
    lines = data.split(b"\n")
    parsed = []
    for i, line in enumerate(lines):
        try:
            parsed.append((i, json.loads(line)))
        except (ValueError, RecursionError):
            pass
    if not parsed or rng.random() < 1 / 3:
        return fallback(data, max_size)
    i, value = rng.choice(parsed)
    nodes = list(_nodes(value))
    path, _ = rng.choice(nodes)
    op = rng.randrange(4)
    objects = [node for _, node in nodes if isinstance(node, dict)]
    if op == 3 and objects:  # a key another object of the line has (or "x"), with an odd value
        keys = [key for p, _ in nodes for key in p if isinstance(key, str)] or ["x"]
        rng.choice(objects)[rng.choice(keys)] = copy.deepcopy(rng.choice(ODD_VALUES))
    elif op == 2 and path:
        value = _replace(value, path, _DELETE)
    elif op == 1:
        value = _replace(value, path, copy.deepcopy(rng.choice(nodes)[1]))
    else:
        value = _replace(value, path, copy.deepcopy(rng.choice(ODD_VALUES)))
    lines[i] = json.dumps(value, ensure_ascii=rng.random() < 0.5).encode("utf-8", "surrogatepass")
    return b"\n".join(lines)[:max_size]

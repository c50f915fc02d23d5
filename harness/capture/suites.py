"""Prompt suites with expectations: what a real model is asked, and how a parser's reading of its answer is judged.

A suite is a JSON Lines file under ``corpora/suites/`` (``corpora/suites/README.md`` documents the shape); each
line is one prompt: ``id``, ``suite``, ``messages`` (the chat to send), ``tools`` (OpenAI-style declarations
offered) and ``expect``:

- ``calls``: the calls a correct answer makes, in order (``[]``: the right answer is prose). Each names the
  tool (``name``) and may pin argument values (``pinned``: the arguments must *contain* them — every pinned
  key present with a matching value, lists of the same length element by element, scalars equal as JSON
  values) and required substrings of string arguments (``contains``: ``{"content": ["print("]}``).

A parser's message for a captured answer passes (:func:`judge`) when it has exactly the expected calls, in
order, each schema-valid against its tool's ``parameters`` (jsonschema), with the pinned values and
substrings, and no protocol marker in content or reasoning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.core.errors import HarnessError
from harness.core.jsonl import read_objects
from harness.core.paths import SUITES_DIR
from harness.core.schemas import schema_problem
from harness.core.textio import one_line


class SuiteError(HarnessError):
    """A malformed suite file; the message names the file and line."""


@dataclass(frozen=True)
class ExpectedCall:
    """One call a correct answer makes: the tool, pinned argument values, required substrings."""

    name: str
    pinned: dict = field(default_factory=dict)
    contains: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Prompt:
    """One prompt of a suite (see the module docstring)."""

    id: str
    suite: str
    messages: list
    tools: list
    calls: tuple[ExpectedCall, ...]
    source: str = ""  # file:line it was read from

    def tool(self, name: str) -> dict | None:
        """The declaration of tool ``name`` (its ``function`` object), or None."""
        return next((t["function"] for t in self.tools if t["function"]["name"] == name), None)


def suite_names() -> list[str]:
    """The suites shipped under ``corpora/suites/`` (file stems)."""
    return sorted(p.stem for p in SUITES_DIR.glob("*.jsonl"))


def load_suite(name_or_path: str | Path) -> list[Prompt]:
    """The prompts of a shipped suite (by name) or of any suite file (by path).

    Raises :class:`SuiteError` naming ``file:line`` for invalid JSON, missing or mistyped fields, a tool
    declaration that is not a valid JSON schema, an expected call to an undeclared tool, pinned values that
    the tool's schema rejects, and duplicate ids; names the file when it holds no prompt."""
    path = Path(name_or_path)
    if not path.suffix:
        path = SUITES_DIR / f"{name_or_path}.jsonl"
        if not path.is_file():
            raise SuiteError(f"unknown suite {str(name_or_path)!r}; shipped: {', '.join(suite_names())}")
    prompts, seen = [], set()
    for where, data in read_objects(path, SuiteError, "prompt"):
        prompt = _prompt(data, where)
        if prompt.id in seen:
            raise SuiteError(f"{where}: duplicate id {prompt.id!r}")
        seen.add(prompt.id)
        prompts.append(prompt)
    if not prompts:  # a capture of nothing would end "0 prompts run", exit 0
        raise SuiteError(f"{path}: no prompts in the suite file")
    return prompts


def _prompt(data: dict, where: str) -> Prompt:
    for key, kind in (("id", str), ("suite", str), ("messages", list), ("tools", list), ("expect", dict)):
        if not isinstance(data.get(key), kind):
            raise SuiteError(f"{where}: field {key!r} must be a {kind.__name__}")
    for i, message in enumerate(data["messages"]):
        if not (
            isinstance(message, dict)
            and isinstance(message.get("role"), str)
            and isinstance(message.get("content"), str)
        ):
            raise SuiteError(f'{where}: messages[{i}] must be {{"role": str, "content": str}}')
    tools = {}
    for i, tool in enumerate(data["tools"]):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not (
            isinstance(function, dict)
            and isinstance(function.get("name"), str)
            and isinstance(function.get("parameters", {}), dict)
        ):
            raise SuiteError(
                f'{where}: tools[{i}] must be {{"type": "function", "function": {{"name", "parameters"}}}}'
            )
        problem = schema_problem(function.get("parameters", {}))
        if problem:
            raise SuiteError(
                f"{where}: tools[{i}] ({one_line(function['name'])}): parameters is not a valid JSON schema: "
                f"{one_line(problem)}"
            ) from None
        tools[function["name"]] = function
    calls = data["expect"].get("calls")
    if not isinstance(calls, list):
        raise SuiteError(f"{where}: expect.calls must be a list ([] when the right answer is prose)")
    expected = []
    for i, call in enumerate(calls):
        if not (isinstance(call, dict) and isinstance(call.get("name"), str)):
            raise SuiteError(f"{where}: expect.calls[{i}] must name a tool")
        if call["name"] not in tools:
            raise SuiteError(f"{where}: expect.calls[{i}] names {call['name']!r}, which tools do not declare")
        pinned, contains = call.get("pinned", {}), call.get("contains", {})
        if (
            not isinstance(pinned, dict)
            or not isinstance(contains, dict)
            or not all(isinstance(v, list) and all(isinstance(s, str) for s in v) for v in contains.values())
        ):
            raise SuiteError(f"{where}: expect.calls[{i}]: pinned must be an object, contains {{key: [strings]}}")
        expected.append(ExpectedCall(call["name"], pinned, contains))
    return Prompt(data["id"], data["suite"], data["messages"], data["tools"], tuple(expected), where)

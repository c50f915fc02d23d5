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
from typing import Any

from jsonschema import Draft202012Validator

from harness.errors import HarnessError
from harness.formats import FormatSpec
from harness.jsonl import read_objects
from harness.model import Message
from harness.scoring import Score, delta_leak, json_difference

SUITES_DIR = Path(__file__).resolve().parent.parent / "corpora" / "suites"


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
    the tool's schema rejects, and duplicate ids."""
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
    return prompts


def _prompt(data: dict, where: str) -> Prompt:
    for key, kind in (("id", str), ("suite", str), ("messages", list), ("tools", list), ("expect", dict)):
        if not isinstance(data.get(key), kind):
            raise SuiteError(f"{where}: field {key!r} must be a {kind.__name__}")
    for i, message in enumerate(data["messages"]):
        if not (isinstance(message, dict) and isinstance(message.get("role"), str)
                and isinstance(message.get("content"), str)):
            raise SuiteError(f"{where}: messages[{i}] must be {{\"role\": str, \"content\": str}}")
    tools = {}
    for i, tool in enumerate(data["tools"]):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not (isinstance(function, dict) and isinstance(function.get("name"), str)
                and isinstance(function.get("parameters", {}), dict)):
            raise SuiteError(f"{where}: tools[{i}] must be {{\"type\": \"function\", \"function\": {{\"name\", "
                             f"\"parameters\"}}}}")
        try:
            Draft202012Validator.check_schema(function.get("parameters", {}))
        except Exception as exc:  # jsonschema.SchemaError
            raise SuiteError(f"{where}: tools[{i}] ({function['name']}): parameters is not a valid JSON schema: "
                             f"{getattr(exc, 'message', exc)}") from None
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
        if not isinstance(pinned, dict) or not isinstance(contains, dict) or not all(
                isinstance(v, list) and all(isinstance(s, str) for s in v) for v in contains.values()):
            raise SuiteError(f"{where}: expect.calls[{i}]: pinned must be an object, contains {{key: [strings]}}")
        expected.append(ExpectedCall(call["name"], pinned, contains))
    return Prompt(data["id"], data["suite"], data["messages"], data["tools"], tuple(expected), where)


def judge(prompt: Prompt, got: Message, fmt: FormatSpec, raw: str | None = None) -> Score:
    """Score a parser's message for a captured answer to ``prompt`` (see the module docstring).

    Verdict ``pass`` or ``fail`` with the harness' error types: ``content_lost`` (``raw``, the captured text,
    has words but the parser returned no call, no content and no reasoning: it dropped the answer),
    ``wrong_call_count``, ``wrong_name``, ``invalid_arguments`` (not an object, or rejected by the tool's
    schema), ``wrong_argument_value`` (a pinned value or required substring missing), ``marker_leak``."""
    if raw and raw.strip() and not (got.tool_calls or (got.content or "").strip() or (got.reasoning or "").strip()):
        return Score("fail", "content_lost", f"the parser returned nothing for a {len(raw)}-character answer")
    if len(got.tool_calls) != len(prompt.calls):
        return Score("fail", "wrong_call_count", f"expected {len(prompt.calls)} call(s), got {len(got.tool_calls)}")
    for i, (want, have) in enumerate(zip(prompt.calls, got.tool_calls)):
        if have.name != want.name:
            return Score("fail", "wrong_name", f"call {i}: expected {want.name!r}, got {have.name!r}")
        problem = _argument_problem(prompt, want, have.arguments, f"call {i}")
        if problem:
            return problem
    for field_name, text in (("content", got.content), ("reasoning", got.reasoning)):
        if text and delta_leak(text, fmt):
            return Score("fail", "marker_leak", f"protocol marker in {field_name}: {text[:80]!r}")
    return Score("pass")


def _argument_problem(prompt: Prompt, want: ExpectedCall, arguments: Any, where: str) -> Score | None:
    if not isinstance(arguments, dict):
        return Score("fail", "invalid_arguments", f"{where}: arguments are {type(arguments).__name__}, not an object")
    schema = prompt.tool(want.name).get("parameters", {})
    error = next(iter(Draft202012Validator(schema).iter_errors(arguments)), None)
    if error is not None:
        path = "/".join(str(p) for p in error.absolute_path) or "(root)"
        return Score("fail", "invalid_arguments", f"{where}: schema rejects {path}: {error.message}")
    missing = _not_contained(want.pinned, arguments, "")
    if missing:
        return Score("fail", "wrong_argument_value", f"{where}: {missing}")
    for key, needles in want.contains.items():
        value = arguments.get(key)
        for needle in needles:
            if not isinstance(value, str) or needle not in value:
                return Score("fail", "wrong_argument_value", f"{where}: {key} lacks {needle!r}")
    return None


def _not_contained(pinned: Any, value: Any, path: str) -> str | None:
    """Why ``value`` does not contain ``pinned`` (None when it does): objects by subset, lists element-wise
    with equal length, scalars by JSON equality (the harness' numeric policy)."""
    if isinstance(pinned, dict):
        if not isinstance(value, dict):
            return f"{path or 'arguments'} should be an object"
        for key, sub in pinned.items():
            if key not in value:
                return f"{path + '.' if path else ''}{key} is missing"
            reason = _not_contained(sub, value[key], f"{path + '.' if path else ''}{key}")
            if reason:
                return reason
        return None
    if isinstance(pinned, list):
        if not isinstance(value, list) or len(value) != len(pinned):
            return f"{path} should be a list of {len(pinned)}"
        for i, (sub, item) in enumerate(zip(pinned, value)):
            reason = _not_contained(sub, item, f"{path}[{i}]")
            if reason:
                return reason
        return None
    difference = json_difference(pinned, value, path)
    return f"{path}: expected {pinned!r}, got {value!r}" if difference else None

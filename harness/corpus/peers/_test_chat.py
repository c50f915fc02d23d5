"""The meaning of ``test-chat.cpp``'s test code: canonical messages and tools, ``peg_tester`` blocks, builder chains.

Read from llama.cpp's ``tests/test-chat.cpp`` (llama-cpp-python 0.3.36 sdist): each ``tst.test(INPUT)`` chain of
builder calls ending ``.run()`` is one case (``peg_test_builder``, lines 1494-1599 of that file); its expected
message starts empty and ``.expect(msg)`` replaces it, ``.expect_content/_reasoning/_tool_calls`` set one field, in
call order. Messages are ``common_chat_msg`` (aggregate order: role, content, content_parts, tool_calls,
reasoning_content, tool_name, tool_call_id) or the file's helpers (``simple_assist_msg`` and the
``message_with_*`` family, lines 982-1031, mirrored here and checked against the file's parameter names); tools
are ``common_chat_tool{name, description, parameters JSON}``; tool calls ``{name, arguments JSON, id}``.

:func:`read_cases` walks ``test_template_output_peg_parsers`` (the function ``main`` runs), expanding range-``for``
loops over literal lists and calls of the file's own functions that build testers (``test_lfm2_parser``). A case
the reader does not understand is returned with ``error`` set (the construct and its line), never dropped.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.corpus.peers._cpp import (
    Braced,
    Call,
    Concat,
    CppError,
    ExprReader,
    Lit,
    Name,
    Stmt,
    Token,
    declaration,
    expression,
    statements,
    tokenize,
    top_level_items,
)

ENTRY = "test_template_output_peg_parsers"
MSG_FIELDS = ("role", "content", "content_parts", "tool_calls", "reasoning_content", "tool_name", "tool_call_id")
#: builder enums: C++ prefix -> the values it may take (recorded lower-case, prefix dropped).
ENUMS = {
    "reasoning_format": ("COMMON_REASONING_FORMAT_", ("NONE", "AUTO", "DEEPSEEK_LEGACY", "DEEPSEEK")),
    "continue_final_message": ("COMMON_CHAT_CONTINUATION_", ("NONE", "AUTO", "REASONING", "CONTENT")),
    "tool_choice": ("COMMON_CHAT_TOOL_CHOICE_", ("AUTO", "REQUIRED", "NONE")),
}
BOOL_OPTIONS = ("enable_thinking", "parallel_tool_calls", "add_generation_prompt", "is_partial")
#: ``common_chat_templates_inputs`` / ``peg_test_case`` defaults (common/chat.h; test-chat.cpp line 1501 sets
#: add_generation_prompt, line 1157 the default messages ``{ message_user }``).
DEFAULTS = {
    "reasoning_format": "none",
    "enable_thinking": True,
    "parallel_tool_calls": False,
    "add_generation_prompt": True,
    "continue_final_message": "none",
    "tool_choice": "auto",
    "is_partial": False,
}


class Unsupported(Exception):
    """A construct the reader does not understand (``str``: what, naming the line when known)."""


@dataclass
class Tester:
    template: str  # the path as written, e.g. "models/templates/Qwen3-Coder.jinja"


@dataclass
class Unresolved:
    reason: str


@dataclass
class RawCase:
    """One ``.run()`` of a builder chain. ``line``: the ``.test(`` line; ``via``: the line of the call that ran the
    enclosing function (``None`` in the entry function); ``error``: why the case could not be read (then the other
    fields may be partial). ``options``: what the chain sets, JSON-ready (tools as names)."""

    template: str | None
    line: int
    via: int | None = None
    input: str = ""
    options: dict = field(default_factory=dict)
    expect: dict = field(default_factory=lambda: new_msg(""))
    tools: list = field(default_factory=list)
    messages: list | None = None
    error: str | None = None


def new_msg(role: str, content: str = "", reasoning: str = "") -> dict:
    return {"role": role, "content": content, "reasoning_content": reasoning, "tool_calls": [], "tool_name": "",
            "tool_call_id": ""}  # fmt: skip


def _simple_assist_msg(content, reasoning_content="", tool_name="", arguments="", id=""):
    msg = new_msg("assistant", _str(content), _str(reasoning_content))
    if _str(tool_name) or _str(id):
        msg["tool_calls"].append({"name": _str(tool_name), "arguments": _str(arguments), "id": _str(id)})
    return msg


def _multiple_calls(reasoning, content, tool_calls):
    msg = new_msg("assistant", _str(content), _str(reasoning))
    for pair in _list(tool_calls):
        name, args = _items(pair, 2, "a (name, arguments) pair")
        msg["tool_calls"].append({"name": _str(name), "arguments": _str(args), "id": ""})
    return msg


#: the file's message helpers: parameter names as the file declares them, and their meaning.
HELPERS: dict[str, tuple[tuple[str, ...], Callable[..., Any]]] = {
    "simple_assist_msg": (("content", "reasoning_content", "tool_name", "arguments", "id"), _simple_assist_msg),
    "message_with_tool_calls": (("tool_name", "arguments"), lambda n, a: _simple_assist_msg("", "", n, a)),
    "message_with_tool_calls_and_reasoning": (
        ("tool_name", "arguments", "reasoning"),
        lambda n, a, r: _simple_assist_msg("", r, n, a),
    ),
    "message_with_reasoning_content_and_multiple_tool_calls": (("reasoning", "content", "tool_calls"), _multiple_calls),
    "message_with_content_and_tool_call": (
        ("content", "tool_name", "arguments"),
        lambda c, n, a: _simple_assist_msg(c, "", n, a),
    ),
    "message_with_reasoning_and_tool_call": (
        ("reasoning", "tool_name", "arguments"),
        lambda r, n, a: _simple_assist_msg("", r, n, a),
    ),
}


def _str(value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Braced) and not value.items:  # ``{}``: an empty std::string
        return ""
    raise Unsupported(f"expected a string, got {_what(value)}")


def _list(value) -> list:
    if isinstance(value, list):
        return value
    if isinstance(value, Braced):
        return list(value.items)
    raise Unsupported(f"expected a braced list, got {_what(value)}")


def _items(value, n: int, what: str) -> list:
    items = _list(value)
    if len(items) != n:
        raise Unsupported(f"expected {what} of {n} items, got {len(items)}")
    return items


def _what(value) -> str:
    if isinstance(value, Unresolved):
        return f"an unreadable value ({value.reason})"
    return {dict: "a message or tool", Braced: "a braced list", Tester: "a tester"}.get(
        type(value), type(value).__name__
    )


def as_msg(value) -> dict:
    """A ``common_chat_msg`` from a message value or an aggregate ``{role, content, ...}``."""
    if isinstance(value, dict) and "role" in value:
        return copy.deepcopy(value)
    items = _list(value)
    if len(items) > len(MSG_FIELDS):
        raise Unsupported(f"a common_chat_msg has at most {len(MSG_FIELDS)} fields, got {len(items)}")
    msg = new_msg("")
    for name, item in zip(MSG_FIELDS, items, strict=False):
        _set_field(msg, name, item)
    return msg


def _set_field(msg: dict, name: str, value) -> None:
    if name == "content_parts":
        if _list(value):
            raise Unsupported("content_parts (multi-part message content)")
    elif name == "tool_calls":
        msg["tool_calls"] = [as_call(c) for c in _list(value)]
    elif name in MSG_FIELDS:
        msg[name] = _str(value)
    else:
        raise Unsupported(f"unknown common_chat_msg field {name!r}")


def as_call(value) -> dict:
    """A ``common_chat_tool_call`` ``{name, arguments, id}`` (the id may be ``{}`` or missing)."""
    items = _list(value)
    if not 1 <= len(items) <= 3:
        raise Unsupported(f"a tool call has 1 to 3 fields, got {len(items)}")
    name, args, call_id = [*items, "", ""][:3]
    return {"name": _str(name), "arguments": _str(args), "id": _str(call_id)}


def as_tool(value) -> dict:
    """A ``common_chat_tool`` ``{name, description, parameters}``; ``parameters`` must be JSON text."""
    if isinstance(value, dict) and "parameters" in value:
        return value
    name, description, parameters = _items(value, 3, "a common_chat_tool")
    try:
        schema = json.loads(_str(parameters))
    except ValueError as exc:
        raise Unsupported(f"tool {_str(name)!r}: parameters are not JSON ({exc})") from None
    return {"name": _str(name), "description": _str(description), "parameters": schema}


class Reader:
    """Evaluates ``test-chat.cpp``: globals first, then the walk of :data:`ENTRY` (see the module docstring)."""

    def __init__(self, source: str):
        self.functions: dict[str, tuple[list[str], list[Token], int]] = {}
        self.globals: dict[str, object] = {}
        self.cases: list[RawCase] = []
        items = top_level_items(tokenize(source))
        for item in items:
            fn = item.function()
            if fn:
                self.functions[fn[0]] = (fn[1], item.body or [], item.line)
        for item in items:
            if item.body is None:
                self._declare(item.head, [self.globals], item.line)

    # --- values ------------------------------------------------------------------------------------------

    def value(self, node, scopes: list[dict]):
        if isinstance(node, Lit):
            return node.value
        if isinstance(node, Concat):
            return "".join(_str(self.value(p, scopes)) for p in node.parts)
        if isinstance(node, Braced):
            return Braced(tuple(self.value(i, scopes) for i in node.items), node.line)
        if isinstance(node, Name):
            for scope in reversed(scopes):
                if node.name in scope:
                    found = scope[node.name]
                    if isinstance(found, Unresolved):
                        raise Unsupported(f"{node.name} (line {node.line}) is unreadable: {found.reason}")
                    return found
            if node.name.startswith("COMMON_"):
                return node.name
            raise Unsupported(f"unknown name {node.name} (line {node.line})")
        if isinstance(node, Call):
            return self.call(node, scopes)
        raise Unsupported(f"unknown expression at line {node.line}")

    def call(self, node: Call, scopes: list[dict]):
        if node.name == "peg_tester":  # (template path, detailed_debug): only the path matters
            if not node.args:
                raise Unsupported(f"peg_tester() without a template (line {node.line})")
            return Tester(_str(self.value(node.args[0], scopes)))
        args = [self.value(a, scopes) for a in node.args]
        if node.name == "std::string" and len(args) == 1:
            return _str(args[0])
        if node.name in ("common_chat_msg", "common_chat_tool"):
            return (
                as_msg(Braced(tuple(args), node.line))
                if node.name == "common_chat_msg"
                else as_tool(Braced(tuple(args), node.line))
            )
        if node.name in HELPERS:
            params, fn = HELPERS[node.name]
            declared = self.functions.get(node.name)
            if declared is None or tuple(declared[0]) != params:
                raise Unsupported(f"helper {node.name}() differs from its known definition (line {node.line})")
            if len(args) > len(params):
                raise Unsupported(f"{node.name}() with {len(args)} arguments (line {node.line})")
            return fn(*args)
        raise Unsupported(f"unknown function {node.name}() (line {node.line})")

    def _declare(self, tokens: list[Token], scopes: list[dict], line: int) -> bool:
        """Bind a declaration in ``scopes[-1]``; True when ``tokens`` were one (an unreadable initializer binds
        :class:`Unresolved`)."""
        try:
            decl = declaration(tokens)
        except CppError as exc:
            decl = ("?", tokens[1].value if len(tokens) > 1 else "?", exc)
        if decl is None:
            return False
        kind, name, init = decl
        try:
            if isinstance(init, CppError):
                raise Unsupported(init.reason)
            scopes[-1][name] = self._typed(kind, None if init is None else self.value(init, scopes))
        except (Unsupported, CppError) as exc:
            scopes[-1][name] = Unresolved(f"{exc} (declared line {line})")
        return True

    @staticmethod
    def _typed(kind: str, value):
        words = kind.replace("::", " ").split()
        if "common_chat_msg" in words:
            return new_msg("") if value is None else as_msg(value)
        if "common_chat_tool" in words:
            return [as_tool(t) for t in _list(value)] if "vector" in words else as_tool(value)
        if "string" in words or "char" in words:
            return "" if value is None else _str(value)
        if value is None:
            raise Unsupported(f"declaration of type {kind!r} without a value")
        return value

    # --- the walk ----------------------------------------------------------------------------------------

    def read(self) -> list[RawCase]:
        if ENTRY not in self.functions:
            raise CppError(f"no function {ENTRY}", 0)
        params, body, _ = self.functions[ENTRY]
        scope = {p: Unresolved(f"parameter of {ENTRY}") for p in params}
        self._walk(statements(body), [self.globals, scope], None, 0)
        return self.cases

    def _walk(self, stmts: list[Stmt], scopes: list[dict], via: int | None, depth: int) -> None:
        for stmt in stmts:
            if stmt.kind == "block":
                self._walk(stmt.body, [*scopes, {}], via, depth)
            elif stmt.kind == "for" and ":" in [t.value for t in stmt.header if t.kind == "punct"]:
                self._range_for(stmt, scopes, via, depth)
            elif stmt.kind != "simple":
                self._skipped(stmt, scopes, via, f"a test inside a '{stmt.kind}' statement (line {stmt.line})")
            else:
                self._simple(stmt, scopes, via, depth)

    def _range_for(self, stmt: Stmt, scopes: list[dict], via: int | None, depth: int) -> None:
        colon = next(i for i, t in enumerate(stmt.header) if t.is_punct(":"))
        var = stmt.header[colon - 1]
        try:
            values = _list(self.value(expression(stmt.header[colon + 1 :]), scopes))
        except (Unsupported, CppError) as exc:
            self._skipped(stmt, scopes, via, f"a test inside an unreadable 'for' (line {stmt.line}): {exc}")
            return
        for value in values:
            self._walk(stmt.body, [*scopes, {var.value: value}], via, depth)

    def _simple(self, stmt: Stmt, scopes: list[dict], via: int | None, depth: int) -> None:
        tokens = stmt.tokens
        if self._declare(tokens, scopes, stmt.line):
            return
        if len(tokens) > 3 and tokens[0].kind == "id" and tokens[1].is_punct(".") and tokens[2].kind == "id":
            target = self._lookup(tokens[0].value, scopes)
            if isinstance(target, Tester) or tokens[2].value == "test":
                self._chain(tokens, target, via, scopes)
                return
            if isinstance(target, dict) and len(tokens) > 4 and tokens[3].is_punct("="):
                try:
                    _set_field(target, tokens[2].value, self.value(expression(tokens[4:]), scopes))
                except (Unsupported, CppError) as exc:
                    scopes_with = next(s for s in reversed(scopes) if tokens[0].value in s)
                    scopes_with[tokens[0].value] = Unresolved(f"{exc} (line {stmt.line})")
                return
        if len(tokens) > 2 and tokens[0].kind == "id" and tokens[1].is_punct("(") and tokens[0].value in self.functions:
            self._call_function(stmt, scopes, via, depth)
            return
        self._skipped(stmt, scopes, via, f"a test inside an unread statement (line {stmt.line})")

    def _lookup(self, name: str, scopes: list[dict]):
        return next((s[name] for s in reversed(scopes) if name in s), None)

    def _call_function(self, stmt: Stmt, scopes: list[dict], via: int | None, depth: int) -> None:
        params, body, _ = self.functions[stmt.tokens[0].value]
        if not any(t.is_id("peg_tester") for t in body):
            return
        if depth > 8:
            self._skipped(stmt, scopes, via, f"function calls nested too deep (line {stmt.line})", force=True)
            return
        reader = ExprReader(stmt.tokens, 2)
        scope: dict[str, object] = {}
        try:
            args = reader.items(")")
        except CppError as exc:
            self._skipped(stmt, scopes, via, f"unreadable call (line {stmt.line}): {exc}", force=True)
            return
        for name, arg in zip(params, args, strict=False):
            try:
                scope[name] = self.value(arg, scopes)
            except Unsupported as exc:
                scope[name] = Unresolved(str(exc))
        self._walk(statements(body), [self.globals, scope], stmt.line if via is None else via, depth + 1)

    def _skipped(self, stmt: Stmt, scopes: list[dict], via: int | None, reason: str, force: bool = False) -> None:
        """Record an unsupported case for each tester ``.test(`` in a statement the walk does not run."""
        tokens, found = stmt.tokens, 0
        for i, t in enumerate(tokens[:-2]):
            if t.kind == "id" and tokens[i + 1].is_punct(".") and tokens[i + 2].is_id("test"):
                tester = self._lookup(t.value, scopes)
                template = tester.template if isinstance(tester, Tester) else None
                self.cases.append(RawCase(template, t.line, via, error=reason))
                found += 1
        if force and not found:
            self.cases.append(RawCase(None, stmt.line, via, error=reason))

    def _chain(self, tokens: list[Token], tester, via: int | None, scopes: list[dict]) -> None:
        case = RawCase(tester.template if isinstance(tester, Tester) else None, tokens[0].line, via)
        self.cases.append(case)
        try:
            if not isinstance(tester, Tester):
                raise Unsupported(f"{tokens[0].value} is not a peg_tester")
            self._builder(ExprReader(tokens, 1), case, scopes)
        except (Unsupported, CppError) as exc:
            case.error = str(exc)

    def _builder(self, reader: ExprReader, case: RawCase, scopes: list[dict]) -> None:
        ran = False
        first = True
        while not reader.at_end():
            reader.take(".")
            method = reader.take(kind="id")
            reader.take("(")
            args = [self.value(a, scopes) for a in reader.items(")")]
            if ran:
                raise Unsupported(f".{method.value}() after .run() (line {method.line})")
            if first != (method.value == "test"):
                raise Unsupported(f"a chain must start with .test(), got .{method.value}() (line {method.line})")
            first = False
            ran = self._method(method, args, case)
        if not ran:
            raise Unsupported("no .run(): the test never runs")

    def _method(self, method: Token, args: list, case: RawCase) -> bool:
        name, line = method.value, method.line

        def one():
            if len(args) != 1:
                raise Unsupported(f".{name}() takes one argument, got {len(args)} (line {line})")
            return args[0]

        if name == "test":
            case.input = _str(one())
        elif name == "run":
            if args:
                raise Unsupported(f".run() with arguments (line {line})")
            return True
        elif name in ENUMS:
            prefix, allowed = ENUMS[name]
            value = one()
            if not (isinstance(value, str) and value.startswith(prefix) and value[len(prefix) :] in allowed):
                raise Unsupported(f".{name}({value}) is not a known {prefix}* value (line {line})")
            case.options[name] = value[len(prefix) :].lower()
        elif name in BOOL_OPTIONS or name == "expect_reconstruction":
            value = True if name == "expect_reconstruction" and not args else one()
            if not isinstance(value, bool):
                raise Unsupported(f".{name}() needs true or false (line {line})")
            case.options[name] = value
        elif name == "tools":
            case.tools = [as_tool(t) for t in _list(one())]
            case.options["tools"] = [t["name"] for t in case.tools]
        elif name == "json_schema":
            case.options["json_schema"] = _str(one())
        elif name == "messages":
            case.messages = [as_msg(m) for m in _list(one())]
            case.options["messages"] = copy.deepcopy(case.messages)
        elif name == "expect":
            case.expect = as_msg(one())
        elif name in ("expect_content", "expect_reasoning"):
            case.expect["content" if name == "expect_content" else "reasoning_content"] = _str(one())
        elif name == "expect_tool_calls":
            case.expect["tool_calls"] = [as_call(c) for c in _list(one())]
        else:
            raise Unsupported(f"unknown builder call .{name}() (line {line})")
        return False


def read_cases(source: str) -> list[RawCase]:
    """Every ``.run()`` case of ``test-chat.cpp`` text ``source``, in file order (unreadable ones with ``error``).

    Raises :class:`~harness.corpus.peers._cpp.CppError` only when the file cannot be tokenized or has no
    ``test_template_output_peg_parsers``."""
    return Reader(source).read()

"""Ground-truth scenarios and their builders: a :class:`Scenario` is an assistant turn (tools, calls, prose,
reasoning) to render through a chat template; :func:`edge` builds one (:func:`text_case` / :func:`last_case` with one
string value in a fixed call), :func:`shape_tags` names the edge shapes its data holds, :func:`infer_schema` gives a
JSON schema its arguments validate against.
"""

from __future__ import annotations

import copy
import json
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from harness.core.messages import ToolCall


@dataclass
class Scenario:
    """A ground-truth assistant turn to render through a chat template into a :class:`Case`.

    - ``tools``: OpenAI-style tool declarations offered in the prompt (also kept on the case).
    - ``calls``: the tool calls the assistant makes, in order.
    - ``content_after``: prose after the calls (the template writes it as the message content).
    - ``content_before``: prose before the calls; templates render content after calls, so this text is
      composed (prepended to the rendered completion) and the case records ``text_provenance: composed``.
    - ``reasoning``: thinking text; rendered with thinking enabled so the template writes it.
    - ``tags``: edge shapes, ``seed``: generator seed when generated.
    """

    id: str
    tools: list
    calls: list[ToolCall]
    content_before: str = ""
    content_after: str = ""
    reasoning: str | None = None
    tags: list[str] = field(default_factory=list)
    seed: int | None = None
    note: str = ""


_CHAR_TAGS = (
    ('"', "double-quote-in-string"),
    ("'", "single-quote-in-string"),
    ("\\", "backslash-in-string"),
    (",", "comma-in-string"),
    (":", "colon-in-string"),
    ("{", "brace-in-string"),
    ("}", "brace-in-string"),
    ("[", "bracket-in-string"),
    ("]", "bracket-in-string"),
    ("\n", "newline-in-string"),
    ("\r", "cr-in-string"),
    ("\t", "tab-in-string"),
    ("\x00", "nul-in-string"),
)


_TYPE_LOOKALIKES = frozenset({"None", "True", "False", "NaN", "Infinity", "-Infinity", "inf", "-inf", "nan", "nil"})


def _is_control(ch: str) -> bool:
    o = ord(ch)
    return (o < 0x20 and ch not in "\t\n\r\x00") or 0x7F <= o <= 0x9F


def _is_cjk(ch: str) -> bool:
    o = ord(ch)
    return (
        0x3040 <= o <= 0x30FF
        or 0x3400 <= o <= 0x4DBF
        or 0x4E00 <= o <= 0x9FFF
        or 0xAC00 <= o <= 0xD7AF
        or 0xF900 <= o <= 0xFAFF
        or 0xFF00 <= o <= 0xFFEF
        or 0x20000 <= o <= 0x3FFFF
    )


def _is_emoji(ch: str) -> bool:
    o = ord(ch)
    return 0x1F000 <= o <= 0x1FAFF or 0x2600 <= o <= 0x27BF


def _is_rtl(ch: str) -> bool:
    return unicodedata.bidirectional(ch) in ("R", "AL")


def _looks_like_other_type(s: str) -> bool:
    if s in _TYPE_LOOKALIKES:
        return True
    try:
        value = json.loads(s)
    except ValueError:
        return False
    return not isinstance(value, str)


def string_tags(s: str) -> set[str]:
    """Tags for the shapes one string value exhibits (characters, unicode, markers, lookalikes)."""
    tags: set[str] = set()
    if s == "":
        return {"empty-string"}
    for ch, tag in _CHAR_TAGS:
        if ch in s:
            tags.add(tag)
    if s.endswith("\\"):
        tags.add("trailing-backslash")
    if "\n" in s or "\r" in s:
        tags.add("multiline")
    if any(_is_control(ch) for ch in s):
        tags.add("control-char-in-string")
    if any(ord(ch) > 0x7F for ch in s):
        tags.add("unicode")
        if any(_is_cjk(ch) for ch in s):
            tags.add("cjk")
        if any(_is_emoji(ch) for ch in s):
            tags.add("emoji")
        if "\u200d" in s:
            tags.add("emoji-zwj")
        if any(_is_rtl(ch) for ch in s):
            tags.add("rtl")
    if any(m in s for m in MARKER_TEXTS):
        tags.add("marker-in-string")
    if s.strip() == "":
        tags.add("whitespace-string")
    elif s != s.strip():
        tags.add("leading-trailing-space")
    if _looks_like_other_type(s):
        tags.add("string-looks-like-type")
    return tags


def _key_tags(key: str) -> set[str]:
    tags = set()
    if "-" in key:
        tags.add("key-dash")
    if "." in key:
        tags.add("key-dot")
    if " " in key:
        tags.add("key-space")
    if key[:1].isdigit():
        tags.add("key-digit")
    if any(ord(ch) > 0x7F for ch in key):
        tags.add("key-unicode")
    return tags


def _value_tags(value: Any, depth: int) -> set[str]:
    """Tags of one argument value; ``depth`` is 0 for the arguments object itself."""
    tags: set[str] = set()
    if isinstance(value, bool):
        tags.add("boolean")
    elif value is None:
        tags.add("null")
    elif isinstance(value, int):
        tags.add("integer")
        if value < 0:
            tags.add("negative")
        if value == 0:
            tags.add("zero")
        if abs(value) > 2**53:
            tags.add("big-int")
    elif isinstance(value, float):
        tags.add("float")
        if value < 0 or str(value).startswith("-"):
            tags.add("negative")
        if value == 0:
            tags.add("zero")
        if "e" in str(value):
            tags.add("exponent")
    elif isinstance(value, str):
        tags |= string_tags(value)
    elif isinstance(value, dict):
        if depth > 0:
            tags.add("nested-object" if value else "empty-object")
        for k, v in value.items():
            tags |= _key_tags(k)
            tags |= string_tags(k) & {"unicode", "cjk"}
            tags |= _value_tags(v, depth + 1)
    elif isinstance(value, list):
        if not value:
            tags.add("empty-array")
        for item in value:
            if isinstance(item, dict):
                tags.add("array-of-objects")
            elif isinstance(item, list):
                tags.add("nested-array")
            else:
                tags.add("array-of-scalars")
            tags |= _value_tags(item, depth + 1)
    return tags


def _name_tags(name: str) -> set[str]:
    tags = set()
    if "-" in name:
        tags.add("name-dash")
    if "." in name:
        tags.add("name-dot")
    if any(ch.isdigit() for ch in name):
        tags.add("name-digit")
    return tags


def shape_tags(scenario: Scenario) -> list[str]:
    """The edge shapes present in ``scenario``'s data, sorted (the generated slice's tags).

    Looks at call count and names, every argument key and value (recursively), and the prose fields.
    """
    tags: set[str] = set()
    n = len(scenario.calls)
    if n > 1:
        tags |= {"parallel", f"parallel-{n}"}
        names = [c.name for c in scenario.calls]
        if len(set(names)) < n:
            tags.add("same-tool-twice")
    for c in scenario.calls:
        tags |= _name_tags(c.name)
        if c.arguments == {}:
            tags.add("zero-args")
        tags |= _value_tags(c.arguments, 0)
    if scenario.content_before:
        tags.add("content-before")
    if scenario.content_after:
        tags.add("content-after")
    if scenario.reasoning:
        tags.add("reasoning")
    return sorted(tags)


def _walk_strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _walk_strings(v)
    elif isinstance(value, list):
        for item in value:
            yield from _walk_strings(item)


def scenario_strings(scenario: Scenario) -> Iterator[str]:
    """Every string a rendered completion of ``scenario`` may hold: tool names, argument keys and string
    values (recursively), content and reasoning. Tool declarations are not included."""
    for c in scenario.calls:
        yield c.name
        yield from _walk_strings(c.arguments)
    yield scenario.content_before
    yield scenario.content_after
    if scenario.reasoning:
        yield scenario.reasoning


def contains_any(scenario: Scenario, substrings: tuple[str, ...] | list[str]) -> list[str]:
    """The members of ``substrings`` found in any of :func:`scenario_strings` (empty list when none).

    Use with ``FormatSpec.unrepresentable`` to skip scenarios a format cannot write.
    """
    found = []
    for sub in substrings:
        if any(sub in s for s in scenario_strings(scenario)):
            found.append(sub)
    return found


_NULLABLE_STRING = {"anyOf": [{"type": "string"}, {"type": "null"}]}


def infer_schema(value: Any) -> dict:
    """A JSON schema that ``value`` validates against, as a tool author would write it.

    Objects require all their keys; arrays get an ``items`` schema merged from their items (an empty array
    gets string items); ``None`` becomes ``anyOf [string, null]`` (``Optional[str]``).
    """
    if isinstance(value, bool):
        return {"type": "boolean"}
    if value is None:
        return copy.deepcopy(_NULLABLE_STRING)
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    if isinstance(value, list):
        items: dict | None = None
        for item in value:
            s = infer_schema(item)
            items = s if items is None else merge_schemas(items, s)
        return {"type": "array", "items": items or {"type": "string"}}
    if isinstance(value, dict):
        return object_schema({k: infer_schema(v) for k, v in value.items()})
    raise TypeError(f"not a JSON value: {value!r}")


def object_schema(properties: dict[str, dict]) -> dict:
    """``{"type": "object", "properties": properties, "required": [every key, in order]}``."""
    return {"type": "object", "properties": properties, "required": list(properties)}


def _alternatives(schema: dict) -> list[dict]:
    return list(schema["anyOf"]) if set(schema) == {"anyOf"} else [schema]


def merge_schemas(a: dict, b: dict) -> dict:
    """A schema accepting what ``a`` or ``b`` accepts: objects merge properties (required = common keys),
    arrays merge items, different types become ``anyOf``."""
    if a == b:
        return a
    if a.get("type") == b.get("type") == "object":
        props = dict(a.get("properties", {}))
        for k, s in b.get("properties", {}).items():
            props[k] = merge_schemas(props[k], s) if k in props else s
        required = [k for k in a.get("required", []) if k in b.get("required", [])]
        return {"type": "object", "properties": props, "required": required}
    if a.get("type") == b.get("type") == "array":
        return {"type": "array", "items": merge_schemas(a["items"], b["items"])}
    alts: list[dict] = []
    for s in _alternatives(a) + _alternatives(b):
        for i, known in enumerate(alts):
            if known.get("type") == s.get("type") and s.get("type") in ("object", "array"):
                alts[i] = merge_schemas(known, s)
                break
            if known == s:
                break
        else:
            alts.append(s)
    return alts[0] if len(alts) == 1 else {"anyOf": alts}


def make_tool(name: str, parameters: dict, description: str | None = None) -> dict:
    """An OpenAI-style tool declaration."""
    return {
        "type": "function",
        "function": {"name": name, "description": description or f"Tool {name}.", "parameters": parameters},
    }


def tools_for_calls(
    calls: list[ToolCall], descriptions: dict[str, str] | None = None, parameters: dict[str, dict] | None = None
) -> list[dict]:
    """Tool declarations for ``calls``, one per distinct name in first-use order.

    Parameters are ``parameters[name]`` when given, else inferred from every call of that tool (merged).
    """
    descriptions = descriptions or {}
    parameters = parameters or {}
    inferred: dict[str, dict] = {}
    for c in calls:
        s = infer_schema(c.arguments)
        inferred[c.name] = merge_schemas(inferred[c.name], s) if c.name in inferred else s
    return [make_tool(n, parameters.get(n, s), descriptions.get(n, _DESCRIPTIONS.get(n))) for n, s in inferred.items()]


def call(name: str, arguments: dict | None = None) -> ToolCall:
    """A ground-truth call (``arguments`` defaults to ``{}``)."""
    return ToolCall(name=name, arguments={} if arguments is None else arguments)


def edge(
    id: str,
    tags: list[str],
    calls: list[ToolCall] | ToolCall,
    *,
    tools: list[dict] | None = None,
    parameters: dict[str, dict] | None = None,
    content_before: str = "",
    content_after: str = "",
    reasoning: str | None = None,
    note: str = "",
) -> Scenario:
    """One curated scenario; ``id`` gets the ``edge-`` prefix; tools inferred from the calls unless given."""
    calls = [calls] if isinstance(calls, ToolCall) else list(calls)
    sc = Scenario(
        id=f"edge-{id}",
        tools=tools if tools is not None else tools_for_calls(calls, parameters=parameters),
        calls=calls,
        content_before=content_before,
        content_after=content_after,
        reasoning=reasoning,
        tags=[],
        note=note,
    )
    detected = [t for t in shape_tags(sc) if t not in tags]
    sc.tags = list(dict.fromkeys(tags)) + detected
    return sc


def text_case(id: str, tags: list[str], value: str, note: str = "", *, path: str = "notes/edge.txt") -> Scenario:
    """:func:`edge` with ``value`` as a string between other arguments: ``save_text(path, text=value, version=2)``.

    Keys are in sorted order, so sorting formats (Gemma 4) and insertion-order formats write the same order and
    the string is followed by another key in both; the inferred schema types ``version`` an integer.
    """
    return edge(id, tags, call("save_text", {"path": path, "text": value, "version": 2}), note=note)


def last_case(id: str, tags: list[str], value: str, note: str = "") -> Scenario:
    """:func:`edge` with ``value`` as the last (only) argument: ``set_pattern(pattern=value)``."""
    return edge(id, tags, call("set_pattern", {"pattern": value}), note=note)


_DESCRIPTIONS = {
    "save_text": "Save text to a file at path; version is the revision number.",
    "set_pattern": "Set the active search pattern.",
    "get_weather": "Get the current weather for a city.",
    "get_time": "Get the current time.",
    "list_files": "List files in the working directory.",
    "search": "Search the web.",
    "run_python": "Run Python code and return stdout.",
    "run_shell": "Run a shell command.",
    "send_email": "Send an email.",
    "configure": "Set configuration values.",
    "update_record": "Update fields of a record.",
}


MARKER_TEXTS: tuple[str, ...] = (
    # Gemma 4
    "<|tool_call>",
    "<tool_call|>",
    '<|"|>',
    "<|channel>",
    "<channel|>",
    "<|tool_response>",
    "<tool_response|>",
    "<|tool>",
    "<tool|>",
    "<|turn>",
    "<turn|>",
    "<|think|>",
    # Hermes / Qwen / Qwen3-Coder
    "<tool_call>",
    "</tool_call>",
    "<function=",
    "</function>",
    "<parameter=",
    "</parameter>",
    "<|im_start|>",
    "<|im_end|>",
    "<think>",
    "</think>",
    # Mistral, Llama 3
    "[TOOL_CALLS]",
    "[ARGS]",
    "<|python_tag|>",
    "<|eom_id|>",
    "<|eot_id|>",
    # GLM 4.5/4.7
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
    # Kimi K2
    "<|tool_calls_section_begin|>",
    "<|tool_call_begin|>",
    "<|tool_call_argument_begin|>",
    # DeepSeek V3.1/V3.2
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁call▁begin｜>",
    "<｜tool▁sep｜>",
    # Harmony (gpt-oss)
    "<|call|>",
    "<|channel|>",
    "<|message|>",
    "<|end|>",
    "<|start|>",
    # MiniMax M2
    "<minimax:tool_call>",
    "<invoke name=",
)

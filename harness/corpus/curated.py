"""The curated edge catalog: hand-written, format-independent ground-truth tool calls.

:func:`curated_scenarios` returns one :class:`~harness.core.scenarios.Scenario` per edge shape, each with a stable id
(``edge-...``) and tags. Every scenario declares its tools in OpenAI style
(``{"type": "function", "function": {"name", "description", "parameters"}}``) with a JSON schema that its
arguments validate against (inferred from the arguments by :func:`infer_schema` unless given), so
schema-aware parsers get the types they need.

Shapes (tag families; :data:`REQUIRED_TAGS` lists the tags the catalog must cover):

- structure: nested objects 2-4 deep, arrays of objects / scalars / arrays, empty object, array and string;
- strings holding JSON/format syntax: ``"``, ``'``, ``\\``, ``,``, ``:``, braces, brackets, a trailing
  backslash, newline, CR, tab, other control characters (C0, DEL, C1), text that imitates the end of a
  string followed by more keys (``injection``);
- non-ASCII: CJK, emoji incl. ZWJ sequences and flags, right-to-left Arabic/Hebrew with bidi marks,
  combining marks (NFD), invisible and line-separator code points, astral-plane characters;
- code: ``np.genfromtxt("train.csv", delimiter=",")``, multi-line Python, JSON text, shell, regex, HTML;
- protocol markers of many formats inside strings (tag ``marker-in-string``): Gemma 4's ``<|tool_call>``,
  ``<tool_call|>``, ``<|channel>``, ``<turn|>`` ..., Hermes/Qwen XML, Mistral, Llama, ChatML, Harmony,
  GLM, Kimi, DeepSeek;
- numbers: zero, negatives, floats, exponents (``1e-07``, ``6.02e+23``, ``5e-324``), integers beyond the
  double range (``2**53 + 1``), 64-bit limits (``2**63``), ``10**30``, integral floats, ``-0.0``;
- booleans, null (top level, nested, inside arrays);
- keys with ``-``, ``.``, spaces, leading digits, non-ASCII, case variants, JSON-schema keywords;
- tool names with ``-``, ``.``, digits, CamelCase, 64 characters;
- zero-argument calls; 2 and 3 parallel calls (same tool, different tools);
- prose before (``content_before``), after (``content_after``) or around the calls; thinking text
  (``reasoning``) before the calls;
- strings that look like other types (``"123"``, ``"1.10"``, ``"true"``, ``"null"``, ``"None"``, ``"{}"``,
  ``"[1,2]"``, ``"NaN"``): they must stay strings;
- whitespace-only strings, leading/trailing spaces and newlines, a 5000-character string.

Decisions:

- **U+0000**: one case (``edge-string-nul``, tag ``nul-in-string``) carries a NUL inside a string. JSON can
  write it (``\\u0000``) and Python parsers handle it, but C-string based engines and tokenizers may cut the
  text at it, and a model hardly ever emits it; it is kept as its own case so a run can filter it
  (``"nul-in-string" in scenario.tags``). The generated slice never produces NUL.
- **-0.0**: ``edge-number-negative-zero`` holds ``-0.0``. Python compares ``-0.0 == 0.0 == 0``, so a parser
  that drops the sign passes unless scoring compares signs; the case exists so that such scoring can.
- **Unrepresentable text**: the catalog is format-independent, so ``edge-marker-gemma-string-delim`` holds
  Gemma 4's string delimiter ``<|"|>``, which Gemma 4 cannot write; renderers skip scenarios holding a
  format's ``FormatSpec.unrepresentable`` text (see :func:`contains_any`).
- Tags are the hand-written ones first, then the shapes :func:`shape_tags` detects in the data (sorted), so
  filtering on e.g. ``comma-in-string`` also finds the code cases that hold commas.

Errors: :func:`curated_scenarios` raises ``ValueError`` if an id repeats or a call names an undeclared tool
(a catalog bug, caught at import of the data by the tests).
"""

from __future__ import annotations

from harness.core.scenarios import Scenario, call, edge, last_case, text_case

# --------------------------------------------------------------------------------------------------------
# Tag vocabulary
# --------------------------------------------------------------------------------------------------------

REQUIRED_TAGS: tuple[str, ...] = (
    # structure
    "nested-object",
    "array-of-objects",
    "array-of-scalars",
    "nested-array",
    "empty-object",
    "empty-array",
    "empty-string",
    # characters inside strings
    "trailing-backslash",
    "backslash-in-string",
    "double-quote-in-string",
    "single-quote-in-string",
    "comma-in-string",
    "colon-in-string",
    "brace-in-string",
    "bracket-in-string",
    "newline-in-string",
    "cr-in-string",
    "tab-in-string",
    "control-char-in-string",
    "nul-in-string",
    "injection",
    # non-ASCII
    "unicode",
    "cjk",
    "emoji",
    "emoji-zwj",
    "rtl",
    # code and markers
    "code",
    "multiline",
    "marker-in-string",
    # scalars
    "integer",
    "negative",
    "zero",
    "float",
    "exponent",
    "big-int",
    "boolean",
    "null",
    # keys and names
    "key-dash",
    "key-dot",
    "key-space",
    "key-digit",
    "name-dash",
    "name-dot",
    "name-digit",
    # calls and message shape
    "zero-args",
    "parallel",
    "parallel-2",
    "parallel-3",
    "same-tool-twice",
    "content-before",
    "content-after",
    "reasoning",
    # strings that must stay strings
    "string-looks-like-type",
    "whitespace-string",
    "leading-trailing-space",
)
"""Tags the curated catalog must cover (the tests assert each appears at least once)."""


# --------------------------------------------------------------------------------------------------------
# The catalog
# --------------------------------------------------------------------------------------------------------

_PYTHON_SNIPPET = '''import json, sys

def load(path: str, sep=","):
    """Read 'path' and split on sep."""
    with open(path, encoding="utf-8") as fh:
        rows = [line.rstrip("\\n").split(sep) for line in fh]
    print(f"{len(rows)} rows, first={rows[0]!r}", file=sys.stderr)
    return {"rows": rows, "ok": True}

if __name__ == "__main__":
    print(json.dumps(load("data.csv"), indent=2))
'''

_JSON_SNIPPET = """{
  "name": "demo",
  "version": "1.0.0",
  "scripts": {"test": "pytest -q", "lint": "ruff check ."},
  "list": [1, 2.5, null, true, "a,b"],
  "nested": {"path": "C:\\\\tmp\\\\", "quote": "\\"hi\\""}
}
"""

_SHELL_SNIPPET = """#!/usr/bin/env bash
set -euo pipefail
grep -rn "TODO, FIXME" src/ | awk -F: '{print $1}' | sort -u > todo.txt
for f in $(cat todo.txt); do echo "file: ${f}"; done
cat <<'EOF' > config.json
{"retries": 3, "hosts": ["a", "b"]}
EOF
echo "done: $?" && exit 0
"""


def curated_scenarios() -> list[Scenario]:
    """The curated edge catalog (about 110 scenarios), in a stable order with stable ids.

    Returns fresh objects on each call (callers may mutate them). Raises ``ValueError`` on a repeated id or
    a call to an undeclared tool.
    """
    s: list[Scenario] = []
    add = s.append

    # ---- structure ----------------------------------------------------------------------------------
    add(
        edge(
            "nested-object",
            ["nested-object"],
            call("create_user", {"user": {"name": "Ada", "age": 36}, "notify": True}),
        )
    )
    add(
        edge(
            "nested-object-3",
            ["nested-object"],
            call("configure", {"config": {"db": {"host": "localhost", "port": 5432}, "debug": False}, "name": "dev"}),
            note="An object closes before a sibling key.",
        )
    )
    add(
        edge(
            "nested-object-4",
            ["nested-object"],
            call("query_issues", {"filter": {"where": {"field": {"eq": "open", "ne": "closed"}}}, "limit": 20}),
        )
    )
    add(
        edge(
            "array-of-objects",
            ["array-of-objects"],
            call("place_order", {"items": [{"sku": "A-1", "qty": 2}, {"sku": "B-7", "qty": 1}], "express": False}),
        )
    )
    add(
        edge(
            "array-of-objects-nested",
            ["array-of-objects", "nested-object"],
            call(
                "upsert_rows",
                {
                    "rows": [
                        {"id": 1, "meta": {"ok": True, "owner": {"name": "x"}}, "tags": ["a", "b"]},
                        {"id": 2, "meta": {"ok": False, "owner": {"name": "y"}}, "tags": []},
                    ]
                },
            ),
        )
    )
    add(edge("array-of-strings", ["array-of-scalars"], call("read_files", {"paths": ["a.txt", "b c.txt", "d,e.txt"]})))
    add(edge("array-of-integers", ["array-of-scalars", "integer"], call("delete_ids", {"ids": [3, -1, 0, 42]})))
    add(
        edge(
            "array-of-numbers",
            ["array-of-scalars", "float"],
            call("set_weights", {"weights": [0.5, -2.25, 1e-07, 3.0]}),
        )
    )
    add(edge("array-of-booleans", ["array-of-scalars", "boolean"], call("set_flags", {"flags": [True, False, True]})))
    add(
        edge(
            "array-mixed-scalars",
            ["array-of-scalars"],
            call("log_values", {"values": ["a", 1, 2.5, True, None]}),
            note="Items of mixed types; schema items is anyOf.",
        )
    )
    add(edge("array-nested", ["nested-array"], call("set_matrix", {"matrix": [[1, 2], [3, 4], []]})))
    add(
        edge(
            "array-single-element",
            ["array-of-scalars"],
            call("delete_ids", {"ids": [7]}),
            note="A one-item array must stay an array.",
        )
    )
    add(
        edge(
            "empty-object",
            ["empty-object"],
            call("create_job", {"name": "nightly", "options": {}}),
            parameters={
                "create_job": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "options": {"type": "object", "properties": {}}},
                    "required": ["name", "options"],
                }
            },
        )
    )
    add(edge("empty-array", ["empty-array"], call("tag_item", {"item": "x-1", "tags": []})))
    add(edge("empty-string", ["empty-string"], call("search", {"limit": 5, "query": ""})))
    add(edge("empty-string-last", ["empty-string"], call("set_pattern", {"pattern": ""})))
    add(
        edge(
            "empty-all",
            ["empty-object", "empty-array", "empty-string"],
            call("reset", {"a": "", "b": [], "c": {}}),
            parameters={
                "reset": {
                    "type": "object",
                    "properties": {
                        "a": {"type": "string"},
                        "b": {"type": "array", "items": {"type": "integer"}},
                        "c": {"type": "object", "properties": {}},
                    },
                    "required": ["a", "b", "c"],
                }
            },
        )
    )

    # ---- strings: syntax characters ------------------------------------------------------------------
    add(text_case("string-trailing-backslash", ["trailing-backslash"], "C:\\Users\\me\\"))
    add(
        last_case(
            "string-trailing-backslash-last",
            ["trailing-backslash"],
            "ends with \\",
            note="Backslash right before the closing delimiter of the last argument.",
        )
    )
    add(last_case("string-only-backslash", ["trailing-backslash"], "\\"))
    add(text_case("string-double-backslash-end", ["trailing-backslash"], "a\\\\"))
    add(
        text_case(
            "string-escape-lookalikes",
            ["backslash-in-string"],
            'literal \\n and \\t and \\u0041 and \\" and \\\\',
            note="Backslash sequences that must not be unescaped.",
        )
    )
    add(text_case("string-double-quote", ["double-quote-in-string"], 'She said "hi" and left'))
    add(last_case("string-double-quote-only", ["double-quote-in-string"], '"'))
    add(text_case("string-single-quote", ["single-quote-in-string"], "it's O'Brien's"))
    add(text_case("string-comma", ["comma-in-string"], "a, b, c,"))
    add(text_case("string-colon", ["colon-in-string"], "key: value: 12:30"))
    add(text_case("string-braces", ["brace-in-string"], "{ and } and {}}{"))
    add(text_case("string-brackets", ["bracket-in-string"], "[ and ] and ]["))
    add(text_case("string-all-punct", ["double-quote-in-string"], "\"',:{}[]\\"))
    add(
        text_case(
            "string-json-injection",
            ["injection"],
            '", "version": 3, "x": "',
            note="Imitates closing the string and adding keys in JSON formats.",
        )
    )
    add(
        text_case(
            "string-bare-key-injection",
            ["injection"],
            "x},version:3,y:{",
            note="Imitates closing an argument block in bare-key formats (Gemma 4).",
        )
    )
    add(text_case("string-newline", ["newline-in-string"], "line one\nline two\n"))
    add(text_case("string-crlf", ["cr-in-string"], "line one\r\nline two"))
    add(text_case("string-cr", ["cr-in-string"], "progress 10%\rprogress 100%"))
    add(text_case("string-tab", ["tab-in-string"], "col1\tcol2\t"))
    add(
        text_case(
            "string-control-chars",
            ["control-char-in-string"],
            "soh\x01 bell\x07 bs\x08 vt\x0b ff\x0c esc\x1b[31mred\x1b[0m us\x1f",
        )
    )
    add(text_case("string-del-c1", ["control-char-in-string"], "del\x7f nel\x85 csi\x9b"))
    add(
        text_case(
            "string-nul",
            ["nul-in-string"],
            "before\x00after",
            note="U+0000 inside a string; C-string engines may truncate. Filter on tag nul-in-string.",
        )
    )

    # ---- strings: non-ASCII --------------------------------------------------------------------------
    add(text_case("unicode-cjk", ["cjk"], "東京の天気は？ 北京 서울"))
    add(text_case("unicode-emoji", ["emoji"], "launch 🚀 party 🎉 ok 👍"))
    add(text_case("unicode-emoji-zwj", ["emoji-zwj"], "family 👨‍👩‍👧‍👦 rainbow 🏳️‍🌈 wave 👋🏽 flag 🇯🇵"))
    add(text_case("unicode-rtl-arabic", ["rtl"], "مرحبا بالعالم"))
    add(text_case("unicode-rtl-hebrew-mixed", ["rtl"], "שלום world \u200f123\u200e!"))
    add(
        text_case(
            "unicode-combining",
            ["unicode"],
            "cafe\u0301 vs caf\u00e9; Z\u0324\u0354\u0367\u0311",
            note="NFD and NFC forms must both survive unnormalized.",
        )
    )
    add(
        text_case(
            "unicode-invisible",
            ["unicode"],
            "zero\u200bwidth nbsp\u00a0 bom\ufeff ls\u2028 ps\u2029 end",
            note="U+2028/U+2029 are line breaks for JavaScript and str.splitlines.",
        )
    )
    add(text_case("unicode-astral", ["unicode"], "𝕏 𠀀 𓀀"))
    add(edge("unicode-key", ["unicode", "key-unicode"], call("update_record", {"città": "Roma", "名前": "太郎"})))
    add(
        edge(
            "unicode-array", ["unicode", "array-of-scalars"], call("tag_item", {"item": "ω", "tags": ["α", "βγ", "😀"]})
        )
    )

    # ---- code ------------------------------------------------------------------------------------------
    add(
        edge(
            "code-genfromtxt",
            ["code"],
            call("run_python", {"code": 'data = np.genfromtxt("train.csv", delimiter=",")'}),
        )
    )
    add(
        edge(
            "code-python-multiline", ["code", "multiline"], call("run_python", {"code": _PYTHON_SNIPPET, "timeout": 30})
        )
    )
    add(
        edge(
            "code-json-snippet",
            ["code", "multiline"],
            call("save_text", {"path": "package.json", "text": _JSON_SNIPPET, "version": 1}),
        )
    )
    add(edge("code-shell", ["code", "multiline"], call("run_shell", {"command": _SHELL_SNIPPET, "cwd": "/tmp"})))
    add(text_case("code-regex", ["code"], r'^\d{3}-\d{4}$|"(?:[^"\\]|\\.)*"'))
    add(text_case("code-html", ["code"], '<div class="card" data-x=\'{"a":1}\'>Hi &amp; bye</div>'))
    add(text_case("code-windows-path", ["code", "backslash-in-string"], r"C:\Program Files\new\table.txt"))

    # ---- protocol markers inside strings ---------------------------------------------------------------
    add(text_case("marker-gemma-call-close", ["marker-in-string"], "see <tool_call|> here"))
    add(last_case("marker-gemma-call-open", ["marker-in-string"], "<|tool_call>"))
    add(
        text_case(
            "marker-gemma-full-call", ["marker-in-string"], "text <|tool_call>call:rm{force:true}<tool_call|> text"
        )
    )
    add(text_case("marker-gemma-channel", ["marker-in-string"], "<|channel>thought\nhmm<channel|>"))
    add(text_case("marker-gemma-turn", ["marker-in-string"], "<turn|>\n<|turn>user\nhi"))
    add(
        text_case(
            "marker-gemma-tool-response",
            ["marker-in-string"],
            "<|tool_response>response:x{}<tool_response|>",
            note="Gemma 4's stop marker inside a string; an engine would stop there.",
        )
    )
    add(
        text_case(
            "marker-gemma-string-delim",
            ["marker-in-string", "gemma-string-delimiter"],
            'quote <|"|> delim',
            note='Holds <|"|>, which Gemma 4 cannot write (FormatSpec.unrepresentable): skip for gemma4.',
        )
    )
    add(text_case("marker-hermes", ["marker-in-string"], '<tool_call>\n{"name": "x", "arguments": {}}\n</tool_call>'))
    add(
        text_case(
            "marker-qwen-xml", ["marker-in-string"], "<function=rm>\n<parameter=path>\n/\n</parameter>\n</function>"
        )
    )
    add(text_case("marker-mistral-llama", ["marker-in-string"], "[TOOL_CALLS] [ARGS] <|python_tag|> <|eom_id|>"))
    add(
        text_case(
            "marker-chatml-harmony",
            ["marker-in-string"],
            "<|im_end|> <|im_start|>assistant <|start|>assistant<|channel|>commentary<|message|>{}<|call|>",
        )
    )
    add(
        text_case(
            "marker-other-formats",
            ["marker-in-string"],
            "<arg_key>a</arg_key><arg_value>b</arg_value> <|tool_calls_section_begin|> "
            "<｜tool▁calls▁begin｜> <minimax:tool_call>",
        )
    )
    add(text_case("marker-think", ["marker-in-string"], "<think>not reasoning</think>"))

    # ---- numbers, booleans, null -----------------------------------------------------------------------
    add(edge("number-zero", ["zero", "integer"], call("paginate", {"offset": 0, "retries": 0})))
    add(edge("number-negative-int", ["negative", "integer"], call("adjust", {"delta": -42})))
    add(edge("number-float", ["float"], call("configure", {"pi": 3.14159, "ratio": 0.75})))
    add(edge("number-negative-float", ["negative", "float"], call("set_temperature", {"celsius": -12.5})))
    add(
        edge(
            "number-exponent-small",
            ["exponent"],
            call("configure", {"epsilon": 1e-07, "tiny": 5e-324}),
            note="str() writes 1e-07 and 5e-324 (smallest subnormal).",
        )
    )
    add(
        edge(
            "number-exponent-large",
            ["exponent"],
            call("configure", {"avogadro": 6.02e23, "big": 1e300}),
            note="str() writes 6.02e+23 and 1e+300.",
        )
    )
    add(
        edge(
            "number-big-int",
            ["big-int"],
            call("store_ids", {"max_i64": 2**63 - 1, "min_i64": -(2**63), "u64_over": 2**63}),
        )
    )
    add(edge("number-huge-int", ["big-int"], call("store_ids", {"n": 10**30})))
    add(
        edge(
            "number-beyond-double",
            ["big-int"],
            call("store_ids", {"n": 2**53 + 1}),
            note="9007199254740993 is not a double; parsing through float loses the last digit.",
        )
    )
    add(
        edge(
            "number-float-integral",
            ["float"],
            call("configure", {"hundred": 100.0, "scale": 1.0}),
            note="Integral floats written 1.0; a parser may return int 1 (equal in Python).",
        )
    )
    add(edge("number-float-precision", ["float"], call("configure", {"sum": 0.30000000000000004, "third": 1 / 3})))
    add(
        edge(
            "number-negative-zero",
            ["float", "zero"],
            call("configure", {"x": -0.0}),
            note="-0.0 == 0.0 in Python; only sign-aware scoring tells a dropped sign.",
        )
    )
    add(edge("boolean", ["boolean"], call("deploy", {"dry_run": False, "enabled": True})))
    add(edge("null", ["null"], call("list_items", {"cursor": None, "limit": 10})))
    add(
        edge(
            "null-nested",
            ["null", "nested-object"],
            call("query_issues", {"filter": {"labels": [None, "bug"], "owner": None}}),
        )
    )

    # ---- keys ------------------------------------------------------------------------------------------
    add(edge("key-dash", ["key-dash"], call("search", {"max-results": 5, "sort-by": "date"})))
    add(edge("key-dot", ["key-dot"], call("configure", {"a.b": 1, "config.path": "x/y"})))
    add(edge("key-space", ["key-space"], call("update_record", {"first name": "Ada", "last name": "Lovelace"})))
    add(edge("key-digit", ["key-digit"], call("configure", {"2fa": True, "3d": "yes", "v2": 1})))
    add(
        edge(
            "key-schema-words",
            ["key-schema-word"],
            call("file_issue", {"description": "crash", "properties": "p", "required": True, "type": "bug"}),
            note="Gemma 4's declaration macro skips properties named type/description/properties/required.",
        )
    )
    add(
        edge(
            "key-case",
            ["key-case"],
            call("update_record", {"ID": 1, "Id": 3, "id": 2}),
            note="Case-sensitive keys; sorted order puts uppercase first.",
        )
    )
    add(edge("key-underscore", ["key-underscore"], call("configure", {"__dunder__": 2, "_private": 1})))

    # ---- tool names ------------------------------------------------------------------------------------
    add(edge("name-dash", ["name-dash"], call("manim-video", {"scene": "Intro", "quality": "high"})))
    add(edge("name-dot", ["name-dot"], call("web.search", {"query": "weather in Paris"})))
    add(edge("name-digit", ["name-digit"], call("get_v2", {"id": 7})))
    add(edge("name-camel", ["name-camel"], call("GetWeather", {"city": "Oslo"})))
    add(
        edge(
            "name-mixed", ["name-dash", "name-dot", "name-digit"], call("mcp.github-v3.create_issue2", {"title": "Bug"})
        )
    )
    add(
        edge(
            "name-long",
            ["name-long"],
            call("a" * 30 + "_" + "b" * 33, {"x": 1}),
            note="A 64-character name, the OpenAI limit.",
        )
    )

    # ---- zero-argument and parallel calls ----------------------------------------------------------------
    add(edge("zero-args", ["zero-args"], call("get_time")))
    add(edge("zero-args-parallel", ["zero-args", "parallel"], [call("get_time"), call("list_files")]))
    add(edge("zero-args-then-args", ["zero-args", "parallel"], [call("get_time"), call("search", {"query": "news"})]))
    add(
        edge(
            "parallel-2-same",
            ["parallel", "same-tool-twice"],
            [call("get_weather", {"city": "Paris"}), call("get_weather", {"city": "Tokyo", "unit": "c"})],
            parameters={
                "get_weather": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
                    "required": ["city"],
                }
            },
        )
    )
    add(
        edge(
            "parallel-2-different",
            ["parallel"],
            [call("get_weather", {"city": "Paris"}), call("get_time", {"tz": "Europe/Paris"})],
        )
    )
    add(
        edge(
            "parallel-3-same",
            ["parallel", "same-tool-twice"],
            [call("get_weather", {"city": c}) for c in ("Paris", "Tokyo", "Lima")],
        )
    )
    add(
        edge(
            "parallel-3-different",
            ["parallel"],
            [
                call("search", {"query": "flights"}),
                call("get_time"),
                call("send_email", {"body": "Hi,\nsee below.", "to": ["a@x.io", "b@y.io"]}),
            ],
        )
    )
    add(
        edge(
            "parallel-tricky-strings",
            ["parallel", "trailing-backslash", "brace-in-string"],
            [call("set_pattern", {"pattern": "dir\\"}), call("set_pattern", {"pattern": '}{"},'})],
            note="The first call's string ends in a backslash; the second starts with a closing brace.",
        )
    )

    # ---- prose and reasoning -----------------------------------------------------------------------------
    add(
        edge(
            "content-before",
            ["content-before"],
            call("get_weather", {"city": "Paris"}),
            content_before="Let me check the weather for you.",
        )
    )
    add(
        edge(
            "content-after",
            ["content-after"],
            call("get_weather", {"city": "Paris"}),
            content_after="I have asked for the weather.",
        )
    )
    add(
        edge(
            "content-both",
            ["content-before", "content-after"],
            call("get_weather", {"city": "Paris"}),
            content_before="Checking now.",
            content_after="Done.",
        )
    )
    add(
        edge(
            "content-before-multiline-json",
            ["content-before", "multiline"],
            call("search", {"query": "x"}),
            content_before='Plan:\n1. search with {"query": "x"}\n2. summarise [results]\n',
            note="Prose holding JSON-looking text before a real call.",
        )
    )
    add(
        edge(
            "content-both-parallel",
            ["content-before", "content-after", "parallel"],
            [call("get_weather", {"city": "Paris"}), call("get_weather", {"city": "Rome"})],
            content_before="Two cities:",
            content_after="Both requested.",
        )
    )
    add(
        edge(
            "reasoning",
            ["reasoning"],
            call("get_weather", {"city": "Paris"}),
            reasoning="The user wants the weather in Paris, so I call get_weather.",
        )
    )
    add(
        edge(
            "reasoning-content-after",
            ["reasoning", "content-after"],
            call("search", {"query": "news"}),
            reasoning="Search first.",
            content_after="Searching.",
        )
    )
    add(
        edge(
            "reasoning-parallel",
            ["reasoning", "parallel"],
            [call("get_time"), call("get_weather", {"city": "Oslo"})],
            reasoning="Two independent lookups; call both.",
        )
    )
    add(
        edge(
            "reasoning-code",
            ["reasoning", "code"],
            call("run_python", {"code": "print(1)"}),
            reasoning='I could run `json.loads(\'{"a": [1, 2]}\')`, but first:\n- print(1)\n- check "it\'s ok"',
        )
    )

    # ---- strings that look like other types ----------------------------------------------------------------
    add(
        edge(
            "string-looks-like-int",
            ["string-looks-like-type"],
            call("lookup", {"code": "123", "zip": "02134"}),
            note="02134 is not valid JSON; a schema-aware parser must keep both as strings.",
        )
    )
    add(
        edge(
            "string-looks-like-float",
            ["string-looks-like-type"],
            call("lookup", {"exp": "1e5", "neg": "-4.5", "version": "1.10"}),
        )
    )
    add(edge("string-looks-like-bool", ["string-looks-like-type"], call("lookup", {"a": "true", "b": "False"})))
    add(
        edge(
            "string-looks-like-null", ["string-looks-like-type"], call("lookup", {"a": "null", "b": "None", "c": "nil"})
        )
    )
    add(
        edge(
            "string-looks-like-json-object",
            ["string-looks-like-type"],
            call("lookup", {"json": '{"a": 1}', "payload": "{}"}),
        )
    )
    add(edge("string-looks-like-json-array", ["string-looks-like-type"], call("lookup", {"ids": "[1,2]"})))
    add(
        edge(
            "string-looks-like-nan",
            ["string-looks-like-type"],
            call("lookup", {"a": "NaN", "b": "Infinity", "c": "-inf"}),
        )
    )
    add(
        edge(
            "string-array-looks-like-ints",
            ["string-looks-like-type", "array-of-scalars"],
            call("lookup", {"codes": ["1", "2", "3"]}),
        )
    )

    # ---- whitespace and length -------------------------------------------------------------------------------
    add(last_case("string-whitespace-only", ["whitespace-string"], " "))
    add(text_case("string-whitespace-mixed-only", ["whitespace-string"], " \t\n "))
    add(text_case("string-leading-trailing-spaces", ["leading-trailing-space"], "  padded  "))
    add(text_case("string-leading-trailing-newlines", ["leading-trailing-space"], "\n\nbody\n\n"))
    add(text_case("string-long", ["long-string"], "".join(f'line {i}: a, b; {{c}} [d] "e"\n' for i in range(160))))

    ids = [sc.id for sc in s]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"repeated curated ids: {dup}")
    for sc in s:
        declared = {t["function"]["name"] for t in sc.tools}
        missing = {c.name for c in sc.calls} - declared
        if missing:
            raise ValueError(f"{sc.id}: calls undeclared tools {sorted(missing)}")
    return s

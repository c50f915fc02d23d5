"""Conformance of the project's own GLM parser (``parsers/own/glm45.py``; ``parsers/own/glm47.py`` is the same
reader) and of the glm45 family end to end (GLM-4.5, GLM-4.6): the shared suite's config plus the tests specific to
the format. Layout-independent tests of the shared reader run both parsers here; the glm47 config
(``tests/conformance/test_glm47.py``) reuses the texts defined here. The property tests and the tests that render
through the real templates are in ``test_glm45_properties.py``; the helpers these files share are in
:mod:`conformance.glm45_helpers`.

Text rendered by the real templates comes from the llama-cpp-python 0.3.36 sdist copies (``GLM-4.6.jinja``,
``GLM-4.7-Flash.jinja``) through the harness' own pipeline (catalog, ``load_template`` offline, ``render_scenario``,
``build_corpus``).
"""

from __future__ import annotations

import json

import pytest

from conformance.glm45_helpers import BOTH, FMT, PARSER, call45, call47, stream_matches
from conformance.suite import Conformance, ParserConformance, Text, expected_view, tool, view
from harness.formats import format_edge_scenarios, get_format
from parsers.own.glm45 import Glm45Parser

# ---- protocol and registry -------------------------------------------------------------------------


def test_format_facts():
    for name in ("glm45", "glm47"):
        spec = get_format(name)
        assert (spec.call_open, spec.call_close) == ("<tool_call>", "</tool_call>")
        assert {"<arg_key>", "</arg_value>", "<think>", "</think>"} <= set(spec.markers)
        # GLM's three; glm47 adds Spark 2.5's end of sentence (the same format, harness/formats/glm47.py)
        assert spec.stop_markers[:3] == ("<|user|>", "<|observation|>", "<|endoftext|>")
        assert spec.unrepresentable == ()
        ids = [s.id for s in format_edge_scenarios(name)]
        assert ids and all(i.startswith(f"edge-{name}-") for i in ids) and len(set(ids)) == len(ids)


# ---- one-shot and streaming on small inputs ----------------------------------------------------------

HARD = {"a": 'say "hi" \\ \\"', "b": "a\nb\r\t\x01\x7f", "c": "é😀\u2028", "d": "}]{[,:", "e": "", "f": "  pad \n"}
STRICT = {
    "one-call": ({"get_weather": {"city": "Paris"}}, None),
    "zero-args": ({"get_time": {}}, None),
    "typed": (
        {
            "n": {
                "big": 10**40,
                "f": 1.5e-07,
                "z": -0.0,
                "i": 3.0,
                "t": True,
                "nul": None,
                "obj": {"k": ["é", {"x": None}]},
                "arr": [],
            }
        },
        None,
    ),
    "hard-strings": ({"w": HARD}, None),
    "markers-in-values": (
        {
            "note": {
                "t": "</tool_call>",
                "u": "<arg_key>k</arg_key>",
                "v": "a</arg_value>b",
                "w": "<tool_call>x",
                "x": "<think>no</think>",
                "y": "<",
                "z": "</arg_value>",
            }
        },
        None,
    ),
}


def test_parallel_calls_and_content_first():
    text = "\nLet me look.\n" + call45("search", {"q": "x"}) + "\n" + call45("get_time", {}) + "\n"
    assert view(stream_matches(text)) == expected_view([("search", {"q": "x"}), ("get_time", {})], "Let me look.")
    text = "Let me look." + call47("search", {"q": "x"}) + call47("get_time", {})
    assert view(stream_matches(text, parser=BOTH[1])) == expected_view(
        [("search", {"q": "x"}), ("get_time", {})], "Let me look."
    )


def test_observed_close_tag_inside_value():
    """corpora/observed glm47_close_tag_literal_inside_value: only </arg_value> ends a value."""
    text = (
        "<tool_call>write_file<arg_key>path</arg_key><arg_value>parser.py</arg_value><arg_key>content</arg_key>"
        '<arg_value>END_TAG = "</tool_call>"\n</arg_value></tool_call>'
    )
    for parser in BOTH:
        message = stream_matches(text, parser=parser)
        assert view(message) == expected_view(
            [("write_file", {"path": "parser.py", "content": 'END_TAG = "</tool_call>"\n'})]
        )


# ---- typing by the schema ----------------------------------------------------------------------------

NULLABLE = {"anyOf": [{"type": "string"}, {"type": "null"}]}


@pytest.mark.parametrize(
    "schema,text,want",
    [
        ({"type": "string"}, "001", "001"),
        ({"type": "string"}, "true", "true"),
        ({"type": "string"}, "null", "null"),
        ({"type": "string"}, "[1, 2]", "[1, 2]"),
        ({"type": "integer"}, "001", "001"),  # not an integer: kept as written (the scorer names the type)
        ({"type": "integer"}, "12", 12),
        ({"type": "number"}, "1e+16", 1e16),
        ({"type": "number"}, "3", 3),
        ({"type": "boolean"}, "false", False),
        ({"type": "array", "items": {"type": "string"}}, '["a", "b"]', ["a", "b"]),
        ({"type": "object"}, '{"k": null}', {"k": None}),
        (NULLABLE, "null", None),
        (NULLABLE, "None", "None"),  # tojson writes null, never None
        (NULLABLE, " null", " null"),  # nor padding
        (NULLABLE, "true", "true"),
        (NULLABLE, "001", "001"),
        ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, "7", 7),
        ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, "None", None),  # no string allowed: the lenient policy
        ({"oneOf": [{"type": "number"}, {"type": "string"}]}, "2.5", 2.5),
        ({"oneOf": [{"type": "number"}, {"type": "string"}]}, "2.5 ", "2.5 "),
        ({}, "001", "001"),
        ({}, "5", 5),
        (None, "001", "001"),
        (None, '{"a": 1}', {"a": 1}),
        (None, "hello", "hello"),
    ],
)
def test_values_typed_by_schema(schema, text, want):
    tools = [tool("f", {"x": schema} if schema is not None else {})]
    message = PARSER.parse(call45("f", {"x": text}), tools)
    assert view(message) == expected_view([("f", {"x": want})])


def test_undeclared_tool_values_decode_as_json_when_json():
    message = PARSER.parse(call45("f", {"a": "1.5", "b": "null", "c": "[1]", "d": "x y", "e": ""}))
    assert message.tool_calls[0].arguments == {"a": 1.5, "b": None, "c": [1], "d": "x y", "e": ""}


# ---- drift ----------------------------------------------------------------------------------------------

RECOVERED = {
    "extra-whitespace": (
        "<tool_call> f \n\n<arg_key>a</arg_key>\n \n<arg_value>1</arg_value>\t\n</tool_call>",
        [("f", {"a": 1})],
    ),
    "newline-after-name-only": (
        "<tool_call>f\n<arg_key>a</arg_key><arg_value>1</arg_value></tool_call>",
        [("f", {"a": 1})],
    ),
    "missing-close-at-end": ("<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n", [("f", {"a": 1})]),
    "closer-cut-off": ("<tool_call>f<arg_key>a</arg_key><arg_value>1</arg_value></tool_", [("f", {"a": 1})]),
    "value-closer-missing-at-end": ("<tool_call>f<arg_key>a</arg_key><arg_value>1</tool_call>\n", [("f", {"a": 1})]),
    "missing-close-then-stop": (
        "<tool_call>f<arg_key>a</arg_key><arg_value>1</arg_value><|observation|>",
        [("f", {"a": 1})],
    ),
    "double-serialized": (
        (
            '<tool_call>todo\\n<arg_key>todos</arg_key>\\n<arg_value>[{\\"id\\": \\"1\\", '
            '\\"t\\": \\"a\\\\nb\\"}]</arg_value>\\n<arg_key>note</arg_key>\\n<arg_value>x\\ty'
            "</arg_value>\n</tool_call>"
        ),
        [("todo", {"todos": [{"id": "1", "t": "a\nb"}], "note": "x\ty"})],
    ),
    "json-body": (
        '<tool_call>{"name": "f", "arguments": {"a": 1, "b": "</tool_call>"}}</tool_call>',
        [("f", {"a": 1, "b": "</tool_call>"})],
    ),
    "json-body-parameters-string": (
        '<tool_call>\n{"name": "f", "parameters": "{\\"a\\": [1]}"}\n</tool_call>',
        [("f", {"a": [1]})],
    ),
    "json-body-envelope-array": (
        ('<tool_call>[{"type": "function", "function": {"name": "f", "arguments": {}}}, {"name": "g"}]</tool_call>'),
        [("f", {}), ("g", {})],
    ),
    "json-body-missing-close": ('<tool_call>{"name": "f", "arguments": {"a": null}}\n', [("f", {"a": None})]),
    "json-after-name": (
        '<tool_call>f\n{"a": 1, "b": "x</tool_call>"}\n</tool_call>',
        [("f", {"a": 1, "b": "x</tool_call>"})],
    ),
    "json-after-name-inline": ('<tool_call>f{"a": "1"}</tool_call>', [("f", {"a": "1"})]),
}


def test_padded_key_stripped_only_when_the_schema_says_so():
    text = "<tool_call>f<arg_key> city </arg_key><arg_value>Oslo</arg_value></tool_call>"
    assert PARSER.parse(text, [tool("f", {"city": {"type": "string"}})]).tool_calls[0].arguments == {"city": "Oslo"}
    assert PARSER.parse(text).tool_calls[0].arguments == {" city ": "Oslo"}


def test_observed_double_serialized_call_is_recovered():
    """corpora/observed glm_literal_backslash_escapes_double_serialized_sglang (drift)."""
    from harness.core.cases import load_cases
    from harness.corpus.build import OBSERVED_FILE
    from harness.score.verdicts import score

    (case,) = [c for c in load_cases(OBSERVED_FILE, fmt="glm45", default_slice="observed")]
    assert case.kind == "drift"
    message = stream_matches(case.text, case.prefix, case.tools)
    assert score(case, message, FMT).verdict == "pass"


def test_double_serialized_layout_with_raw_values():
    """drift mutator literal-backslash-escapes: the layout's newlines written ``\\n`` but the values as the
    template writes them. Values unescaping leaves alike, or that show they are raw (a ``"`` no escaped string
    body holds), are kept; a value that could be either (``a\\\\``) surfaces the call."""
    raw = (
        "<tool_call>save_text\\n<arg_key>path</arg_key>\\n<arg_value>notes/edge.txt</arg_value>\\n<arg_key>text"
        '</arg_key>\\n<arg_value>She said "hi" \\\\ bye</arg_value>\\n</tool_call>'
    )
    message = stream_matches(raw)
    assert view(message) == expected_view([("save_text", {"path": "notes/edge.txt", "text": 'She said "hi" \\\\ bye'})])
    plain = (
        "<tool_call>f\\n<arg_key>a</arg_key>\\n<arg_value>x y</arg_value>\\n<arg_key>b</arg_key>\\n"
        "<arg_value>2</arg_value>\\n</tool_call>"
    )
    assert view(stream_matches(plain)) == expected_view([("f", {"a": "x y", "b": 2})])
    ambiguous = (
        "<tool_call>save_text\\n<arg_key>path</arg_key>\\n<arg_value>notes/edge.txt</arg_value>\\n"
        "<arg_key>text</arg_key>\\n<arg_value>a\\\\</arg_value>\\n</tool_call>"
    )
    message = stream_matches(ambiguous, leak_check=False)
    assert view(message) == (ambiguous, None, []) and "double-serialized" in message.diagnostics[0]


@pytest.mark.parametrize("parser", BOTH, ids=lambda p: p.formats[0])
def test_double_encoded_json_value_under_a_container_schema(parser):
    """drift mutator escaped-json-value on edge-nested-object: JSON with escaped quotes inside one value."""
    text = (
        '<tool_call>create_user<arg_key>user</arg_key><arg_value>{\\"name\\": \\"Ada\\", \\"age\\": 36}'
        "</arg_value></tool_call>"
    )
    tools = [tool("create_user", {"user": {"type": "object"}})]
    message = stream_matches(text, tools=tools, parser=parser)
    assert view(message) == expected_view([("create_user", {"user": {"name": "Ada", "age": 36}})])
    # under a schema that allows a string too, the text is that string
    tools = [tool("create_user", {"user": {"anyOf": [{"type": "object"}, {"type": "string"}]}})]
    assert parser.parse(text, tools).tool_calls[0].arguments == {"user": '{\\"name\\": \\"Ada\\", \\"age\\": 36}'}


SURFACED = {
    "json-body-not-a-call": '<tool_call>{"tool": "f", "args": {}}</tool_call>',
    "json-body-invalid": "<tool_call>{'name': 'f'}</tool_call>",
    "json-body-nan": '<tool_call>{"name": "f", "arguments": {"x": NaN}}</tool_call>',
    "json-args-not-object": '<tool_call>f {"a": 1} extra</tool_call>',
    "key-value-args": "<tool_call>f a=1 b=2</tool_call>",
    "name-with-space": "<tool_call>get weather\n</tool_call>",
    "empty-name": "<tool_call>\n<arg_key>a</arg_key><arg_value>1</arg_value></tool_call>",
    "text-between-parts": "<tool_call>f<arg_key>a</arg_key>x<arg_value>1</arg_value></tool_call>",
    "value-without-key": "<tool_call>f<arg_value>1</arg_value></tool_call>",
    "unterminated-key": "<tool_call>f<arg_key>a<arg_value>1</arg_value></tool_call>",
    "junk-after-value": "<tool_call>f<arg_key>a</arg_key><arg_value>1</arg_value>junk</tool_call>",
    "value-closer-missing-then-text": "<tool_call>f<arg_key>a</arg_key><arg_value>1</tool_call> more",
}

# The last call is cut off by the end of the text: dropped, what came before kept.
CUT_OFF = {
    "name-only-at-end": ("<tool_call>get_time", [], None),
    "name-and-newline-at-end": ("Let me check.\n<tool_call>get_time\n", [], "Let me check."),
    "opener-alone": ("<tool_call>", [], None),
    "lone-backslash": ("<tool_call>f\\", [], None),
    "inside-a-value": ("<tool_call>f<arg_key>cmd</arg_key><arg_value>rm -rf /tmp/bu", [], None),
    "maybe-another-argument": ("<tool_call>f<arg_key>a</arg_key><arg_value>1</arg_value><arg_", [], None),
    "second-call": (
        "<tool_call>a<arg_key>x</arg_key><arg_value>1</arg_value></tool_call><tool_call>b<arg_key>q",
        [("a", {"x": 1})],
        None,
    ),
}


def test_surfaced_block_between_good_calls_keeps_them():
    text = "Plan.\n" + call45("a", {"x": 1}) + "\n<tool_call>bad name\n</tool_call>\n" + call45("b", {}) + "\nDone."
    message = stream_matches(text, leak_check=False)
    assert view(message) == expected_view(
        [("a", {"x": 1}), ("b", {})], "Plan.\n\n<tool_call>bad name\n</tool_call>\n\nDone."
    )


def test_unterminated_value_does_not_swallow_the_next_call():
    text = "<tool_call>f<arg_key>a</arg_key><arg_value>oops</tool_call>\n" + call45("g", {}) + "\n" + call45("h", {})
    message = stream_matches(text, leak_check=False)
    assert view(message) == expected_view(
        [("g", {}), ("h", {})], "<tool_call>f<arg_key>a</arg_key><arg_value>oops</tool_call>"
    )
    # a value that does end later holds the next call's text: the template writes strings raw, so that is data
    text = "<tool_call>f<arg_key>a</arg_key><arg_value>oops\n" + call45("g", {"b": 1})
    assert view(stream_matches(text, leak_check=False)) == expected_view(
        [("f", {"a": "oops\n<tool_call>g\n<arg_key>b</arg_key>\n<arg_value>1"})]
    )


def test_prose_with_angle_brackets_is_content():
    text = "Use a<b, c>d, <tool>, </tool_calls>, <arg> and <|user|x."
    assert view(stream_matches(text, leak_check=False)) == (text, None, [])


def test_trailing_stop_markers_stripped_inner_kept():
    assert PARSER.parse("hi<|user|>\n<|endoftext|>").content == "hi"
    assert PARSER.parse("a<|observation|>b").content == "a<|observation|>b"
    assert PARSER.parse("hi<|obs").content == "hi<|obs"


# ---- known limitations (documented in parsers/own/glm45.py) ---------------------------------------------------


def test_limitation_value_closer_then_next_part_inside_a_string():
    """The template writes ``a</arg_value>\\n<arg_key>b`` inside a string unescaped: the first fitting closer wins."""
    args = {"s": "a</arg_value>\n<arg_key>k</arg_key>\n<arg_value>b", "t": "x"}
    message = PARSER.parse(call45("f", args))
    assert message.tool_calls[0].arguments == {"s": "a", "k": "b", "t": "x"}


def test_limitation_string_spelling_another_allowed_type():
    """``"null"`` under ``anyOf [string, null]`` is written exactly like null."""
    message = PARSER.parse(call45("f", {"x": "null"}), [tool("f", {"x": NULLABLE})])
    assert message.tool_calls[0].arguments == {"x": None}


# ---- reasoning ----------------------------------------------------------------------------------------


def test_think_block_at_start_is_reasoning():
    text = "\n<think>User wants weather.\nCall it.</think>\nOn it.\n" + call45("w", {"c": "P"})
    message = stream_matches(text)
    assert view(message) == expected_view([("w", {"c": "P"})], "On it.", "User wants weather.\nCall it.")
    assert view(stream_matches("\n<think></think>\nHello.")) == ("Hello.", None, [])


def test_think_prefix_and_placement():
    message = stream_matches("plan</think>\n" + call45("f", {}), prefix="<|assistant|>\n<think>")
    assert view(message) == expected_view([("f", {})], None, "plan")
    assert view(PARSER.parse("hello", prefix="<|assistant|>\n<think></think>")) == ("hello", None, [])
    # glm45 writes its own <think>: without one, </think> is plain content
    assert view(PARSER.parse("a</think>b")) == ("a</think>b", None, [])
    assert view(stream_matches("Hi <think>x</think>", leak_check=False)) == ("Hi <think>x</think>", None, [])
    assert view(stream_matches("<think>\nstill thinking")) == (None, "still thinking", [])
    inner = call45("f", {})
    assert view(stream_matches(f"<think>{inner}</think>ok", leak_check=False)) == ("ok", inner, [])


# ---- streaming ----------------------------------------------------------------------------------------

HOLD_BACK_TEXTS = [
    "Sure <tool_call>f\n<arg_key>a</arg_key>\n<arg_value></arg_value></tool_call></arg_value>\n</tool_call> ok<|user|>",
    "\n<think>r < s</think>\nok <tool_ok " + call45("f", {}) + "<|endoftext|>",
    "a <tool b </tool_call c <|us d <thin e <arg_ f",
    "x\n<tool_call>bad name</tool_call>\ny",
]


def test_stream_is_incremental_and_calls_arrive_whole_at_close():
    session = PARSER.stream()
    assert session.feed("Checking the ")[0].content == "Checking the"
    assert [d.content for d in session.feed("weather.\n<tool_")] == [" weather."]
    assert session.feed("call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Pa") == []
    assert session.feed("ris</arg_value>\n</tool_call") == []
    deltas = session.feed(">\n")
    assert len(deltas) == 1 and deltas[0].content is None
    (piece,) = deltas[0].tool_calls
    assert (piece.index, piece.name, json.loads(piece.arguments)) == (0, "get_weather", {"city": "Paris"})
    assert session.finish() == [] and session.diagnostics == []


def test_value_closer_waits_for_what_follows():
    session = PARSER.stream()
    assert session.feed("<tool_call>f<arg_key>a</arg_key><arg_value>x</arg_value>") == []
    assert session.feed("\n ") == []
    assert session.feed("y</arg_value><arg_key>b</arg_key><arg_value>2</arg_value></tool_call>")[0].tool_calls
    session = PARSER.stream()
    session.feed("<tool_call>f<arg_key>a</arg_key><arg_value>x</arg_value>")
    (delta,) = session.finish()  # missing closer at the end: decided at finish
    assert json.loads(delta.tool_calls[0].arguments) == {"a": "x"}


def strict_texts() -> dict[str, Text]:
    """Each STRICT case in both layouts (``CASE/newline``, ``CASE/inline``), seeded by the case's name."""
    out = {}
    for case, (calls, content) in STRICT.items():
        tools = [
            tool(n, {k: ({"type": "string"} if isinstance(v, str) else {}) for k, v in a.items()})
            for n, a in calls.items()
        ]
        for layout, write in (("newline", call45), ("inline", call47)):
            text = "\n".join(write(n, a) for n, a in calls.items())
            out[f"{case}/{layout}"] = Text(text, list(calls.items()), content, tools=tools, seed=len(case))
    return out


GLM_TEXTS = {
    "strict": strict_texts(),
    "stops": ("", "<|user|>", "<|observation|>\n", "<|endoftext|>"),
    "recovered": {k: Text(*v) for k, v in RECOVERED.items()},
    "surfaced": SURFACED,
    "cut_off": {k: Text(*v) for k, v in CUT_OFF.items()},
    "hold_back": tuple(HOLD_BACK_TEXTS),
    "hold_back_prefixes": ("</think>",),  # glm47: thinking off, so content streams at once
    "modes": ("oneshot", "roundtrip", "whole", "char", "random", "prefix"),
    "leak_check_exempt": frozenset({"markers-in-values/newline", "markers-in-values/inline"}),
}


def check_glm_corpus(run, n_observed: int) -> None:
    corpus = run.corpus
    assert corpus.count("curated") >= 140 and corpus.count("generated") >= 50 and corpus.count("observed") == n_observed
    assert corpus.skipped == []
    observed = run.observed()
    assert observed and all(r.verdict == "pass" for r in observed)  # the drift case is recovered


class TestGlm45(ParserConformance):
    CONFIG = Conformance(format="glm45", parser=Glm45Parser, models=("glm-4.6", "glm-4.5"), **GLM_TEXTS)

    def check_corpus(self, model, run):
        check_glm_corpus(run, 1)

"""Conformance of the project's own FunctionGemma parser (``parsers/own/functiongemma.py``) and of the
functiongemma family (no offline template: the observed cases run): the shared suite's config plus the tests
specific to the format.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.suite import (
    Conformance,
    ParserConformance,
    Text,
    assert_stream_matches,
    delta_checker,
    expected_view,
    split_at,
    tool,
    view,
)
from harness.core.cases import load_cases
from harness.core.errors import CatalogError, TemplateNotFoundError
from harness.core.protocol import run_stream
from harness.corpus.build import OBSERVED_FILE
from harness.formats import get_format
from harness.template.catalog import load_catalog
from harness.template.sources import load_template
from parsers.own.functiongemma import FunctionGemmaParser

FMT = get_format("functiongemma")
PARSER = FunctionGemmaParser()


EXTRA_MARKERS = ()
CHECK_DELTA = delta_checker(FMT, EXTRA_MARKERS)


def stream_matches(text: str, tools=None, seed: int = 0, leak_check: bool = True):
    """:func:`conformance.suite.assert_stream_matches` on this file's parser, in its argument order."""
    return assert_stream_matches(PARSER, text, tools, "", seed, leak_check, EXTRA_MARKERS)


MARKERS = tuple(dict.fromkeys(FMT.markers + FMT.stop_markers))
OPEN, CLOSE, ESC = "<start_function_call>", "<end_function_call>", "<escape>"


def value_text(value) -> str:
    """A value as Ollama's FunctionGemma renderer writes it (strings in <escape>, keys bare and sorted)."""
    if isinstance(value, str):
        return ESC + value + ESC
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "None"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{value_text(value[k])}" for k in sorted(value)) + "}"
    if isinstance(value, list):
        return "[" + ",".join(value_text(v) for v in value) + "]"
    return str(value)


def call_text(name: str, arguments: dict) -> str:
    return f"{OPEN}call:{name}{value_text(arguments)}{CLOSE}"


# ---- protocol and registry -------------------------------------------------------------------------


# ---- the documented shapes ------------------------------------------------------------------------------

HARD = 'code: {"a": [1, 2]}, x = "q" \\ \n\ttab, é😀 <end_function_call> <start_function_call>call:x{}'
STRICT = {
    "one-call": (call_text("get_weather", {"city": "Paris"}), [("get_weather", {"city": "Paris"})], None),
    "ollama-example": (
        "Let me check." + call_text("get_weather", {"city": "Paris"}),
        [("get_weather", {"city": "Paris"})],
        "Let me check.",
    ),
    "parallel": (
        call_text("get_weather", {"city": "Paris"}) + call_text("get_time", {"timezone": "UTC"}),
        [("get_weather", {"city": "Paris"}), ("get_time", {"timezone": "UTC"})],
        None,
    ),
    "zero-args": (call_text("turn_on_flashlight", {}), [("turn_on_flashlight", {})], None),
    "numbers-booleans-null": (
        call_text("add", {"a": 1, "b": -2.5, "c": 10**30, "d": 1e-07, "e": True, "f": False, "g": None}),
        [("add", {"a": 1, "b": -2.5, "c": 10**30, "d": 1e-07, "e": True, "f": False, "g": None})],
        None,
    ),
    "nested": (
        call_text("update", {"meta": {"tags": ["a", "b"], "n": {"x": 1}}, "rows": [{"k": "v"}, {}], "e": []}),
        [("update", {"meta": {"tags": ["a", "b"], "n": {"x": 1}}, "rows": [{"k": "v"}, {}], "e": []})],
        None,
    ),
    "hard-string": (call_text("save", {"text": HARD, "empty": ""}), [("save", {"text": HARD, "empty": ""})], None),
    "names-and-keys": (
        call_text("mcp.files.read-file", {"outputSlot": "a", "my-key": "b", "k.2": 3}),
        [("mcp.files.read-file", {"outputSlot": "a", "my-key": "b", "k.2": 3})],
        None,
    ),
    "string-lookalikes": (
        call_text("cfg", {"a": "001", "b": "true", "c": "None", "d": "[1]"}),
        [("cfg", {"a": "001", "b": "true", "c": "None", "d": "[1]"})],
        None,
    ),
}


def test_observed_case():
    (case,) = load_cases(OBSERVED_FILE, fmt="functiongemma", default_slice="observed")
    message = stream_matches(case.text, case.tools)
    assert view(message) == view(case.expected)


def test_plain_answer_and_stray_markers_are_content():
    assert view(stream_matches("The weather is sunny.<end_of_turn>")) == ("The weather is sunny.", None, [])
    text = "a < b, <escape> and <end_function_call> stay"
    assert view(stream_matches(text, leak_check=False)) == (text, None, [])


# ---- typing by the declared schema --------------------------------------------------------------------


def test_bare_values_are_typed_by_schema():
    tools = [
        tool(
            "f",
            {
                "s": {"type": "string"},
                "n": {"type": "integer"},
                "u": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "o": {"type": "object", "properties": {"inner": {"type": "string"}}},
                "a": {"type": "array", "items": {"type": "string"}},
            },
        )
    ]
    text = f"{OPEN}call:f{{s:7,n:7,u:None,o:{{inner:true}},a:[1,x],free:7,word:Paris}}{CLOSE}"
    message = stream_matches(text, tools)
    assert view(message) == expected_view(
        [("f", {"s": "7", "n": 7, "u": None, "o": {"inner": "true"}, "a": ["1", "x"], "free": 7, "word": "Paris"})]
    )
    # without tools: JSON literals and numbers are typed, Python literals too, other words stay strings
    assert view(PARSER.parse(text)) == expected_view(
        [("f", {"s": 7, "n": 7, "u": None, "o": {"inner": True}, "a": [1, "x"], "free": 7, "word": "Paris"})]
    )
    # an <escape> string is a string whatever the schema says
    assert PARSER.parse(f"{OPEN}call:f{{n:{ESC}7{ESC}}}{CLOSE}", tools).tool_calls[0].arguments == {"n": "7"}


# ---- drift --------------------------------------------------------------------------------------------

RECOVERED = {
    "spaces": (f"{OPEN} call: f {{ a : {ESC}x{ESC} , b : 1 }} {CLOSE}", [("f", {"a": "x", "b": 1})]),
    "newlines-between-args": (f"{OPEN}call:f{{a:1,\n  b:{ESC}y{ESC}\n}}{CLOSE}", [("f", {"a": 1, "b": "y"})]),
    "trailing-comma": (f"{OPEN}call:f{{a:[1,2,],b:1,}}{CLOSE}", [("f", {"a": [1, 2], "b": 1})]),
    "quoted-key": (f"{OPEN}call:f{{{ESC}my key{ESC}:1}}{CLOSE}", [("f", {"my key": 1})]),
    "missing-close-at-end": (f"{OPEN}call:f{{a:1}}\n", [("f", {"a": 1})]),
    "missing-close-then-stop": (f"{OPEN}call:f{{a:1}}<start_function_response>", [("f", {"a": 1})]),
    "missing-close-before-next": (f"{OPEN}call:f{{}}" + call_text("g", {}), [("f", {}), ("g", {})]),
    "unquoted-word": (f"{OPEN}call:get_weather{{city:Paris}}{CLOSE}", [("get_weather", {"city": "Paris"})]),
}


SURFACED = {
    "no-call-prefix": f"{OPEN}get_weather{{city:{ESC}Paris{ESC}}}{CLOSE}",
    "name-only": f"{OPEN}create_calendar_event\n",
    "name-with-space": f"{OPEN}call:get weather{{}}{CLOSE}",
    "marker-in-name": f"{OPEN}call:get<escape>{{}}{CLOSE}",
    "key-without-colon": f"{OPEN}call:f{{a}}{CLOSE}",
    "empty-value": f"{OPEN}call:f{{a:,b:1}}{CLOSE}",
    "marker-in-value": f"{OPEN}call:f{{a:1<start_of_turn>}}{CLOSE}",
    "overflowing-number": f"{OPEN}call:f{{a:1e400}}{CLOSE}",
    "text-after-arguments": f"{OPEN}call:f{{}} trailing{CLOSE}",
}

# The last call is cut off by the end of the text: dropped, what came before kept.
CUT_OFF = {
    "unterminated-string": (f"{OPEN}call:f{{a:{ESC}open", [], None),
    "unterminated-call": (f"Sure.{OPEN}call:f{{a:1", [], "Sure."),
    "opener-alone": (OPEN, [], None),
    "second-call": (f"{OPEN}call:a{{x:1}}{CLOSE}{OPEN}call:b{{q:{ESC}ca", [("a", {"x": 1})], None),
}


def test_json_quoted_strings_are_read_as_json():
    """Drift (mlx-swift-lm reads and pins it, shared/seeds/000): a JSON-quoted value is that string, markers and
    escapes included; one that does not close before the call's closer, or is not followed by a separator, is a
    bare value."""
    text = f'{OPEN}call:f{{p:{{a:"{ESC}hi{ESC}",b:"x\\"y, z"}},c:"q" }}{CLOSE}'
    message = stream_matches(text)
    assert view(message) == expected_view([("f", {"p": {"a": f"{ESC}hi{ESC}", "b": 'x"y, z'}, "c": "q"})])
    assert view(stream_matches(f'{OPEN}call:f{{a:"x"y}}{CLOSE}')) == expected_view([("f", {"a": '"x"y'})])
    unclosed = f'{OPEN}call:f{{a:"x}}{CLOSE} then "quoted", text'
    assert view(stream_matches(unclosed)) == expected_view([("f", {"a": '"x'})], 'then "quoted", text')


def test_unterminated_string_does_not_swallow_the_next_call():
    text = f"{OPEN}call:f{{a:{ESC}oops}}{CLOSE}\n" + call_text("g", {"b": 1})
    message = stream_matches(text, leak_check=False)
    assert view(message) == expected_view([("g", {"b": 1})], f"{OPEN}call:f{{a:{ESC}oops}}{CLOSE}")


def test_surfaced_call_between_good_calls_keeps_them():
    text = "Plan." + call_text("a", {"x": 1}) + f"{OPEN}call:b{{broken}}{CLOSE}" + call_text("c", {}) + " Done."
    message = stream_matches(text, leak_check=False)
    assert view(message) == expected_view([("a", {"x": 1}), ("c", {})], f"Plan.{OPEN}call:b{{broken}}{CLOSE} Done.")


# ---- streaming ----------------------------------------------------------------------------------------

HOLD_BACK_TEXTS = [
    "Sure <start_func x " + call_text("f", {"s": "<end_function_call>", "n": 1}) + " ok<start_function_response>",
    call_text("f", {"a": [1, {"b": "c"}]}) + call_text("g", {}) + "<end_of_turn>",
    "a <escape b <end_of c <eo",
    f"x\n{OPEN}call:b{{broken}}{CLOSE}\ny",
]


def test_stream_is_incremental_and_calls_arrive_whole_at_close():
    session = PARSER.stream()
    assert session.feed("Checking the ")[0].content == "Checking the"
    assert [d.content for d in session.feed("weather.<start_fun")] == [" weather."]
    assert session.feed(f"ction_call>call:w{{city:{ESC}Pa") == []
    assert session.feed(f"ris{ESC}}}<end_function_") == []
    (delta,) = session.feed("call>")
    (piece,) = delta.tool_calls
    assert (piece.index, piece.name, json.loads(piece.arguments)) == (0, "w", {"city": "Paris"})
    assert session.finish() == [] and session.diagnostics == []


# ---- property tests ----------------------------------------------------------------------------------

NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,15}", fullmatch=True)
KEYS = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\- ]{0,10}[A-Za-z0-9_]", fullmatch=True)
TRICKY = st.sampled_from(
    ['"', "\\", CLOSE, OPEN, "<end_of_turn>", "}", "]", "{", ",", ":", "\n", "é😀", "<", "", "<escape", "escape>", " "]
)
STRINGS = st.one_of(TRICKY, st.text(max_size=20), st.lists(TRICKY, max_size=4).map("".join)).filter(
    lambda s: ESC not in s
)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), STRINGS)
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4), max_leaves=10
)
CALLS = st.lists(st.tuples(NAMES, st.dictionaries(KEYS, VALUES, max_size=5)), min_size=1, max_size=3)
PROSE = st.text(st.characters(blacklist_characters="<", blacklist_categories=("Cs",)), max_size=30)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=CALLS, content=PROSE, data=st.data())
def test_property_written_calls_roundtrip(calls, content, data):
    """Calls written as Ollama's renderer writes them (content first, calls back to back) parse back exactly."""
    text = content + "".join(call_text(n, a) for n, a in calls)
    message = PARSER.parse(text)
    assert view(message) == expected_view(calls, content.strip() or None)
    splits = data.draw(st.lists(st.integers(0, len(text)), max_size=20).map(sorted))
    for chunks in (split_at(text, splits), list(text)):
        assert view(run_stream(PARSER, chunks, on_delta=CHECK_DELTA)) == view(message)


FRAGMENTS = st.sampled_from(
    [
        OPEN,
        CLOSE,
        ESC,
        "call:",
        "f",
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
        "a",
        "1",
        "true",
        "None",
        "\n",
        " ",
        "x y",
        "<",
        "<start_fun",
        "<end_of_turn>",
        "<start_function_response>",
        "<eos>",
        call_text("g", {"k": "v"}),
    ]
)


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(FRAGMENTS, max_size=30), data=st.data())
def test_property_arbitrary_text_never_raises_and_streams_alike(pieces, data):
    text = "".join(pieces)
    message = PARSER.parse(text)
    if not message.tool_calls:  # all is content, bar trailing stop markers
        body = text.rstrip()
        while body.endswith(FMT.stop_markers):
            body = next(body[: -len(m)] for m in FMT.stop_markers if body.endswith(m)).rstrip()
        if any("cut off" in d for d in message.diagnostics):  # the last call, cut off by the end, is dropped
            body = body[: body.rfind(OPEN)]
        assert message.content == (body.strip() or None)
    splits = data.draw(st.lists(st.integers(0, len(text)), max_size=10).map(sorted))
    for chunks in (split_at(text, splits), list(text)):
        assert view(run_stream(PARSER, chunks)) == view(message)


def test_long_call_streamed_char_by_char_matches_one_shot():
    text = call_text("save", {"text": "word, {x}: " * 800, "rows": [{"k": i} for i in range(200)]})
    got = run_stream(PARSER, list(text))
    assert view(got) == view(PARSER.parse(text))


# ---- the preset without an offline template ---------------------------------------------------------


def test_catalog_row_has_no_offline_template(tmp_path):
    entry = load_catalog()["functiongemma-270m"]
    assert (entry.format, entry.hf_repo, entry.offline_template, entry.offline_template_model) == (
        "functiongemma",
        "google/functiongemma-270m-it",
        "",
        "",
    )
    assert not entry.offline_stands_in and "no offline template" in entry.offline_note
    row = (
        '[models.m1]\nformat = "functiongemma"\nhf_repo = "org/m1"\nhf_file = "chat_template.jinja"\n'
        'offline_note = "none"\n'
    )
    path = tmp_path / "c.toml"
    path.write_text(row, encoding="utf-8")
    assert load_catalog(path)["m1"].offline_template == ""
    path.write_text(row + 'offline_template = "x.jinja"\n', encoding="utf-8")
    with pytest.raises(CatalogError, match="'offline_template' and 'offline_template_model' go together"):
        load_catalog(path)


def test_missing_template_names_what_to_download(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", "/nonexistent/hf-home-for-tests")
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    with pytest.raises(TemplateNotFoundError) as info:
        load_template("functiongemma-270m")
    message = str(info.value)
    assert message.startswith("no chat template for functiongemma-270m: hub: offline")
    assert "sdist: llama-cpp-python==0.3.36 has no template for functiongemma-270m" in message
    assert "hf download google/functiongemma-270m-it chat_template.jinja" in message and "--model-dir" in message


def test_eval_without_template_runs_only_the_observed_cases(tmp_path):
    out = tmp_path / "run"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"), "COLUMNS": "200"}
    env.pop("HF_HUB_CACHE", None)
    proc = subprocess.run(
        [
            str(Path(sys.executable).parent / "toolcall-harness"),
            "eval",
            "--model",
            "functiongemma-270m",
            "--parsers",
            "own",
            "--cases",
            "5",
            "--no-shrink",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    said = " ".join(proc.stdout.split())
    assert "no template: no chat template for functiongemma-270m" in said
    assert "only the observed cases run" in said and "corpus: observed 1 cases" in said
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert {r["slice"] for r in records} == {"observed"}
    assert {r["verdict"] for r in records} == {"pass"}
    assert "source **none**" in (out / "report.md").read_text()


class TestFunctionGemma(ParserConformance):
    CONFIG = Conformance(
        format="functiongemma",
        parser=FunctionGemmaParser,
        strict={k: Text(*v) for k, v in STRICT.items()},
        stops=("", "<start_function_response>", "<end_of_turn>\n", "<eos>"),
        recovered={k: Text(*v) for k, v in RECOVERED.items()},
        surfaced=SURFACED,
        cut_off={k: Text(*v) for k, v in CUT_OFF.items()},
        hold_back=tuple(HOLD_BACK_TEXTS),
    )
    test_own_parser_passes_every_strict_rendered_case = None  # no offline template (test_catalog_row_...)

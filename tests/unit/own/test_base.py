"""The own-parser base (parsers/own/_base.py), exercised through the real parsers on texts their templates write."""

from __future__ import annotations

import ast
import importlib
import json

import pytest

from harness.core.paths import SOURCE_ROOT
from harness.parse.limitations import known_limitations
from parsers.own._base import OwnParser, OwnStream, StopTail, TextField, deltas_from_events, message_from_events
from parsers.own.gemma4 import Gemma4Parser
from parsers.own.hermes import HermesParser
from parsers.own.kimi_k2 import KimiK2Parser
from parsers.own.minimax_m2 import MiniMaxM2Parser
from parsers.own.mistral import MistralParser
from parsers.own.qwen3_coder import Qwen3CoderParser

OWN_DIR = SOURCE_ROOT / "parsers" / "own"
FORMATS = sorted(p.stem for p in OWN_DIR.glob("*.py") if not p.stem.startswith("_"))

# One call ``f(a=1)`` as each template writes it, then the end-of-generation marker.
TEXTS = {
    HermesParser: 'Sure.\n<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call><|im_end|>',
    Qwen3CoderParser: "Sure.\n<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>"
    "<|im_end|>",
    MiniMaxM2Parser: 'Sure.</think>\n<minimax:tool_call>\n<invoke name="f">\n<parameter name="a">1</parameter>\n'
    "</invoke>\n</minimax:tool_call>[e~[",
    Gemma4Parser: "Sure.<|tool_call>call:f{a:1}<tool_call|><|tool_response>",
    KimiK2Parser: "Sure.<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>"
    '{"a": 1}<|tool_call_end|><|tool_calls_section_end|><|im_end|>',
    MistralParser: 'Sure.[TOOL_CALLS]f[ARGS]{"a": 1}</s>',
}
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"properties": {"a": {"type": "integer"}}}}}]


def _streamed(parser: OwnParser, chunks: list[str]):
    session = parser.stream(TOOLS)
    deltas = [d for chunk in chunks for d in session.feed(chunk)] + session.finish()
    return deltas, session.diagnostics


@pytest.mark.parametrize("cls", list(TEXTS), ids=lambda c: c.__name__)
def test_parse_is_the_stream_fed_whole_and_every_chunking_agrees(cls):
    parser, text = cls(), TEXTS[cls]
    message = parser.parse(text, TOOLS)
    assert [(c.name, c.arguments) for c in message.tool_calls] == [("f", {"a": 1})]
    assert (message.content or message.reasoning) == "Sure."  # the stop marker is held back and dropped
    for chunks in ([text], list(text), [text[: len(text) // 2], text[len(text) // 2 :]]):
        deltas, diagnostics = _streamed(parser, chunks)
        text_out = "".join((d.content or "") + (d.reasoning or "") for d in deltas)
        assert text_out == "Sure." and diagnostics == message.diagnostics
        calls = [c for d in deltas for c in d.tool_calls]
        assert [(c.name, json.loads(c.arguments)) for c in calls] == [("f", {"a": 1})]


def test_stop_tail_holds_a_marker_that_ends_with_its_own_first_character():
    """MiniMax's ``[e~[``: the held run is found over every split, so one-shot and streaming hold the same."""
    for chunks in (["ok [e~["], list("ok [e~["), ["ok [e~", "["]):
        tail = StopTail(("[e~[",))
        assert "".join(tail.push(c) for c in chunks) + tail.flush() == "ok "  # whitespace before a run is text
    tail = StopTail(("<|im_end|>",))
    assert tail.push("a <|im_end|> b<|im_") == "a <|im_end|> b" and tail.flush() == "<|im_"  # a partial marker
    tail = StopTail(("<|im_end|>",))
    assert tail.push("a<|im_end|>\n<|im_end|>  ") == "a" and tail.flush() == ""


def test_text_field_strips_what_it_streams():
    field = TextField()
    pieces = ["  ", "\n a", " ", "b  ", "\n"]
    assert "".join(field.push(p) for p in pieces) == "".join(pieces).strip()
    field, fresh = TextField(), TextField()
    assert field.push("a") == "a"
    field.sep()  # Harmony: a new message of the field is joined by a newline, released only before more text
    assert field.push("") == "" and field.push("b") == "\nb"
    fresh.sep()  # nothing to separate from yet
    assert fresh.push("x") == "x"


def test_events_fold_into_one_message_or_merged_deltas():
    events = [("content", "a"), ("content", "b"), ("name", 0, "f"), ("args", 0, '{"x":'), ("args", 0, " 1}")]
    events += [("call", 1, "g", "{}", "id1"), ("reasoning", "r")]
    message = message_from_events(events, ["d"])
    assert message.content == "ab" and message.reasoning == "r" and message.diagnostics == ["d"]
    assert [(c.name, c.arguments) for c in message.tool_calls] == [("f", {"x": 1}), ("g", {})]
    deltas = deltas_from_events(events)  # a call's fragments join the delta that named it
    assert [d.content for d in deltas] == ["ab", None, None, None] and deltas[3].reasoning == "r"
    pieces = [(c.index, c.name, c.arguments, c.id) for d in deltas[1:3] for c in d.tool_calls]
    assert pieces == [(0, "f", '{"x": 1}', None), (1, "g", "{}", "id1")]


def test_gemma4_eager_streams_pieces_but_parse_holds_calls():
    text = TEXTS[Gemma4Parser]
    eager = Gemma4Parser(eager=True)
    session = eager.stream(TOOLS)
    assert isinstance(session, OwnStream)
    deltas = session.feed(text[: text.index("{") + 1]) + session.feed(text[text.index("{") + 1 :]) + session.finish()
    assert [c.name for d in deltas for c in d.tool_calls if c.name] == ["f"]
    assert eager.parse(text, TOOLS) == Gemma4Parser().parse(text, TOOLS)


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_own_parser_is_an_own_parser_with_its_limitations_as_data(fmt):
    module = importlib.import_module(f"parsers.own.{fmt}")
    (cls,) = [p for p in module.PARSERS if fmt in p.formats]
    assert issubclass(cls, OwnParser) and cls.name == f"toolcall-harness:{fmt}" and cls.stops
    assert isinstance(cls.limitations, tuple) and cls.limitations
    assert all(isinstance(item, str) and item and "\n" not in item for item in cls.limitations)
    assert known_limitations(fmt) == list(cls.limitations)
    doc = ast.get_docstring(ast.parse((OWN_DIR / f"{fmt}.py").read_text(encoding="utf-8"))) or ""
    assert "Known limitations" not in doc  # the tuple is the one place to write them


def test_the_protocol_shell_exists_once():
    """No own parser module defines its own stream, stop tail, text field or event folding."""
    shell = {"TextField", "StopTail", "message_from_events", "deltas_from_events", "OwnStream", "OwnParser"}
    for path in OWN_DIR.glob("*.py"):
        if path.name == "_base.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {n.name for n in tree.body if isinstance(n, ast.ClassDef | ast.FunctionDef)}
        assert not names & shell, path.name
        assert not any(n.endswith("Stream") for n in names), path.name
        assert not any(
            "feed" in {f.name for f in n.body if isinstance(f, ast.FunctionDef)}
            for n in tree.body
            if isinstance(n, ast.ClassDef)
        ), path.name

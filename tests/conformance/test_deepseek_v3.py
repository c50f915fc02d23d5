"""Conformance of the project's own DeepSeek V3 / R1 parser (``parsers/own/deepseek_v3.py``) and of the deepseek_v3
family end to end (``deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja`` from the llama-cpp-python 0.3.36 sdist; the
canitoolcall DeepSeek-V3-0324 fixtures and llama.cpp's cases of the three R1 templates): the shared suite's config
plus the tests specific to the format.
"""

from __future__ import annotations

import json

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
    template,
    tool,
    view,
)
from harness.assets.sdist import sdist_file
from harness.core.errors import TemplateRenderError, UnrepresentableError
from harness.core.messages import ToolCall
from harness.core.protocol import run_stream
from harness.core.scenarios import Scenario
from harness.corpus.peers import canitoolcall, llama_cpp
from harness.formats import get_format
from harness.formats.deepseek_v3 import (
    ASSISTANT,
    CALL_BEGIN,
    CALL_END,
    CALLS_BEGIN,
    CALLS_END,
    EOS,
    FENCE,
    SEP,
    fenced_call,
)
from harness.parse import modes as chunking
from harness.score.runner import evaluate_case
from harness.template.render import render_messages, render_scenario
from harness.template.sources import template_from_text
from parsers.own.deepseek_v3 import DeepSeekV3Parser

FMT = get_format("deepseek_v3")
PARSER = DeepSeekV3Parser()
TOKENS = ("tokens",) if chunking.has_tokenizer(FMT.name) else ()  # the vocabularies are vendored


def ds_call(name: str, arguments, tag: str = "json") -> str:
    """One call as the templates write it (``tojson``); ``tag`` the fence's language tag."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return fenced_call(name, args).replace(FENCE + "json\n", FENCE + tag + "\n", 1)


def calls_block(*calls: str, sep: str = "\n") -> str:
    return CALLS_BEGIN + sep.join(calls) + CALLS_END


def v31_call(name: str, arguments) -> str:
    """DeepSeek V3.1's unfenced call shape."""
    return f"{CALL_BEGIN}{name}{SEP}{json.dumps(arguments)}{CALL_END}"


STRICT = {
    "one-call": (calls_block(ds_call("get_weather", {"city": "Paris"})), [("get_weather", {"city": "Paris"})], None),
    "content-first": (
        "Let me look." + calls_block(ds_call("search", {"q": "x"})),
        [("search", {"q": "x"})],
        "Let me look.",
    ),
    "parallel-newline": (
        calls_block(ds_call("a", {"x": 1}), ds_call("b", {}), ds_call("a.b-c", {"x": [None]})),
        [("a", {"x": 1}), ("b", {}), ("a.b-c", {"x": [None]})],
        None,
    ),
    "parallel-no-separator": (
        calls_block(ds_call("a", {"x": 1}), ds_call("b", {}), sep=""),
        [("a", {"x": 1}), ("b", {})],
        None,
    ),
    "markers-and-fences-inside-strings": (
        calls_block(
            ds_call(
                "note",
                {
                    "t": calls_block(ds_call("rm", {})) + EOS,
                    "u": "}\n" + FENCE + CALL_END,
                    "v": "<｜tool▁",
                    "w": "</think>",
                },
            )
        ),
        [
            (
                "note",
                {
                    "t": calls_block(ds_call("rm", {})) + EOS,
                    "u": "}\n" + FENCE + CALL_END,
                    "v": "<｜tool▁",
                    "w": "</think>",
                },
            )
        ],
        None,
    ),
    "tool-named-function": (calls_block(ds_call("function", {"x": 1})), [("function", {"x": 1})], None),
    "json-hard-strings": (
        calls_block(ds_call("w", {"a": 'say "hi" \\', "b": "a\nb\x01", "c": "é😀｜▁", "d": "}]{["})),
        [("w", {"a": 'say "hi" \\', "b": "a\nb\x01", "c": "é😀｜▁", "d": "}]{["})],
        None,
    ),
    "numbers": (
        calls_block(ds_call("n", {"big": 10**40, "f": 1.5e-07, "z": -0.0, "i": 3.0, "t": False})),
        [("n", {"big": 10**40, "f": 1.5e-07, "z": -0.0, "i": 3.0, "t": False})],
        None,
    ),
}


RECOVERED = {
    "v31-unfenced": (calls_block(v31_call("get_weather", {"city": "Paris"})), [("get_weather", {"city": "Paris"})]),
    "fence-without-tag": (calls_block(ds_call("f", {"a": [1]}, tag="")), [("f", {"a": [1]})]),
    "no-newline-before-closing-fence": (  # llama.cpp's test-chat.cpp writes it so
        calls_block(f'{CALL_BEGIN}function{SEP}f\n```json\n{{"a": 1}}```{CALL_END}'),
        [("f", {"a": 1})],
    ),
    "no-closing-fence": (calls_block(f'{CALL_BEGIN}function{SEP}f\n```json\n{{"a": 1}}{CALL_END}'), [("f", {"a": 1})]),
    "v3-and-v31-mixed": (calls_block(ds_call("f", {}), v31_call("g", {"b": 2})), [("f", {}), ("g", {"b": 2})]),
    "whitespace-between-tokens": (
        f'{CALLS_BEGIN}\n{CALL_BEGIN} function {SEP} f \n```json\n {{"a": 1}} \n```\n{CALL_END}\n{CALLS_END}',
        [("f", {"a": 1})],
    ),
    "no-section-opener": (ds_call("f", {}) + ds_call("g", {}), [("f", {}), ("g", {})]),
    "no-closers-at-end": (
        CALLS_BEGIN + CALL_BEGIN + "function" + SEP + 'f\n```json\n{"a": "x"}\n```',
        [("f", {"a": "x"})],
    ),
    "arguments-as-string": (calls_block(ds_call("f", json.dumps(json.dumps({"a": 1})))), [("f", {"a": 1})]),
}


SURFACED = {
    "not-json": calls_block(ds_call("f", "city='Paris'")),
    "missing-brace": calls_block(ds_call("f", '{"city": "Tokyo"')),  # canitoolcall vllm-v3-malformed-missing-brace
    "array-arguments": calls_block(ds_call("f", [1])),
    "no-call-tokens": CALLS_BEGIN + f'function{SEP}f\n```json\n{{"a": 1}}\n```' + CALLS_END,
    "without-fence": calls_block(f"{CALL_BEGIN}function{SEP}f {{}}{CALL_END}"),
    "no-name": calls_block(f"{CALL_BEGIN}function{SEP}\n```json\n{{}}\n```{CALL_END}"),
    "marker-before-sep": calls_block(CALL_BEGIN + "function" + CALL_END),
}

# The last call (or an opened section) is cut off by the end of the text: dropped, what came before kept.
CUT_OFF = {
    "mid-arguments": (CALLS_BEGIN + CALL_BEGIN + "function" + SEP + 'get_weather\n```json\n{"city": "Zür', [], None),
    "in-the-fence": (CALLS_BEGIN + CALL_BEGIN + "function" + SEP + "get_weather\n``", [], None),
    "second-call": (
        "Both." + CALLS_BEGIN + ds_call("a", {"x": 1}) + "\n" + CALL_BEGIN + "function" + SEP + 'b\n```json\n{"q": "ca',
        [("a", {"x": 1})],
        "Both.",
    ),
    "section-opener-only": ("Let me check." + CALLS_BEGIN, [], "Let me check."),
}


# ---- thinking ------------------------------------------------------------------------------------------

CALL = calls_block(ds_call("get_weather", {"city": "Paris"}))


@pytest.mark.parametrize(
    "prefix,text,content,reasoning",
    [
        ("<think>\n", "Paris, so call it.\n</think>\n\nOn it." + CALL, "On it.", "Paris, so call it."),  # R1, on
        ("<think>\n", "Straight to the call." + CALL, None, "Straight to the call."),  # no </think>: calls read
        ("<think>\n", "</think>" + CALL, None, None),
        ("<think>\n</think>", "On it." + CALL, "On it.", None),  # Qwen-32B, thinking off
        ("", "On it." + CALL, "On it.", None),  # V3-0324's prompt pre-fills nothing
        ("", "<think>\nplan\n</think>\n\nOn it." + CALL, "On it.", "plan"),
        ("", "</think>" + CALL, None, None),  # llama.cpp's R1 case, its prefix unrendered (tools)
        ("", "On it. <think>x</think>" + CALL, "On it. <think>x</think>", None),
    ],
)
def test_thinking_prefixes(prefix, text, content, reasoning):
    message = assert_stream_matches(PARSER, text, prefix=prefix)
    assert view(message) == expected_view([("get_weather", {"city": "Paris"})], content, reasoning)


# ---- streaming and properties --------------------------------------------------------------------------

HOLD_BACK_TEXTS = [
    "Sure " + calls_block(ds_call("f", {"a": CALLS_END + "<｜end"})) + " ok" + EOS,
    "a <｜tool b <｜tool▁calls c <｜end▁of d <thin e",
    "x" + calls_block(ds_call("f", "{bad}")) + "y",
    "<think>r < s</think>ok " + ds_call("f", {}),
]

NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.:\-]{0,15}", fullmatch=True)
TRICKY = st.sampled_from(
    ['"', "\\", CALLS_BEGIN, CALL_BEGIN, SEP, CALL_END, CALLS_END, EOS, "}", "\n", "```", "```json\n", "<think>", ""]
)
STRINGS = st.one_of(TRICKY, st.text(max_size=20), st.lists(TRICKY, max_size=4).map("".join))
VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), STRINGS),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(STRINGS, inner, max_size=4),
    max_leaves=10,
)
CALLS = st.lists(st.tuples(NAMES, st.dictionaries(STRINGS, VALUES, max_size=5)), min_size=1, max_size=3)
PROSE = st.text(st.characters(blacklist_characters="<", blacklist_categories=("Cs",)), max_size=30)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=CALLS, content=PROSE, sep=st.sampled_from(["\n", ""]), data=st.data())
def test_property_written_calls_roundtrip(calls, content, sep, data):
    text = content + calls_block(*(ds_call(n, a) for n, a in calls), sep=sep)
    message = PARSER.parse(text)
    assert view(message) == expected_view(calls, content.strip() or None)
    splits = data.draw(st.lists(st.integers(0, len(text)), max_size=20).map(sorted))
    for chunks in (split_at(text, splits), list(text)):
        assert view(run_stream(PARSER, chunks, on_delta=delta_checker(FMT))) == view(message)


# ---- the real templates and the peer suites ---------------------------------------------------------------

WEATHER = tool("get_weather", {"city": {"type": "string"}})


def test_rendered_shapes():
    """Qwen-32B's template: calls joined by ``\\n``; the empty second ``<｜Assistant｜>`` turn it writes after the
    calls' end of sentence is cut off; content after the calls and reasoning are unrepresentable."""
    tmpl = template("deepseek-r1-distill-qwen-32b")
    assert (tmpl.format, tmpl.source, tmpl.file) == (
        "deepseek_v3",
        "sdist",
        "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
    )
    calls = [ToolCall("get_weather", {"city": "Paris"}), ToolCall("get_time", {})]
    case = render_scenario(tmpl, Scenario("s1", [WEATHER, tool("get_time", {})], calls), FMT)
    assert (case.prefix, case.extra["stop"]) == ("<think>\n</think>", EOS)
    assert case.text == calls_block(ds_call("get_weather", {"city": "Paris"}), ds_call("get_time", {}))
    assert view(PARSER.parse(case.text, case.tools, case.prefix)) == view(case.expected)
    full = render_messages(
        tmpl,
        [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "", "tool_calls": case_calls(calls)}],
        None,
        **FMT.template_vars,
    )
    assert full.endswith(CALLS_END + EOS + ASSISTANT + EOS)  # the second turn the cut drops
    with pytest.raises(UnrepresentableError, match="content_after"):
        render_scenario(tmpl, Scenario("s2", [WEATHER], calls[:1], content_after="Done."), FMT)
    with pytest.raises(UnrepresentableError, match="reasoning"):
        render_scenario(tmpl, Scenario("s3", [WEATHER], calls[:1], reasoning="Think."), FMT)


def case_calls(calls) -> list[dict]:
    return [
        {"type": "function", "id": f"call{i:05d}", "function": {"name": c.name, "arguments": c.arguments}}
        for i, c in enumerate(calls)
    ]


def _sdist_template(file: str):
    text = sdist_file(f"models/templates/{file}").read_text(encoding="utf-8")
    return template_from_text(text, model=file, format="deepseek_v3", source="sdist", location="test", file=file)


def test_the_other_r1_templates_write_no_calls_under_transformers():
    """``llama-cpp-deepseek-r1.jinja`` fails with tools (line 12: ``map`` into ``tojson``);
    ``deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja`` writes no calls for content ``""`` (line 14)."""
    r1 = _sdist_template("llama-cpp-deepseek-r1.jinja")
    with pytest.raises(TemplateRenderError, match="line 12.*generator"):
        render_messages(r1, [{"role": "user", "content": "Hi"}], [WEATHER], add_generation_prompt=True)
    llama = _sdist_template("deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja")
    turn = {"role": "assistant", "content": "", "tool_calls": case_calls([ToolCall("get_weather", {"city": "P"})])}
    assert CALLS_BEGIN not in render_messages(llama, [{"role": "user", "content": "Hi"}, turn], [WEATHER])


def _failures(cases) -> list[tuple[str, str]]:
    failing = []
    for case in cases:
        records = evaluate_case(case, PARSER, FMT, ["oneshot", "whole", "char", "random"], seed=3)
        failing += [(case.id, r.mode) for r in records if r.verdict != "pass"]
    return failing


def test_canitoolcall_v3_fixtures_pass():
    cases = canitoolcall.load_suite().cases["deepseek_v3"]
    assert len(cases) == 17 and {c.prefix for c in cases} == {""}
    assert _failures(cases) == []


def test_llama_cpp_r1_cases_pass():
    cases = llama_cpp.load_cases().for_format("deepseek_v3")
    assert len(cases) == 14  # R1 5, Distill-Qwen-32B 5, Distill-Llama-8B 4 (reasoning only)
    assert _failures(cases) == []


class TestDeepSeekV3(ParserConformance):
    CONFIG = Conformance(
        format="deepseek_v3",
        parser=DeepSeekV3Parser,
        strict={k: Text(*v) for k, v in STRICT.items()},
        stops=("", EOS, EOS + "\n"),
        recovered={k: Text(text + EOS, calls) for k, (text, calls) in RECOVERED.items()},
        surfaced=SURFACED,
        cut_off={k: Text(*v) for k, v in CUT_OFF.items()},
        hold_back=tuple(HOLD_BACK_TEXTS),
        hold_back_prefixes=("", "<think>\n"),
        models=("deepseek-r1-distill-qwen-32b",),
        modes=("oneshot", "roundtrip", "whole", "char", "random", *TOKENS, "prefix"),
    )

    def check_corpus(self, model, run):
        corpus = run.corpus
        assert corpus.count("curated") >= 120 and corpus.count("generated") >= 20 and corpus.count("observed") == 0
        assert all("reasoning" in reason or "content_after" in reason for _, reason in corpus.skipped)
        assert any(c.id.startswith("edge-deepseek_v3-") for c in corpus.cases)
        assert all(c.prefix == "<think>\n</think>" for c in corpus.cases if c.kind == "strict")

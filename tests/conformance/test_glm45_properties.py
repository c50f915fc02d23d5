"""Property tests of the project's own GLM reader (hypothesis; ``Glm45Parser`` and ``Glm47Parser`` both run):
calls written as the templates write them parse back exactly under any chunking, and arbitrary text made of the
format's fragments never raises nor drops text. Then rendering through the real templates (the sdist copies of
``GLM-4.6.jinja`` and ``GLM-4.7-Flash.jinja``, loaded offline through the catalog): the rendered shapes and the
format's edge scenarios. :class:`TestGlm45` and the other glm45 tests are in ``test_glm45.py``.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.glm45_helpers import BOTH, CHECK_DELTA, FMT, PARSER, arg_value, call45, call47, stream_matches
from conformance.suite import expected_view, split_at, template, tool, view
from harness.core.messages import ToolCall
from harness.core.protocol import run_stream
from harness.core.scenarios import Scenario
from harness.formats import format_edge_scenarios, get_format
from harness.score.roundtrip import roundtrip_check
from harness.template.render import render_scenario

# ---- property tests ----------------------------------------------------------------------------------

NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,15}", fullmatch=True)
KEYS = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\- ]{0,10}", fullmatch=True)
TRICKY = st.sampled_from(
    [
        '"',
        "\\",
        "</tool_call>",
        "<tool_call>",
        "<arg_key>",
        "</arg_value>",
        "<|user|>",
        "\n",
        "é😀",
        "<think>",
        "</think>",
        "<",
        "",
        " ",
        "null",
        "001",
        "true",
    ]
)
STRINGS = st.one_of(TRICKY, st.text(max_size=20), st.lists(TRICKY, max_size=4).map("".join))
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), STRINGS)
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(STRINGS, inner, max_size=4), max_leaves=10
)
CALLS = st.lists(st.tuples(NAMES, st.dictionaries(KEYS, VALUES, max_size=5)), min_size=1, max_size=3)
PROSE = st.text(st.characters(blacklist_characters="<", blacklist_categories=("Cs",)), max_size=30)


def _schema(value) -> dict:
    return {"type": "string"} if isinstance(value, str) else {}


def _unambiguous(value) -> bool:
    """A written value holding ``</arg_value>`` then a part marker reads two ways (a documented limitation)."""
    rest = arg_value(value)
    while "</arg_value>" in rest:
        rest = rest.split("</arg_value>", 1)[1]
        if rest.lstrip().startswith(("<arg_key>", "</tool_call>")):
            return False
    return True


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(calls=CALLS, content=PROSE, layout=st.sampled_from([call45, call47]), data=st.data())
def test_property_written_calls_roundtrip(calls, content, layout, data):
    """Calls written as the templates write them (content first) parse back exactly, whatever the chunking."""
    calls = [(n, {k: v for k, v in a.items() if _unambiguous(v)}) for n, a in calls]
    calls = list(dict(reversed(calls)).items())[::-1]  # distinct names (one declaration each)
    tools = [tool(n, {k: _schema(v) for k, v in a.items()}) for n, a in calls]
    text = content + "".join("\n" + layout(n, a) for n, a in calls)
    for parser in BOTH:
        message = parser.parse(text, tools, "</think>")
        assert view(message) == expected_view(calls, content.strip() or None)
        splits = data.draw(st.lists(st.integers(0, len(text)), max_size=20).map(sorted))
        for chunks in (split_at(text, splits), list(text)):
            assert view(run_stream(parser, chunks, tools, "</think>", on_delta=CHECK_DELTA)) == view(message)


FRAGMENTS = st.sampled_from(
    [
        "<tool_call>",
        "</tool_call>",
        "\n",
        " ",
        "f",
        "<arg_key>",
        "</arg_key>",
        "<arg_value>",
        "</arg_value>",
        "k",
        "1",
        "null",
        "\\",
        "\\n",
        "<|user|>",
        "<think>",
        "</think>",
        "<",
        "x y",
        "<tool_call>g</tool_call>",
        "<arg_",
        "<|endoftext|>",
        '"',
        "{",
        "}",
        '{"name": "h"}',
        '{"a": 1}',
    ]
)


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(FRAGMENTS, max_size=30), data=st.data())
def test_property_arbitrary_text_never_raises_or_drops(pieces, data):
    text = "".join(pieces)
    for parser in BOTH:
        message = parser.parse(text, None, "</think>")
        if not message.tool_calls and "<think>" not in text:  # all is content, bar trailing stop markers
            body = text.rstrip()
            while body.endswith(FMT.stop_markers):
                body = next(body[: -len(m)] for m in FMT.stop_markers if body.endswith(m)).rstrip()
            if any("cut off" in d for d in message.diagnostics):  # the last block, cut off by the end, is dropped
                body = body[: body.rfind("<tool_call>")]
            assert message.content == (body.strip() or None)
        splits = data.draw(st.lists(st.integers(0, len(text)), max_size=10).map(sorted))
        for prefix in ("</think>", ""):
            message = parser.parse(text, None, prefix)
            for chunks in (split_at(text, splits), list(text)):
                assert view(run_stream(parser, chunks, None, prefix)) == view(message)


# ---- rendering through the real templates --------------------------------------------------------------


WEATHER = tool(
    "get_weather",
    {"city": {"type": "string", "description": "City."}, "days": {"type": "integer", "description": "Days."}},
)


def test_catalog_rows_and_offline_templates():
    expected = {
        "glm-4.5": ("glm45", "GLM-4.6.jinja"),
        "glm-4.6": ("glm45", "GLM-4.6.jinja"),
        "glm-4.7-flash": ("glm47", "GLM-4.7-Flash.jinja"),
    }
    for model, (fmt, file) in expected.items():
        tmpl = template(model)
        assert (tmpl.format, tmpl.source, tmpl.file) == (fmt, "sdist", file)
    assert "stands in for glm-4.5" in template("glm-4.5").provenance["fallback_note"]


def test_rendered_shapes():
    call = ToolCall("get_weather", {"city": "Paris", "days": 3})
    case = render_scenario(
        template("glm-4.6"), Scenario("s1", [WEATHER], [call, ToolCall("get_time", {})], content_after="Checking."), FMT
    )
    assert case.prefix == "<think></think>" and case.extra["stop"] == ""  # thinking off: an empty block pre-filled
    assert case.text == (
        "\nChecking.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
        "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>\n<tool_call>get_time\n"
        "</tool_call>"
    )
    assert view(PARSER.parse(case.text, case.tools, case.prefix)) == view(case.expected)
    case = render_scenario(template("glm-4.6"), Scenario("s2", [WEATHER], [call], reasoning="Paris, so call it."), FMT)
    assert case.text.startswith("\n<think>Paris, so call it.</think>\n<tool_call>get_weather\n")
    assert view(PARSER.parse(case.text, case.tools, case.prefix)) == view(case.expected)


def test_arguments_that_are_not_an_object_make_the_template_raise():
    from harness.core.errors import TemplateRenderError
    from harness.template.render import render_messages

    turn = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "id": "call00000", "function": {"name": "f", "arguments": "[1]"}}],
    }
    with pytest.raises(TemplateRenderError, match="Invalid tool call arguments"):
        render_messages(template("glm-4.6"), [{"role": "user", "content": "hi"}, turn], None)


@pytest.mark.parametrize("model,parser", [("glm-4.6", BOTH[0]), ("glm-4.7-flash", BOTH[1])], ids=["glm45", "glm47"])
def test_format_edge_scenarios_render_and_pass(model, parser):
    """The GLM shapes of ``harness/formats/glm45.py`` (markers inside values, lookalike strings under string and
    ``anyOf`` schemas, typed values, calls after reasoning) render through the real template, hold what they claim
    and parse back exactly, one-shot and streamed, and re-render to the same text."""
    fmt = get_format(parser.formats[0])
    tmpl = template(model)
    check = roundtrip_check(tmpl, fmt)
    scenarios = format_edge_scenarios(fmt.name)
    assert len(scenarios) >= 20
    texts = {}
    for scenario in scenarios:
        case = render_scenario(tmpl, scenario, fmt)
        texts[scenario.id.removeprefix(f"edge-{fmt.name}-")] = case.text
        message = stream_matches(case.text, case.prefix, case.tools, parser=parser, leak_check=False)
        assert view(message) == view(case.expected), scenario.id
        assert check(case, message).verdict == "pass", scenario.id
    sep = "\n" if fmt.name == "glm45" else ""
    assert f"<arg_value>a</arg_value>b</arg_value>{sep}<arg_key>version" in texts["value-close-in-string"]
    assert f"<arg_value>x</tool_call></arg_value>{sep}</tool_call>" in texts["call-close-last"]
    assert "<arg_value>None</arg_value>" in texts["anyof-string-lookalikes"]
    assert "<arg_value>null</arg_value>" in texts["anyof-null-and-values"]
    reasoning = texts["reasoning-then-call"]
    assert reasoning.startswith("\n<think>The user" if fmt.name == "glm45" else "The user wants")

"""The Gemma 4 reference adapters against the real libraries (transformers 5.24.0, mlx-lm 0.32.2), in process.

Inputs: completions rendered by the real Gemma 4 chat template (llama-cpp-python 0.3.36 sdist copy), the
observed Gemma 4 field cases in ``corpora/observed/observed_public.jsonl`` and hand-made edge shapes. The
assertions pin what each library does today, right or wrong; a library upgrade that changes a behaviour
fails here on purpose. The registry: ``test_reference_registry.py``; Hermes and the newer formats:
``test_parsers_reference_formats.py``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from engine_common import OFF, msg, plain, stream_chars

S = '<|"|>'

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a place.",
            "parameters": {
                "type": "object",
                "properties": {"location": {"type": "object"}, "days": {"type": "integer"}, "note": {"type": "string"}},
            },
        },
    }
]


# ----------------------------------------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def tf():
    from parsers.reference.transformers import TransformersParser

    return TransformersParser("gemma4")


@pytest.fixture(scope="module")
def mlx():
    from parsers.reference.mlx_lm import MlxLmParser

    return MlxLmParser("gemma4")


@pytest.fixture(scope="module")
def chat_template() -> str:
    from harness.assets.sdist import sdist_file

    return Path(sdist_file("models/templates/google-gemma-4-31B-it.jinja")).read_text()


def render(chat_template: str, assistant: dict, tools=TOOLS, thinking: bool = False) -> tuple[str, str]:
    """``(completion, prefix)`` of ``assistant`` as the real template writes it (trailing stop marker kept)."""
    from transformers.utils.chat_template_utils import render_jinja_template

    messages = [{"role": "user", "content": "What is the weather?"}]
    kwargs = dict(tools=tools, chat_template=chat_template, bos_token="<bos>", enable_thinking=thinking)
    (prompt,), _ = render_jinja_template(conversations=[messages], add_generation_prompt=True, **kwargs)
    (full,), _ = render_jinja_template(conversations=[messages + [assistant]], **kwargs)
    anchor = prompt.rindex("<|turn>model\n") + len("<|turn>model\n")
    prefix = prompt[anchor:]
    assert full[:anchor] == prompt[:anchor]
    completion = full[anchor:]
    return (completion[len(prefix) :] if completion.startswith(prefix) else completion), prefix


def call(name: str, arguments: dict) -> dict:
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


NESTED = {"location": {"city": "Paris", "country": "FR"}, "days": 3, "note": 'say "hi", {braces} and\nnewline'}
NESTED_TEXT = (
    '<|tool_call>call:get_weather{days:3,location:{city:<|"|>Paris<|"|>,country:<|"|>FR<|"|>},'
    'note:<|"|>say "hi", {braces} and\nnewline<|"|>}<tool_call|><|tool_response>'
)


# ------------------------------------------------------------------------------------------ transformers


def test_tf_identity_and_builtin_template(tf):
    import transformers
    from transformers.cli.serving.utils import _RESPONSE_TEMPLATE_FALLBACKS

    assert tf.name == f"transformers=={transformers.__version__}:gemma4" == "transformers==5.24.0:gemma4"
    assert (tf.library, tf.version, tf.formats, tf.incremental) == ("transformers", "5.24.0", ("gemma4",), True)
    assert tf.template_dict is _RESPONSE_TEMPLATE_FALLBACKS[("gemma4",)]  # the library's object, not a copy


def test_tf_real_render_nested_object_thinking_off(tf, chat_template):
    text, prefix = render(
        chat_template, {"role": "assistant", "content": "", "tool_calls": [call("get_weather", NESTED)]}
    )
    assert (text, prefix) == (NESTED_TEXT, OFF)
    expected = msg(calls=[("get_weather", NESTED)])
    assert tf.parse(text, TOOLS, prefix).to_json() == expected
    assert tf.parse(text.removesuffix("<|tool_response>"), TOOLS, prefix).to_json() == expected
    got, _, _ = stream_chars(tf, text, TOOLS, prefix)
    assert got.to_json() == expected


def test_tf_real_render_null_is_written_None_and_raises(tf, chat_template):
    text, prefix = render(
        chat_template, {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"note": None})]}
    )
    assert "note:None}" in text  # the template writes JSON null as Python's None
    with pytest.raises(ValueError, match="could not parse"):
        tf.parse(text, TOOLS, prefix)
    with pytest.raises(ValueError, match="could not parse"):
        stream_chars(tf, text, TOOLS, prefix)
    # a bare `null` (what other engines and drifting models write) parses
    assert tf.parse("<|tool_call>call:f{a:null}<tool_call|>", None, OFF).to_json() == msg(calls=[("f", {"a": None})])


def test_tf_real_render_thinking_on_two_calls_and_content(tf, chat_template):
    assistant = {
        "role": "assistant",
        "content": "Done.",
        "reasoning_content": "I think",
        "tool_calls": [call("get_weather", {"days": 1}), call("get_weather", {"days": 2})],
    }
    text, prefix = render(chat_template, assistant, thinking=True)
    assert prefix == ""
    assert text.startswith("<|channel>thought\nI think\n<channel|><|tool_call>")
    expected = msg("Done.", "I think", [("get_weather", {"days": 1}), ("get_weather", {"days": 2})])
    assert tf.parse(text, TOOLS, prefix).to_json() == expected
    got, seen, _ = stream_chars(tf, text, TOOLS, prefix)
    assert got.to_json() == msg("Done.", "I think\n", [("get_weather", {"days": 1}), ("get_weather", {"days": 2})])
    assert [d.tool_calls[0].index for _, d in seen if d.tool_calls] == [0, 1]


def test_tf_prefix_goes_through_start_anchor(tf):
    # an open thought channel in the pre-fill puts the first text in reasoning, as in the server
    assert tf.parse("abc<channel|>Hi", None, "<|channel>thought\n").to_json() == msg("Hi", "abc")
    assert tf.parse("abc<channel|>Hi", None, "").to_json() == msg("abc<channel|>Hi")
    session = tf.stream(None, OFF)  # the closed pre-filled channel emits nothing
    assert session.feed("") == []


@pytest.mark.parametrize(
    "text, outcome",
    [
        ('<|tool_call>call:manim-video{code:<|"|>x<|"|>}<tool_call|>', ValueError),  # name must match \w+
        ("<|tool_call>call:ns.get{a:1}<tool_call|>", ValueError),
        ('<|tool_call>call:w{t:<|"|>a <tool_call|> b<|"|>}<tool_call|>', ValueError),  # close marker in a string
        ('<|tool_call>call:w{t:<|"|>She said "hi"<|"|>}<tool_call|>', msg(calls=[("w", {"t": 'She said "hi"'})])),
        ('<|tool_call>call:w{t:<|"|>x,b:1<|"|>}<tool_call|>', msg(calls=[("w", {"t": "x,b:1"})])),
        ("<|tool_call>call:w{a:[1,{b:true}],c:1.5}<tool_call|>", msg(calls=[("w", {"a": [1, {"b": True}], "c": 1.5})])),
        ("<|tool_call>call:w{a:1}", msg(calls=[("w", {"a": 1})])),  # unclosed at the end: still parsed
        ("x<turn|>more", msg("more")),  # only the last content region survives one-shot
    ],
)
def test_tf_tricky_inputs(tf, text, outcome):
    if isinstance(outcome, type):
        with pytest.raises(outcome):
            tf.parse(text, None, OFF)
    else:
        assert tf.parse(text, None, OFF).to_json() == outcome


def test_tf_content_oneshot_keeps_last_region_stream_keeps_all(tf):
    text = f"Sure.<|tool_call>call:get_weather{{location:{{city:{S}Paris{S}}}}}<tool_call|>Done."
    call_ = ("get_weather", {"location": {"city": "Paris"}})
    assert tf.parse(text, None, OFF).to_json() == msg("Done.", calls=[call_])
    got, seen, _ = stream_chars(tf, text, None, OFF)
    assert got.to_json() == msg("Sure.Done.", calls=[call_])
    first_content = next(i for i, d in seen if d.content)
    close_at = text.index("<tool_call|>") + len("<tool_call|>")
    tool_at = next(i for i, d in seen if d.tool_calls)
    assert first_content < text.index("<|tool_call>") + 2  # content streams before the call starts
    assert tool_at == close_at  # the call arrives whole on its closing marker
    (delta,) = [d for _, d in seen if d.tool_calls]
    assert json.loads(delta.tool_calls[0].arguments) == {"location": {"city": "Paris"}}


def test_tf_stream_truncated_call_dropped_at_finish_like_server(tf):
    text = "<|tool_call>call:f{a:"
    with pytest.raises(ValueError):
        tf.parse(text, None, OFF)
    got, _, session = stream_chars(tf, text, None, OFF)
    assert got.to_json() == msg()
    assert len(session.diagnostics) == 1 and "finalize() failed" in session.diagnostics[0]


def test_tf_tools_cast_string_arguments(tf):
    tools = [
        {
            "type": "function",
            "function": {"name": "f", "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}}},
        }
    ]
    text = f"<|tool_call>call:f{{n:{S}7{S}}}<tool_call|>"
    assert tf.parse(text, tools, OFF).to_json() == msg(calls=[("f", {"n": 7})])
    assert tf.parse(text, None, OFF).to_json() == msg(calls=[("f", {"n": "7"})])


# ------------------------------------------------------------------------------------------------ mlx-lm


def test_mlx_identity_and_library_state_machine(mlx):
    import importlib.metadata

    from mlx_lm.tool_parsers import gemma4

    version = importlib.metadata.version("mlx-lm")
    assert mlx.name == f"mlx-lm=={version}:gemma4" == "mlx-lm==0.32.2:gemma4"
    assert (mlx.library, mlx.formats, mlx.incremental) == ("mlx-lm", ("gemma4",), True)
    tok = mlx._rt.tokenizer  # inferred by mlx-lm itself from the Gemma 4 special tokens
    assert (tok.think_start, tok.think_end) == ("<|channel>thought", "<channel|>")
    assert (tok.tool_call_start, tok.tool_call_end, tok.tool_parser) == (
        "<|tool_call>",
        "<tool_call|>",
        gemma4.parse_tool_call,
    )


def test_mlx_real_render_nested_object_thinking_off(mlx, chat_template):
    text, prefix = render(
        chat_template, {"role": "assistant", "content": "", "tool_calls": [call("get_weather", NESTED)]}
    )
    assert (text, prefix) == (NESTED_TEXT, OFF)
    expected = msg(calls=[("get_weather", NESTED)])
    got = mlx.parse(text, TOOLS, prefix)  # trailing <|tool_response> = the stop token, never decoded
    assert (got.to_json(), got.diagnostics) == (expected, [])
    assert mlx.parse(text.removesuffix("<|tool_response>"), TOOLS, prefix).to_json() == expected
    streamed, seen, session = stream_chars(mlx, text, TOOLS, prefix)
    assert streamed.to_json() == expected and session.diagnostics == []
    close_at = text.index("<tool_call|>") + len("<tool_call|>")
    assert [i for i, d in seen if d.tool_calls] == [close_at]  # emitted when the segment closes
    assert seen[0][1].tool_calls[0].index == 0


def test_mlx_real_render_null_is_dropped_with_diagnostic(mlx, chat_template):
    text, prefix = render(
        chat_template,
        {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"days": 1, "note": None})]},
    )
    got = mlx.parse(text, TOOLS, prefix)
    assert plain(got) == msg()  # the server returns no call and no content
    (diag,) = got.diagnostics
    assert "dropped tool call 'call:get_weather{days:1,note:None}'" in diag and "JSONDecodeError" in diag
    streamed, _, session = stream_chars(mlx, text, TOOLS, prefix)
    assert streamed.to_json() == msg() and session.diagnostics == [diag]


def test_mlx_real_render_thinking_on_keeps_newlines_in_reasoning(mlx, chat_template):
    assistant = {
        "role": "assistant",
        "content": "Done.",
        "reasoning_content": "I think",
        "tool_calls": [call("get_weather", {"days": 1}), call("get_weather", {"days": 2})],
    }
    text, prefix = render(chat_template, assistant, thinking=True)
    expected = msg("Done.", "\nI think\n", [("get_weather", {"days": 1}), ("get_weather", {"days": 2})])
    assert mlx.parse(text, TOOLS, prefix).to_json() == expected
    got, seen, _ = stream_chars(mlx, text, TOOLS, prefix)
    assert got.to_json() == expected
    assert [d.tool_calls[0].index for _, d in seen if d.tool_calls] == [0, 1]


@pytest.mark.parametrize(
    "text, expected, diagnostic",
    [
        # names: [\w-]+ since mlx-lm PR #1150 — hyphens parse, dots do not
        (
            '<|tool_call>call:manim-video{code:<|"|>x<|"|>}<tool_call|>',
            msg(calls=[("manim-video", {"code": "x"})]),
            None,
        ),
        ("<|tool_call>call:ns.get{a:1}<tool_call|>", msg(), "ValueError: No function provided."),
        # the close marker inside a string ends the segment: call dropped, the rest leaks into content
        (
            '<|tool_call>call:w{t:<|"|>a <tool_call|> b<|"|>}<tool_call|>',
            msg(' b<|"|>}<tool_call|>'),
            "ValueError: No function provided.",
        ),
        ('<|tool_call>call:w{t:<|"|>She said "hi"<|"|>}<tool_call|>', msg(calls=[("w", {"t": 'She said "hi"'})]), None),
        ("<|tool_call>call:w{a:null}<tool_call|>", msg(calls=[("w", {"a": None})]), None),
        (
            "<|tool_call>call:w{a:[1,{b:true}],c:1.5}<tool_call|>",
            msg(calls=[("w", {"a": [1, {"b": True}], "c": 1.5})]),
            None,
        ),
        ("<|tool_call>call:w{a:1,\nb:2}<tool_call|>", msg(), "JSONDecodeError"),  # a key after ",\n" stays unquoted
        ("<|tool_call>call:w{a:1}", msg(calls=[("w", {"a": 1})]), None),  # open segment at the end is kept
        ("<|tool_call>call:w{a:1}<tool_call", msg(calls=[("w", {"a": 1})]), None),  # partial marker discarded
        ("Sure.<|tool_call>call:w{a:1}<tool_call|>Done.", msg("Sure.Done.", calls=[("w", {"a": 1})]), None),
        ("x<turn|>more", msg("x"), "4 characters after it never reach mlx-lm"),  # <turn|> is a stop token
    ],
)
def test_mlx_tricky_inputs(mlx, text, expected, diagnostic):
    got = mlx.parse(text, None, OFF)
    assert plain(got) == expected
    if diagnostic is None:
        assert got.diagnostics == []
    else:
        assert len(got.diagnostics) == 1 and diagnostic in got.diagnostics[0]
    streamed, _, session = stream_chars(mlx, text, None, OFF)
    assert streamed.to_json() == expected and session.diagnostics == got.diagnostics


def test_mlx_initial_state_from_prompt(mlx):
    # a pre-fill that opens the thought channel starts the server's state machine in "reasoning"
    assert mlx.parse("abc<channel|>Hi", None, "<|channel>thought\n").to_json() == msg("Hi", "abc")
    assert mlx.parse("abc<channel|>Hi", None, OFF).to_json() == msg("abc<channel|>Hi")


def test_mlx_streams_content_before_the_end(mlx):
    text = "Hello there<|tool_call>call:w{a:1}<tool_call|>"
    _, seen, _ = stream_chars(mlx, text, None, OFF)
    content_at = [i for i, d in seen if d.content]
    assert content_at and content_at[0] <= len("Hello")
    assert "".join(d.content for _, d in seen if d.content) == "Hello there"


def test_mlx_server_warnings_are_captured_not_logged(mlx, caplog, capsys):
    root = logging.getLogger()
    before = (list(root.handlers), root.level, list(root.filters))
    with caplog.at_level(logging.DEBUG):
        got = mlx.parse("<|tool_call>call:ns.get{a:1}<tool_call|>", None, OFF)
    assert got.diagnostics and not [r for r in caplog.records if "Failed to parse tool call" in r.getMessage()]
    assert capsys.readouterr().err == ""
    assert (list(root.handlers), root.level, list(root.filters)) == before

"""The reference adapters against the real libraries (transformers 5.24.0, mlx-lm 0.32.2) and the registry.

Inputs: completions rendered by the real Gemma 4 chat template (llama-cpp-python 0.3.36 sdist copy), the
observed Gemma 4 field cases in ``corpora/observed/observed_public.jsonl``, hand-made edge shapes, and Hermes
completions rendered by the real Qwen 2.5 template (``engine_common.HERMES_CASES``, shared with the engine tests). The
assertions pin what each library does today, right or wrong; a library upgrade that changes a behaviour
fails here on purpose.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from engine_common import HERMES_CASES, HERMES_TOOLS, PARIS, hermes_msg, rendered_cases, rendered_msg

from harness.core.messages import Message, ToolCall
from harness.core.protocol import StreamAccumulator
from harness.parse import registry

OFF = "<|channel>thought\n<channel|>"  # the pre-filled empty thought channel (thinking off)
S = '<|"|>'
_REPO = Path(__file__).resolve().parents[2]

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


def stream_chars(parser, text: str, tools=None, prefix: str = OFF):
    """Feed ``text`` one character at a time: ``(message, [(chars fed when emitted, delta)], session)``."""
    session = parser.stream(tools, prefix)
    acc, seen = StreamAccumulator(), []
    for i, ch in enumerate(text, 1):
        deltas = session.feed(ch)
        seen.extend((i, d) for d in deltas)
        acc.add(deltas)
    deltas = session.finish()
    seen.extend((len(text) + 1, d) for d in deltas)  # position len+1 = emitted by finish()
    acc.add(deltas)
    return acc.message(), seen, session


def plain(message: Message) -> dict:
    """The scored part of a message (no diagnostics)."""
    out = message.to_json()
    out.pop("diagnostics", None)
    return out


def msg(content=None, reasoning=None, calls=()) -> dict:
    return Message(content, reasoning, [ToolCall(n, a) for n, a in calls]).to_json()


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


# ---------------------------------------------------------------------------------------------- registry


@pytest.fixture
def fresh_registry():
    registry.reload()
    yield
    registry.reload()


def test_registry_lists_reference_parsers(fresh_registry):
    names = registry.available_parsers("gemma4")
    assert {"transformers==5.24.0:gemma4", "mlx-lm==0.32.2:gemma4"} <= set(names)
    assert not {"transformers==5.24.0:gemma4", "mlx-lm==0.32.2:gemma4"} & set(registry.available_parsers("glm47"))
    own = [n for n, f in names.items() if f().library == "toolcall-harness"]
    # the project's own parser is either registered or listed with the reason it is not
    assert own or any(k.startswith("parsers.own.gemma4") for k in registry.unavailable_parsers())


@pytest.mark.parametrize(
    "name, cls",
    [
        ("transformers", "TransformersParser"),
        ("transformers:gemma4", "TransformersParser"),
        ("transformers==5.24.0:gemma4", "TransformersParser"),
        ("mlx-lm", "MlxLmParser"),
        ("mlx_lm", "MlxLmParser"),
        ("mlx-lm==0.32.2:gemma4", "MlxLmParser"),
    ],
)
def test_get_parser_names_and_aliases(fresh_registry, name, cls):
    parser = registry.get_parser(name, format="gemma4")
    assert type(parser).__name__ == cls
    assert registry.get_parser(name, format="gemma4") is not parser  # a new instance per call


def test_get_parser_unknown_raises_keyerror_listing_names(fresh_registry):
    with pytest.raises(KeyError, match=r"unknown parser 'nope'.*transformers==5\.24\.0:gemma4"):
        registry.get_parser("nope")
    with pytest.raises(KeyError, match="does not parse format 'glm47'"):
        registry.get_parser("transformers==5.24.0:gemma4", format="glm47")
    with pytest.raises(KeyError):
        registry.get_parser("transformers", format="glm47")


def test_broken_module_only_makes_its_parsers_unavailable(fresh_registry, monkeypatch):
    discovered = registry.plugin_modules()
    monkeypatch.setattr(registry, "plugin_modules", lambda: {**discovered, "parsers.no_such_parser_module": "nolib"})
    registry.reload()
    assert "ModuleNotFoundError" in registry.unavailable_parsers()["parsers.no_such_parser_module"]
    assert "transformers==5.24.0:gemma4" in registry.available_parsers()
    with pytest.raises(KeyError, match="no_such_parser_module"):
        registry.get_parser("nolib", format="gemma4")
    got, unavailable = registry.create_parsers(["transformers", "nolib"], "gemma4")
    assert [p.name for p in got] == ["transformers==5.24.0:gemma4"]
    assert "ModuleNotFoundError" in unavailable["nolib"]


def test_create_parsers(fresh_registry):
    got, _ = registry.create_parsers(None, "gemma4")
    assert {"transformers==5.24.0:gemma4", "mlx-lm==0.32.2:gemma4"} <= {p.name for p in got}
    got, unavailable = registry.create_parsers(["mlx-lm", "transformers", "transformers:gemma4"], "gemma4")
    assert [p.name for p in got] == ["mlx-lm==0.32.2:gemma4", "transformers==5.24.0:gemma4"] and unavailable == {}
    with pytest.raises(KeyError):
        registry.create_parsers(["nope"], "gemma4")


# ------------------------------------------------------------------------------------------------- Hermes


@pytest.fixture(scope="module")
def tf_hermes():
    from parsers.reference.transformers import TransformersParser

    return TransformersParser("hermes")


@pytest.fixture(scope="module")
def mlx_hermes():
    from parsers.reference.mlx_lm import MlxLmParser

    return MlxLmParser("hermes")


def test_tf_hermes_uses_the_builtin_qwen2_template(tf_hermes):
    from transformers.cli.serving.utils import _RESPONSE_TEMPLATE_FALLBACKS

    assert (tf_hermes.name, tf_hermes.formats) == ("transformers==5.24.0:hermes", ("hermes",))
    key = next(k for k in _RESPONSE_TEMPLATE_FALLBACKS if "qwen2" in k)
    assert tf_hermes.template_dict is _RESPONSE_TEMPLATE_FALLBACKS[key] and "qwen3" in key


def test_tf_hermes_thinking_and_text_after_calls(tf_hermes):
    call = HERMES_CASES["one_call"][0]()
    text = "<think>\nhmm\n</think>\n\n" + call + "\nDone."
    assert tf_hermes.parse(text, HERMES_TOOLS, "").to_json() == hermes_msg("Done.", [PARIS], reasoning="hmm")
    streamed, _, _ = stream_chars(tf_hermes, text, HERMES_TOOLS, "")
    assert streamed.to_json() == hermes_msg("\nDone.", [PARIS], reasoning="\nhmm\n")
    with pytest.raises(KeyError):  # a call without "arguments"
        tf_hermes.parse('<tool_call>\n{"name": "get_weather"}\n</tool_call>', HERMES_TOOLS, "")


def test_mlx_hermes_uses_json_tools_without_thinking(mlx_hermes):
    from mlx_lm.tool_parsers import json_tools

    assert (mlx_hermes.name, mlx_hermes.formats) == ("mlx-lm==0.32.2:hermes", ("hermes",))
    tok = mlx_hermes._rt.tokenizer
    assert (tok.tool_call_start, tok.tool_call_end, tok.tool_parser) == (
        "<tool_call>",
        "</tool_call>",
        json_tools.parse_tool_call,
    )
    assert not tok.has_thinking  # Qwen 2.5's / Hermes 3's vocabulary has no <think> token


def test_mlx_hermes_stops_at_im_end_and_keeps_think_tags_as_content(mlx_hermes):
    call = HERMES_CASES["one_call"][0]()
    got = mlx_hermes.parse("<think>\nhmm\n</think>\n\n" + call + "<|im_end|>ignored", HERMES_TOOLS, "")
    assert plain(got) == hermes_msg("<think>\nhmm\n</think>\n\n", [PARIS])
    assert got.diagnostics == [
        "generation stops at the stop token '<|im_end|>': 7 characters after it never reach mlx-lm"
    ]


def test_registry_lists_hermes_references_and_all_names_every_engine(fresh_registry):
    names = registry.available_parsers("hermes")
    assert {"transformers==5.24.0:hermes", "mlx-lm==0.32.2:hermes"} <= set(names)
    assert registry.get_parser("transformers", format="hermes").name == "transformers==5.24.0:hermes"
    assert registry.get_parser("mlx-lm:hermes").name == "mlx-lm==0.32.2:hermes"
    expanded = registry.expand_names(["all"], "hermes")
    assert {"sglang", "vllm", "llama.cpp"} <= set(expanded)
    assert {"transformers==5.24.0:hermes", "mlx-lm==0.32.2:hermes"} <= set(expanded)


def test_all_names_sglang_for_every_format_it_parses(fresh_registry):
    """``--parsers all`` adds the SGLang engine for each format its module configures, and not for FunctionGemma,
    which SGLang has no parser for (parsers/reference/sglang.py)."""
    from parsers.reference.sglang import FORMATS, UNSUPPORTED

    for fmt in FORMATS:
        assert "sglang" in registry.expand_names(["all"], fmt), fmt
    for fmt in UNSUPPORTED:
        assert "sglang" not in registry.expand_names(["all"], fmt), fmt


def test_all_names_llama_cpp_for_every_format_it_parses(fresh_registry):
    """``--parsers all`` adds the llama.cpp engine for each format its module configures, and not for
    FunctionGemma, which llama.cpp cannot be set up for offline (parsers/reference/llama_cpp.py)."""
    from parsers.reference.llama_cpp import FORMATS, UNSUPPORTED

    for fmt in FORMATS:
        assert "llama.cpp" in registry.expand_names(["all"], fmt), fmt
    for fmt in UNSUPPORTED:
        assert "llama.cpp" not in registry.expand_names(["all"], fmt), fmt


# ------------------------------------------------------------------------------------------------ newer formats
# transformers' built-in Qwen 3.5 template (qwen3_coder) and mlx-lm's tool parsers for glm45, glm47, qwen3_coder,
# minimax_m2, mistral, kimi_k2 and functiongemma, on texts rendered by each catalog preset's own template through
# the harness (engine_common.rendered_cases; FunctionGemma has no template offline: hand-written texts). Module
# docstrings: "Qwen3-Coder" (parsers/reference/transformers.py) and "Newer formats" (parsers/reference/mlx_lm.py).

PARIS3 = {"city": "Paris", "days": 3}
ROME1 = {"city": "Rome", "days": 1}
# The marker put inside a string value: the format's call close, except Mistral's (it has none).
NEW_MARKERS = {"mistral": "[TOOL_CALLS]"}


def new_cases(preset: str) -> dict:
    from harness.template.catalog import get_model

    return rendered_cases(preset, NEW_MARKERS.get(get_model(preset).format))


@pytest.fixture(scope="module")
def tf_qwen3_coder():
    from parsers.reference.transformers import TransformersParser

    return TransformersParser("qwen3_coder")


def test_tf_qwen3_coder_uses_the_builtin_qwen3_5_template(tf_qwen3_coder):
    """The only built-in template for the <function=...> markup is keyed by Qwen 3.5's model types; Qwen3-Coder's
    own type (qwen3_moe) falls back to the JSON template, which rejects every such call."""
    from transformers.cli.serving.utils import _RESPONSE_TEMPLATE_FALLBACKS
    from transformers.utils.chat_parsing import parse_response
    from transformers.utils.chat_parsing.response_templates import load_response_template

    from parsers.reference.transformers import builtin_template

    assert (tf_qwen3_coder.name, tf_qwen3_coder.formats) == ("transformers==5.24.0:qwen3_coder", ("qwen3_coder",))
    key = next(k for k in _RESPONSE_TEMPLATE_FALLBACKS if "qwen3_5" in k)
    assert tf_qwen3_coder.template_dict is _RESPONSE_TEMPLATE_FALLBACKS[key]
    assert "qwen3_moe" not in key and "nemotron_h" not in {t for k in _RESPONSE_TEMPLATE_FALLBACKS for t in k}
    text = new_cases("qwen3-coder-30b-a3b")["one_call"].text
    with pytest.raises(ValueError, match="json parser could not parse region as JSON"):
        parse_response(text, load_response_template(builtin_template("qwen3_moe")), prefix="<|im_start|>assistant\n")


def test_tf_qwen3_coder_faults(tf_qwen3_coder):
    tools = [
        {
            "type": "function",
            "function": {
                "name": "f",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "s": {"type": "string"},
                        "code": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                    },
                },
            },
        }
    ]
    text = (
        "<tool_call>\n<function=f>\n<parameter=s>\n \n</parameter>\n<parameter=code>\n001\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    # the tag pattern's \s* strips every value; the first declared type that casts wins
    assert plain(tf_qwen3_coder.parse(text, tools, "")) == msg(calls=[("f", {"s": "", "code": 1})])
    assert plain(tf_qwen3_coder.parse(text, None, "")) == msg(calls=[("f", {"s": "", "code": "001"})])


def test_tf_registers_only_formats_with_a_builtin_template(fresh_registry):
    from parsers.reference.transformers import FORMATS, UNSUPPORTED

    assert not set(FORMATS) & set(UNSUPPORTED)
    assert "transformers==5.24.0:qwen3_coder" in registry.expand_names(["all"], "qwen3_coder")
    for fmt in UNSUPPORTED:
        assert not [n for n in registry.available_parsers(fmt) if n.startswith("transformers")], fmt


# mlx-lm ------------------------------------------------------------------------------------------------------

NEW_MLX_PRESETS = {
    "glm-4.5": "glm45",
    "glm-4.6": "glm45",
    "glm-4.7-flash": "glm47",
    "qwen3-coder-30b-a3b": "qwen3_coder",
    "nemotron-3-nano": "qwen3_coder",
    "minimax-m2": "minimax_m2",
    "mistral-small-3.2": "mistral",
    "devstral-small": "mistral",
    "kimi-k2": "kimi_k2",
}
THINKING_FORMATS = {"glm45", "glm47", "qwen3_coder", "minimax_m2"}


def mlx_parser(fmt: str):
    from parsers.reference.mlx_lm import MlxLmParser

    return MlxLmParser(fmt)


@pytest.mark.parametrize("preset, fmt", sorted(NEW_MLX_PRESETS.items()))
def test_mlx_tool_parser_is_the_one_mlx_lm_infers_from_the_preset_template(preset, fmt):
    import importlib

    from mlx_lm.tokenizer_utils import _infer_tool_parser

    from harness.template.sources import load_template
    from parsers.reference.mlx_lm import FORMATS

    class Tokenizer:  # what _infer_tool_parser reads: the chat template, then (no match) the vocabulary
        chat_template = load_template(preset, offline=True).text

        def get_vocab(self):
            return dict.fromkeys(FORMATS[fmt].special_tokens, 0)

    assert _infer_tool_parser(Tokenizer()) == FORMATS[fmt].tool_module
    parser = mlx_parser(fmt)
    module = importlib.import_module(f"mlx_lm.tool_parsers.{FORMATS[fmt].tool_module}")
    tok = parser._rt.tokenizer
    assert (tok.tool_call_start, tok.tool_call_end, tok.tool_parser) == (
        module.tool_call_start,
        module.tool_call_end,
        module.parse_tool_call,
    )
    assert parser.name == f"mlx-lm==0.32.2:{fmt}"
    assert tok.has_thinking == (fmt in THINKING_FORMATS)
    if tok.has_thinking:
        assert (tok.think_start, tok.think_end) == ("<think>", "</think>")


def test_mlx_new_formats_stop_markers_are_the_formats_and_special_tokens_are_single_ids():
    from harness.formats import get_format
    from parsers.reference.mlx_lm import FORMATS, UNSUPPORTED, _CharTokenizer

    for fmt in set(NEW_MLX_PRESETS.values()) | {"functiongemma"}:
        assert FORMATS[fmt].stop_markers == get_format(fmt).stop_markers, fmt
    assert not set(FORMATS) & set(UNSUPPORTED)
    tok = _CharTokenizer(("<think>", "</think>", "<tool_call>"))
    ids = tok.encode("a<think>b</think><tool_call>")
    assert ids == [ord("a"), 0x110000, ord("b"), 0x110001, 0x110002]
    assert tok.decode(ids) == "a<think>b</think><tool_call>"


def test_mlx_glm45_and_glm47_share_the_glm47_parser_on_the_same_template_shapes():
    # GLM-4.5 renders with GLM-4.6's template offline (the catalog's stand-in): same texts, same results
    assert {k: c.text for k, c in new_cases("glm-4.5").items()} == {k: c.text for k, c in new_cases("glm-4.6").items()}


G = "<start_function_call>"
E = "<end_function_call>"
ESC = "<escape>"
FG_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "note": {"type": "string"},
                    "where": {"type": "object"},
                },
            },
        },
    }
]


@pytest.mark.parametrize(
    "text, expected, diagnostic",
    [
        (f"{G}call:get_weather{{city:{ESC}Paris{ESC},days:3}}{E}", rendered_msg(None, [PARIS3]), None),
        (
            f"{G}call:get_weather{{city:{ESC}Paris{ESC},days:3}}{E}{G}call:get_weather{{city:{ESC}Rome{ESC},days:1}}{E}",
            rendered_msg(None, [PARIS3, ROME1]),
            None,
        ),
        (
            f"Let me check.{G}call:get_weather{{city:{ESC}Paris{ESC},days:3}}{E}",
            rendered_msg("Let me check.", [PARIS3]),
            None,
        ),
        # the call's end marker inside a string value ends the segment: dropped, the rest leaks into content
        (
            f"{G}call:get_weather{{city:{ESC}Paris{ESC},note:{ESC}a {E} b{ESC}}}{E}",
            rendered_msg(f"b{ESC}}}{E}"),
            "ValueError: No function provided.",
        ),
        # arguments end at the first "}": a brace inside a string or a nested object breaks the key scan
        (
            f"{G}call:get_weather{{city:{ESC}Paris{ESC},note:{ESC}a }} b{ESC}}}{E}",
            rendered_msg(None),
            "ValueError: substring not found",
        ),
        # (a nested object: its text up to the first "}" becomes a string value; what follows is lost)
        (
            f"{G}call:get_weather{{where:{{city:{ESC}Paris{ESC}}},days:3}}{E}",
            rendered_msg(None, [{"where": f"{{city:{ESC}Paris{ESC}"}]),
            None,
        ),
        # \w+ names: a hyphenated name finds no call
        (f"{G}call:get-weather{{days:3}}{E}", rendered_msg(None), "ValueError: No function provided."),
        # <start_function_response> is a stop token: what follows never reaches mlx-lm
        (
            f"{G}call:get_weather{{days:3}}{E}<start_function_response>x",
            rendered_msg(None, [{"days": 3}]),
            "never reach mlx-lm",
        ),
    ],
)
def test_mlx_functiongemma_hand_written_texts(text, expected, diagnostic):
    """No FunctionGemma template offline: texts in the shape harness/formats/functiongemma.py describes."""
    from harness.core.protocol import run_stream

    parser = mlx_parser("functiongemma")
    got = parser.parse(text, FG_TOOLS, "")
    assert plain_message_of(got) == expected
    assert (len(got.diagnostics) == 1 and diagnostic in got.diagnostics[0]) if diagnostic else got.diagnostics == []
    for chunks in ([text], list(text)):
        assert plain_message_of(run_stream(parser, chunks, FG_TOOLS, "")) == expected


def plain_message_of(message) -> dict:
    from engine_common import plain_message

    return plain_message(message)


@pytest.mark.parametrize(
    "fmt, text, tools, expected, diagnostic",
    [
        # glm47.py line 226 strips values; only {"type": "string"} keeps text (lines 25-39)
        (
            "glm47",
            (
                "<tool_call>f<arg_key>s</arg_key><arg_value> </arg_value><arg_key>b</arg_key><arg_value>true"
                "</arg_value></tool_call>"
            ),
            [
                {
                    "type": "function",
                    "function": {
                        "name": "f",
                        "parameters": {
                            "type": "object",
                            "properties": {
                                "s": {"type": "string"},
                                "b": {"anyOf": [{"type": "string"}, {"type": "boolean"}]},
                            },
                        },
                    },
                }
            ],
            msg(calls=[("f", {"s": "", "b": True})]),
            None,
        ),
        # qwen3_coder.py: numbers through float (lines 62-72); null whatever the schema (line 39)
        (
            "qwen3_coder",
            (
                "<tool_call>\n<function=f>\n<parameter=n>\n9007199254740993\n</parameter>\n<parameter=s>\n"
                "null\n</parameter>\n</function>\n</tool_call>"
            ),
            [
                {
                    "type": "function",
                    "function": {
                        "name": "f",
                        "parameters": {
                            "type": "object",
                            "properties": {"n": {"type": "integer"}, "s": {"type": "string"}},
                        },
                    },
                }
            ],
            msg(calls=[("f", {"n": 9007199254740992, "s": None})]),
            None,
        ),
        # minimax_m2.py line 92: the string "null" is None even when declared a string; line 191 strips values
        (
            "minimax_m2",
            (
                '</think><minimax:tool_call><invoke name="f"><parameter name="s">null</parameter>'
                '<parameter name="t"> x </parameter></invoke></minimax:tool_call>'
            ),
            [
                {
                    "type": "function",
                    "function": {
                        "name": "f",
                        "parameters": {
                            "type": "object",
                            "properties": {"s": {"type": "string"}, "t": {"type": "string"}},
                        },
                    },
                }
            ],
            msg(calls=[("f", {"s": None, "t": "x"})]),
            None,
        ),
        # mistral.py line 9: [\w-]+ before [ARGS] -- a dotted name keeps its last part; </s> in a string is the stop
        ("mistral", '[TOOL_CALLS]web.search[ARGS]{"q": "x"}', None, msg(calls=[("search", {"q": "x"})]), None),
        ("mistral", '[TOOL_CALLS]f[ARGS]{"q": "a </s> b"}', None, msg(), "Could not parse tool call"),
        # kimi_k2.py lines 16-18: an id without functions./:N finds no name; the whole section is dropped
        (
            "kimi_k2",
            (
                "<|tool_calls_section_begin|><|tool_call_begin|>functionsexec5<|tool_call_argument_begin|>{}"
                "<|tool_call_end|><|tool_call_begin|>functions.f:1<|tool_call_argument_begin|>{}<|tool_call_end|>"
                "<|tool_calls_section_end|>"
            ),
            None,
            msg(),
            "No tool call found.",
        ),
    ],
)
def test_mlx_newer_format_faults(fmt, text, tools, expected, diagnostic):
    parser = mlx_parser(fmt)
    got = parser.parse(text, tools, "")
    assert plain(got) == expected
    assert any(diagnostic in d for d in got.diagnostics) if diagnostic else got.diagnostics == []
    streamed, _, _session = stream_chars(parser, text, tools, "")
    assert streamed.to_json() == expected


def test_mlx_minimax_prompt_starts_in_reasoning_and_calls_leave_it():
    parser = mlx_parser("minimax_m2")
    text = 'plan\n<minimax:tool_call>\n<invoke name="f">\n</invoke>\n</minimax:tool_call>'
    assert plain(parser.parse(text, None, "<think>\n")) == msg(reasoning="plan\n", calls=[("f", {})])
    assert plain(parser.parse("plan</think>Hi", None, "")) == msg("Hi", "plan")


@pytest.mark.parametrize("preset", ["glm-4.6", "glm-4.7-flash", "qwen3-coder-30b-a3b", "nemotron-3-nano", "minimax-m2"])
def test_mlx_prompt_of_a_case_is_its_templates_generation_prompt(preset):
    """The prompt the adapter gives mlx-lm for a case (tail + pre-filled prefix) ends like the generation prompt the
    preset's template renders for that case (thinking on exactly when the case has reasoning), so the server starts
    in the same state. GLM-4.6 alone differs by a newline: its thinking-off prompt ends ``<|assistant|>\\n<think>
    </think>``, its thinking-on one ``<|assistant|>``, and the render leaves that newline out of the prefix."""
    from harness.formats import get_format
    from harness.template.catalog import get_model
    from harness.template.render import HISTORY_USER, render_messages
    from harness.template.sources import load_template
    from parsers.reference.mlx_lm import FORMATS, prompt_end

    fmt = get_format(get_model(preset).format)
    template = load_template(preset, offline=True)
    parser = mlx_parser(fmt.name)
    for name, case in new_cases(preset).items():
        real = render_messages(
            template,
            [{"role": "user", "content": HISTORY_USER}],
            case.tools,
            add_generation_prompt=True,
            **{**fmt.template_vars, "enable_thinking": bool(case.expected.reasoning)},
        )
        ours = prompt_end(FORMATS[fmt.name], case.prefix)
        assert parser._rt.initial_state(ours) == parser._rt.initial_state(real), (name, ours)
        assert real.endswith(ours) or (preset, name) == ("glm-4.6", "reasoning_call"), (name, ours, real[-40:])


def test_mlx_registry_and_all_name_every_newer_format(fresh_registry):
    from parsers.reference.mlx_lm import FORMATS, UNSUPPORTED

    for fmt in set(FORMATS) - {"gemma4", "hermes"}:
        name = f"mlx-lm==0.32.2:{fmt}"
        assert name in registry.available_parsers(fmt) and name in registry.expand_names(["all"], fmt), fmt
        assert registry.get_parser("mlx-lm", format=fmt).name == name
    for fmt in UNSUPPORTED:
        assert not [n for n in registry.available_parsers(fmt) if n.startswith("mlx-lm")], fmt

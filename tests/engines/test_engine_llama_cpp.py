"""The llama.cpp engine: a C++ protocol worker over llama.cpp's chat parser, built from the pinned sdist, serving
Gemma 4 (the Gemma 4 template), Hermes (the Qwen 2.5 template) and the formats added after them, each with its
preset's own template and llama-server options (parsers/reference/llama_cpp.py: FORMATS).

The first run builds it into the user cache (about 3.5 min on 2 cores); later runs reuse it. It is also the
test suite's non-Python worker, run through ``cmd:`` like any executable.
"""

import json
import shlex

import pytest
from engine_common import (
    CALL,
    HERMES_CASES,
    HERMES_TEMPLATE,
    HERMES_TOOLS,
    OFF,
    PARIS,
    TOOLS,
    engine_worker,
    hermes_expected,
    hermes_worker,
    plain_message,
    rendered_cases,
    rendered_faults,
    rendered_msg,
)

from harness.assets.sdist import sdist_file
from harness.assets.tokenizers import token_pieces
from harness.core.messages import ToolCall
from harness.core.protocol import run_stream
from harness.engines import environments as engines
from harness.engines.client import WorkerParser, WorkerParserError
from harness.formats import get_format
from harness.parse.registry import create_parsers, get_any_parser
from harness.score.runner import evaluate_case

# A cold cache builds the environment inside the first test (minutes): allow for it.
pytestmark = pytest.mark.timeout(1800)

FMT = get_format("gemma4")


@pytest.fixture(scope="module")
def llama():
    yield from engine_worker("llama.cpp")


def test_hello_names_llama_cpp_and_its_version(llama):
    assert llama.name == "llama.cpp==0.3.36:gemma4"
    assert llama.hello["llama_cpp_commit"].startswith("0c1e57098") and llama.incremental


def test_one_shot_parses_a_declared_call(llama):
    got = llama.parse(CALL, TOOLS, OFF)
    assert got.tool_calls == [ToolCall("get_weather", {"city": "Paris", "days": 3})]
    assert not got.content


def test_template_null_none_drops_the_call_without_an_error(llama):
    """The Gemma 4 template writes JSON null as ``None``; llama.cpp's grammar accepts only ``null`` and its
    lenient parse stops there: the call vanishes, the library says nothing (the worker adds a diagnostic)."""
    got = llama.parse('<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,note:None}<tool_call|>', TOOLS, OFF)
    assert got.tool_calls == []
    assert any("dropped without an error" in d for d in got.diagnostics)
    assert llama.parse(
        '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,note:null}<tool_call|>', TOOLS, OFF
    ).tool_calls == [ToolCall("get_weather", {"city": "Paris", "note": None})]


def test_calls_need_declared_tools(llama):
    assert llama.parse(CALL, None, OFF).tool_calls == []


def test_streaming_real_token_pieces_matches_one_shot(llama):
    text = "Checking." + CALL
    pieces = token_pieces(text, "gemma4")
    streamed = run_stream(llama, [p for p, _ in pieces], TOOLS, OFF, token_ids=[ids for _, ids in pieces])
    assert (
        streamed.tool_calls
        == llama.parse(text, TOOLS, OFF).tool_calls
        == [ToolCall("get_weather", {"city": "Paris", "days": 3})]
    )


def test_streaming_error_is_a_parser_error_and_the_worker_survives(llama):
    """A re-parse that finds fewer calls than already streamed raises ``Invalid diff`` inside llama.cpp."""
    text = CALL + '<|tool_call>call:get_weather{city:<|"|>Rome<|"|>,note:None}<tool_call|>'
    records = list(evaluate_case(_case(text), llama, FMT, ["oneshot", "char"], seed=0, timeout_s=10))
    assert {r.error_type for r in records} <= {"wrong_call_count", "exception", "stream_diverges"}
    assert llama.parse(CALL, TOOLS, OFF).tool_calls  # same worker, still answering
    assert llama.restarts == 0


def test_the_binary_runs_as_a_cmd_worker(llama):
    """The non-Python worker through ``cmd:``, as a user would name any executable."""
    parsers, unavailable = create_parsers([f"cmd:{shlex.join(llama.spec.argv)}"], "gemma4")
    assert unavailable == {}
    (worker,) = parsers
    try:
        assert isinstance(worker, WorkerParser) and worker.name == "llama.cpp==0.3.36:gemma4"
        results = worker.parse_many([(CALL, TOOLS, OFF)] * 50)
        assert all(r.tool_calls == [ToolCall("get_weather", {"city": "Paris", "days": 3})] for r in results)
    finally:
        worker.close()


def _case(text):
    from harness.core.cases import Case
    from harness.core.messages import Message

    return Case(
        id="x",
        format="gemma4",
        text=text,
        tools=TOOLS,
        prefix=OFF,
        slice="curated",
        expected=Message(
            tool_calls=[
                ToolCall("get_weather", {"city": "Paris", "days": 3}),
                ToolCall("get_weather", {"city": "Rome", "note": None}),
            ]
        ),
    )


def test_the_documented_example_exchange_is_what_the_worker_answers(llama):
    """docs/worker-protocol.md shows a real exchange with this worker: replay it and compare line by line."""
    import json
    import subprocess
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "worker-protocol.md").read_text()
    block = doc.split("## An example exchange", 1)[1].split("```\n", 2)[1]
    sent = [line[2:] for line in block.splitlines() if line.startswith("> ")]
    expected = [json.loads(line[2:]) for line in block.splitlines() if line.startswith("< ")]
    # the documented worker serves Gemma 4 only: start it with that one template
    argv = [llama.spec.argv[0], "--template", f"gemma4={sdist_file('models/templates/google-gemma-4-31B-it.jinja')}"]
    out = subprocess.run(argv, input="\n".join(sent) + "\n", capture_output=True, text=True, timeout=60)
    assert [json.loads(line) for line in out.stdout.splitlines()] == expected


# ------------------------------------------------------------------------------------------------- Hermes


@pytest.fixture(scope="module")
def llama_hermes():
    yield from hermes_worker("llama.cpp")


def test_hermes_parser_is_named_for_the_format(llama_hermes):
    assert llama_hermes.name == "llama.cpp==0.3.36:hermes"
    assert any(a.endswith("=" + str(sdist_file(HERMES_TEMPLATE))) for a in llama_hermes.spec.argv)


def test_hermes_text_after_a_call_or_an_undeclared_tool_raises(llama_hermes):
    """Nothing may follow the last call and every tool name is a literal of the grammar: the parse fails."""
    call = HERMES_CASES["one_call"][0]()
    for text in (call + "\nDone.", call.replace("get_weather", "send_mail")):
        with pytest.raises(WorkerParserError, match="does not match the expected peg-native format"):
            llama_hermes.parse(text, HERMES_TOOLS, "")
    assert llama_hermes.parse(call, None, "").content == call  # no tools: a content-only parser


def test_hermes_3_template_gives_the_same_parser_but_fails_on_a_type_list():
    """Started with the Hermes 3 tool-use template instead, the worker answers the Hermes texts alike; but that
    template's own ``basic_type_map[json_spec.type]`` cannot take a JSON-schema type list such as
    ``["string", "null"]``, so a request declaring one fails before parsing."""
    engines.install("llama.cpp")
    installed = engines.find_installed("llama.cpp")
    hermes3 = sdist_file("models/templates/NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja")
    binary = installed.path / "bin" / "llama-cpp-worker"
    parsers, unavailable = create_parsers(
        [f"cmd:{shlex.join([str(binary), '--template', f'hermes={hermes3}'])}"], "hermes"
    )
    assert unavailable == {}
    (worker,) = parsers
    try:
        call = HERMES_CASES["two_calls"][0]()
        with pytest.raises(WorkerParserError, match="unhashable type: Array"):
            worker.parse(call, HERMES_TOOLS, "")
        tools = json.loads(json.dumps(HERMES_TOOLS))
        tools[0]["function"]["parameters"]["properties"]["note"]["type"] = "string"
        assert worker.parse(call, tools, "").to_json() == hermes_expected("two_calls")
    finally:
        worker.close()


# ------------------------------------------------------------------------------ the formats added after Hermes
# Each format's worker is started with its preset's own template (parsers/reference/llama_cpp.py: FORMATS); the texts
# are the harness' renders of one call, two calls, prose around a call, the format's closing marker inside a string
# value and reasoning before a call (tests/engines/engine_common.py: rendered_cases), parsed one-shot and streamed
# whole, by characters and by token-like pieces. All four modes agree on every text.


@pytest.fixture(scope="module")
def llama_format():
    """``llama_format(fmt)``: the engine's worker parser for ``fmt`` (one worker per format, started once)."""
    engines.install("llama.cpp")
    workers = {}

    def get(fmt):
        if fmt not in workers:
            workers[fmt] = get_any_parser("llama.cpp", fmt)
        return workers[fmt]

    yield get
    for worker in workers.values():
        worker.close()


def test_every_new_format_is_served_with_its_presets_template(llama_format):
    from parsers.reference.llama_cpp import FORMATS

    for fmt in (
        "glm45",
        "glm47",
        "qwen3_coder",
        "minimax_m2",
        "llama3_json",
        "mistral",
        "kimi_k2",
        "deepseek_v31",
        "deepseek_v32",
        "harmony",
    ):
        worker = llama_format(fmt)
        assert worker.name == f"llama.cpp==0.3.36:{fmt}"
        assert f"{fmt}={sdist_file(FORMATS[fmt].template)}" in worker.spec.argv
    assert "functiongemma" not in FORMATS  # no template in the sdist, no handler in llama.cpp


def _describe(worker_argv, fmt, tools=HERMES_TOOLS) -> dict:
    """The worker's ``describe`` op (not part of the protocol): what llama.cpp derived for ``fmt``."""
    import subprocess

    request = json.dumps({"id": 1, "op": "describe", "format": fmt, "tools": tools})
    out = subprocess.run(worker_argv, input=request + "\n", capture_output=True, text=True, timeout=60)
    return json.loads(out.stdout)["result"]


def _worker(argv: list[str], fmt: str):
    parsers, unavailable = create_parsers([f"cmd:{shlex.join(argv)}"], fmt)
    assert unavailable == {}
    return parsers[0]


def _binary() -> str:
    engines.install("llama.cpp")
    return str(engines.find_installed("llama.cpp").path / "bin" / "llama-cpp-worker")


def test_server_options_reach_the_template(llama_format):
    """``--reasoning FORMAT=off`` and ``--chat-template-kwargs`` act as llama-server's options: DeepSeek V3.1 and
    GLM-4.7 run thinking off (generation prompt ``...<think></think>`` / ``...</think>``), Llama 3.1 renders the
    pinned date instead of today's."""
    argv = llama_format("glm47").spec.argv
    assert _describe(argv, "deepseek_v31")["thinking_off"]["generation_prompt"] == "<｜Assistant｜><think></think>"
    glm47 = _describe(argv, "glm47")
    assert glm47["server_enable_thinking"] is False and glm47["reasoning"] == "off"
    assert glm47["thinking_off"]["generation_prompt"] == "<|assistant|></think>"
    llama3 = _describe(argv, "llama3_json")
    assert "Today Date: 26 Jul 2024\n" in llama3["thinking_off"]["prompt"]
    assert _describe(argv, "glm45")["server_enable_thinking"] is True  # --reasoning auto: the template thinks


CITY = {"city": "Paris"}
REQUIRED_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "required": ["city"],
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "note": {"type": ["string", "null"]},
                    "metric": {"type": "boolean"},
                },
            },
        },
    }
]


def _parsed(parser, text, prefix="", tools=REQUIRED_TOOLS) -> dict:
    return plain_message(parser.parse(text, tools, prefix))


def _fails(parser, text, prefix="", tools=REQUIRED_TOOLS) -> None:
    with pytest.raises(WorkerParserError, match="does not match the expected peg-native format"):
        parser.parse(text, tools, prefix)


def test_reasoning_setting_decides_what_an_unprefixed_text_is():
    """A text without a prefix (an observed case whose prompt was not recorded) gets the server's --reasoning
    setting: off (the engine's setting for GLM-4.7) parses calls and leaves a reasoning text with its </think> in
    content; the server default (auto: on) reads every text without </think> as reasoning. The harness' rendered
    cases carry the pre-filled marker (GLM-4.7: ``</think>`` thinking off, ``<think>`` on), which selects the
    setting whatever the server's is."""
    text = "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>"
    thought = "Think.</think>" + text
    glm47 = sdist_file("models/templates/GLM-4.7-Flash.jinja")
    off = _worker([_binary(), "--template", f"glm47={glm47}", "--reasoning", "glm47=off"], "glm47")
    auto = _worker([_binary(), "--template", f"glm47={glm47}"], "glm47")
    try:
        assert _parsed(off, text) == rendered_msg(None, [CITY])
        assert _parsed(off, thought) == rendered_msg("Think.</think>", [CITY])
        assert _parsed(auto, text) == rendered_msg(reasoning=text)
        assert _parsed(auto, thought) == rendered_msg(None, [CITY], reasoning="Think.")
        # a prefix only the other setting produces selects it, as a client's enable_thinking kwarg would
        assert _parsed(auto, text, prefix="</think>") == rendered_msg(None, [CITY])
        assert _parsed(off, thought, prefix="<think>") == rendered_msg(None, [CITY], reasoning="Think.")
    finally:
        off.close()
        auto.close()


def _glm45_call(args) -> str:
    """A GLM-4.6 call with these ``(key, value)`` arguments, as the template writes it."""
    body = "".join(f"<arg_key>{k}</arg_key>\n<arg_value>{v}</arg_value>\n" for k, v in args)
    return f"\n<tool_call>get_weather\n{body}</tool_call>"


def test_glm_generated_parser_takes_only_declared_arguments_required_first(llama_format):
    """chat-auto-parser-generator.cpp, build_tool_parser_tag_tagged (lines 359-475): every argument name is a
    literal of the grammar, required arguments come first in ``required`` order (lines 394-401), a value whose
    schema admits a string is raw text (line 379: ``null`` stays the string "null"), and nothing may follow the
    last call (line 475, ``p.end()``)."""
    glm = llama_format("glm45")
    assert _parsed(glm, _glm45_call([("city", "Paris"), ("days", 3)])) == rendered_msg(None, [PARIS])
    assert _parsed(glm, _glm45_call([("city", "Paris"), ("note", "null")])) == rendered_msg(
        None, [{"city": "Paris", "note": "null"}]
    )
    _fails(glm, _glm45_call([("days", 3), ("city", "Paris")]))  # an optional argument before the required one
    _fails(glm, _glm45_call([("city", "Paris"), ("extra", 1)]))  # an argument the schema does not declare
    _fails(glm, _glm45_call([("city", "Paris")]) + "\nDone.")  # text after the call


def _qwen3_call(args) -> str:
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in args)
    return f"<tool_call>\n<function=get_weather>\n{body}</function>\n</tool_call>"


def test_qwen3_coder_python_literals_drop_the_call(llama_format):
    """The Qwen3-Coder templates write non-string values with Python's str(): ``True``, ``None``. llama.cpp's
    dedicated parser (common/parsers/qwen3-coder.cpp, lines 108-135) reads a value whose schema admits no string
    as JSON only, so the whole call is dropped without an error one-shot (the worker's diagnostic names the
    tail); streamed by characters, the call's first fragments were already sent and stay, truncated. ``None`` for
    a string-or-null value is the string "None". Optional parameters may not precede required ones (lines
    142-147: a permutation of the required ones, then the optional ones)."""
    qwen = llama_format("qwen3_coder")
    python_bool = _qwen3_call([("city", "Paris"), ("metric", "True")])
    got = qwen.parse(python_bool, REQUIRED_TOOLS, "")
    assert got.tool_calls == [] and not got.content and "dropped without an error" in got.diagnostics[0]
    streamed = run_stream(qwen, list(python_bool), REQUIRED_TOOLS, "")
    assert [(c.name, c.arguments) for c in streamed.tool_calls] == [("get_weather", '{"city":"Paris","metric":')]
    assert _parsed(qwen, _qwen3_call([("city", "Paris"), ("metric", "true")])) == rendered_msg(
        None, [{"city": "Paris", "metric": True}]
    )
    assert _parsed(qwen, _qwen3_call([("city", "Paris"), ("note", "None")])) == rendered_msg(
        None, [{"city": "Paris", "note": "None"}]
    )
    assert qwen.parse(_qwen3_call([("days", 3), ("city", "Paris")]), REQUIRED_TOOLS, "").tool_calls == []


def test_minimax_block_with_two_invokes_fails(llama_format):
    """MiniMax-M2 goes to the generated parser, which finds a section marker but no per-call marker and so
    separates calls by its default ", " (chat-auto-parser-generator.cpp:457): a block with two invokes, as the
    template writes it, does not parse; one invoke after closed reasoning does."""
    minimax = llama_format("minimax_m2")
    invoke = '<invoke name="get_weather">\n<parameter name="city">{}</parameter>\n</invoke>\n'
    one = "Hmm.\n</think>\n\n<minimax:tool_call>\n" + invoke.format("Paris") + "</minimax:tool_call>"
    assert _parsed(minimax, one) == rendered_msg(None, [CITY], reasoning="Hmm.")
    _fails(minimax, one.replace("</minimax:tool_call>", invoke.format("Rome") + "</minimax:tool_call>"))


def test_llama3_content_ends_at_the_first_brace(llama_format):
    """build_tool_parser_json_native (chat-auto-parser-generator.cpp:229-237): the content before a bare JSON call
    is ``until("{")``, so a brace in the prose fails the parse; ``"arguments"`` for ``"parameters"`` and text after
    the call fail too; ``<|python_tag|>`` before the call stays in content."""
    llama3 = llama_format("llama3_json")
    call = '{"name": "get_weather", "parameters": {"city": "Paris"}}'
    for text in ("Use {braces} then " + call, call + " Done.", call.replace("parameters", "arguments")):
        _fails(llama3, text)
    assert _parsed(llama3, "<|python_tag|>" + call) == rendered_msg("<|python_tag|>", [CITY])


def test_deepseek_v32_string_attribute_must_match_the_schema(llama_format):
    """common/parsers/deepseek.cpp (lines 162-171): a parameter's ``string`` attribute is a literal fixed by its
    schema (``"true"`` when the schema admits a string), so ``null`` written ``string="false"`` for a
    string-or-null parameter fails the parse; with thinking on, text before ``</think>`` is reasoning."""
    ds32 = llama_format("deepseek_v32")
    block = (
        '\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n'
        '<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n{}'
        "</｜DSML｜invoke>\n</｜DSML｜function_calls>"
    )
    assert _parsed(ds32, block.format(""), prefix="<think></think>") == rendered_msg(None, [CITY])
    assert _parsed(ds32, "Hmm.</think>" + block.format("")) == rendered_msg(None, [CITY], reasoning="Hmm.")
    null = '<｜DSML｜parameter name="note" string="false">null</｜DSML｜parameter>\n'
    _fails(ds32, block.format(null), prefix="<think></think>")


def test_devstral_template_would_not_parse_mistral_small_calls():
    """The ``mistral`` worker runs Mistral Small 3.2's template (the generated parser, which reads calls with and
    without ``[CALL_ID]``). Started with Devstral's own template instead, llama.cpp picks the Ministral 3 handler
    (chat.cpp: ``[SYSTEM_PROMPT]``, ``[TOOL_CALLS]``, ``[ARGS]`` and no ``[CALL_ID]``), which parses Devstral's
    calls alike but drops Small 3.2's without an error."""
    devstral = sdist_file("models/templates/unsloth-mistral-Devstral-Small-2507.jinja")
    worker = _worker([_binary(), "--template", f"mistral={devstral}"], "mistral")
    try:
        assert _parsed(worker, '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}') == rendered_msg(None, [CITY])
        got = worker.parse('[TOOL_CALLS]get_weather[CALL_ID]call00000[ARGS]{"city": "Paris"}', REQUIRED_TOOLS, "")
        assert got.tool_calls == [] and "dropped without an error" in got.diagnostics[0]
    finally:
        worker.close()


def test_text_after_the_calls_or_an_undeclared_tool_fails(llama_format):
    """Every grammar ends with ``p.end()`` after the calls and names each declared tool as a literal (Kimi K2,
    DeepSeek V3.1 alike); gpt-oss' ``<|call|>`` stop token, if left in the text, is dropped silently."""
    kimi = llama_format("kimi_k2")
    call = (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.{}:0<|tool_call_argument_begin|>"
        '{{"city": "Paris"}}<|tool_call_end|><|tool_calls_section_end|>'
    )
    _fails(kimi, call.format("get_weather") + "Done.")
    _fails(kimi, call.format("send_mail"))
    ds31 = (
        '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}'
        "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
    )
    _fails(llama_format("deepseek_v31"), ds31 + "Done.")
    got = llama_format("harmony").parse(
        ' to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris"}<|call|>', REQUIRED_TOOLS, ""
    )
    assert plain_message(got) == rendered_msg(None, [CITY]) and "<|call|>" in got.diagnostics[0]


def test_lfm2_rendered_texts_parse_and_its_faults(llama_format):
    """LFM2.5-8B-A1B's template picks llama.cpp's LFM2.5 handler (common/parsers/lfm2.cpp); its rendered texts parse
    in every mode, the closer inside a quoted value and reasoning included. Faults: a call without arguments,
    ``NAME()``, fails the parse; a control character in a string value is copied raw into the arguments, which are
    then no JSON (the harness keeps the string)."""
    from parsers.reference.llama_cpp import FORMATS

    worker = llama_format("lfm2")
    assert f"lfm2={sdist_file(FORMATS['lfm2'].template)}" in worker.spec.argv
    assert rendered_faults(worker, rendered_cases("lfm2.5-8b-a1b")) == {}
    _fails(worker, "<|tool_call_start|>[get_weather()]<|tool_call_end|>")
    got = worker.parse("<|tool_call_start|>[get_weather(city='Pa\nris')]<|tool_call_end|>", REQUIRED_TOOLS, "")
    assert got.tool_calls == [ToolCall("get_weather", '{"city":"Pa\nris"}')]

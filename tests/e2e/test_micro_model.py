"""The micro Gemma 4 fixture (harness/extra/micro_model.py): real build, real transformers and llama.cpp, no mocks.

A cold cache builds the fixture once (~25 s on 2 cores); later runs reuse it. torch and llama-cpp-python are
not project dependencies, so the module is skipped without them.
"""

from __future__ import annotations

import llama_cpp
import pytest
import torch  # noqa: F401  (make installs the capture extra: torch, and llama-cpp-python from its wheel)

from harness.assets.gguf import read_gguf_metadata
from harness.assets.sdist import sdist_file
from harness.core.paths import file_sha256
from harness.extra.micro_model import MicroSpec, init_model, micro_gemma4, micro_gemma4_key

CALL = '<|turn>model\n<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>'
# every protocol marker with its id in the real vocabulary (ggml-vocab-gemma-4.gguf)
MARKERS = {
    "<|tool>": 46,
    "<tool|>": 47,
    "<|tool_call>": 48,
    "<tool_call|>": 49,
    "<|tool_response>": 50,
    "<tool_response|>": 51,
    '<|"|>': 52,
    "<|think|>": 98,
    "<|channel>": 100,
    "<channel|>": 101,
    "<|turn>": 105,
    "<turn|>": 106,
}
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather now",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]


@pytest.fixture(scope="module")
def micro():
    return micro_gemma4(log=print)


@pytest.fixture(scope="module")
def hf_tokenizer(micro):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(micro.hf_dir)


@pytest.fixture(scope="module")
def llm(micro):
    return llama_cpp.Llama(model_path=str(micro.gguf), n_ctx=512, verbose=False)


def test_hf_folder_loads_and_generates(micro, hf_tokenizer):
    from transformers import AutoModelForCausalLM

    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        assert (micro.hf_dir / name).is_file(), name
    model = AutoModelForCausalLM.from_pretrained(micro.hf_dir)
    assert type(model).__name__ == "Gemma4ForCausalLM"
    assert model.num_parameters() == micro.provenance["parameters"] == 16_864_000
    # the saved weights are the seeded initialisation, bit for bit
    fresh = init_model(MicroSpec()).state_dict()
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, fresh[name]), name

    prompt = hf_tokenizer.apply_chat_template(
        MESSAGES, tools=TOOLS, add_generation_prompt=True, return_tensors="pt", return_dict=True
    )
    out = model.generate(**prompt, max_new_tokens=6, min_new_tokens=6, do_sample=False)
    new = out[0, prompt["input_ids"].shape[1] :]
    assert len(new) == 6
    assert isinstance(hf_tokenizer.decode(new, skip_special_tokens=False), str)


def test_gguf_tokenizes_like_hf(micro, hf_tokenizer, llm):
    hf_ids = hf_tokenizer.encode(CALL, add_special_tokens=False)
    assert llm.tokenize(CALL.encode(), add_bos=False, special=True) == hf_ids
    assert [hf_ids[0], hf_ids[3], hf_ids[-1]] == [105, 48, 49]
    assert hf_ids.count(52) == 2
    for marker, token_id in MARKERS.items():
        assert hf_tokenizer.encode(marker, add_special_tokens=False) == [token_id], marker
        assert llm.tokenize(marker.encode(), add_bos=False, special=True) == [token_id], marker


def test_gguf_vocab_is_llama_cpps_and_template_embedded(micro):
    """Token list, scores, types (CONTROL / USER_DEFINED), merges and special ids equal llama.cpp's own vocab GGUF."""
    ours = read_gguf_metadata(micro.gguf)
    ref = read_gguf_metadata(sdist_file("models/ggml-vocab-gemma-4.gguf"))
    for key in ref:
        if key.startswith("tokenizer.") and key != "tokenizer.chat_template":
            assert ours[key] == ref[key], key
    template = sdist_file("models/templates/google-gemma-4-31B-it.jinja").read_text(encoding="utf-8")
    assert (micro.hf_dir / "chat_template.jinja").read_text(encoding="utf-8") == template
    assert ours["tokenizer.chat_template"] == template
    assert micro.sha256 == file_sha256(micro.gguf)


def test_llama_cpp_renders_the_embedded_template_like_transformers(micro, hf_tokenizer, llm):
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    assert llm.chat_format == "chat_template.default"  # create_chat_completion uses the GGUF's template
    formatter = Jinja2ChatFormatter(
        template=llm.metadata["tokenizer.chat_template"], eos_token="<eos>", bos_token="<bos>"
    )
    text = formatter(messages=MESSAGES, tools=TOOLS).prompt
    hf_text = hf_tokenizer.apply_chat_template(MESSAGES, tools=TOOLS, add_generation_prompt=True, tokenize=False)
    assert text == hf_text
    assert "<|tool>declaration:get_weather{" in text
    hf_ids = hf_tokenizer.encode(hf_text, add_special_tokens=False)
    assert llm.tokenize(text.encode(), add_bos=False, special=True) == hf_ids
    reply = llm.create_chat_completion(messages=MESSAGES, tools=TOOLS, max_tokens=4, temperature=0.0)
    assert reply["usage"]["completion_tokens"] == 4


def test_cache_is_reused_and_keyed_by_parameters(micro):
    again = micro_gemma4(log=lambda line: pytest.fail(f"rebuilt: {line}"))
    assert again == micro
    key = micro_gemma4_key()
    assert micro.hf_dir.parent.name == f"micro-gemma4-{key}" == f"micro-gemma4-{micro.provenance['key']}"
    assert micro_gemma4_key(MicroSpec()) == key
    assert micro_gemma4_key(MicroSpec(seed=1)) != key
    assert micro_gemma4_key(MicroSpec(hidden_size=32)) != key
    assert micro_gemma4_key(MicroSpec(gguf_outtype="f16")) != key

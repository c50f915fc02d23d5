"""Capture building blocks on small inputs: piece assembly, prompt rendering, reference answers, weights lookup."""

from __future__ import annotations

import pytest

from harness.capture.backends import PieceCollector, Weights
from harness.capture.run import reference_arguments, reference_text, render_prompt
from harness.capture.suites import load_suite
from harness.capture.weights import WeightsNotFound, locate_weights
from harness.formats import get_format
from harness.template.catalog import get_model
from harness.template.sources import load_template


def _utf8_decoder(table: dict[int, bytes]):
    return lambda ids: b"".join(table[i] for i in ids).decode("utf-8", errors="replace")


def test_pieces_wait_for_whole_utf8_characters():
    # "é" split over two byte-fallback tokens, as SentencePiece byte fallback emits it
    table = {1: b"caf", 2: b"\xc3", 3: b"\xa9", 4: b"!"}
    seen = []
    collector = PieceCollector(_utf8_decoder(table), on_piece=lambda text, ids: seen.append((text, ids)))
    for token in (1, 2, 3, 4):
        assert collector.add(token) is False
    assert collector.flush() == [("caf", [1]), ("é", [2, 3]), ("!", [4])]
    held = PieceCollector(_utf8_decoder({1: b"a<", 2: b"b"}), stop=("<|im_end|>",))
    held.add(1)
    assert held.pieces == []  # "a<" may begin the stop string
    held.add(2)
    assert held.flush() == [("a<", [1]), ("b", [2])]
    assert seen == collector.pieces and collector.tokens == 4


def test_stop_string_ends_generation_and_is_left_out():
    table = {1: b"hello", 2: b" <|im", 3: b"_end|>", 4: b"more"}
    collector = PieceCollector(_utf8_decoder(table), stop=("<|im_end|>",))
    assert collector.add(1) is False
    assert collector.add(2) is False
    assert collector.pieces == [("hello", [1])]  # " <|im" is held back: it may start the stop string
    assert collector.add(3) is True
    assert collector.flush() == [("hello", [1]), (" ", [2])]


def test_gemma4_prompt_prefix_is_the_prefilled_empty_thought():
    template = load_template("gemma-4-e2b")
    prompt = load_suite("nested-args")[0]
    text, prefix = render_prompt(template, get_format("gemma4"), prompt)
    assert prefix == "<|channel>thought\n<channel|>"
    assert text.endswith("<|turn>model\n" + prefix)
    assert "create_order" in text  # the tool declaration is in the prompt


def test_reference_text_holds_the_pinned_call():
    template = load_template("gemma-4-e2b")
    prompt = load_suite("nested-args")[0]
    text = reference_text(template, get_format("gemma4"), prompt)
    assert text.startswith("<|tool_call>call:create_order{")
    assert '<|"|>Ana Lima<|"|>' in text


def test_reference_arguments_join_required_substrings():
    prompt = next(p for p in load_suite("code-with-quotes") if p.calls[0].contains)
    arguments = reference_arguments(prompt, 0)
    for key, needles in prompt.calls[0].contains.items():
        assert all(n in arguments[key] for n in needles)


def test_explicit_gguf_path_must_exist(tmp_path):
    entry = get_model("gemma-4-e2b")
    with pytest.raises(WeightsNotFound, match="no such file"):
        locate_weights(entry, "llama-cpp", gguf=str(tmp_path / "missing.gguf"))
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF-not-really")
    weights = locate_weights(entry, "llama-cpp", gguf=str(model))
    assert isinstance(weights, Weights) and weights.kind == "gguf" and len(weights.sha256) == 64


def test_missing_hub_weights_say_what_to_download(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    entry = get_model("gemma-4-e2b")
    with pytest.raises(WeightsNotFound) as info:
        locate_weights(entry, "transformers", offline=True)
    message = str(info.value)
    assert "hf download google/gemma-4-E2B-it" in message and "MODEL_DIR=" in message

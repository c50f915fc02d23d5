"""Streaming modes of harness.parse.modes."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.assets.tokenizers import load_tokenizer
from harness.parse import modes as chunking

CALL = '<|tool_call>call:get_weather{location:{city:<|"|>Paris<|"|>}}<tool_call|>'
TEXTS = ["", "x", CALL, "héllo 🚀 wörld\r\n\t", 'Sure.<|tool_call>call:f{a:<|"|>ꙮ\u2581<|"|>}<tool_call|>']


# a rendered call of each format with a package tokenizer, and the (piece, ids) its markers must come out as
FORMAT_CALLS = {
    "hermes": (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich 🌦"}}\n</tool_call>',
        [("<tool_call>", [151657]), ("</tool_call>", [151658])],
    ),
    "qwen3_coder": (
        ("<tool_call>\n<function=get_weather>\n<parameter=city>\n東京\n</parameter>\n</function>\n</tool_call>"),
        [("<tool_call>", [151657]), ("</tool_call>", [151658])],
    ),
    "llama3_json": (
        '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}<|eom_id|>',
        [("<|python_tag|>", [128010]), ("<|eom_id|>", [128008])],
    ),
    "deepseek_v31": (
        (
            '</think><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}'
            "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
        ),
        [("</think>", [128799]), ("<｜tool▁calls▁begin｜>", [128806]), ("<｜tool▁sep｜>", [128814])],
    ),
    "deepseek_v32": (
        (
            '</think>\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="f">\n<｜DSML｜parameter name="city" '
            'string="true">Paris</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>'
            "<｜end▁of▁sentence｜>"
        ),
        [("</think>", [128799]), ("<｜end▁of▁sentence｜>", [1])],
    ),
}


@pytest.fixture(scope="module", autouse=True)
def _tokenizer_loaded_once():
    for name in set(chunking.TOKENIZED_FORMATS.values()):
        load_tokenizer(name)


def test_registered_modes():
    assert set(chunking.MODES) == {"whole", "char", "random", "tokens"}
    assert all(chunking.has_tokenizer(f) for f in ["gemma4", *FORMAT_CALLS])
    assert not chunking.has_tokenizer("harmony") and not chunking.has_tokenizer("mistral")


@pytest.mark.parametrize("mode", sorted(chunking.MODES))
@pytest.mark.parametrize("text", TEXTS)
def test_concatenation_invariant(mode, text):
    chunks = chunking.chunks_for(mode, text, seed=7, case_key="c1", fmt="gemma4")
    assert "".join(c for c, _ in chunks) == text
    if mode == "whole":
        assert chunks == [(text, None)]
    else:
        assert all(c for c, _ in chunks)
    for _, ids in chunks:
        assert (ids is None) == (mode != "tokens")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(), st.integers(0, 2**32), st.text(max_size=10))
def test_concatenation_invariant_any_text(text, seed, case_key):
    for mode in chunking.MODES:
        chunks = chunking.chunks_for(mode, text, seed=seed, case_key=case_key, fmt="gemma4")
        assert "".join(c for c, _ in chunks) == text


def test_char_mode():
    assert chunking.chunks_for("char", "a🚀\n", seed=0, case_key="", fmt="x") == [
        ("a", None),
        ("🚀", None),
        ("\n", None),
    ]


def test_random_is_deterministic_per_seed_and_case():
    text = CALL * 3
    a = chunking.chunks_for("random", text, seed=1, case_key="case-a", fmt="gemma4")
    assert a == chunking.chunks_for("random", text, seed=1, case_key="case-a", fmt="gemma4")
    assert a != chunking.chunks_for("random", text, seed=2, case_key="case-a", fmt="gemma4")
    assert a != chunking.chunks_for("random", text, seed=1, case_key="case-b", fmt="gemma4")
    assert all(1 <= len(c) <= 8 for c, _ in a)
    # pinned: the same cuts on every machine and Python process (str seeds hash with sha512)
    got = chunking.chunks_for("random", "<|tool_call>call:f{a:1}<tool_call|>", seed=42, case_key="case-1", fmt="f")
    assert [c for c, _ in got] == ["<|t", "oo", "l_call", ">", "call:f{a", ":", "1}<tool", "_call|>"]


def test_tokens_mode_carries_real_ids():
    chunks = chunking.chunks_for("tokens", CALL, seed=0, case_key="", fmt="gemma4")
    assert chunks[0] == ("<|tool_call>", [48]) and chunks[-1] == ("<tool_call|>", [49])
    assert (":{", [29616]) in chunks and ("}}", [1807]) in chunks


def test_tokens_mode_streams_the_ids_a_model_generated():
    ids = [i for _, group in chunking.chunks_for("tokens", CALL, seed=0, case_key="", fmt="gemma4") for i in group]
    split = ids[:1] + [236787] + ids[1:]  # another id sequence for other text: the text's own tokens stream instead
    given = chunking.chunks_for("tokens", CALL, seed=0, case_key="", fmt="gemma4", token_ids=ids)
    assert given == chunking.chunks_for("tokens", CALL, seed=0, case_key="", fmt="gemma4")
    other = chunking.chunks_for("tokens", CALL, seed=0, case_key="", fmt="gemma4", token_ids=split)
    assert "".join(c for c, _ in other) == CALL and [i for _, g in other for i in g] == ids
    out_of_range = chunking.chunks_for("tokens", "x", seed=0, case_key="", fmt="gemma4", token_ids=[10**9])
    assert out_of_range == chunking.chunks_for("tokens", "x", seed=0, case_key="", fmt="gemma4")
    shorter = chunking.chunks_for("tokens", CALL[12:], seed=0, case_key="", fmt="gemma4")
    pieces = chunking.chunks_for(
        "tokens",
        "<|tool_call>" + CALL[12:],
        seed=0,
        case_key="",
        fmt="gemma4",
        token_ids=[48, *[i for _, g in shorter for i in g]],
    )
    assert pieces[0] == ("<|tool_call>", [48]) and pieces[1:] == shorter  # the given ids, grouped as generated


@pytest.mark.parametrize("fmt", sorted(FORMAT_CALLS))
def test_tokens_mode_for_package_tokenizers(fmt):
    text, markers = FORMAT_CALLS[fmt]
    for sample in (text, TEXTS[3], TEXTS[4]):
        chunks = chunking.chunks_for("tokens", sample, seed=0, case_key="", fmt=fmt)
        assert "".join(c for c, _ in chunks) == sample
        assert all(c and ids for c, ids in chunks)
    chunks = chunking.chunks_for("tokens", text, seed=0, case_key="", fmt=fmt)
    for marker in markers:
        assert marker in chunks, (fmt, marker)
    assert any(len(ids) == 1 and len(c) > 1 and not c.isalnum() and c not in dict(markers) for c, ids in chunks)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(FORMAT_CALLS)), st.text())
def test_tokens_mode_concatenates_for_every_format(fmt, text):
    chunks = chunking.chunks_for("tokens", FORMAT_CALLS[fmt][0] + text, seed=0, case_key="", fmt=fmt)
    assert "".join(c for c, _ in chunks) == FORMAT_CALLS[fmt][0] + text


def test_tokens_mode_needs_a_vocabulary():
    with pytest.raises(ValueError, match="real vocabulary"):
        chunking.chunks_for("tokens", "x", seed=0, case_key="", fmt="harmony")


def test_unknown_mode():
    with pytest.raises(ValueError, match="unknown streaming mode"):
        chunking.chunks_for("bytes", "x", seed=0, case_key="", fmt="gemma4")
    with pytest.raises(ValueError, match="every_prefix_splits"):
        chunking.chunks_for("prefix", "x", seed=0, case_key="", fmt="gemma4")


def test_every_prefix_splits():
    splits = list(chunking.every_prefix_splits("abc"))
    assert splits == [["", "abc"], ["a", "bc"], ["ab", "c"], ["abc", ""]]
    assert list(chunking.every_prefix_splits("")) == [["", ""]]
    assert all("".join(s) == CALL for s in chunking.every_prefix_splits(CALL))

"""The real Gemma 4 tokenizer (from the sdist's ggml-vocab-gemma-4.gguf) and its streaming token pieces."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import tokens
from harness.sdist import sdist_file, sha256_file

GGUF = "models/ggml-vocab-gemma-4.gguf"
CALL = '<|tool_call>call:get_weather{location:{city:<|"|>Paris<|"|>}}<tool_call|>'

SPECIAL_IDS = {
    "<|tool>": 46, "<tool|>": 47, "<|tool_call>": 48, "<tool_call|>": 49, "<|tool_response>": 50,
    "<tool_response|>": 51, '<|"|>': 52, "<|think|>": 98, "<|channel>": 100, "<channel|>": 101,
    "<|turn>": 105, "<turn|>": 106, "<pad>": 0, "<eos>": 1, "<bos>": 2,
}
MARKERS = list(SPECIAL_IDS) + ["<|", "|>", '<|"', '"|>', "<0x41>", "\u2581", "\u2581\u2581", "\r\n", "\t", " ", "  "]


@pytest.fixture(scope="module")
def tok():
    return tokens.load_tokenizer("gemma4")


def _join(pieces):
    return "".join(chunk for chunk, _ in pieces)


def _llama_cpp_vectors() -> list[tuple[str, list[int]]]:
    """Parse llama.cpp's tokenizer test files the way tests/test-tokenizer-0.cpp does: inputs separated by
    ``"\\n__ggml_vocab_test__\\n"`` (nothing after the last separator), one line of space-separated ids each."""
    raw = sdist_file(GGUF + ".inp").read_bytes().decode("utf-8")
    sep = "\n__ggml_vocab_test__\n"
    inputs, pos = [], 0
    while pos < len(raw):
        nxt = raw.find(sep, pos)
        if nxt < 0:
            inputs.append(raw[pos:])
            break
        inputs.append(raw[pos:nxt])
        pos = nxt + len(sep)
    lines = sdist_file(GGUF + ".out").read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    assert len(inputs) == len(lines)
    return [(text, [int(x) for x in line.split()]) for text, line in zip(inputs, lines)]


def test_llama_cpp_test_vectors(tok):
    vectors = _llama_cpp_vectors()
    assert len(vectors) == 46
    mismatched = [(t, ids, tok.encode(t, add_special_tokens=False).ids) for t, ids in vectors
                  if tok.encode(t, add_special_tokens=False).ids != ids]
    assert mismatched == []
    # and their pieces concatenate back, with the same ids
    for text, ids in vectors:
        pieces = tokens.token_pieces(text)
        assert _join(pieces) == text
        assert [i for _, g in pieces for i in g] == ids


@pytest.mark.parametrize("marker,token_id", sorted(SPECIAL_IDS.items(), key=lambda kv: kv[1]))
def test_special_tokens_are_single_tokens(tok, marker, token_id):
    assert tokens.encode(marker) == [token_id]
    assert tokens.token_pieces(f"a{marker}b") == [("a", [tokens.encode("a")[0]]), (marker, [token_id]),
                                                   ("b", [tokens.encode("b")[0]])]


def test_rendered_call_pieces_merge_structure_with_text():
    pieces = tokens.token_pieces(CALL)
    assert pieces == [
        ("<|tool_call>", [48]), ("call", [6639]), (":", [236787]), ("get", [828]), ("_", [236779]),
        ("weather", [19323]), ("{", [236782]), ("location", [7125]), (":{", [29616]), ("city", [13319]),
        (":", [236787]), ('<|"|>', [52]), ("Paris", [50429]), ('<|"|>', [52]), ("}}", [1807]),
        ("<tool_call|>", [49]),
    ]
    nested = tokens.token_pieces('<|tool_call>call:f{a:[{b:1},{c:<|"|>x y<|"|>}]}<tool_call|>')
    chunks = [c for c, _ in nested]
    assert any(len(c) > 1 and not c.isalnum() for c in chunks), chunks  # e.g. ":[{", "},{", "}]}"


def test_byte_fallback_characters_are_one_chunk():
    for ch in ["ꙮ", "𓀀", "\U000e0001"]:  # not in the vocabulary: 3-4 byte tokens each
        pieces = tokens.token_pieces(f"a{ch}b")
        assert [c for c, _ in pieces] == ["a", ch, "b"]
        assert len(pieces[1][1]) == len(ch.encode("utf-8"))


def test_whitespace_and_control_characters():
    for text in ["\r\n\t x", "   leading", "trailing   ", "\x00\x01\x7f", "a\u00a0b\u2028c", "\ufeffBOM"]:
        pieces, fallback = tokens.token_pieces_checked(text)
        assert _join(pieces) == text and not fallback


def test_lowbar_falls_back_to_offset_slicing():
    text = "a\u2581b \u2581\u2581 c"  # U+2581 tokenizes like a space and would decode to " "
    pieces, fallback = tokens.token_pieces_checked(text)
    assert fallback
    assert _join(pieces) == text
    assert [i for _, g in pieces for i in g] == tokens.encode(text)


def test_empty_text():
    assert tokens.token_pieces("") == []


def test_unknown_tokenizer():
    with pytest.raises(ValueError, match="no real tokenizer"):
        tokens.token_pieces("x", name="nope")


def test_provenance():
    prov = tokens.tokenizer_provenance()
    assert prov["gguf_file"] == GGUF
    assert prov["gguf_sha256"] == sha256_file(sdist_file(GGUF))
    assert prov["vocab_size"] == 262144
    assert prov["transformers"] and prov["tokenizers"] and "tokenizers" in prov["library"]
    on_disk = json.loads((tokens.tokenizer_dir() / "provenance.json").read_text())
    assert on_disk["gguf_sha256"] == prov["gguf_sha256"]


def test_cold_build_matches_cache(tmp_path, monkeypatch, tok):
    """Build from the GGUF again into an empty cache: same files' tokenizer, same ids (~4 s)."""
    from tokenizers import Tokenizer

    monkeypatch.setattr(tokens, "cache_dir", lambda: tmp_path)
    folder = tokens.tokenizer_dir()
    assert folder.parent == tmp_path / "tokenizers"
    assert {p.name for p in folder.iterdir()} >= {"tokenizer.json", "tokenizer_config.json", "provenance.json"}
    fresh = Tokenizer.from_file(str(folder / "tokenizer.json"))
    for text, ids in _llama_cpp_vectors() + [(CALL, tok.encode(CALL, add_special_tokens=False).ids)]:
        assert fresh.encode(text, add_special_tokens=False).ids == ids
    assert tokens.tokenizer_dir() == folder  # second call reuses it


def test_gguf_metadata_reader():
    meta = tokens.read_gguf_metadata(sdist_file(GGUF))
    assert meta["general.architecture"] == "gemma4"
    assert meta["tokenizer.ggml.model"] == "gemma4"
    assert len(meta["tokenizer.ggml.tokens"]) == 262144
    assert meta["tokenizer.ggml.tokens"][48] == "<|tool_call>"


_texts = st.lists(
    st.one_of(st.text(), st.text(alphabet=st.characters(codec="utf-8")), st.sampled_from(MARKERS),
              st.text(alphabet=" \t\r\n{}:,[]\"<|>\u2581", max_size=8)),
    max_size=10,
).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_texts)
def test_pieces_reconstruct_any_text(text):
    pieces, fallback = tokens.token_pieces_checked(text)
    assert _join(pieces) == text
    assert all(chunk for chunk, _ in pieces)
    assert all(ids for _, ids in pieces)
    assert [i for _, g in pieces for i in g] == tokens.encode(text)
    assert fallback == ("\u2581" in text)  # the only input the decoder cannot give back

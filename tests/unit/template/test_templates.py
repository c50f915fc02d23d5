"""Catalog and template loading: every source, the fallback chain, fail-fast hub, errors.

No test reaches the real Hugging Face hub: each runs with ``HF_HOME`` in a temporary directory and either
``HF_HUB_OFFLINE=1``, a populated fake HF cache (found without a request), or ``huggingface_hub``'s
endpoint pointed at a server on 127.0.0.1 started by the test.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import socket
import threading
import time
from pathlib import Path

import gguf
import pytest
from huggingface_hub import constants as hf_constants  # imported before any test sets HF_HUB_OFFLINE

from harness.assets.sdist import sdist_file
from harness.core.errors import CatalogError, HarnessError, TemplateNotFoundError, UnknownModelError
from harness.template.catalog import ModelEntry, get_model, known_models, list_models, load_catalog
from harness.template.sources import ChatTemplate, load_template, read_gguf_metadata_string

SDIST_TEMPLATE = "models/templates/google-gemma-4-31B-it.jinja"
SDIST_GGUF = "models/ggml-vocab-gemma-4.gguf"
# sha256 of the sdist vocab GGUF's tokenizer.chat_template, measured with gguf.GGUFReader (16 s to open).
SDIST_GGUF_TEMPLATE_SHA256 = "2dfbfc7d538912f4ea11d29d85b4e25d7bc26386e53f57529f1d707c28b5828c"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(autouse=True)
def isolated_hf(tmp_path, monkeypatch):
    """A fresh, empty HF home; HF_HUB_OFFLINE unset (tests set what they need)."""
    home = tmp_path / "hf_home"
    home.mkdir()
    monkeypatch.setenv("HF_HOME", str(home))
    for var in (
        "HF_HUB_CACHE",
        "HUGGINGFACE_HUB_CACHE",
        "HF_HUB_OFFLINE",
        "TOOLCALL_HARNESS_CATALOG",
        "TOOLCALL_HARNESS_HUB_TIMEOUT",
    ):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def sdist_text() -> str:
    return sdist_file(SDIST_TEMPLATE).read_text(encoding="utf-8")


def populate_hf_cache(hf_home: Path, repo: str, filename: str, text: str, commit: str = COMMIT) -> Path:
    """Write ``text`` into huggingface_hub's cache layout, as a finished download leaves it:
    ``hub/models--ORG--NAME/{blobs/ETAG, snapshots/COMMIT/FILE, refs/main}``."""
    root = hf_home / "hub" / ("models--" + repo.replace("/", "--"))
    data = text.encode("utf-8")
    etag = hashlib.sha256(data).hexdigest()
    (root / "blobs").mkdir(parents=True)
    (root / "blobs" / etag).write_bytes(data)
    snap = root / "snapshots" / commit
    snap.mkdir(parents=True)
    (snap / filename).symlink_to(Path("..") / ".." / "blobs" / etag)
    (root / "refs").mkdir()
    (root / "refs" / "main").write_text(commit)
    return snap / filename


def write_catalog(path: Path, body: str) -> Path:
    path.write_text(body, encoding="utf-8")
    return path


GOOD_ROW = """
[models.m1]
format = "gemma4"
hf_repo = "org/m1"
hf_file = "chat_template.jinja"
offline_template = "google-gemma-4-31B-it.jinja"
offline_template_model = "m1"
offline_note = "note"
"""


# --- catalog ----------------------------------------------------------------------------------------


def test_catalog_has_the_gemma4_models():
    entries = load_catalog()
    assert list(entries) == known_models()
    assert list_models() == list(entries.values())
    gemma = {name: entry for name, entry in entries.items() if entry.format == "gemma4"}
    assert list(gemma) == ["gemma-4-e2b", "gemma-4-e4b", "gemma-4-31b"]  # other families: their own tests
    repos = {
        "gemma-4-e2b": "google/gemma-4-E2B-it",
        "gemma-4-e4b": "google/gemma-4-E4B-it",
        "gemma-4-31b": "google/gemma-4-31B-it",
    }
    for name, entry in gemma.items():
        assert isinstance(entry, ModelEntry)
        assert entry.format == "gemma4"
        assert entry.hf_repo == repos[name]
        assert entry.hf_file == "chat_template.jinja"
        assert entry.hf_revision == "main"
        assert entry.offline_template == "google-gemma-4-31B-it.jinja"
    assert get_model("gemma-4-e2b").offline_stands_in and get_model("gemma-4-e4b").offline_stands_in
    assert not get_model("gemma-4-31b").offline_stands_in
    assert "31B template" in get_model("gemma-4-e2b").offline_note


def test_unknown_model_lists_known_models():
    with pytest.raises(UnknownModelError) as info:
        get_model("gemma-5")
    msg = str(info.value)
    assert "'gemma-5'" in msg and "gemma-4-e2b, gemma-4-e4b, gemma-4-31b" in msg
    assert isinstance(info.value, HarnessError) and isinstance(info.value, KeyError)
    with pytest.raises(UnknownModelError):
        load_template("gemma-5", offline=True)


@pytest.mark.parametrize(
    "body, needle",
    [
        (GOOD_ROW.replace('hf_repo = "org/m1"\n', ""), "missing required field 'hf_repo'"),
        (
            GOOD_ROW.replace('hf_file = "chat_template.jinja"', "hf_file = 3"),
            "field 'hf_file' must be a non-empty string",
        ),
        (GOOD_ROW.replace('format = "gemma4"', 'format = "nope"'), "field 'format' is 'nope', not a known format"),
        (GOOD_ROW + 'colour = "red"\n', "unknown field 'colour'"),
        (
            GOOD_ROW.replace('offline_template_model = "m1"', 'offline_template_model = "m9"'),
            "field 'offline_template_model' is 'm9'",
        ),
        (GOOD_ROW.replace('hf_repo = "org/m1"', 'hf_repo = "m1"'), "field 'hf_repo' must be 'owner/name'"),
        ("[models.m1\nformat=", "not valid TOML"),
        ("title = 'x'\n", "no [models.NAME] tables"),
        ("[models]\nm1 = 3\n", "[models.m1] must be a table"),
    ],
)
def test_malformed_catalog_names_file_and_field(tmp_path, body, needle):
    path = write_catalog(tmp_path / "bad.toml", body)
    with pytest.raises(CatalogError) as info:
        load_catalog(path)
    assert str(path) in str(info.value)
    assert needle in str(info.value)
    assert "[models.m1]" in str(info.value) or "TOML" in str(info.value) or "no [models" in str(info.value)


def test_catalog_env_override(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLCALL_HARNESS_CATALOG", str(write_catalog(tmp_path / "c.toml", GOOD_ROW)))
    assert known_models() == ["m1"]
    assert get_model("m1").hf_revision == "main"
    monkeypatch.setenv("TOOLCALL_HARNESS_CATALOG", str(tmp_path / "missing.toml"))
    with pytest.raises(CatalogError, match="catalog file not found"):
        known_models()


# --- sdist (offline default) ------------------------------------------------------------------------


def test_offline_falls_back_to_sdist_fast_with_attempt_recorded(offline):
    start = time.monotonic()
    tmpl = load_template("gemma-4-e2b")
    elapsed = time.monotonic() - start
    assert elapsed < 3.0
    assert isinstance(tmpl, ChatTemplate)
    assert tmpl.model == "gemma-4-e2b" and tmpl.format == "gemma4"
    assert tmpl.text == sdist_text()
    p = tmpl.provenance
    assert p["source"] == "sdist"
    assert p["location"] == "llama-cpp-python==0.3.36"
    assert p["file"] == "google-gemma-4-31B-it.jinja"
    assert p["sha256"] == hashlib.sha256(tmpl.text.encode("utf-8")).hexdigest()
    assert p["fallback"] is True
    assert p["fallback_note"].startswith("google-gemma-4-31B-it.jinja (gemma-4-31b) stands in for gemma-4-e2b: ")
    assert "offline" in p["fallback_note"]
    assert p["attempts"] == [
        {"source": "hub", "error": "offline, and google/gemma-4-E2B-it/chat_template.jinja is not in the HF cache"}
    ]
    assert tmpl.summary() == {
        "source": "sdist",
        "file": "google-gemma-4-31B-it.jinja",
        "sha256": p["sha256"],
        "fallback": True,
    }
    json.dumps(p)  # JSON-ready


def test_offline_parameter_overrides_env():
    tmpl = load_template("gemma-4-31b", offline=True)
    assert tmpl.source == "sdist"
    assert "is used for gemma-4-31b" in tmpl.provenance["fallback_note"]
    assert "stands in" not in tmpl.provenance["fallback_note"]


def test_no_source_raises_listing_attempts(offline, monkeypatch, tmp_path):
    import harness.assets.sdist
    import harness.template.sources

    def no_sdist(relpath):
        raise harness.assets.sdist.SdistError("could not download llama-cpp-python==0.3.36 with pip")

    monkeypatch.setattr(harness.template.sources, "sdist_file", no_sdist)  # the name sources.py calls
    with pytest.raises(TemplateNotFoundError) as info:
        load_template("gemma-4-e4b")
    msg = str(info.value)
    assert msg.startswith("no chat template for gemma-4-e4b: ")
    assert "hub: offline" in msg and "sdist: could not download" in msg


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"model_dir": "/nonexistent/dir"}, "local_dir: /nonexistent/dir: not a directory"),
        ({"gguf": "/nonexistent/m.gguf"}, "gguf: /nonexistent/m.gguf: [Errno 2] No such file"),
        (
            {"model_dir": "/nonexistent/dir", "gguf": "/nonexistent/m.gguf"},
            "local_dir: /nonexistent/dir: not a directory; gguf: /nonexistent/m.gguf",
        ),
    ],
)
def test_a_source_the_user_names_must_supply_the_template(offline, kwargs, message):
    with pytest.raises(TemplateNotFoundError) as info:
        load_template("gemma-4-e2b", **kwargs)
    assert str(info.value).startswith("the template source you named could not be used: ")
    assert message in str(info.value)


# --- hub --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("with_offline", [True, False])
def test_hub_cache_hit_needs_no_request(isolated_hf, monkeypatch, fake_hub, with_offline):
    """A template in the HF cache is found by hf_hub_download itself (offline or not) without a request."""
    if with_offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    text = "{{ bos_token }}cached template {{ messages | length }}"
    populate_hf_cache(isolated_hf, "google/gemma-4-E2B-it", "chat_template.jinja", text)
    start = time.monotonic()
    tmpl = load_template("gemma-4-e2b")
    assert time.monotonic() - start < 3.0
    assert tmpl.text == text
    p = tmpl.provenance
    assert p["source"] == "hub" and p["location"] == "google/gemma-4-E2B-it"
    assert p["file"] == "chat_template.jinja" and p["revision"] == COMMIT and p["cached"] is True
    assert p["fallback"] is False and p["fallback_note"] == "" and p["attempts"] == []
    assert fake_hub.requests == []


def test_hub_tokenizer_config_row_reads_its_tool_use_template(isolated_hf, offline):
    """A row whose hf_file is tokenizer_config.json (Cohere's named list) yields the template, not the JSON."""
    named = [{"name": "default", "template": "PLAIN"}, {"name": "tool_use", "template": "TOOLS {{ tools }}"}]
    populate_hf_cache(
        isolated_hf,
        "CohereForAI/c4ai-command-r7b-12-2024",
        "tokenizer_config.json",
        json.dumps({"chat_template": named}),
    )
    tmpl = load_template("command-r7b")
    assert tmpl.text == "TOOLS {{ tools }}"
    assert (tmpl.source, tmpl.file, tmpl.provenance["key"]) == (
        "hub",
        "tokenizer_config.json",
        "chat_template[tool_use]",
    )


def test_hub_cache_dir_read_at_call_time(tmp_path, monkeypatch, offline):
    cache = tmp_path / "elsewhere"
    populate_hf_cache(cache.parent / "x", "google/gemma-4-31B-it", "chat_template.jinja", "T")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache.parent / "x" / "hub"))
    assert load_template("gemma-4-31b").provenance["source"] == "hub"


class _FakeHub(http.server.BaseHTTPRequestHandler):
    """Answers like the hub's ``/{repo}/resolve/{rev}/{file}``: the real download path, locally."""

    files: dict = {}
    gated: set = set()
    requests: list = []

    def _answer(self, body: bool):
        repo_path = self.path.split("?")[0]
        self.requests.append((self.command, repo_path))
        for repo in self.gated:
            if repo_path.startswith(f"/{repo}/"):
                self.send_response(401)
                self.send_header("X-Error-Code", "GatedRepo")
                self.send_header("X-Error-Message", "Access to model is restricted.")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
        data = self.files.get(repo_path)
        if data is None:
            self.send_response(404)
            self.send_header("X-Error-Code", "EntryNotFound")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("X-Repo-Commit", COMMIT)
        self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)

    def do_HEAD(self):
        self._answer(body=False)

    def do_GET(self):
        self._answer(body=True)

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_hub(monkeypatch):
    constants = hf_constants
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _FakeHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setattr(constants, "ENDPOINT", endpoint)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", endpoint + "/{repo_id}/resolve/{revision}/{filename}")
    _FakeHub.files, _FakeHub.gated, _FakeHub.requests = {}, set(), []
    yield _FakeHub
    server.shutdown()
    server.server_close()


def test_hub_download_through_huggingface_hub(fake_hub, isolated_hf):
    text = "{{ bos_token }}from the hub"
    fake_hub.files["/google/gemma-4-E4B-it/resolve/main/chat_template.jinja"] = text.encode()
    tmpl = load_template("gemma-4-e4b")
    p = tmpl.provenance
    assert p["attempts"] == []
    assert tmpl.text == text
    assert (p["source"], p["cached"], p["revision"], p["fallback"]) == ("hub", False, COMMIT, False)
    assert [r[0] for r in fake_hub.requests] == ["HEAD", "HEAD", "GET"]  # probe, hf_hub_download's own
    # it is now in the HF cache, in the hub's layout: a second load needs no server
    assert (isolated_hf / "hub" / "models--google--gemma-4-E4B-it" / "refs" / "main").read_text() == COMMIT
    fake_hub.files.clear()
    assert load_template("gemma-4-e4b", offline=True).provenance["cached"] is True


def test_hub_gated_and_missing_file_are_recorded(fake_hub):
    fake_hub.gated.add("google/gemma-4-E2B-it")
    tmpl = load_template("gemma-4-e2b")
    assert tmpl.source == "sdist"
    assert tmpl.provenance["attempts"][0]["error"].startswith("google/gemma-4-E2B-it is gated")
    tmpl = load_template("gemma-4-31b")  # the fake hub has no such file
    assert tmpl.provenance["attempts"][0]["error"] == "google/gemma-4-31B-it has no file chat_template.jinja"


def test_unreachable_hub_fails_fast(monkeypatch):
    """A hub that accepts connections and never answers costs one request of the timeout, not retries."""
    constants = hf_constants
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    endpoint = f"http://127.0.0.1:{listener.getsockname()[1]}"
    monkeypatch.setattr(constants, "ENDPOINT", endpoint)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", endpoint + "/{repo_id}/resolve/{revision}/{filename}")
    monkeypatch.setenv("TOOLCALL_HARNESS_HUB_TIMEOUT", "0.5")
    try:
        start = time.monotonic()
        tmpl = load_template("gemma-4-e2b")
        elapsed = time.monotonic() - start
    finally:
        listener.close()
    assert elapsed < 2.0
    assert tmpl.source == "sdist"
    assert tmpl.provenance["attempts"] == [{"source": "hub", "error": "unreachable (timed out)"}]
    assert "unreachable" in tmpl.provenance["fallback_note"]


def test_refused_hub_fails_fast(monkeypatch):
    constants = hf_constants
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)

    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setattr(
        constants,
        "HUGGINGFACE_CO_URL_TEMPLATE",
        f"http://127.0.0.1:{port}" + "/{repo_id}/resolve/{revision}/{filename}",
    )
    start = time.monotonic()
    tmpl = load_template("gemma-4-31b")
    assert time.monotonic() - start < 1.0
    assert tmpl.provenance["attempts"][0]["error"].startswith("unreachable (")


# --- local model directory --------------------------------------------------------------------------


def test_local_dir_chat_template_jinja(tmp_path, offline):
    (tmp_path / "chat_template.jinja").write_text("JINJA {{ bos_token }}", encoding="utf-8")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": "IGNORED"}))
    tmpl = load_template("gemma-4-e2b", model_dir=str(tmp_path))
    assert tmpl.text == "JINJA {{ bos_token }}"
    p = tmpl.provenance
    assert (p["source"], p["location"], p["file"]) == ("local_dir", str(tmp_path), "chat_template.jinja")
    assert p["fallback"] is False and p["attempts"] == []


def test_local_dir_tokenizer_config_string(tmp_path, offline):
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": "CFG", "bos_token": "<bos>"}))
    tmpl = load_template("gemma-4-e2b", model_dir=str(tmp_path))
    assert tmpl.text == "CFG"
    assert tmpl.provenance["file"] == "tokenizer_config.json" and tmpl.provenance["key"] == "chat_template"


def test_local_dir_tokenizer_config_named_list(tmp_path, offline):
    templates = [{"name": "tool_use", "template": "TOOLS"}, {"name": "default", "template": "DEFAULT"}]
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": templates}))
    tmpl = load_template("gemma-4-e2b", model_dir=str(tmp_path))
    assert tmpl.text == "TOOLS" and tmpl.provenance["key"] == "chat_template[tool_use]"  # transformers' pick with tools
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": templates[1:]}))
    tmpl = load_template("gemma-4-e2b", model_dir=str(tmp_path))
    assert tmpl.text == "DEFAULT" and tmpl.provenance["key"] == "chat_template[default]"


@pytest.mark.parametrize(
    "files, reason",
    [
        ({}, "no chat_template.jinja, and no chat_template in chat_template.json or tokenizer_config.json"),
        ({"tokenizer_config.json": "{not json"}, "tokenizer_config.json: not valid JSON"),
        (
            {"tokenizer_config.json": json.dumps({"chat_template": [{"name": "rag", "template": "R"}]})},
            "chat_template list has no 'tool_use' or 'default' template (names: rag)",
        ),
    ],
)
def test_local_dir_without_template_is_an_error(tmp_path, offline, files, reason):
    for name, body in files.items():
        (tmp_path / name).write_text(body)
    with pytest.raises(TemplateNotFoundError) as info:
        load_template("gemma-4-e2b", model_dir=str(tmp_path))
    assert f"local_dir: {tmp_path}" in str(info.value) and reason in str(info.value)


def test_local_dir_without_template_falls_to_the_named_gguf(tmp_path, offline):
    path = write_gguf(tmp_path / "m.gguf", "GGUF")
    tmpl = load_template("gemma-4-e2b", model_dir=str(tmp_path), gguf=str(path))
    assert tmpl.source == "gguf" and tmpl.fallback
    assert [a["source"] for a in tmpl.provenance["attempts"]] == ["local_dir"]


def test_local_dir_beats_hub_cache(tmp_path, isolated_hf):
    populate_hf_cache(isolated_hf, "google/gemma-4-E2B-it", "chat_template.jinja", "HUB")
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "chat_template.jinja").write_text("LOCAL")
    assert load_template("gemma-4-e2b", model_dir=str(model_dir)).text == "LOCAL"


# --- GGUF -------------------------------------------------------------------------------------------


def write_gguf(path: Path, template: str | None) -> Path:
    writer = gguf.GGUFWriter(str(path), "gemma4")
    writer.add_name("test model")
    writer.add_uint32("test.count", 7)
    writer.add_array("tokenizer.ggml.tokens", [f"tok{i}" for i in range(5000)])  # strings to skip
    writer.add_array("tokenizer.ggml.scores", [float(i) for i in range(100)])
    writer.add_bool("test.flag", True)
    if template is not None:
        writer.add_chat_template(template)
    writer.add_string("test.after", "after the template")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_gguf_reader_matches_gguf_package(tmp_path):
    template = '{{ bos_token }}GGUF template ✓ <|"|>'
    path = write_gguf(tmp_path / "m.gguf", template)
    assert read_gguf_metadata_string(path) == template
    assert read_gguf_metadata_string(path, "test.after") == "after the template"
    assert read_gguf_metadata_string(path, "missing.key") is None
    reader = gguf.GGUFReader(path)
    assert reader.get_field("tokenizer.chat_template").contents() == template
    with pytest.raises(ValueError, match="not a string"):
        read_gguf_metadata_string(path, "test.count")


def test_gguf_source(tmp_path, offline):
    path = write_gguf(tmp_path / "m.gguf", "GGUF {{ bos_token }}")
    tmpl = load_template("gemma-4-31b", gguf=str(path))
    p = tmpl.provenance
    assert tmpl.text == "GGUF {{ bos_token }}"
    assert (p["source"], p["location"], p["file"], p["key"]) == ("gguf", str(path), "m.gguf", "tokenizer.chat_template")
    assert p["fallback"] is False and p["attempts"] == [] and p["fallback_note"] == ""


def test_gguf_without_template_or_not_gguf_is_an_error(tmp_path, offline):
    def error(path):
        with pytest.raises(TemplateNotFoundError) as info:
            load_template("gemma-4-31b", gguf=str(path))
        return str(info.value)

    no_tmpl = write_gguf(tmp_path / "none.gguf", None)
    assert error(no_tmpl).endswith(f"gguf: {no_tmpl}: no tokenizer.chat_template metadata")
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf at all")
    assert error(junk).endswith(f"gguf: {junk}: not a GGUF file (bad magic)")
    truncated = tmp_path / "trunc.gguf"
    truncated.write_bytes(write_gguf(tmp_path / "full.gguf", "T").read_bytes()[:200])
    assert "truncated" in error(truncated)


def test_sdist_vocab_gguf_embeds_an_older_gemma4_template(offline):
    path = sdist_file(SDIST_GGUF)
    tmpl = load_template("gemma-4-e2b", gguf=str(path))
    assert tmpl.source == "gguf" and tmpl.provenance["file"] == "ggml-vocab-gemma-4.gguf"
    assert tmpl.sha256 == SDIST_GGUF_TEMPLATE_SHA256
    assert tmpl.text.startswith("{%- macro format_parameters(properties, required) -%}")
    assert tmpl.text != sdist_text()  # older than the sdist's .jinja: no reasoning channel, no tool_response
    assert "reasoning_content" not in tmpl.text and "reasoning_content" in sdist_text()

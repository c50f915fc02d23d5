"""canitoolcall 0.1.1's fixtures as the ``peer-canitoolcall`` slice, and the rendered corpus written in its spec.

Real data: the pinned wheel (downloaded once into the harness cache), its fixtures and its own JSON schemas
(``canitoolcall/_data/spec/*.schema.json``, checked with ``jsonschema``), and the catalog's chat templates.
Bad input is read from folders written here.
"""

from __future__ import annotations

import collections
import json
import shutil
import zipfile
from pathlib import Path

import jsonschema
import pytest

from harness.assets.pypi import WheelFetchError
from harness.cli import main
from harness.core.cases import SLICES, CaseFileError
from harness.core.errors import TemplateNotFoundError, TemplateRenderError
from harness.corpus.build import build_corpus
from harness.corpus.peers import canitoolcall
from harness.corpus.peers.canitoolcall import SLICE, load_suite, peer_cases, wheel_member
from harness.corpus.peers.canitoolcall_export import ExportError, family_slug, write_fixtures
from harness.formats import all_formats, get_format
from harness.template.catalog import get_model, list_models
from harness.template.render import render_messages
from harness.template.sources import load_template

REVISION = "0123456789abcdef0123456789abcdef01234567"  # a well-formed commit for the exported family.json
#: measured on canitoolcall 0.1.1 (469 fixtures): cases per harness format ...
MAPPED = {
    "deepseek_v3": 17,
    "deepseek_v31": 12,
    "deepseek_v32": 17,
    "deepseek_v4": 18,
    "deepseek_v41": 21,
    "gemma4": 48,
    "glm45": 19,
    "glm47": 32,
    "harmony": 51,
    "hermes": 50,
    "kimi_k2": 26,
    "kimi_k3": 23,
    "llama3_json": 24,
    "llama4_pythonic": 10,
    "mistral": 33,
    "mistral_reasoning": 14,
    "qwen3_coder": 54,
}
#: ... and the fixtures no harness format reads, per reference model (the selectors' comments say why): none.
UNMAPPED: dict[str, int] = {}


@pytest.fixture(scope="module")
def suite():
    return load_suite()


def _schemas():
    return {name: json.loads(wheel_member(f"spec/{name}.schema.json")) for name in ("fixture", "family")}


def mapping_table(suite) -> list[tuple[str, str, int]]:
    """``[(family/models[0], format or "-", count)]`` over the whole suite."""
    rows = collections.Counter()
    for fmt, cases in suite.cases.items():
        for case in cases:
            rows[(f"{case.extra['peer']['family']}/{case.extra['peer']['models'][0]}", fmt)] += 1
    for _, reason in suite.unsupported:
        rows[(reason.rsplit(" ", 1)[1], "-")] += 1
    return sorted((key, fmt, n) for (key, fmt), n in rows.items())


# --- the real wheel -------------------------------------------------------------------------------------------


def test_the_wheel_maps_all_469_fixtures_to_17_formats(suite):
    table = mapping_table(suite)
    print("\n" + "\n".join(f"{key:60s} {fmt:14s} {n:3d}" for key, fmt, n in table))
    assert suite.version == "0.1.1" and suite.sha256 == canitoolcall.WHEEL_SHA256
    assert {fmt: len(cases) for fmt, cases in suite.cases.items()} == MAPPED
    reasons = collections.Counter(reason for _, reason in suite.unsupported)
    assert reasons == {f"no harness format for canitoolcall {key}": n for key, n in UNMAPPED.items()}
    assert sum(MAPPED.values()) + sum(UNMAPPED.values()) == 469
    assert suite.skipped == {}  # every mapped generation prompt starts with its format's role header


def test_cases_carry_prefix_expected_and_provenance(suite):
    cases = {c.id: c for c in suite.all_cases()}
    assert len(cases) == 469 and all(c.slice == SLICE and c.format in MAPPED for c in cases.values())
    gemma = cases["canitoolcall/gemma4/single-call"]
    assert gemma.prefix == "<|channel>thought\n<channel|>" and gemma.text.startswith("<|tool_call>call:get_weather")
    assert gemma.expected.tool_calls[0].arguments == {"city": "Paris", "unit": "c"}
    assert gemma.expected.content is None and gemma.kind == "strict" and gemma.text_provenance == "full"
    assert cases["canitoolcall/gemma4/single-call-thinking"].prefix == ""
    assert cases["canitoolcall/gemma4/multi-turn-final-answer"].prefix == ""  # an empty generation prompt
    assert cases["canitoolcall/qwen3-hermes/single-call-no-thinking"].prefix == "<think>\n\n</think>\n\n"
    assert cases["canitoolcall/qwen3-xml/q38-single-call"].prefix == "<think>\n"
    assert cases["canitoolcall/deepseek/v32-single-call"].prefix == "</think>"
    assert cases["canitoolcall/glm/glm47-single-call"].prefix == "<think>"  # null: the family's default prompt
    assert cases["canitoolcall/gpt-oss/harmony-single-call"].prefix == ""
    assert cases["canitoolcall/mistral/v11-single-call"].prefix == ""
    magistral = cases["canitoolcall/mistral/vllm-v11-think-text"]  # Magistral Small 2506: text <think> reasoning
    assert (magistral.format, magistral.text, magistral.prefix) == ("mistral", "<think>r</think>c", "")
    assert (magistral.expected.content, magistral.expected.reasoning) == ("c", "r")
    thinking = cases["canitoolcall/gemma4/no-call-thinking"].expected
    assert (thinking.content, thinking.reasoning) == ("Hello! How can I help you today?", thinking.reasoning)
    assert thinking.reasoning.startswith("The user is just greeting me.")
    peer = gemma.extra["peer"]
    assert peer["suite"] == "canitoolcall" and peer["version"] == "0.1.1" and peer["where"] == "gemma4/basic.jsonl:1"
    assert peer["provenance"]["kind"] == "template_render" and peer["tokenizer"]["repo"] == "google/gemma-4-31B-it"
    assert gemma.source == "canitoolcall 0.1.1 gemma4/basic.jsonl:1"
    assert gemma.extra["token_ids"] and gemma.extra["tokenizer"] == peer["tokenizer"]
    errors = [c for c in cases.values() if c.kind == "drift"]
    assert len(errors) == 35 and all(
        not c.expected.tool_calls and c.expected.content is None and c.extra["expected_error"]["accept"] for c in errors
    )
    malformed = cases["canitoolcall/gemma4/vllm-malformed-no-brace"].extra["expected_error"]
    assert malformed["accept"] == ["no_tool_calls", "content_passthrough"]
    assert all(c.expected.content is None or c.expected.content for c in cases.values())  # "" is None


def test_peer_cases_and_build_corpus_give_the_format_its_cases_and_the_unsupported(suite):
    cases, unsupported = peer_cases(get_format("gemma4"))
    assert len(cases) == 48 and unsupported == []  # 0.1.1: every fixture maps (UNMAPPED)
    corpus = build_corpus(None, get_format("harmony"), seed=0, n_generated=0, slices=(SLICE,))
    assert corpus.count(SLICE) == 51 == len(corpus.cases) and corpus.unsupported == []
    assert SLICE in SLICES and SLICES[:4] == ("curated", "generated", "observed", "drift")


def test_role_headers_are_what_the_catalog_templates_start_the_turn_with():
    """The generation prompt of each format's templates (thinking on and off) ends with a role header and at most
    what the template pre-fills after it."""
    checked = set()
    for entry in list_models():
        fmt = get_format(entry.format)
        if not fmt.role_headers or entry.format in checked:
            continue
        try:
            template = load_template(entry.name)
        except TemplateNotFoundError:
            continue
        prompts = []
        for tools in (None, []):  # Command R+'s template iterates tools unguarded: it renders with [] only
            try:
                prompts = [
                    render_messages(
                        template,
                        [{"role": "user", "content": "hi"}],
                        tools,
                        True,
                        **{**fmt.template_vars, "enable_thinking": on},
                    )
                    for on in (True, False)
                ]
                break
            except TemplateRenderError:
                continue
        if not prompts:
            continue
        for prompt in prompts:
            end = max(prompt.rfind(h) + len(h) for h in fmt.role_headers if h in prompt)
            assert len(prompt) - end <= 34, (entry.name, prompt[-80:])  # Cohere: <|START_THINKING|><|END_THINKING|>
        checked.add(entry.format)
    # llama4_pythonic and deepseek_v41 have no template offline: their role headers are canitoolcall's defaults
    no_template = {"llama4_pythonic", "deepseek_v41"}
    assert checked == {name for name, spec in all_formats().items() if spec.role_headers} - no_template


def test_no_two_formats_claim_one_selector():
    entries = [e for spec in all_formats().values() for e in spec.peers]
    assert len(entries) == len(set(entries))


# --- writing the harness' corpus in the spec, and reading it back ---------------------------------------------


@pytest.mark.parametrize("model", ["gemma-4-e2b", "qwen3-0.6b", "glm-4.7-flash", "gpt-oss-120b"])
def test_export_validates_against_canitoolcall_schemas_and_reads_back_the_same_cases(model, tmp_path):
    fmt = get_format(get_model(model).format)
    corpus = build_corpus(load_template(model), fmt, seed=3, n_generated=8, slices=("curated", "generated", "drift"))
    files, count, skipped = write_fixtures(
        corpus.cases, tmp_path, fmt, model=get_model(model).hf_repo, revision=REVISION
    )
    assert count == len(corpus.cases) and skipped == []
    schemas = _schemas()
    family = tmp_path / family_slug(fmt)
    assert files[0] == family / "family.json"
    jsonschema.validate(json.loads(files[0].read_text()), schemas["family"])
    checker = jsonschema.Draft202012Validator(schemas["fixture"], format_checker=jsonschema.FormatChecker())
    for path in files[1:]:
        for line in path.read_text(encoding="utf-8").split("\n"):
            if line.strip():
                errors = [f"{list(e.path)}: {e.message}" for e in checker.iter_errors(json.loads(line))]
                assert not errors, errors
    back = load_suite(tmp_path)
    assert back.unsupported == [] and back.skipped == {} and back.version == "folder"
    by_origin = {c.note.split(" case ", 1)[1].split(" ", 1)[0]: c for c in back.all_cases()}
    assert len(by_origin) == count
    for case in corpus.cases:
        got = by_origin[case.id]
        assert (got.format, got.text, got.prefix, got.tools) == (case.format, case.text, case.prefix, case.tools)
        drift = case.extra.get("drift") or {}
        if drift.get("mutator", "").startswith("truncate-") and not case.expected.tool_calls:
            assert got.kind == "drift" and got.extra["expected_error"]["accept"] == list(canitoolcall.ACCEPT)
            continue
        want = case.expected
        assert got.kind == "strict" and got.expected.tool_calls == want.tool_calls
        assert (got.expected.content, got.expected.reasoning) == (want.content or None, want.reasoning or None)


def test_export_needs_a_commit_and_skips_cases_that_are_not_renders(tmp_path):
    fmt = get_format("gemma4")
    cases, _ = peer_cases(fmt)
    with pytest.raises(ExportError, match="not a 40-hex commit"):
        write_fixtures(cases, tmp_path, fmt, model="google/gemma-4-E2B-it", revision="main")
    _, count, skipped = write_fixtures(cases[:3], tmp_path, fmt, model="google/gemma-4-E2B-it", revision=REVISION)
    assert (
        count == 0
        and [why for _, why in skipped]
        == ["slice peer-canitoolcall: not a template render (export the source it was read from instead)"] * 3
    )


def test_cli_corpus_export_writes_a_folder_and_names_the_missing_revision(tmp_path, capsys):
    out = tmp_path / "fixtures"
    args = ["corpus", "export", "--model", "gemma-4-e2b", "--spec", "canitoolcall", "--out", str(out)]
    assert main([*args, "--cases", "2", "--slices", "curated,generated"]) == 2  # the sdist template has no commit
    assert "pass --revision COMMIT" in capsys.readouterr().err
    assert main([*args, "--cases", "2", "--slices", "curated,generated", "--revision", REVISION]) == 0
    assert "canitoolcall fixtures" in capsys.readouterr().out
    assert sorted(p.name for p in (out / "gemma4").iterdir()) == ["curated.jsonl", "family.json", "generated.jsonl"]
    assert {c.format for c in load_suite(out).all_cases()} == {"gemma4"}
    # observed cases are no template render: each skip reason is listed, and an export of nothing is an error
    assert main([*args, "--cases", "0", "--slices", "observed", "--revision", REVISION]) == 1
    captured = capsys.readouterr()
    assert "wrote 0 canitoolcall fixtures" in captured.out and "skipped " in captured.out
    assert "slice observed: not a template render" in captured.out
    assert captured.err.strip() == "error: nothing to write: every case of gemma-4-e2b was skipped"


# --- bad input ------------------------------------------------------------------------------------------------


@pytest.fixture
def folder(tmp_path):
    """A copy of the wheel's gemma4 family folder: family.json and basic.jsonl."""
    target = tmp_path / "fixtures" / "gemma4"
    target.mkdir(parents=True)
    for name in ("family.json", "basic.jsonl"):
        (target / name).write_text(wheel_member(f"fixtures/gemma4/{name}"), encoding="utf-8")
    return tmp_path


def _lines(folder: Path) -> list[dict]:
    path = folder / "fixtures" / "gemma4" / "basic.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]


def _write(folder: Path, records: list, name: str = "basic.jsonl", family: str = "gemma4") -> Path:
    path = folder / "fixtures" / family / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def _error(folder: Path) -> str:
    with pytest.raises(CaseFileError) as err:
        load_suite(folder)
    message = str(err.value)
    assert "\n" not in message
    return message


def test_a_folder_reads_like_the_wheel(folder):
    back = load_suite(folder)
    assert [c.id for c in back.cases["gemma4"]] == [f"canitoolcall/{r['id']}" for r in _lines(folder)]
    assert back.version == "folder" and len(back.sha256) == 64
    assert load_suite(folder / "fixtures").sha256 == back.sha256 == load_suite(folder / "fixtures" / "gemma4").sha256


def test_a_malformed_line_is_one_error_naming_file_line_and_field(folder):
    records = _lines(folder)
    path = _write(folder, [*records[:2], "{not json", *records[3:]])
    assert _error(folder).startswith(f"{path}:3: invalid JSON")
    bad_tool = json.loads(json.dumps(records[1]))
    bad_tool["tools"][0]["function"].pop("name")
    _write(folder, [records[0], bad_tool])
    assert _error(folder) == f"{path}:2: field 'tools[0].function.name' is missing (expected a non-empty string)"
    bad_tool["tools"][0]["function"].update(name="f", parameters={"$ref": "#"})  # a $ref cycle
    _write(folder, [records[0], bad_tool])
    assert _error(folder).startswith(f"{path}:2: field 'tools[0].function.parameters': not a valid JSON schema: $ref")
    both = {**records[0], "expected_error": {"reason": "x", "accept": ["no_tool_calls"]}}
    _write(folder, [both])
    assert _error(folder) == f"{path}:1: field 'expected' / 'expected_error': exactly one of them is required"
    for field, value, needle in [
        ("expected_error", {"reason": "cut", "accept": ["partial_call"]}, "field 'expected_error.accept'"),
        ("raw_output", None, "field 'raw_output' must be a string"),
        ("spec_version", "v1", "field 'spec_version' is 'v1'"),
        ("output_token_ids", [1, -2], "field 'output_token_ids'"),
        ("family", "qwen3-hermes", "field 'family' is 'qwen3-hermes'"),
        ("tags", [], "field 'tags'"),
    ]:
        record = {k: v for k, v in records[0].items() if not (field == "expected_error" and k == "expected")}
        _write(folder, [{**record, field: value}])
        message = _error(folder)
        assert message.startswith(f"{path}:1: ") and needle in message, message
    _write(folder, [records[0], records[0]])
    assert _error(folder).startswith(f"{path}:2: duplicate id 'gemma4/single-call' (first at {path}:1)")


def test_a_malformed_family_file_names_the_file_and_field(folder):
    family = folder / "fixtures" / "gemma4" / "family.json"
    data = json.loads(family.read_text())
    family.write_text(json.dumps({**data, "slug": "gemma"}))
    assert _error(folder) == f"{family}: field 'slug' is 'gemma'; it must be the folder name 'gemma4'"
    family.write_text(json.dumps({**data, "reference_models": [{"revision": "x"}]}))
    assert "field 'reference_models[0].repo' must be a non-empty string" in _error(folder)
    family.write_text("{\n  broken")
    assert _error(folder).startswith(f"{family}:2: invalid JSON")
    family.unlink()
    assert "no family.json in its folder 'gemma4'" in _error(folder)


def test_an_unknown_family_or_major_version_is_counted_unsupported_not_an_error(folder):
    records = _lines(folder)
    other = folder / "fixtures" / "toy"
    other.mkdir()
    family = json.loads(wheel_member("fixtures/gemma4/family.json"))
    (other / "family.json").write_text(json.dumps({**family, "slug": "toy"}))
    toy = {**records[0], "id": "toy/single-call", "family": "toy"}
    _write(folder, [toy], family="toy")
    _write(folder, [records[0], {**records[1], "spec_version": "1.0", "future_field": 1}])
    back = load_suite(folder)
    assert [c.id for c in back.cases["gemma4"]] == ["canitoolcall/gemma4/single-call"]
    assert back.unsupported == [
        ("gemma4/single-call-thinking", "spec_version 1.0: unknown major version (this reader knows 0.x)"),
        ("toy/single-call", "no harness format for canitoolcall toy/google/gemma-4-31B-it"),
    ]
    _write(folder, [{**records[0], "spec_version": "0.7", "future_field": {"any": 1}}])
    assert len(load_suite(folder).cases["gemma4"]) == 1  # a minor version may add optional fields


def test_a_generation_prompt_without_the_role_header_is_listed_not_guessed(folder):
    record = {**_lines(folder)[0], "generation_prompt": "<start_of_turn>model\n"}
    _write(folder, [record])
    back = load_suite(folder)
    assert back.cases == {} and back.skipped == {
        "gemma4": [
            (
                "gemma4/single-call",
                "generation prompt '<start_of_turn>model\\n' starts with no role header of gemma4 ('<|turn>model\\n')",
            )
        ]
    }


# --- the wheel itself -----------------------------------------------------------------------------------------


def test_offline_without_the_cache_names_the_pip_command(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLCALL_HARNESS_CACHE", str(tmp_path))
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # pip as offline: no index to download from
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    with pytest.raises(WheelFetchError) as err:
        canitoolcall.wheel_path()
    message = str(err.value)
    assert "could not download canitoolcall==0.1.1" in message
    assert "`pip download --no-deps --only-binary=:all: -d " in message and "canitoolcall==0.1.1`" in message


def test_a_wheel_that_is_not_the_pinned_one_is_refused(tmp_path, monkeypatch):
    folder = tmp_path / "peers" / "canitoolcall-0.1.1"
    folder.mkdir(parents=True)
    shutil.copy(canitoolcall.wheel_path(), folder / "canitoolcall-0.1.1-py3-none-any.whl")
    monkeypatch.setenv("TOOLCALL_HARNESS_CACHE", str(tmp_path))
    assert canitoolcall.wheel_path().parent == folder  # a wheel put in the cache by hand is used
    with zipfile.ZipFile(folder / "canitoolcall-0.1.1-py3-none-any.whl", "a") as wheel:
        wheel.writestr("extra.txt", "not in the published wheel")
    with pytest.raises(WheelFetchError, match="not the pinned a8a0ea82"):
        canitoolcall.wheel_path()

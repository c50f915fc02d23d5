"""FormatSpec (harness/formats): every format module loads a valid spec named after it, a bad field fails when
the spec is built with one error line naming the format and the field, and formats are found by discovery with a
did-you-mean for unknown names."""

from __future__ import annotations

import dataclasses

import pytest

from harness.assets.tokenizers import TOKENIZERS
from harness.formats import (
    ARGUMENT_STYLES,
    DEFAULT_FORMAT,
    OTHER_FORMAT,
    FormatSpec,
    FormatSpecError,
    Markers,
    UnknownFormatError,
    all_formats,
    case_formats,
    format_edge_scenarios,
    get_format,
    known_formats,
)
from harness.formats import harmony as harmony_module

GOOD = {
    "name": "toy",
    "markers": ("<call>", "</call>", "<end>"),
    "stop_markers": ("<end>",),
    "call": Markers("<call>", "</call>"),
    "arguments": "json",
    "vocabulary": None,
    "no_vocabulary": "a toy format has no tokenizer",
    "source": "this test",
}


def test_every_format_module_has_a_valid_spec_named_after_it():
    specs = all_formats()
    assert list(specs) == known_formats() and len(specs) >= 13
    assert DEFAULT_FORMAT in specs and OTHER_FORMAT not in specs
    assert case_formats() == (*known_formats(), OTHER_FORMAT)
    for name, spec in specs.items():
        assert spec.name == name and spec.arguments in ARGUMENT_STYLES
        assert spec.call_open == (spec.section or spec.call).open and spec.call_open
        assert (spec.vocabulary is None) == bool(spec.no_vocabulary), name


def test_every_vocabulary_is_a_real_tokenizer():
    named = {name: spec.vocabulary for name, spec in all_formats().items() if spec.vocabulary}
    assert set(named.values()) <= set(TOKENIZERS)
    pinned = {
        "gemma4": "gemma4",
        "hermes": "qwen",
        "qwen3_coder": "qwen",
        "llama3_json": "llama",
        "firefunction_v2": "llama",
        "functionary_v32": "llama",
        "deepseek_v3": "deepseek",
        "deepseek_v31": "deepseek",
        "deepseek_v32": "deepseek",
        "deepseek_v4": "deepseek",
        "deepseek_v41": "deepseek",
    }
    assert named.items() >= pinned.items()


def test_derived_attributes_keep_their_meaning():
    kimi, llama, harmony, mistral = (get_format(n) for n in ("kimi_k2", "llama3_json", "harmony", "mistral"))
    assert (kimi.call_open, kimi.call_close) == ("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>")
    assert kimi.call == Markers("<|tool_call_begin|>", "<|tool_call_end|>")
    assert (llama.call.close, llama.call_close, harmony.call.close, harmony.call_close) == (None, "}", None, "<|call|>")
    assert (mistral.call.close, mistral.call_close) == (None, "")
    assert get_format("glm47").reasoning_markers == ("<think>", "</think>") and not get_format("gemma4").reasoning
    assert get_format("gemma4").reasoning_markers == ()
    assert not llama.call_open_is_marker and not harmony.call_open_is_marker and mistral.call_open_is_marker


def test_hooks_are_named_fields():
    harmony = get_format("harmony")
    assert harmony.compose_content_before is harmony_module.compose_content_before
    assert harmony.edge_scenarios is harmony_module.edge_scenarios
    assert get_format("gemma4").edge_scenarios is None and format_edge_scenarios("gemma4") == []
    assert [s.id for s in format_edge_scenarios("harmony")] == [s.id for s in harmony_module.edge_scenarios()]


def test_a_good_spec_builds():
    spec = FormatSpec(**GOOD)
    assert (spec.call_open, spec.call_close, spec.reasoning_markers) == ("<call>", "</call>", ())


XML = {**GOOD, "arguments": "xml-values", "parameter": Markers("<p=", "</p>")}
BAD = [
    ("name", {**GOOD, "name": "Bad-Name"}),
    ("markers", {**GOOD, "markers": ["<call>"]}),
    ("markers", {**GOOD, "markers": ()}),
    ("markers", {**GOOD, "markers": ("<call>", "")}),
    ("markers", {**GOOD, "markers": ("<call>", "<call>")}),
    ("stop_markers", {**GOOD, "stop_markers": "<end>"}),
    ("call", {**GOOD, "call": ("<call>", "</call>")}),
    ("call", {**GOOD, "call": Markers("", "</call>")}),
    ("call", {**GOOD, "call": Markers("<call>", "")}),  # "no closer" is None, not ""
    ("section", {**GOOD, "section": Markers("<s>", None)}),
    ("call_end", {**GOOD, "call_end": "}"}),  # the call has a closer
    ("reasoning", {**GOOD, "reasoning": Markers("<think>", None)}),
    ("thought", {**GOOD, "thought": Markers("", "<channel|>")}),
    ("grammar", {**GOOD, "grammar": "gemma 4"}),
    ("arguments", {**GOOD, "arguments": "yaml"}),
    ("string_delimiter", {**GOOD, "arguments": "quote-token"}),
    ("string_delimiter", {**GOOD, "string_delimiter": '<|"|>'}),
    ("argument_key", {**GOOD, "argument_key": Markers("<k>", "</k>"), "argument_value": Markers("<v>", "</v>")}),
    ("argument_value", {**GOOD, "arguments": "xml-values", "argument_key": Markers("<k>", "</k>")}),
    ("parameter", {**GOOD, "arguments": "xml-values"}),
    ("parameter", {**GOOD, "parameter": Markers("<p=", "</p>")}),
    ("parameter", {**XML, "parameter": Markers("<p=", None)}),
    ("parameter_padding", {**GOOD, "parameter_padding": "\n"}),
    ("parameter_padding", {**XML, "parameter_padding": 1}),
    ("call_newlines", {**GOOD, "call_newlines": "yes"}),
    ("string_arguments", {**GOOD, "string_arguments": 1}),
    ("call_prefill", {**GOOD, "call_prefill": ">>>"}),  # not the call opener
    ("closing_turn", {**GOOD, "closing_turn": None}),
    ("vocabulary", {**GOOD, "vocabulary": "", "no_vocabulary": ""}),
    ("no_vocabulary", {**GOOD, "no_vocabulary": ""}),
    ("no_vocabulary", {**GOOD, "vocabulary": "qwen"}),
    ("unrepresentable", {**GOOD, "unrepresentable": ("",)}),
    ("template_vars", {**GOOD, "template_vars": {1: "x"}}),
    ("declare_tools", {**GOOD, "declare_tools": {"description": ""}}),
    ("edge_scenarios", {**GOOD, "edge_scenarios": ["not", "callable"]}),
    ("compose_content_before", {**GOOD, "compose_content_before": "text"}),
    ("role_headers", {**GOOD, "role_headers": "<|im_start|>assistant\n"}),
    ("role_headers", {**GOOD, "role_headers": ("",)}),
    ("peers", {**GOOD, "peers": ("gemma4",)}),
    ("peers", {**GOOD, "peers": ("vllm:gemma4",)}),
    ("peers", {**GOOD, "peers": ("canitoolcall:",)}),
    ("peers", {**GOOD, "peers": ("canitoolcall:a", "canitoolcall:a")}),
    ("peers", {**GOOD, "peers": ["llama.cpp:x.jinja"]}),
    ("peers", {**GOOD, "peers": ("vllm:x",)}),
    ("peers", {**GOOD, "peers": ("llama.cpp:",)}),
    ("source", {**GOOD, "source": ""}),
]


@pytest.mark.parametrize("field, values", BAD, ids=[f"{f}-{i}" for i, (f, _) in enumerate(BAD)])
def test_a_bad_field_names_the_format_and_the_field(field, values):
    with pytest.raises(FormatSpecError) as err:
        FormatSpec(**values)
    message = str(err.value)
    assert message.startswith(f"format {values['name']!r}: field {field!r} ") and "\n" not in message


def test_every_field_has_a_bad_value_case():
    checked = {field for field, _ in BAD}
    assert checked == {f.name for f in dataclasses.fields(FormatSpec)}


def test_the_real_modules_fail_on_a_bad_field():
    with pytest.raises(FormatSpecError, match="format 'gemma4': field 'call' has an empty or non-string closer"):
        dataclasses.replace(get_format("gemma4"), call=Markers("<|tool_call>", ""))


def test_unknown_format_suggests_close_names():
    with pytest.raises(UnknownFormatError) as err:
        get_format("gemma5")
    known = "known: apertus, apriel, cohere, command_r, deepseek_v3, deepseek_v31, "
    assert str(err.value).startswith(f"unknown format 'gemma5' (did you mean 'gemma4'?); {known}")
    with pytest.raises(KeyError, match="unknown format 'zzz'; known: "):
        get_format("zzz")
    with pytest.raises(KeyError):
        get_format("_spec")  # a helper module of the package, not a format

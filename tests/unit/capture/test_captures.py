"""Capture records: written as they arrive, read back with clear errors, and re-scored one-shot and on the
recorded token pieces. Captures here are what a model forced to the ideal answer writes: the real Gemma 4
template's text for it, split into the real tokenizer's pieces."""

import json

import pytest

from harness.assets.tokenizers import token_pieces
from harness.capture.records import Capture, CaptureFileError, CaptureWriter, read_captures
from harness.capture.suites import load_suite
from harness.core.messages import ToolCall
from harness.core.scenarios import Scenario
from harness.formats import get_format
from harness.parse.registry import create_parsers
from harness.score.captures import score_capture
from harness.template.render import render_scenario
from harness.template.sources import load_template

FMT = get_format("gemma4")


def capture_of(prompt, text: str, prefix: str) -> Capture:
    return Capture(
        prompt_id=prompt.id,
        suite=prompt.suite,
        format="gemma4",
        backend="fixture",
        model={"name": "ideal-answer", "file": "", "sha256": ""},
        text=text,
        prefix=prefix,
        pieces=[[piece, ids] for piece, ids in token_pieces(text, "gemma4")],
        finish_reason="stop",
    )


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    template = load_template("gemma-4-31b")
    path = tmp_path_factory.mktemp("cap") / "captures.jsonl"
    prompts = {p.id: p for p in load_suite("code-with-quotes")[:6]}
    with CaptureWriter(path) as writer:
        for prompt in prompts.values():
            call = prompt.calls[0]
            arguments = {**call.pinned, "content": 'print("it\'s done, {x}")\n' + "\n".join(call.contains["content"])}
            case = render_scenario(
                template, Scenario(prompt.id, prompt.tools, [ToolCall(call.name, arguments)]), FMT, slice="curated"
            )
            writer.write(capture_of(prompt, case.text, case.prefix))
        writer.write(
            Capture(
                prompt_id="code-01",
                suite="code-with-quotes",
                format="gemma4",
                backend="openai",
                model={"name": "server"},
                error="connection refused (127.0.0.1:9)",
            )
        )
    return path, prompts


def test_captures_round_trip_through_the_file(captures):
    path, _ = captures
    records = read_captures(path)
    assert len(records) == 7 and records[-1].error.startswith("connection refused")
    assert all(r.pieces and "".join(p for p, _ in r.pieces) == r.text for r in records[:-1])
    assert any(48 in ids for r in records[:-1] for _, ids in r.pieces)  # <|tool_call> is one real token


def test_every_parser_is_rescored_one_shot_and_on_the_recorded_pieces(captures):
    path, prompts = captures
    parsers, _ = create_parsers(["own", "transformers", "mlx-lm"], "gemma4")
    results = {}
    for capture in read_captures(path):
        prompt = prompts[capture.prompt_id]
        for parser in parsers:
            for mode, score, _ in score_capture(capture, prompt, parser, FMT):
                results[(parser.name, capture.prompt_id, capture.backend, mode)] = score
    own = [
        s for (name, _, backend, _), s in results.items() if name == "toolcall-harness:gemma4" and backend == "fixture"
    ]
    assert len(own) == 12 and all(s.passed for s in own)
    failed = results[("toolcall-harness:gemma4", "code-01", "openai", "capture")]
    assert (failed.verdict, failed.error_type) == ("error", "capture_error")
    # The references read the quote-heavy code one-shot and streamed; every outcome is recorded, none dropped.
    assert {mode for (_, _, _, mode) in results} == {"oneshot", "pieces", "capture"}


@pytest.mark.parametrize(
    "record, message",
    [
        ({"prompt_id": "a", "suite": "s", "format": "gemma4", "backend": "b"}, "field 'model' must be a dict"),
        ({"prompt_id": "a", "suite": "s", "format": "gemma4", "backend": "b", "model": {}}, "needs 'text'"),
        (
            {
                "prompt_id": "a",
                "suite": "s",
                "format": "gemma4",
                "backend": "b",
                "model": {},
                "text": "ab",
                "pieces": [["a", [1]]],
            },
            "pieces do not join to the text",
        ),
        (
            {"prompt_id": "a", "suite": "s", "format": "gemma4", "backend": "b", "model": {}, "text": "x", "colour": 1},
            "unknown field(s) colour",
        ),
    ],
)
def test_malformed_capture_lines_are_named_by_file_and_line(tmp_path, record, message):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(CaptureFileError, match="c.jsonl:1: ") as info:
        read_captures(path)
    assert message in str(info.value)

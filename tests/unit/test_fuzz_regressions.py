"""The inputs coverage-guided fuzzing found (``make fuzz``, ``docs/fuzzing.md``), replayed through the same checks
without atheris: each passes its target's check (no undeclared exception, one-line errors, one-shot equal to the
stream cut at the input's offsets) within the per-input time bound. Inputs are inline, as the fuzzer wrote them (or,
where marked, as they were written by hand while the targets were made)."""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import pytest

from harness.core.messages import parse_arguments
from harness.engines.client import WorkerError, decode_response

ROOT = Path(__file__).resolve().parents[2]


def _load_targets():
    spec = importlib.util.spec_from_file_location("fuzz_targets", ROOT / "fuzz" / "targets.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


targets = _load_targets()

#: (target, input, what went wrong before the fix)
REGRESSIONS = [
    (
        "worker-reply",
        b'{"id":\r,"ok":tru\xae,"result":{"deltas":[{"content":"S\x00\x00\x00\x00\x00\x00\x00=}\n',
        "a reply line holding a carriage return gave a WorkerError message of two lines",
    ),
    (
        "capture",
        b'{"prompt_id": "nested-05", "suite": "nested-args", "format": "hermes", "backend": "llama-cpp", "mode'
        b'l": {"name": "llama-cpp", "file": "model.gguf", "sha256": "00000000000000000000000000000000000000000'
        b'00000000000000000000000"}, "text": "<tool_call>\\n{\\"name\\": \\"create_order\\", \\"arguments\\": {}}", "'
        b'pieces": 2, "prefix": "", "finish_reason": null, "elapsed_s": 0.0, "tokens": 0, "sampling": {"server'
        b'_message": 1e+308}, "seed": -1, "versions": {}, "error": null, "server_message": null, "forced": [],'
        b' "options": {}}\n',
        "a capture whose pieces is a number raised TypeError in the reader",
    ),
    (
        "cases",
        b'{"id": "nested-object", "format": "", "text": "", "expected": {"content": "\\r", "tool_calls": [{"nam'
        b'e": "query_issues", "function": null}]}, "tools": ["query_issues"], "prefi;": "", "tags": 1000000000'
        b'000000000000000000000, "seed": "", "stop": "<|im_end|>\\n"}\n{" are ',
        "a case whose tags is a number raised TypeError in the reader",
    ),
    (
        "parser-kimi_k3",
        b'\x12A\x00\x83\x00<|close|>thi|open|>tools<|close|>think<|sep|><|sep|><|open|>call tool="get_timdex'
        b'<|close|>message<|et_weather"<|sep|><|close|>tools<|sep|><|close|>message<|sep|>',
        "a Kimi K3 call without its closer, ended by the block closer, was read whole but surfaced when streamed "
        "with the block closer cut in two",
    ),
    # found by hand while the targets were written, by inputs of the shapes they fuzz
    (
        "worker-reply",
        b"[" * 100_000 + b"\n",
        "a reply line nested past Python's JSON reader escaped the client as RecursionError",
    ),
    (
        "worker-reply",
        b'{"id":1,"ok":true,"result":{"tool_calls":[{"name":"f","arguments":"' + b"[" * 100_000 + b'"}]}}\n',
        "call arguments sent as a JSON string nested past Python's reader raised RecursionError",
    ),
    (
        "suite",
        b'{"id":"a","suite":"s","messages":[],"tools":[{"function":{"name":"f\\n","parameters":{"type":"objec"}}}],'
        b'"expect":{"calls":[]}}\n',
        "a tool name with a newline made the suite's schema error two lines",
    ),
]


@pytest.mark.parametrize(
    ("target", "data", "what"), REGRESSIONS, ids=[f"{t}-{i}" for i, (t, *_) in enumerate(REGRESSIONS)]
)
def test_a_fuzz_found_input_passes_its_check_in_bounded_time(target, data, what):
    check = targets.make_check(target)
    start = time.monotonic()
    check(data)
    assert time.monotonic() - start < targets.TIMEOUT_S, what


def test_a_worker_reply_error_is_one_printable_line():
    with pytest.raises(WorkerError) as caught:
        decode_response(b'{"id":\r,"ok":1}\x00', 1)
    assert str(caught.value) == 'not a JSON line: {"id":\\r,"ok":1}\\x00'
    reply = b'{"id":1,"ok":false,"error":{"type":"boom","message":"line one\\nline two\\u2028"}}'
    with pytest.raises(WorkerError, match=r"^worker error 'boom': line one\\nline two\\u2028$"):
        decode_response(reply, 1)


def test_kimi_k3_waits_for_a_block_closer_cut_in_two_after_a_call_without_its_closer():
    text = '<|open|>call tool="r"<|sep|><|close|>tools<|sep|>'  # the fuzzer's input, minimised
    for k in range(len(text) + 1):
        targets.parser_check("kimi_k3")(targets.encode_parser_input(text, [k]))


def test_deep_arguments_stay_a_string_and_a_deep_line_is_a_protocol_error():
    assert parse_arguments("[" * 100_000) == "[" * 100_000
    with pytest.raises(WorkerError, match=r"^a JSON line nested too deeply: \[\[\[") as caught:
        decode_response(b"[" * 100_000, 1)
    assert caught.value.kind == "protocol"


def test_a_parser_input_decodes_to_its_text_offsets_prefix_and_tools():
    choices = ("", "<think>", "<think>\n")
    data = targets.encode_parser_input("ab\udcffcd", [4, 1, 1, 9], prefix_index=2, tools=True)
    case = targets.decode_parser_input(data, choices)
    assert case.text == "ab\udcffcd" and case.prefix == "<think>\n" and case.tools == targets.TOOLS
    assert case.splits == (1, 3, 4)  # modulo len(text) + 1 (9 is 3), deduplicated, sorted
    assert targets.decode_parser_input(b"", choices) == targets.ParserInput("", (), "", None)


def test_the_parser_check_catches_a_stream_that_differs_from_the_one_shot_parse(monkeypatch):
    text = '<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>'
    targets.parser_check("hermes")(targets.encode_parser_input(text, [5, 30]))
    real = targets.registry.get_parser("toolcall-harness:hermes")

    class Drifting:
        """The own hermes parser, but its stream drops the last character of every chunk."""

        def __getattr__(self, name):
            return getattr(real, name)

        def stream(self, tools=None, prefix=""):
            session = real.stream(tools, prefix)
            feed = session.feed
            session.feed = lambda chunk, token_ids=None: feed(chunk[:-1])  # type: ignore[method-assign]
            return session

    monkeypatch.setattr(targets.registry, "get_parser", lambda name: Drifting())
    with pytest.raises(targets.Violation, match=r"one-shot .* != streamed .* cut at \[5, 30\]"):
        targets.parser_check("hermes")(targets.encode_parser_input(text, [5, 30]))

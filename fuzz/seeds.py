"""Seed inputs and libFuzzer dictionaries for the targets of ``fuzz/targets.py``, made from what the harness itself
reads and writes (no hand-written samples): ``seeds(target) -> list[bytes]``, ``dictionary(target) -> list[str]``.

- ``parser-<format>``: the texts of the format's curated, generated, drift, observed and peer (canitoolcall,
  llama.cpp) cases, rendered by the first catalog template of the format that loads offline
  (:func:`harness.template.sources.first_offline_template`; the observed and peer cases only when none does), each
  whole with its prefix, then with :data:`targets.TOOLS` and cut in three; texts made of the format's markers too
  (:func:`marker_texts`); the dictionary holds the markers.
- ``cases``: the hermes corpus written by :func:`harness.core.cases.write_cases`, line by line and five lines
  together, and the repository's case files (``tests/seeds/*_cases.jsonl``).
- ``suite``: the shipped suites (``corpora/suites/``), line by line and whole.
- ``capture``: captures of the ``nested-args`` suite's prompts written by :class:`harness.capture.records.CaptureWriter`
  (text with pieces, an error record), one record a file, and a file ending in a torn line.
- ``worker-reply``: the answers of the real worker server (:class:`harness.engines.server.Server`, serving the own
  hermes parser) to hello, parse, open, feed, finish and bad requests.

The reader dictionaries hold the JSON keys the seeds use.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import targets

from harness.capture.records import Capture, CaptureWriter
from harness.capture.suites import load_suite
from harness.core.cases import write_cases
from harness.core.paths import SUITES_DIR
from harness.corpus.build import build_corpus
from harness.engines import server
from harness.formats import get_format
from harness.parse import registry
from harness.template.sources import first_offline_template

ROOT = Path(__file__).resolve().parents[1]
SLICES = ("curated", "generated", "drift", "observed", "peer-canitoolcall", "peer-llama.cpp")
UNRENDERED = ("observed", "peer-canitoolcall", "peer-llama.cpp")
MAX_SEED_BYTES = 16_384


def _cases(fmt: str) -> list:
    spec = get_format(fmt)
    model, template = first_offline_template(fmt)
    if model is None:
        return build_corpus(None, spec, seed=0, n_generated=0, slices=UNRENDERED).cases
    return build_corpus(template, spec, seed=0, n_generated=20, slices=SLICES).cases  # type: ignore[arg-type]


def marker_texts(spec) -> list[str]:
    """Texts made of the format's markers around a small JSON call (seeds for a format with no offline template)."""
    texts = ["Hello.", *spec.markers]
    body = '{"name": "get_weather", "arguments": {"city": "Paris", "n": 2}}'
    opened = (spec.section.open if spec.section else "") + spec.call.open
    closed = (spec.call.close or "") + (spec.section.close or "" if spec.section else "")
    texts += [
        f"Sure. {opened}{body}{closed}",
        f'{opened}get_weather{{"city": "Paris"}}{closed}{"".join(spec.stop_markers)}',
    ]
    if spec.reasoning:
        texts.append(f"{spec.reasoning.open}think{spec.reasoning.close or ''}Sure. {opened}{body}{closed}")
    return texts


def parser_seeds(fmt: str) -> list[bytes]:
    spec = get_format(fmt)
    choices = targets.prefixes(spec)
    out = [targets.encode_parser_input(text) for text in marker_texts(spec)]
    for case in _cases(fmt):
        index = choices.index(case.prefix) if case.prefix in choices else 0
        n = len(case.text)
        thirds = [n // 3, 2 * n // 3] if n > 2 else []
        for splits, tools in (((), False), ((), True), (thirds, False)):
            data = targets.encode_parser_input(case.text, splits, index, tools)
            if len(data) <= MAX_SEED_BYTES:
                out.append(data)
    return out


def _lines(path: Path) -> list[bytes]:
    return [line + b"\n" for line in path.read_bytes().split(b"\n") if line.strip()]


def case_seeds() -> list[bytes]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cases.jsonl"
        write_cases(path, _cases("hermes"))
        lines = _lines(path)
    for extra in sorted((ROOT / "tests" / "seeds").glob("*cases.jsonl")):
        lines += _lines(extra)
    return lines + [b"".join(lines[:5])]


def suite_seeds() -> list[bytes]:
    out = []
    for path in sorted(SUITES_DIR.glob("*.jsonl")):
        out += _lines(path)
        out.append(path.read_bytes())
    return out


def capture_seeds() -> list[bytes]:
    records = []
    for prompt in load_suite("nested-args")[:6]:
        text = f"<tool_call>\n{json.dumps({'name': prompt.calls[0].name if prompt.calls else 'f', 'arguments': {}})}"
        pieces = [[text[:11], [151657]], [text[11:], [1, 2, 3]]]
        model = {"name": "qwen3-0.6b", "file": "model.gguf", "sha256": "0" * 64}
        records.append(Capture(prompt.id, prompt.suite, "hermes", "llama-cpp", model, text=text, pieces=pieces))
    records.append(Capture("p", "nested-args", "hermes", "openai", {"name": "m"}, error="HTTP 500: boom"))
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "captures.jsonl"
        for record in records:
            path.unlink(missing_ok=True)
            with CaptureWriter(path) as writer:
                writer.write(record)
            out.append(path.read_bytes())
        out.append(b"".join(out[:3]) + out[3][: len(out[3]) // 2])  # a torn last line
    return out


def worker_reply_seeds() -> list[bytes]:
    serve = server.Server([registry.get_parser("toolcall-harness:hermes")])
    text = 'Sure. <tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    requests = [
        {"op": "hello"},
        {"op": "parse", "format": "hermes", "text": text},
        {"op": "open", "format": "hermes", "stream": "s"},
        {"op": "feed", "stream": "s", "chunk": text[:20]},
        {"op": "feed", "stream": "s", "chunk": text[20:]},
        {"op": "finish", "stream": "s"},
        {"op": "parse", "format": "nope", "text": ""},
        {"op": "dance"},
    ]
    out = []
    for request in requests:
        response, _ = server._answer(serve, json.dumps({"id": 1, **request}))
        out.append(json.dumps(response, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
    return out + [b"".join(out), b"not json\n"]


READER_SEEDS = {"cases": case_seeds, "suite": suite_seeds, "capture": capture_seeds, "worker-reply": worker_reply_seeds}


def seeds(target: str) -> list[bytes]:
    """The seed inputs of ``target`` (module docstring)."""
    if target.startswith("parser-"):
        return parser_seeds(target.removeprefix("parser-"))
    return READER_SEEDS[target]()


def _keys(value, found: set[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            found.add(key)
            _keys(item, found)
    elif isinstance(value, list):
        for item in value:
            _keys(item, found)


def dictionary(target: str) -> list[str]:
    """libFuzzer dictionary entries (escaped for the ``"..."`` syntax) for ``target`` (module docstring)."""
    if target.startswith("parser-"):
        spec = get_format(target.removeprefix("parser-"))
        words = {*spec.markers, *spec.stop_markers, *targets.prefixes(spec)}
    else:
        keys: set[str] = set()
        for data in seeds(target):
            for line in data.split(b"\n"):
                try:
                    _keys(json.loads(line), keys)
                except ValueError:
                    pass
        words = {f'"{key}":' for key in keys}
    return sorted(_escape(w) for w in words if w)


def _escape(word: str) -> str:
    return "".join(
        chr(b) if 0x20 <= b < 0x7F and b not in (0x22, 0x5C) else f"\\x{b:02x}"
        for b in word.encode("utf-8", "surrogateescape")
    )

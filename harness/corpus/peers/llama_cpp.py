"""llama.cpp's own chat tests as the ``peer-llama.cpp`` slice, read at run time from the pinned sdist.

Source: ``vendor/llama.cpp/tests/test-chat.cpp`` and ``vendor/llama.cpp/models/templates/*.jinja`` inside the
llama-cpp-python sdist (:mod:`harness.assets.sdist`, sha256-pinned); nothing of llama.cpp is copied into the
repository. :mod:`harness.corpus.peers._test_chat` reads each ``.run()`` case; here a case becomes a
:class:`~harness.core.cases.Case` of the format whose ``FormatSpec.peers`` names its template
(``'llama.cpp:<template file name>'``):

- ``text``: the case's input (what the model writes after the generation prompt); ``tools``: OpenAI-style;
  ``expected``: the case's expected message (tool-call arguments decoded from their JSON text; llama.cpp
  compares content and reasoning with surrounding whitespace stripped, ``extra["peer"]["compare"]``);
- ``prefix``: what the template's generation prompt pre-fills after the role header, for the case's messages,
  tools and ``enable_thinking`` (two renders cut by :func:`harness.template.render.split_completion`, the rule
  the rendered slices use; a render failure gives ``""`` and ``extra["peer"]["prefix_note"]``);
- ``extra["peer"]``: ``suite``, ``version``, ``sha256`` (of the sdist), ``where`` (``test-chat.cpp:LINE``, plus
  ``via`` for cases of a helper function run from another line), ``id``, ``template``, ``options`` (what the case
  sets, JSON-ready), ``effective`` (options with llama.cpp's defaults filled in), ``tool_call_ids`` when set.

Cases are never dropped: one whose template maps to no format, that the reader cannot read, or whose options
the judge cannot apply by plain comparison (:func:`judge_gap`) is listed in ``unsupported`` as
``(id, reason)`` with ``id`` = ``"llama.cpp/<template stem>/<n> (test-chat.cpp:<line>)"`` (``... via <line>``
for a helper function's case).
"""

from __future__ import annotations

import hashlib
import json
import tarfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from harness.assets.sdist import SDIST_SHA256, SDIST_VERSION, sdist_archive
from harness.core.cases import Case
from harness.core.errors import HarnessError
from harness.core.messages import Message, ToolCall
from harness.core.paths import file_sha256
from harness.corpus.peers._cpp import CppError
from harness.corpus.peers._test_chat import DEFAULTS, RawCase, read_cases
from harness.formats import FormatSpec, get_format, known_formats
from harness.template.render import render_messages, split_completion
from harness.template.sources import template_from_text

SUITE = "llama.cpp"
SLICE = "peer-llama.cpp"
TEST_FILE = "vendor/llama.cpp/tests/test-chat.cpp"
TEMPLATE_DIR = "vendor/llama.cpp/models/templates/"
#: the content of the assistant turn whose render, cut against the generation prompt, gives the prefix.
PROBE = "PROBE"
NO_FORMAT = "template maps to no harness format"


class PeerSuiteError(HarnessError):
    """The peer suite's files are missing or unreadable (the message names the file and line)."""


@dataclass
class LlamaCppCases:
    """The suite read once: cases per harness format and every case not among them.

    ``unsupported``: every case not in ``cases_by_format`` as ``(id, reason)``; ``unmapped``: those whose template
    maps to no format; ``unsupported_by_format``: the rest, per format (unreadable, or options the judge cannot
    apply). ``total``: every ``.run()`` case read."""

    cases_by_format: dict[str, list[Case]]
    unmapped: list[tuple[str, str]]
    unsupported_by_format: dict[str, list[tuple[str, str]]]
    version: str
    sha256: str
    total: int
    templates: dict[str, str | None] = field(default_factory=dict)  # template file -> format (None: unmapped)

    @property
    def unsupported(self) -> list[tuple[str, str]]:
        return self.unmapped + [
            u for fmt in sorted(self.unsupported_by_format) for u in self.unsupported_by_format[fmt]
        ]

    def for_format(self, name: str) -> list[Case]:
        """The cases of format ``name`` (``[]`` for a format no template maps to)."""
        return list(self.cases_by_format.get(name, []))

    def corpus_unsupported(self, name: str) -> list[tuple[str, str]]:
        """What a run of format ``name`` lists as unsupported: the unmapped cases plus that format's own."""
        return self.unmapped + self.unsupported_by_format.get(name, [])


def template_formats() -> dict[str, str]:
    """``{template file name: format}`` from every format's ``peers`` selectors ``'llama.cpp:<file>'``.

    Raises :class:`PeerSuiteError` when two formats claim one template."""
    out: dict[str, str] = {}
    for name in known_formats():
        for selector in get_format(name).peers:
            suite, _, template = selector.partition(":")
            if suite != SUITE:
                continue
            if template in out and out[template] != name:
                raise PeerSuiteError(f"formats {out[template]!r} and {name!r} both claim llama.cpp template {template}")
            out[template] = name
    return out


def read_sdist(archive: Path) -> tuple[str, dict[str, str]]:
    """``(test-chat.cpp text, {template file name: text})`` from an sdist archive (one pass over it).

    Raises :class:`PeerSuiteError` when the archive cannot be read or lacks ``test-chat.cpp``."""
    source, templates = None, {}
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar:
                if not member.isfile():
                    continue
                inner = member.name.partition("/")[2]
                if inner == TEST_FILE or (inner.startswith(TEMPLATE_DIR) and inner.endswith(".jinja")):
                    data = tar.extractfile(member).read().decode("utf-8")  # type: ignore[union-attr]
                    if inner == TEST_FILE:
                        source = data
                    else:
                        templates[inner[len(TEMPLATE_DIR) :]] = data
    except (OSError, tarfile.TarError, UnicodeDecodeError) as exc:
        raise PeerSuiteError(f"{archive}: cannot read the sdist: {exc}") from None
    if source is None:
        raise PeerSuiteError(f"{archive}: has no {TEST_FILE}")
    return source, templates


def load_cases(sdist: str | Path | None = None) -> LlamaCppCases:
    """Read the suite from ``sdist`` (default: the pinned sdist, downloaded once); cached per archive path.

    Raises :class:`PeerSuiteError` (or :class:`harness.assets.sdist.SdistError`) when the files cannot be read,
    and for a ``test-chat.cpp`` that cannot be tokenized at all (naming ``test-chat.cpp:LINE``)."""
    if sdist is None:  # sdist_archive() has checked the pinned archive's sha256 already
        return _load(str(sdist_archive().resolve()), SDIST_SHA256)
    path = Path(sdist).resolve()
    return _load(str(path), file_sha256(path))


@cache
def _load(path: str, digest: str) -> LlamaCppCases:
    archive = Path(path)
    pinned = archive.name == f"llama_cpp_python-{SDIST_VERSION}.tar.gz"
    version = SDIST_VERSION if pinned and digest == SDIST_SHA256 else archive.name.removesuffix(".tar.gz")
    source, templates = read_sdist(archive)
    return cases_from_source(source, templates, version=version, sha256=digest)


def cases_from_source(source: str, templates: dict[str, str], *, version: str, sha256: str) -> LlamaCppCases:
    """The suite from ``test-chat.cpp`` text and template texts (by file name); see :func:`load_cases`."""
    try:
        raw_cases = read_cases(source)
    except CppError as exc:
        raise PeerSuiteError(f"test-chat.cpp:{exc.line}: {exc.reason}") from None
    mapping = template_formats()
    result = LlamaCppCases({}, [], {}, version, sha256, len(raw_cases))
    numbers: dict[str, int] = {}
    for raw in raw_cases:
        file = (raw.template or "").rpartition("/")[2]
        stem = file.removesuffix(".jinja") or "unknown-template"
        numbers[stem] = numbers.get(stem, 0) + 1
        peer_id = f"{stem}/{numbers[stem]}"
        via = f" via {raw.via}" if raw.via is not None else ""
        listed = f"{SUITE}/{peer_id} (test-chat.cpp:{raw.line}{via})"
        fmt_name = mapping.get(file)
        result.templates.setdefault(file, fmt_name)
        if fmt_name is None:
            result.unmapped.append((listed, f"not read: {raw.error}" if raw.error else NO_FORMAT))
            continue
        fmt = get_format(fmt_name)
        gap = f"not read: {raw.error}" if raw.error else judge_gap(raw, fmt)
        if gap is None and file not in templates:
            gap = f"the sdist has no template {file}"
        if gap:
            result.unsupported_by_format.setdefault(fmt_name, []).append((listed, gap))
            continue
        case = to_case(raw, fmt, peer_id, templates[file], version=version, sha256=sha256)
        result.cases_by_format.setdefault(fmt_name, []).append(case)
    return result


def effective_options(raw: RawCase) -> dict:
    """The case's options with llama.cpp's defaults (:data:`harness.corpus.peers._test_chat.DEFAULTS`) filled in."""
    return {**DEFAULTS, **{k: v for k, v in raw.options.items() if k in DEFAULTS}}


def judge_gap(raw: RawCase, fmt: FormatSpec) -> str | None:
    """Why the case cannot be judged by comparing the parse with its expected message, or ``None``.

    In order: ``is_partial`` (a partial parse is expected), a continued final message whose reasoning the format
    has no block to write in (:func:`continued_text`), no generation prompt, a ``json_schema`` response format (it
    may rewrite the content, e.g. strip a ``json`` code fence), expected content holding the format's markup (with
    ``reasoning_format=none`` once its leading reasoning block is read out, :mod:`harness.score.reasoning`),
    tool-call arguments that are not JSON."""
    options = effective_options(raw)
    if options["is_partial"]:
        return "is_partial: the expected message is a partial parse"
    continuation = options["continue_final_message"] != "none"
    if continuation and not raw.messages:
        return f"continue_final_message={options['continue_final_message']} without messages to continue"
    if continuation and raw.expect["reasoning_content"] and not fmt.thought_markers:
        return "continue_final_message: the format has no reasoning block to write the prefilled reasoning in"
    if not options["add_generation_prompt"] and not continuation:
        return "add_generation_prompt=false: the text does not follow a generation prompt"
    if "json_schema" in raw.options:
        return "json_schema: a response format may rewrite the content"
    content = raw.expect["content"]
    if options["reasoning_format"] == "none":
        content = (fmt.inline_reasoning(content) or ("", content))[1]
    marker = next((m for m in (*fmt.markers, *fmt.reasoning_markers) if m in content), None)
    if marker is not None:
        return f"the expected content holds the format's markup ({marker})"
    for call in raw.expect["tool_calls"]:
        try:
            json.loads(call["arguments"])
        except ValueError:
            return "tool-call arguments are not JSON"
    return None


def continued_text(raw: RawCase, fmt: FormatSpec, prefix: str) -> tuple[str, str]:
    """``(prefix, text)`` of a case that continues its final assistant message (``continue_final_message``), as
    llama.cpp builds the text its parser reads (``common/chat-auto-parser-generator.cpp:45-61``): the generation
    prompt's pre-fill up to the reasoning opener, then ``OPEN + the message's reasoning`` (with ``CLOSE`` when the
    content is continued) where the expected message has reasoning, then the message's content (content
    continued), then the case's input. A pre-fill that ends with ``OPEN`` keeps it (the text starts inside
    reasoning). ``continue_final_message=auto`` continues the reasoning when the message
    has reasoning and no content (``common/chat.cpp:1262-1269``)."""
    message = (raw.messages or [{}])[-1]
    mode = effective_options(raw)["continue_final_message"]
    if mode == "auto":
        mode = "reasoning" if message["reasoning_content"] and not message["content"] else "content"
    written = ""
    if raw.expect["reasoning_content"] and fmt.thought_markers:
        open_, close = fmt.thought_markers
        cut = prefix.find(open_)
        if cut >= 0 and prefix[cut + len(open_) :].strip():  # e.g. ``<think></think>``: rewritten in the text
            prefix = prefix[:cut]
        written = "" if cut >= 0 and prefix[cut:].strip() == open_.strip() else open_
        written += (message["reasoning_content"] or "") + (close if mode == "content" else "")
    if mode == "content":
        written += message["content"] or ""
    return prefix, written + raw.input


def openai_tools(tools: list[dict]) -> list[dict]:
    return [{"type": "function", "function": dict(t)} for t in tools]


def to_case(raw: RawCase, fmt: FormatSpec, peer_id: str, template_text: str, *, version: str, sha256: str) -> Case:
    """The :class:`Case` of a readable, judgeable ``raw`` case of format ``fmt``."""
    file = (raw.template or "").rpartition("/")[2]
    expect = raw.expect
    tools = openai_tools(raw.tools) if raw.tools else None
    options = effective_options(raw)
    continuation = options["continue_final_message"] != "none"
    history = (raw.messages or [])[:-1] if continuation else raw.messages
    prefix, note = generation_prefix(file, template_text, fmt, history, raw.tools, options["enable_thinking"])
    text = raw.input
    if continuation:
        prefix, text = continued_text(raw, fmt, prefix)
    peer = {
        "suite": SUITE,
        "version": version,
        "sha256": sha256,
        "where": f"test-chat.cpp:{raw.line}",
        "id": peer_id,
        "template": file,
        "options": raw.options,
        "effective": options,
        "compare": "content and reasoning with surrounding whitespace stripped",
    }
    if raw.via is not None:
        peer["via"] = f"test-chat.cpp:{raw.via}"
    ids = [c["id"] for c in expect["tool_calls"]]
    if any(ids):
        peer["tool_call_ids"] = ids
    if note:
        peer["prefix_note"] = note
    extra: dict = {"peer": peer}
    if options["reasoning_format"] == "none":
        extra["reasoning_format"] = "none"  # the expected message keeps reasoning in content (harness.score.reasoning)
    return Case(
        id=f"{SUITE}/{peer_id}",
        format=fmt.name,
        text=text,
        expected=Message(
            content=expect["content"] or None,
            reasoning=expect["reasoning_content"] or None,
            tool_calls=[ToolCall(c["name"], json.loads(c["arguments"])) for c in expect["tool_calls"]],
        ),
        tools=tools,
        prefix=prefix,
        slice=SLICE,
        source=f"llama.cpp tests/test-chat.cpp:{raw.line} (llama-cpp-python {version} sdist)",
        template={"source": "sdist", "file": file, "sha256": _text_sha256(template_text)},
        text_provenance="composed" if continuation else "full",
        note="the text is the continued message as llama.cpp writes it, then the case's input" if continuation else "",
        extra=extra,
    )


def _text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _hf_message(msg: dict) -> dict:
    out = {"role": msg["role"], "content": msg["content"]}
    if msg["reasoning_content"]:
        out["reasoning_content"] = msg["reasoning_content"]
    if msg["tool_calls"]:
        out["tool_calls"] = [
            {"type": "function", "id": c["id"] or None, "function": {"name": c["name"], "arguments": _args(c)}}
            for c in msg["tool_calls"]
        ]
    if msg["tool_call_id"]:
        out["tool_call_id"] = msg["tool_call_id"]
    if msg["tool_name"]:
        out["name"] = msg["tool_name"]
    return out


def _args(call: dict):
    try:
        return json.loads(call["arguments"] or "{}")
    except ValueError:
        return call["arguments"]


#: test-chat.cpp's default history (``message_user``, line 956), used when a case sets no messages.
DEFAULT_HISTORY = ({"role": "user", "content": "Hey there!"},)


def generation_prefix(
    file: str, text: str, fmt: FormatSpec, messages: list | None, tools: list, enable_thinking: bool
) -> tuple[str, str | None]:
    """``(prefix, note)``: what the generation prompt pre-fills after the role header (``note``: why it is ``""``
    when the template does not render)."""
    history = [_hf_message(m) for m in messages] if messages else list(DEFAULT_HISTORY)
    key = json.dumps([history, openai_tools(tools) if tools else None], sort_keys=True)
    return _prefix(file, text, fmt.name, key, enable_thinking)


@cache
def _prefix(file: str, text: str, fmt_name: str, key: str, enable_thinking: bool) -> tuple[str, str | None]:
    fmt = get_format(fmt_name)
    history, tools = json.loads(key)
    template = template_from_text(text, model=file, format=fmt_name, source="sdist", location=SUITE, file=file)
    variables = {**fmt.template_vars, "enable_thinking": enable_thinking}
    probe = [*history, {"role": "assistant", "content": PROBE}]
    failure = ""
    for declared in (tools, []) if tools is None else (tools,):  # a template that iterates tools unguarded
        try:
            gen = render_messages(template, history, declared, add_generation_prompt=True, **variables)
            full = render_messages(template, probe, declared, add_generation_prompt=False, **variables)
        except HarnessError as exc:
            failure = failure or str(exc)
            continue
        prefix, _, _ = split_completion(full, gen, fmt)
        return prefix, None
    return "", f"no prefix: {failure}"

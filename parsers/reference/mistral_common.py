"""Reference adapter: mistral-common's own decoder of generated token ids, ``detokenize_to_assistant_message`` (the
``/v1/detokenize/`` endpoint of its server, ``mistral_common.experimental.app.routers``: ``[TOOL_CALLS]`` splitting,
``[THINK]`` chunks from tokenizer v13 on, the per-version call decoder of ``mistral_common.experimental.tools``), run
on the completion text encoded with a Tekken tokenizer built from the vocabulary mistral-common ships.

Parsers ``mistral-common==<version>:<format>``, one per :data:`FORMATS` entry (the version of the models'
``tekken.json`` and the control tokens it adds to the bundled file); :data:`UNSUPPORTED` gives the reason for every
other format. Out of process only: the ``mistral-common`` engine, a virtualenv with ``mistral-common[server]`` (the
endpoint's module imports fastapi and pydantic-settings). One-shot: text -> ids (control-token text as the control
token) -> the endpoint. Streaming is derived, as mistral-common has none (:class:`MistralCommonStream`). How it is
driven, each setting's source and the measured results: ``docs/engines/mistral_common.md``.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import importlib.metadata
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core.messages import Message, ToolCall, parse_arguments
from harness.core.protocol import Delta, ToolCallDelta
from harness.engines.spec import PipEngine, worker_build_dir
from harness.formats import known_formats

#: The Tekken vocabulary mistral-common ships (``mistral_common/data/``): Mistral NeMo's ``tekken_240718.json``
#: (version v3, 150,000 ranks, the 20 control tokens of ``Tekkenizer.DEPRECATED_SPECIAL_TOKENS``). Its ranks give
#: the ids Mistral Small 3.2, Devstral, Magistral and Ministral 3 generated in canitoolcall 0.1.1's fixtures.
BUNDLED_TEKKEN = "tekken_240718.json"


@dataclass(frozen=True)
class Launch:
    """The tokenizer of one format's models: the version their ``tekken.json`` declares (it picks mistral-common's
    instruct tokenizer and call decoder) and the control tokens it has beyond the bundled file's 20, as
    ``(rank, text)``; the ranks are those of the models' own ids (canitoolcall's ``output_token_ids``)."""

    version: str
    control_tokens: tuple[tuple[int, str], ...]


_CALL_TOKENS = ((32, "[ARGS]"), (33, "[CALL_ID]"))
FORMATS: dict[str, Launch] = {
    # Mistral Small 3.2 2506: tekken v11, [TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{json}. Devstral Small 2507's
    # [TOOL_CALLS]NAME[ARGS]{json} goes through the same decoder (_decode_tool_call_v11, no [CALL_ID] in the call).
    "mistral": Launch("v11", _CALL_TOKENS),
    # Ministral 3 Reasoning 2512 / Magistral Small 2509: tekken v13 with [THINK] 34 and [/THINK] 35.
    "mistral_reasoning": Launch("v13", _CALL_TOKENS + ((34, "[THINK]"), (35, "[/THINK]"))),
}
UNSUPPORTED: dict[str, str] = {
    fmt: "no mistral-common decoder: it decodes Mistral's own [TOOL_CALLS] token formats only (tokenizers v2-v15)"
    for fmt in known_formats()
    if fmt not in FORMATS
}


class MistralCommonError(ValueError):
    """The endpoint refused the ids (its ``HTTPException``: the message is its status and detail)."""


def tekken_file(launch: Launch) -> Path:
    """A ``tekken.json`` for ``launch``: the bundled file's vocabulary and pattern, ``config.version`` =
    ``launch.version``, ``special_tokens`` = the bundled 20 (ranks 0-19), ``launch.control_tokens`` at their ranks and
    mistral-common's own filler (``Tekkenizer.SPECIAL_TOKEN_TEMPLATE``, ``<SPECIAL_n>``) at the ranks between. Written
    once into the worker's build folder (15 MB); the name holds ``tekken``, as ``MistralTokenizer.from_file`` wants.
    Raises ``ValueError`` for a rank the bundled file already uses."""
    import mistral_common
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    key = hashlib.sha256(json.dumps([BUNDLED_TEKKEN, launch.version, launch.control_tokens]).encode()).hexdigest()
    version = importlib.metadata.version("mistral-common")
    target = Path(worker_build_dir("mistral-common")) / f"tekken-{launch.version}-{version}-{key[:12]}.json"
    if target.is_file():
        return target
    specials = [dict(token) for token in Tekkenizer.DEPRECATED_SPECIAL_TOKENS]
    named = dict(launch.control_tokens)
    if min(named) < len(specials):
        raise ValueError(f"control token ranks {sorted(named)} overlap the bundled file's 0-{len(specials) - 1}")
    for rank in range(len(specials), max(named) + 1):
        text = named.get(rank, Tekkenizer.SPECIAL_TOKEN_TEMPLATE.format(id=rank))
        specials.append({"rank": rank, "token_str": text, "is_control": True})
    source = Path(mistral_common.__file__).parent / "data" / BUNDLED_TEKKEN
    data = json.loads(source.read_text(encoding="utf-8"))
    data["config"]["version"] = launch.version
    data["special_tokens"] = specials
    part = target.with_name(f"{target.name}.{os.getpid()}.part")
    part.write_text(json.dumps(data), encoding="utf-8")
    os.replace(part, target)
    return target


class _Decoder:
    """One format's ``MistralTokenizer`` (loaded by ``MistralTokenizer.from_file``), the text -> ids step, and the
    endpoint with the server's own ``Settings`` holding that tokenizer."""

    def __init__(self, fmt: str) -> None:
        from fastapi import HTTPException
        from mistral_common.experimental.app.models import Settings
        from mistral_common.experimental.app.routers import detokenize_to_assistant_message
        from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy, SpecialTokens
        from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

        self.path = tekken_file(FORMATS[fmt])
        tokenizer = MistralTokenizer.from_file(self.path)
        self.tekken = tokenizer.instruct_tokenizer.tokenizer
        self.settings = Settings()
        self.settings.tokenizer = tokenizer
        self._endpoint, self._refused = detokenize_to_assistant_message, HTTPException
        self.tool_calls = SpecialTokens.tool_calls.value
        keep = SpecialTokenPolicy.KEEP
        controls = [self.tekken.decode([i], special_token_policy=keep) for i in sorted(self.tekken.special_ids)]
        self._split = re.compile("(" + "|".join(re.escape(t) for t in sorted(controls, key=len, reverse=True)) + ")")
        self._starts = {t[:n] for t in controls for n in range(1, len(t))}
        self._longest = max(map(len, controls))

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``: each control token's text (longest first) as that token, the text between through
        ``Tekkenizer.encode`` (no BOS/EOS). mistral-common never reads control tokens from text: this is the step an
        engine's detokenizer undoes."""
        ids: list[int] = []
        for i, part in enumerate(self._split.split(text)):
            if i % 2:
                ids.append(self.tekken.get_special_token(part))
            elif part:
                ids.extend(self.tekken.encode(part, bos=False, eos=False))
        return ids

    def held(self, text: str) -> int:
        """How many characters at the end of ``text`` may be the start of a control token."""
        for n in range(min(len(text), self._longest - 1), 0, -1):
            if text[-n:] in self._starts:
                return n
        return 0

    def decode(self, ids: list[int]) -> Message:
        """The endpoint's answer for ``ids`` as a :class:`Message` (no ids: an empty message, which the endpoint
        refuses to be asked for). Raises :class:`MistralCommonError` where it answers an error."""
        if not ids:
            return Message()
        try:
            answer = asyncio.run(self._endpoint(settings=self.settings, tokens=ids))
        except self._refused as exc:
            answered = f"{exc.status_code}: {exc.detail}"
            raise MistralCommonError(f"mistral-common /v1/detokenize/ answers {answered}") from None
        return message_from_assistant(answer)


def message_from_assistant(answer: Any) -> Message:
    """An ``AssistantMessage`` as a :class:`Message`: a list content's text chunks joined as content and its think
    chunks joined as reasoning; each call's ``function.arguments`` (a JSON string) decoded."""
    content, reasoning = answer.content, None
    if isinstance(content, list):
        reasoning = "".join(chunk.thinking for chunk in content if hasattr(chunk, "thinking"))
        content = "".join(chunk.text for chunk in content if hasattr(chunk, "text"))
    calls = [ToolCall(c.function.name, parse_arguments(c.function.arguments)) for c in answer.tool_calls or []]
    return Message(content=content or None, reasoning=reasoning or None, tool_calls=calls)


class MistralCommonParser:
    """mistral-common's decoder for ``format`` (:data:`FORMATS`).

    ``parse(text, tools, prefix) -> Message`` (the decoder reads no tool declarations; ``prefix`` is decoded as the
    start of the turn); ``stream(tools, prefix)`` → :class:`MistralCommonStream`. Construction imports
    mistral-common and fastapi (``ImportError`` when missing) and writes the tokenizer file once
    (:func:`tekken_file`); ``parse`` raises :class:`MistralCommonError` where the endpoint answers an error, and
    whatever else mistral-common raises.
    """

    library = "mistral-common"
    incremental = True

    def __init__(self, format: str) -> None:
        self.format, self.formats = format, (format,)
        self.version = importlib.metadata.version("mistral-common")
        self.name = f"mistral-common=={self.version}:{format}"
        self._decoder = _Decoder(format)

    def parse(self, text: str, tools: list | None = None, prefix: str = "") -> Message:
        return self._decoder.decode(self._decoder.encode(prefix + text))

    def stream(self, tools: list | None = None, prefix: str = "") -> MistralCommonStream:
        return MistralCommonStream(self._decoder, prefix)


class MistralCommonStream:
    """Derived streaming (mistral-common decodes whole id lists only). After each chunk the endpoint decodes the
    text up to its last ``[TOOL_CALLS]`` (a call has no end token: only the next ``[TOOL_CALLS]`` or the end closes
    it), less a tail that may start a control token; what its answer adds to the content, reasoning and calls already
    sent goes out. An answer that is an error sends nothing (``finish`` decodes the whole text, raising as ``parse``
    does); one that contradicts what was sent is listed in ``diagnostics``. ``token_ids`` are ignored: the text is
    encoded with the format's tokenizer."""

    def __init__(self, decoder: _Decoder, prefix: str) -> None:
        self._decoder, self._text = decoder, prefix
        self._head: str | None = None
        self._sent = Message()
        self.diagnostics: list[str] = []

    def feed(self, chunk: str, token_ids: list[int] | None = None) -> list[Delta]:
        self._text += chunk
        stable = self._text[: len(self._text) - self._decoder.held(self._text)]
        cut = stable.rfind(self._decoder.tool_calls)
        head = stable if cut < 0 else stable[:cut]
        if head == self._head:
            return []
        self._head = head
        try:
            got = self._decoder.decode(self._decoder.encode(head))
        except MistralCommonError:
            return []
        return self._send(got)

    def finish(self) -> list[Delta]:
        return self._send(self._decoder.decode(self._decoder.encode(self._text)))

    def _send(self, got: Message) -> list[Delta]:
        sent, delta = self._sent, Delta()
        for field in ("content", "reasoning"):
            new, old = getattr(got, field) or "", getattr(sent, field) or ""
            if new.startswith(old):
                setattr(delta, field, new[len(old) :] or None)
                setattr(sent, field, new or None)
            else:
                self._note(f"{field} decoded from a longer text, {new!r}, does not extend the {field} sent, {old!r}")
        done = len(sent.tool_calls)
        if got.tool_calls[:done] != sent.tool_calls:
            self._note(f"calls decoded from a longer text, {got.tool_calls!r}, differ from those sent")
        for index, call in enumerate(got.tool_calls[done:], done):
            delta.tool_calls.append(ToolCallDelta(index, call.name, json.dumps(call.arguments, ensure_ascii=False)))
            sent.tool_calls.append(call)
        return [delta] if delta.content or delta.reasoning or delta.tool_calls else []

    def _note(self, line: str) -> None:
        if line not in self.diagnostics:
            self.diagnostics.append(line)


PARSERS = [functools.partial(MistralCommonParser, fmt) for fmt in FORMATS]


def _check_engine_version(version: str) -> None:
    """1.8.3 is the first release whose server decodes ``[THINK]`` chunks (``mistral_common.experimental.think``)."""
    try:
        release = tuple(int(part) for part in version.split(".")[:3])
    except ValueError:
        raise ValueError(f"not a release number: {version!r}") from None
    if release < (1, 8, 3):
        raise ValueError(f"the mistral-common adapter drives the detokenize endpoint of 1.8.3 and later, not {version}")


# mistral-common in its own virtualenv (it is not a dependency of the harness), serving this adapter over the worker
# protocol; the [server] extra brings what the endpoint's module imports (fastapi, pydantic-settings).
ENGINE = PipEngine(
    name="mistral-common",
    default_version="1.13.1",
    formats=tuple(FORMATS),
    cold_install="about 15 s, 280 MB",
    steps=lambda version: [["install", f"mistral-common[server]=={version}"]],
    worker_module="parsers.reference.mistral_common",
    check_version=_check_engine_version,
).engine()

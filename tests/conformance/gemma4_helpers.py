"""Shared helpers of the Gemma 4 conformance tests (``test_gemma4.py``, ``test_gemma4_properties.py``): the two
parsers (eager and held), rendering one assistant turn through the real Gemma 4 chat template, token-shaped
chunkings and the one-shot-equals-streaming check with its marker-leak watch.
"""

from __future__ import annotations

import functools
import random
import re
from pathlib import Path

from conformance.suite import view
from harness.assets.sdist import sdist_file
from harness.core.messages import Message
from harness.core.protocol import run_stream
from harness.formats.gemma4 import SPEC
from parsers.own.gemma4 import Gemma4Parser

TEMPLATE = "models/templates/google-gemma-4-31B-it.jinja"
MODEL_TURN = "<|turn>model\n"
ALL_MARKERS = tuple(dict.fromkeys(SPEC.markers + SPEC.stop_markers))
MARKER_PREFIXES = {m[:k] for m in ALL_MARKERS for k in range(1, len(m))}

PARSER = Gemma4Parser(eager=True)  # streams call names and argument fragments as they are read
HELD = Gemma4Parser()  # the default: each call emitted whole at its close


@functools.lru_cache(maxsize=1)
def template_text() -> str:
    return Path(sdist_file(TEMPLATE)).read_text(encoding="utf-8")


def render(
    calls, content: str = "", reasoning: str | None = None, thinking: bool = False, tools: list | None = None
) -> tuple[str, str]:
    """Render one assistant turn; returns ``(completion text, parse prefix)``.

    ``calls`` is a list of ``(name, arguments)``. The completion keeps the template's trailing stop marker.
    """
    from transformers.utils.chat_template_utils import render_jinja_template

    user = {"role": "user", "content": "Hi"}
    assistant = {
        "role": "assistant",
        "content": content,
        "tool_calls": [{"type": "function", "function": {"name": n, "arguments": a}} for n, a in calls],
    }
    if reasoning is not None:
        assistant["reasoning_content"] = reasoning
    kw = dict(chat_template=template_text(), tools=tools, bos_token="<bos>", enable_thinking=thinking)
    full = render_jinja_template(conversations=[[user, assistant]], add_generation_prompt=False, **kw)[0][0]
    prompt = render_jinja_template(conversations=[[user]], add_generation_prompt=True, **kw)[0][0]
    head = prompt[: prompt.rindex(MODEL_TURN) + len(MODEL_TURN)]
    assert full.startswith(head)
    return full[len(head) :], prompt[len(head) :]


TOKEN_RE = re.compile(r'<\|"\|>|<\|?[a-z_]+\|?>| ?[:,]?[{}\[\]()]+[,:]?| ?\w+|\s+|[^\w\s]', re.S)


def token_pieces(text: str) -> list[str]:
    """Chunks shaped like real Gemma 4 token pieces: whole markers, ``:{``, ``},``, ``}]}``, `` word``."""
    pieces = TOKEN_RE.findall(text)
    assert "".join(pieces) == text
    return pieces


def random_split(text: str, rng: random.Random) -> list[str]:
    cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(0, 12)))) if len(text) > 1 else []
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=False)]


def check_delta(delta) -> None:
    """Content/reasoning pieces never hold a marker nor end in what may still become one."""
    for piece in (delta.content, delta.reasoning):
        if piece:
            assert not any(m in piece for m in ALL_MARKERS), piece
            assert not any(piece.endswith(p) for p in MARKER_PREFIXES), piece


def streamed(parser, chunks, tools=None, prefix="", leak_check=True):
    return run_stream(parser, chunks, tools, prefix, on_delta=check_delta if leak_check else None)


def assert_stream_matches(text: str, prefix: str = "", tools=None, seed: int = 0, leak_check=True) -> Message:
    """One-shot parse, then streaming (eager and held) under several chunkings must give the same message."""
    one_shot = PARSER.parse(text, tools, prefix)
    rng = random.Random(seed)
    chunkings = [[text], list(text), token_pieces(text)] + [random_split(text, rng) for _ in range(4)]
    for chunks in chunkings:
        for parser in (PARSER, HELD):
            got = streamed(parser, chunks, tools, prefix, leak_check)
            assert view(got) == view(one_shot), (chunks, parser.eager)
    return one_shot

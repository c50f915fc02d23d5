"""What the engine tests share: a declared tool, a call to it, the thinking-off prefix, and the fixture body
that builds an engine (from the user cache, or cold) and starts its worker."""

from harness import engines
from parsers import get_any_parser

OFF = "<|channel>thought\n<channel|>"  # Gemma 4 prefix with thinking off (the template's default)
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "weather",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"},
                                                          "note": {"type": ["string", "null"]}}}}}]
CALL = '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>'


def engine_worker(name: str):
    """Yield ``name``'s Gemma 4 worker parser (built first if missing); stop it afterwards."""
    engines.install(name)
    parser = get_any_parser(name, "gemma4")
    yield parser
    parser.close()


# ------------------------------------------------------------------------------------------------- Hermes

HERMES_TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"},
                                                    "note": {"type": ["string", "null"]}}}}}]
HERMES_TEMPLATE = "models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"
HERMES_PROMPT_END = "<|im_start|>assistant\n"
PARIS = {"city": "Paris", "days": 3}
ROME = {"city": "Rome", "days": 1}
CLOSE_IN_STRING = {"city": "Paris", "note": "a </tool_call> b"}


def hermes_render(content: str, calls: list[dict]) -> str:
    """What a Qwen 2.5 model generates for an assistant turn, rendered by the real template (the pinned sdist's
    copy, through transformers' renderer): the completion after the generation prompt, without ``<|im_end|>``."""
    from pathlib import Path

    from transformers.utils.chat_template_utils import render_jinja_template

    from harness.sdist import sdist_file

    template = Path(sdist_file(HERMES_TEMPLATE)).read_text()
    messages = [{"role": "user", "content": "What is the weather?"}]
    turn = {"role": "assistant", "content": content,
            "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": a}} for a in calls]}
    kwargs = {"tools": HERMES_TOOLS, "chat_template": template}
    (prompt,), _ = render_jinja_template(conversations=[messages], add_generation_prompt=True, **kwargs)
    (full,), _ = render_jinja_template(conversations=[messages + [turn]], **kwargs)
    assert prompt.endswith(HERMES_PROMPT_END) and full.startswith(prompt[:-1])
    completion = full[len(prompt):]
    assert completion.endswith("<|im_end|>\n")
    return completion[:-len("<|im_end|>\n")]


# The Hermes texts every reference is run on, and the message each stands for.
HERMES_CASES = {
    "one_call": (lambda: hermes_render("", [PARIS]), ("", [PARIS])),
    "two_calls": (lambda: hermes_render("", [PARIS, ROME]), ("", [PARIS, ROME])),
    "content_then_call": (lambda: hermes_render("Let me check.", [PARIS]), ("Let me check.", [PARIS])),
    "close_tag_in_string": (lambda: hermes_render("", [CLOSE_IN_STRING]), ("", [CLOSE_IN_STRING])),
}
HERMES_MODES = ("oneshot", "whole", "char", "pieces")


def hermes_pieces(text: str) -> list[str]:
    """Token-like chunks: the markers whole (single tokens in Qwen 2.5's vocabulary), then runs of letters or
    digits, runs of whitespace and single punctuation characters."""
    import re

    return re.findall(r"</?tool_call>|<\|im_end\|>|\s+|\w+|[^\w\s]", text)


def hermes_results(parser) -> dict[str, dict[str, dict]]:
    """``{case: {mode: message as JSON without diagnostics}}`` for every Hermes case, one-shot and streamed
    whole, by characters and by token-like pieces; an exception becomes ``{"error": "Type: message"}``."""
    from harness.protocol import run_stream

    out: dict[str, dict[str, dict]] = {}
    for case, (make, _) in HERMES_CASES.items():
        text = make()
        chunkings = {"whole": [text], "char": list(text), "pieces": hermes_pieces(text)}
        out[case] = {}
        for mode in HERMES_MODES:
            try:
                if mode == "oneshot":
                    got = parser.parse(text, HERMES_TOOLS, "")
                else:
                    got = run_stream(parser, chunkings[mode], HERMES_TOOLS, "")
            except Exception as exc:  # what the library raised, recorded as the outcome
                out[case][mode] = {"error": f"{type(exc).__name__}: {exc}"}
                continue
            message = got.to_json()
            message.pop("diagnostics", None)
            out[case][mode] = message
    return out


def hermes_msg(content=None, calls=(), reasoning=None, name="get_weather") -> dict:
    """A message as ``Message.to_json()`` writes it (calls given as argument dicts or raw JSON strings)."""
    from harness.model import Message, ToolCall

    return Message(content, reasoning, [ToolCall(name, a) for a in calls]).to_json()


def hermes_expected(case: str) -> dict:
    """The message a Hermes case stands for."""
    content, calls = HERMES_CASES[case][1]
    return hermes_msg(content or None, calls)


def hermes_worker(name: str):
    """Yield ``name``'s Hermes worker parser (built first if missing); stop it afterwards."""
    engines.install(name)
    parser = get_any_parser(name, "hermes")
    yield parser
    parser.close()

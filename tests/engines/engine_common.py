"""What the engine tests share: a declared tool, a call to it, the thinking-off prefix, and the fixture body
that builds an engine (from the user cache, or cold) and starts its worker; the Hermes and newer-format cases;
and the helpers of the in-process reference tests (``test_parsers_reference*.py``)."""

from harness.core.messages import Message, ToolCall
from harness.core.protocol import StreamAccumulator
from harness.engines import environments as engines
from harness.parse.registry import get_any_parser

OFF = "<|channel>thought\n<channel|>"  # Gemma 4 prefix with thinking off (the template's default)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "note": {"type": ["string", "null"]},
                },
            },
        },
    }
]
CALL = '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>'


def engine_python(name: str, code: str, *args: str, stdin: str | None = None) -> str:
    """Run ``code`` (``args`` as ``sys.argv[1:]``, ``stdin`` on its standard input) by engine ``name``'s interpreter,
    built first if missing, with the repository on the path and ``TOOLCALL_HARNESS_ENGINE_ENV`` set as the worker
    client sets it; the last line of its stdout."""
    import os
    import subprocess
    from pathlib import Path

    from harness.engines.spec import venv_python

    installed = engines.install(name)
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
        "TOOLCALL_HARNESS_ENGINE_ENV": str(installed.path),
    }
    argv = [str(venv_python(installed.path)), "-c", code, *args]
    out = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, timeout=600, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()[-1]


def engine_worker(name: str):
    """Yield ``name``'s Gemma 4 worker parser (built first if missing); stop it afterwards."""
    engines.install(name)
    parser = get_any_parser(name, "gemma4")
    yield parser
    parser.close()


# ------------------------------------------------------------------------------------------------- Hermes

HERMES_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "note": {"type": ["string", "null"]},
                },
            },
        },
    }
]
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

    from harness.assets.sdist import sdist_file

    template = Path(sdist_file(HERMES_TEMPLATE)).read_text()
    messages = [{"role": "user", "content": "What is the weather?"}]
    turn = {
        "role": "assistant",
        "content": content,
        "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": a}} for a in calls],
    }
    kwargs = {"tools": HERMES_TOOLS, "chat_template": template}
    (prompt,), _ = render_jinja_template(conversations=[messages], add_generation_prompt=True, **kwargs)
    (full,), _ = render_jinja_template(conversations=[messages + [turn]], **kwargs)
    assert prompt.endswith(HERMES_PROMPT_END) and full.startswith(prompt[:-1])
    completion = full[len(prompt) :]
    assert completion.endswith("<|im_end|>\n")
    return completion[: -len("<|im_end|>\n")]


# The Hermes texts every reference is run on, and the message each stands for.
HERMES_CASES = {
    "one_call": (lambda: hermes_render("", [PARIS]), ("", [PARIS])),
    "two_calls": (lambda: hermes_render("", [PARIS, ROME]), ("", [PARIS, ROME])),
    "content_then_call": (lambda: hermes_render("Let me check.", [PARIS]), ("Let me check.", [PARIS])),
    "close_tag_in_string": (lambda: hermes_render("", [CLOSE_IN_STRING]), ("", [CLOSE_IN_STRING])),
}


def hermes_msg(content=None, calls=(), reasoning=None, name="get_weather") -> dict:
    """A message as ``Message.to_json()`` writes it (calls given as argument dicts or raw JSON strings)."""
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


# ------------------------------------------------------------------------------------------------- newer formats
# The texts an engine reference is run on for the formats added after Hermes (glm45, qwen3_coder, kimi_k2, ...):
# rendered by a catalog model's own template through the harness (harness.template.render.render_scenario), so every
# text is the template's own, with the case's parse prefix and tools.

RENDERED_PARAMETERS = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "note": {"type": ["string", "null"]}},
}
RENDERED_MODES = ("oneshot", "whole", "char", "pieces")
STREAMED = list(RENDERED_MODES[1:])  # the streamed modes, as rendered_faults lists them


def rendered_cases(model: str, marker: str | None = None) -> dict:
    """``{name: Case}`` for catalog model ``model``: ``one_call``, ``two_calls`` (two calls to one tool),
    ``content_call`` (prose before and after a call), ``marker_in_string`` (``marker``, default the format's
    ``call_close``, inside a string value) and ``reasoning_call`` (reasoning, then a call), each a call to
    ``get_weather``. A scenario the template cannot write (Llama 3.x refuses two calls, Mistral Small 3.2 drops
    content, Kimi K2 writes no reasoning, ...) is left out."""
    from harness.core.errors import UnrepresentableError
    from harness.core.scenarios import call, edge
    from harness.formats import get_format
    from harness.template.catalog import get_model
    from harness.template.render import render_scenario
    from harness.template.sources import load_template

    fmt = get_format(get_model(model).format)
    template = load_template(model, offline=True)
    marker = fmt.call_close if marker is None else marker
    params = {"get_weather": RENDERED_PARAMETERS}
    scenarios = {
        "one_call": edge("one-call", [], call("get_weather", PARIS), parameters=params),
        "two_calls": edge("two-calls", [], [call("get_weather", PARIS), call("get_weather", ROME)], parameters=params),
        "content_call": edge(
            "content-call",
            [],
            call("get_weather", PARIS),
            parameters=params,
            content_before="Let me check.",
            content_after="Done.",
        ),
        "marker_in_string": edge(
            "marker-in-string", [], call("get_weather", {"city": "Paris", "note": f"a {marker} b"}), parameters=params
        ),
        "reasoning_call": edge(
            "reasoning-call", [], call("get_weather", PARIS), parameters=params, reasoning="The user wants the weather."
        ),
    }
    cases = {}
    for name, scenario in scenarios.items():
        try:
            cases[name] = render_scenario(template, scenario, fmt)
        except UnrepresentableError:
            continue
    return cases


def rendered_pieces(text: str, format: str) -> list[str]:
    """Token-like chunks: the format's markers whole (single tokens in its vocabulary), then runs of letters or
    digits, runs of whitespace and single other characters."""
    import re

    from harness.formats import get_format

    markers = sorted(get_format(format).markers, key=len, reverse=True)
    pattern = "|".join([re.escape(m) for m in markers if m] + [r"\s+", r"\w+", r"[^\w\s]"])
    return re.findall(pattern, text)


def plain_message(message) -> dict:
    """A message as the scorer compares it: content and reasoning stripped (empty -> None), no diagnostics."""
    out = message.to_json()
    out.pop("diagnostics", None)
    for key in ("content", "reasoning"):
        out[key] = (out.get(key) or "").strip() or None
    return out


def rendered_results(parser, cases: dict, modes=RENDERED_MODES) -> dict[str, dict[str, dict]]:
    """``{case: {mode: plain_message}}`` for ``cases`` (from :func:`rendered_cases`): one-shot, and streamed
    whole, by characters and by token-like pieces; an exception becomes ``{"error": "Type: message"}``."""
    from harness.core.protocol import run_stream

    out: dict[str, dict[str, dict]] = {}
    for name, case in cases.items():
        chunkings = {"whole": [case.text], "char": list(case.text), "pieces": rendered_pieces(case.text, case.format)}
        out[name] = {}
        for mode in modes:
            try:
                if mode == "oneshot":
                    got = parser.parse(case.text, case.tools, case.prefix)
                else:
                    got = run_stream(parser, chunkings[mode], case.tools, case.prefix)
            except Exception as exc:  # what the library raised, recorded as the outcome
                out[name][mode] = {"error": f"{type(exc).__name__}: {exc}"}
                continue
            out[name][mode] = plain_message(got)
    return out


def rendered_faults(parser, cases: dict, modes=RENDERED_MODES) -> dict[str, list[str]]:
    """``{case: [modes]}``: the modes in which :func:`rendered_results` differs from the message the case stands for
    (a case right in every mode is left out)."""
    results = rendered_results(parser, cases, modes)
    out = {}
    for name, got in results.items():
        wrong = [mode for mode in modes if got[mode] != plain_message(cases[name].expected)]
        if wrong:
            out[name] = wrong
    return out


def rendered_msg(content=None, calls=(), reasoning=None, name="get_weather") -> dict:
    """A plain message (see :func:`plain_message`) with calls to ``name``, given as argument dicts or raw
    JSON argument strings."""
    return plain_message(Message(content, reasoning, [ToolCall(name, a) for a in calls]))


# ----------------------------------------------------------------------------------- in-process references


def stream_chars(parser, text: str, tools=None, prefix: str = OFF):
    """Feed ``text`` one character at a time: ``(message, [(chars fed when emitted, delta)], session)``."""
    session = parser.stream(tools, prefix)
    acc, seen = StreamAccumulator(), []
    for i, ch in enumerate(text, 1):
        deltas = session.feed(ch)
        seen.extend((i, d) for d in deltas)
        acc.add(deltas)
    deltas = session.finish()
    seen.extend((len(text) + 1, d) for d in deltas)  # position len+1 = emitted by finish()
    acc.add(deltas)
    return acc.message(), seen, session


def plain(message: Message) -> dict:
    """The scored part of a message (no diagnostics)."""
    out = message.to_json()
    out.pop("diagnostics", None)
    return out


def msg(content=None, reasoning=None, calls=()) -> dict:
    """A message as ``Message.to_json()`` writes it, calls given as ``(name, arguments)`` pairs."""
    return Message(content, reasoning, [ToolCall(n, a) for n, a in calls]).to_json()

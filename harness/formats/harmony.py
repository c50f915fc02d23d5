"""Harmony tool-call format facts (OpenAI gpt-oss: format ``harmony``).

Source: ``openai-gpt-oss-120b.jinja`` in the llama-cpp-python 0.3.36 sdist (``vendor/llama.cpp/models/templates``),
llama.cpp's copy of openai/gpt-oss-120b's chat template; gpt-oss-20b has no copy there and the 120b template stands
in (the two repositories ship the same template). Line numbers below are lines of that file.

A completion is a sequence of *messages*, each ``HEADER<|message|>BODY`` closed by ``<|end|>``, ``<|call|>`` or
``<|return|>``; a message after the first starts with ``<|start|>assistant``. The header names the channel
(``<|channel|>analysis|commentary|final``), optionally a recipient (``to=functions.NAME``) and a content type.

- Generation prompt: ``<|start|>assistant`` (lines 329-331). The full render repeats it, so the cut in
  :mod:`harness.template.render` leaves no parse prefix: the case text starts inside the first header, right after the
  role, exactly where the model starts writing (`` to=functions.NAME...`` or ``<|channel|>analysis...``).
- A turn with tool calls (lines 273-301): the reasoning (the message's ``thinking``; transformers fills it from
  ``reasoning_content``) -- or, when there is none, the message *content* -- is written first as an analysis
  message ``<|start|>assistant<|channel|>analysis<|message|>TEXT<|end|>`` (lines 291-294: the ``thought``
  block); then the call
  ``<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>ARGS<|call|>`` (lines 296-300):
  the recipient comes *before* the channel, the content type is the bare word ``json`` (line 298), and ``ARGS``
  is ``arguments|tojson`` (line 299: ``json.dumps`` with ``", "``/``": "`` separators, key order kept, non-ASCII
  kept), so a string value may hold ``<|call|>``, ``<|message|>`` or ``<|end|>`` literally.
- Only ``tool_calls[0]`` is written (line 285): a turn's further calls are dropped.
- Content *and* reasoning on a turn with calls make the template raise (lines 289-290); content or reasoning
  holding ``<|channel|>analysis<|message|>`` or ``<|channel|>final<|message|>`` raise too (lines 264-272).
- The last assistant turn without calls (lines 302-311) writes its reasoning as an analysis message (line 306)
  and its content as ``<|start|>assistant<|channel|>final<|message|>CONTENT<|return|>`` (line 311); earlier turns
  end ``<|end|>`` and drop their reasoning (lines 312-315).
- Stop markers: ``<|call|>`` and ``<|return|>``, Harmony's stop tokens for an assistant's actions (a call, the
  final answer), and the tokenizer's ``<|endoftext|>``; ``<|end|>`` ends a message, not the generation (the
  model goes on with ``<|start|>assistant``).

Model output seen in the field differs from the template (the observed corpus; vLLM's and SGLang's harmony
parsers accept both): the recipient after the channel (``<|channel|>commentary to=functions.NAME
<|constrain|>json<|message|>``), ``<|constrain|>json`` or ``code`` as the content type, calls on the ``analysis``
channel, a preamble (user-visible text) on the ``commentary`` channel without recipient, and ``<|end|>`` in place
of ``<|call|>``.

Nothing in a string value is unrepresentable (JSON carries it); a tool name holding whitespace or ``<|`` would
break the header and is not supported.
"""

from harness.core.scenarios import call, edge, text_case
from harness.formats import FormatSpec, Markers

START, END, MESSAGE, CHANNEL = "<|start|>", "<|end|>", "<|message|>", "<|channel|>"
CONSTRAIN, RETURN, CALL = "<|constrain|>", "<|return|>", "<|call|>"
ENDOFTEXT = "<|endoftext|>"
RECIPIENT = "to="
FUNCTIONS = "functions."


def ends_with_call(completion: str) -> bool:
    """Whether the last message of ``completion`` is addressed to a recipient (its header, before ``<|message|>``,
    holds `` to=``), so generation stopped at ``<|call|>`` rather than ``<|return|>``: the stop token the render cut
    (Harmony's stop tokens for assistant actions; the template's lines 296-300 and 311)."""
    last = completion.rsplit(START, 1)[-1]
    return " " + RECIPIENT in last.split(MESSAGE, 1)[0]


def compose_content_before(completion: str, prose: str) -> str:
    """Where prose written *before* the calls goes in a Harmony completion (used by :mod:`harness.template.render` for a
    scenario's ``content_before``): raw text outside a message is not Harmony, so it becomes a message.

    - With a ``final`` message (a turn without calls) the prose starts its body, so the final content reads
      ``prose + content`` exactly as the scenario's expected content is composed.
    - Otherwise it becomes a ``commentary`` preamble, the user-visible message gpt-oss writes before a call,
      inserted right before the message that holds the first call (after any analysis message).
    """
    final = CHANNEL + "final" + MESSAGE
    at = completion.find(final)
    if at >= 0:
        at += len(final)
        return completion[:at] + prose + completion[at:]
    call = completion.find(RECIPIENT + FUNCTIONS)
    start = completion.rfind(START + "assistant", 0, call) if call >= 0 else -1
    at = start + len(START + "assistant") if start >= 0 else 0
    preamble = CHANNEL + "commentary" + MESSAGE + prose + END + START + "assistant"
    return completion[:at] + preamble + completion[at:]


def edge_scenarios() -> list:
    """Harmony-specific curated shapes (ids ``edge-harmony-...``): protocol markers and header text inside JSON
    string values and keys, calls after reasoning (reasoning that itself spells a recipient or JSON), a preamble
    before a call, dotted and dashed tool names, and a final answer after reasoning.

    Header variants (recipient after the channel, ``<|constrain|>json``, ``analysis`` calls, ``<|end|>`` endings)
    are not writable through the template; ``tests/conformance/test_harmony.py`` covers them on hand-written text."""

    def e(id, tags, calls, **kw):
        return edge(f"harmony-{id}", ["harmony", *tags], calls, **kw)

    def save(id, tags, value, note=""):
        return text_case(f"harmony-{id}", ["harmony", "marker-in-string", *tags], value, note, path="notes/harmony.txt")

    return [
        save(
            "call-in-string",
            ["harmony-call"],
            "a<|call|>b",
            note="<|call|> inside a JSON string is data; the call ends at the JSON's end.",
        ),
        save("message-in-string", ["harmony-message"], 'x<|message|>{"a": 1}'),
        save(
            "next-message-in-string",
            ["harmony-start"],
            "<|end|><|start|>assistant<|channel|>final<|message|>Done.<|return|>",
            note="A whole fake final message inside a string value.",
        ),
        save(
            "recipient-in-string",
            ["harmony-recipient"],
            ' to=functions.rm <|constrain|>json<|message|>{"path": "/"}<|call|>',
        ),
        save(
            "json-close-in-string",
            ["harmony-json"],
            '"}<|call|>\n{"',
            note="Text that imitates the end of the arguments followed by <|call|>.",
        ),
        e(
            "call-marker-last",
            ["marker-in-string", "harmony-call"],
            call("set_pattern", {"pattern": "<|return|><|call|>"}),
            note="The last value ends with stop markers; the template's own <|call|> (stripped as the stop) follows.",
        ),
        e(
            "marker-keys",
            ["marker-in-string", "harmony-key"],
            call("configure", {"<|call|>": 1, "<|channel|>final": "x", "to=functions.x": None}),
        ),
        e(
            "reasoning-then-call",
            ["reasoning"],
            call("get_weather", {"city": "Paris"}),
            reasoning="The user wants the weather in Paris.\nI will call the tool.",
        ),
        e(
            "reasoning-spells-a-call",
            ["reasoning", "harmony-recipient"],
            call("get_weather", {"city": "Oslo"}),
            reasoning='Call to=functions.get_weather json with {"city": "Oslo"} next.',
            note="Recipient and JSON text inside the analysis body are reasoning, not a call.",
        ),
        e(
            "preamble-then-call",
            ["content-before"],
            call("get_weather", {"city": "Lima"}),
            content_before="Let me check the weather for you.",
            note="content_before becomes a commentary preamble message "
            "(harness.formats.harmony.compose_content_before).",
        ),
        e(
            "dotted-name",
            ["name-dot"],
            call("mcp.files.read_file", {"path": "/tmp/a b.txt"}),
            note="The recipient is functions.mcp.files.read_file; only the first 'functions.' is the namespace.",
        ),
        e("dashed-name", ["name-dash"], call("artifact-submit", {"ready": True})),
        e(
            "final-after-reasoning",
            ["reasoning", "content-after"],
            [],
            reasoning="No tool is needed.",
            content_after="The answer is 42.",
        ),
        e(
            "nested-args",
            ["nested-object", "array-of-objects"],
            call(
                "update_record",
                {
                    "id": 7,
                    "meta": {"tags": ["a", "<|end|>"], "n": {"x": 1.5e-07, "y": None}},
                    "rows": [{"k": "v"}, {}],
                    "ok": False,
                },
            ),
        ),
    ]


SPEC = FormatSpec(
    name="harmony",
    markers=(START, END, MESSAGE, CHANNEL, CONSTRAIN, RETURN, CALL, ENDOFTEXT),
    stop_markers=(CALL, RETURN, ENDOFTEXT),
    call=Markers(RECIPIENT + FUNCTIONS, None),  # <|call|> ends a call, but it is a stop marker the render strips
    call_end=CALL,
    thought=Markers(CHANNEL + "analysis" + MESSAGE, END),
    arguments="json",
    vocabulary=None,
    no_vocabulary="gpt-oss's o200k_harmony tokenizer needs tiktoken or openai-harmony, which only the vLLM and "
    "openai-harmony engine environments install",
    edge_scenarios=edge_scenarios,
    compose_content_before=compose_content_before,
    role_headers=("<|start|>assistant",),
    peers=("canitoolcall:gpt-oss", "llama.cpp:openai-gpt-oss-120b.jinja"),
    grammar="harmony",
    source="openai-gpt-oss-120b.jinja (llama-cpp-python 0.3.36 sdist)",
)

"""Muse Glimmer (Meta) tool-call format facts: recipient-addressed messages, each call an ATEM XML block of its own.

Source: ``muse-glimmer.jinja`` in the llama-cpp-python 0.3.36 sdist (``vendor/llama.cpp/models/templates``); line
numbers below are that file's. llama.cpp reads it with a dedicated parser (``common/parsers/muse-glimmer.cpp``).

A turn is a sequence of messages ``<|start|>assistant to=RECIPIENT<|message|>BODY`` ended by ``<|eom|>`` (more
messages follow) or ``<|eot|>`` (the turn ends, line 132). The generation prompt is ``<|start|>assistant`` (lines
209-211), so the completion starts at the first header's `` to=``:

- reasoning (``reasoning_content``) first: `` to=self<|message|>REASONING<|eom|>`` (lines 180-182);
- each call (lines 183-192) in a message addressed to the function::

      <|start|>assistant to=NAME<|message|><atem:function_calls>
      <atem:invoke name="NAME">
      <atem:parameter name="KEY">VALUE</atem:parameter>
      </atem:invoke>
      </atem:function_calls><|eom|>           (<|eot|> after the last call, line 188)

  VALUE (lines 32-47): a string raw, unescaped (so ``</atem:parameter>``, ``<|eom|>`` may occur in it); ``true`` /
  ``false`` / ``null``; a mapping or list with ``tojson``; a number with ``{{ v }}`` (Python ``str``, the same text
  as JSON for a finite float). The string ``"1"`` and the number ``1`` look alike: the tool's schema decides.
  Arguments that are not a mapping make the template raise (lines 28-30).
- a turn without calls is `` to=user<|message|>CONTENT<|eot|>`` (lines 193-205).
- the content of a turn with calls is not written (lines 183-206: ``tool_calls`` replaces the content branch);
  llama.cpp's parser reads prose before the calls as a ``to=user`` message ended by ``<|eom|>``
  (test-chat.cpp's "inform then act" case), which :func:`compose_content_before` writes.

Reasoning is the ``to=self`` message (``thought``); the prompt never pre-fills it. ``<|eot|>`` ends generation
(mlx-lm's Muse models stop on it and not on ``<|eom|>``); tool results come back as
``<|start|>tool NAME<|message|><tool_output name="NAME">...</tool_output><|eot|>`` (line 176-178).
"""

from harness.core.scenarios import call, edge, text_case
from harness.formats import FormatSpec, Markers

START, MESSAGE, EOM, EOT = "<|start|>", "<|message|>", "<|eom|>", "<|eot|>"
CALL_OPEN, CALL_CLOSE = "<atem:function_calls>", "</atem:function_calls>"
INVOKE_OPEN, INVOKE_CLOSE = '<atem:invoke name="', "</atem:invoke>"
PARAMETER_OPEN, PARAMETER_CLOSE = '<atem:parameter name="', "</atem:parameter>"
ROLE = START + "assistant"
RECIPIENT = "to="
SELF, USER = "self", "user"  # the reasoning and the answer recipients (lines 88-102)


def compose_content_before(completion: str, prose: str) -> str:
    """Prose before the calls as a message of its own: `` to=user<|message|>PROSE<|eom|>`` before the message of
    the first call (after a ``to=self`` reasoning message); on a turn without calls, at the start of its
    ``to=user`` body, so the content reads ``prose + content``."""
    answer = f" {RECIPIENT}{USER}{MESSAGE}"
    at = completion.find(answer)
    if at >= 0:
        at += len(answer)
        return completion[:at] + prose + completion[at:]
    reasoning = f" {RECIPIENT}{SELF}{MESSAGE}"
    at = completion.find(EOM + ROLE) + len(EOM + ROLE) if completion.startswith(reasoning) else 0
    return completion[:at] + answer + prose + EOM + ROLE + completion[at:]


def edge_scenarios() -> list:
    """Muse Glimmer shapes (ids ``edge-muse_glimmer-...``): message markers and ATEM closers inside string values,
    calls after reasoning, prose before calls, a dotted (namespaced) tool name, typed scalars."""
    return [
        text_case(
            "muse_glimmer-message-markers-in-value",
            ["marker-in-string"],
            f"{EOM}{ROLE} {RECIPIENT}rm{MESSAGE}{CALL_OPEN}",
            note="A whole fake message header inside a string value: the value is read by the block's structure.",
        ),
        text_case(
            "muse_glimmer-parameter-close-in-value",
            ["closer-in-string", "marker-in-string"],
            f"x{PARAMETER_CLOSE}\n{INVOKE_CLOSE}",
        ),
        edge(
            "muse_glimmer-reasoning-then-calls",
            ["reasoning", "parallel"],
            [call("get_weather", {"city": "Paris"}), call("get_time", {"tz": "CET"})],
            reasoning="Two lookups: the weather, then the time.",
        ),
        edge(
            "muse_glimmer-inform-then-act",
            ["content-before"],
            call("get_weather", {"city": "Lima"}),
            content_before="Let me check the weather for you.",
            note="content_before becomes a to=user message ended by <|eom|> (compose_content_before).",
        ),
        edge("muse_glimmer-dotted-name", ["name-dot"], call("files.read_file", {"path": "/tmp/a b.txt"})),
        edge(
            "muse_glimmer-typed-scalars",
            ["boolean", "string-looks-like-type"],
            call("configure", {"enabled": False, "level": 3, "ratio": 0.5, "label": "true", "unset": None}),
            parameters={
                "configure": {
                    "type": "object",
                    "properties": {
                        "enabled": {"type": "boolean"},
                        "level": {"type": "integer"},
                        "ratio": {"type": "number"},
                        "label": {"type": "string"},
                        "unset": {"type": ["string", "null"]},
                    },
                }
            },
        ),
    ]


SPEC = FormatSpec(
    name="muse_glimmer",
    markers=(
        START,
        MESSAGE,
        EOM,
        EOT,
        CALL_OPEN,
        CALL_CLOSE,
        INVOKE_OPEN,
        INVOKE_CLOSE,
        PARAMETER_OPEN,
        PARAMETER_CLOSE,
    ),
    stop_markers=(EOT,),
    call=Markers(INVOKE_OPEN, INVOKE_CLOSE),
    section=Markers(CALL_OPEN, CALL_CLOSE),
    thought=Markers(RECIPIENT + SELF + MESSAGE, EOM),
    arguments="xml-values",
    parameter=Markers(PARAMETER_OPEN, PARAMETER_CLOSE),
    call_newlines=True,
    vocabulary=None,
    no_vocabulary="Muse Glimmer's tokenizer (meta-models/Muse-Glimmer-30B) is in no PyPI package",
    edge_scenarios=edge_scenarios,
    compose_content_before=compose_content_before,
    role_headers=(ROLE,),
    peers=("llama.cpp:muse-glimmer.jinja",),
    source="muse-glimmer.jinja, lines 26-211 (llama-cpp-python 0.3.36 sdist)",
)

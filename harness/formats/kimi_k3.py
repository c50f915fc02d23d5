"""Kimi K3 XTML tool-call format facts (moonshotai/Kimi-K3).

Source: ``Kimi-K3.jinja`` in the llama-cpp-python 0.3.36 sdist (``vendor/llama.cpp/models/templates``), llama.cpp's
copy of moonshotai/Kimi-K3's chat template. Line numbers below are that file's.

- XTML tags: every tag is built from three special tokens, ``<|open|>TAG ATTR="V" ...<|sep|>`` and
  ``<|close|>TAG<|sep|>`` (macros ``open_tag`` / ``close_tag``, lines 5-15). Attribute values are escaped
  ``&`` -> ``&amp;``, ``"`` -> ``&quot;`` and nothing else (``escape_attr``, lines 1-3), so an attribute
  value runs to the next ``"``. Nothing (no whitespace) is written between tags.
- An assistant turn is ``<|open|>message role="assistant"<|sep|>`` (lines 234-236), then, with ``thinking``
  on (the default, lines 188-190), ``<|open|>think<|sep|>REASONING<|close|>think<|sep|>`` (lines 117-124; an
  empty block when the turn has no reasoning), then ``<|open|>response<|sep|>CONTENT<|close|>response<|sep|>``
  (lines 125-127, always written, the content raw), then the calls, then ``<|close|>message<|sep|>`` and
  ``<|end_of_msg|>`` (lines 238-239), the end-of-message token that ends generation.
- The calls of a turn share one ``<|open|>tools<|sep|>`` ... ``<|close|>tools<|sep|>`` block (lines 129-161);
  each call is ``<|open|>call tool="NAME" index="N"<|sep|>`` ... ``<|close|>call<|sep|>`` with ``N`` the
  call's 1-based position in the turn (``loop.index``, line 139).
- Arguments (lines 146-151), in the arguments' own order, one tag each:
  ``<|open|>argument key="KEY" type="T"<|sep|>VALUE<|close|>argument<|sep|>``. ``T`` is the value's type
  (``xtml_type``, lines 98-106: ``boolean``, ``null``, ``number``, ``string``, ``object``, else ``array``);
  ``VALUE`` is a string written raw, nothing escaped (so any tag text may occur inside it), every other value
  ``tojson(ensure_ascii=false)`` (``xtml_value``, lines 108-114). The type attribute, not the tool's schema,
  says how to read a value. A call with no arguments has no argument tag. Arguments given as a JSON string
  are written whole as ``<|open|>json type="object"<|sep|>TEXT<|close|>json<|sep|>`` (lines 141-145,
  152-155).
- The generation prompt is ``<|open|>message role="assistant"<|sep|>`` then ``<|open|>think<|sep|>`` with
  thinking on, ``<|open|>response<|sep|>`` with it off (lines 316-319): the think block is pre-filled, so a
  rendered case's prefix is ``<|open|>think<|sep|>`` and its completion starts inside the reasoning
  (``REASONING<|close|>think<|sep|><|open|>response<|sep|>...``).
- No BOS text is written; the template needs no ``template_vars`` (``thinking`` defaults to true).
"""

from harness.core.scenarios import call, edge, last_case, text_case
from harness.formats import FormatSpec, Markers

OPEN = "<|open|>"
CLOSE = "<|close|>"
SEP = "<|sep|>"
END_OF_MSG = "<|end_of_msg|>"
THINK_OPEN = OPEN + "think" + SEP
THINK_CLOSE = CLOSE + "think" + SEP
RESPONSE_OPEN = OPEN + "response" + SEP
RESPONSE_CLOSE = CLOSE + "response" + SEP
TOOLS_OPEN = OPEN + "tools" + SEP
TOOLS_CLOSE = CLOSE + "tools" + SEP
CALL_HEAD = OPEN + "call"  # then attributes and SEP
CALL_CLOSE = CLOSE + "call" + SEP
ARGUMENT_HEAD = OPEN + "argument"  # then attributes and SEP
ARGUMENT_CLOSE = CLOSE + "argument" + SEP
JSON_HEAD = OPEN + "json"
JSON_CLOSE = CLOSE + "json" + SEP
MESSAGE_CLOSE = CLOSE + "message" + SEP
ASSISTANT = OPEN + 'message role="assistant"' + SEP


def edge_scenarios() -> list:
    """Kimi K3-specific curated shapes (ids ``edge-kimi_k3-...``): XTML tag text inside raw string values (the
    argument closer, a whole call end, a whole message end), attribute escaping in keys and names, typed
    values, and calls after reasoning."""

    def text(id: str, tags: list[str], value: str, note: str = ""):
        return text_case(f"kimi_k3-{id}", ["closer-in-string", *tags], value, note)

    def last(id: str, tags: list[str], value: str, note: str = ""):
        return last_case(f"kimi_k3-{id}", ["closer-in-string", *tags], value, note)

    call_end = ARGUMENT_CLOSE + CALL_CLOSE + TOOLS_CLOSE + MESSAGE_CLOSE
    return [
        text("argument-close-in-value", ["marker-in-string"], ARGUMENT_CLOSE + " is how args end"),
        text(
            "argument-chain-in-value",
            ["marker-in-string"],
            "x" + ARGUMENT_CLOSE + OPEN + 'argument key="path" type="string"' + SEP + "y",
            note="A value holding a whole argument tag for a key the call already set: data, not a second path.",
        ),
        last("call-end-in-last-value", ["marker-in-string"], "a" + call_end + "tail"),
        last("message-end-ends-last-value", ["marker-in-string"], "a" + call_end),
        text("tools-open-in-value", ["marker-in-string"], TOOLS_OPEN + OPEN + 'call tool="rm" index="1"' + SEP),
        edge(
            "kimi_k3-attribute-escaping",
            ["key-quote", "odd-key"],
            call('save "it"', {"q&a": "fish & chips", 'say "hi"': 'she said "hi"', "&amp;": "&quot;"}),
            note="Keys and the name escaped &amp; / &quot; by the template; a key that is itself an entity.",
        ),
        edge(
            "kimi_k3-sep-in-key",
            ["odd-key"],
            call("tag", {"a<|sep|>b": 1, "<|close|>": "x"}),
            note="Tag tokens inside attribute values: the value runs to its closing quote.",
        ),
        edge(
            "kimi_k3-typed-values",
            ["boolean", "null", "nested-object"],
            call("configure", {"s": "true", "b": True, "n": None, "i": 7, "f": 2.5, "o": {"k": [1, "2"]}, "e": ""}),
            note='Only the type attribute tells the string "true" from the boolean.',
        ),
        edge(
            "kimi_k3-json-closer-in-object",
            ["marker-in-string", "nested-object"],
            call("configure", {"cfg": {"end": ARGUMENT_CLOSE + CALL_CLOSE, "list": [TOOLS_CLOSE, END_OF_MSG]}}),
        ),
        edge(
            "kimi_k3-reasoning-content-parallel",
            ["reasoning", "parallel"],
            [call("get_weather", {"city": "Paris"}), call("get_weather", {"city": "Oslo"})],
            reasoning="Two cities: call get_weather twice.",
            content_before="Checking both.",
        ),
    ]


def compose_content_before(completion: str, prose: str) -> str:
    """Prose written before the calls goes inside the response block, ahead of its content (the template writes
    the content there, lines 125-127, and the calls after it)."""
    at = completion.find(RESPONSE_OPEN)
    if at < 0:
        return prose + completion
    at += len(RESPONSE_OPEN)
    return completion[:at] + prose + completion[at:]


SPEC = FormatSpec(
    name="kimi_k3",
    markers=(
        OPEN,
        CLOSE,
        SEP,
        END_OF_MSG,
        THINK_OPEN,
        THINK_CLOSE,
        RESPONSE_OPEN,
        RESPONSE_CLOSE,
        TOOLS_OPEN,
        TOOLS_CLOSE,
        CALL_CLOSE,
        ARGUMENT_CLOSE,
        MESSAGE_CLOSE,
    ),
    stop_markers=(END_OF_MSG,),
    call=Markers(CALL_HEAD, CALL_CLOSE),
    section=Markers(TOOLS_OPEN, TOOLS_CLOSE),
    reasoning=Markers(THINK_OPEN, THINK_CLOSE),
    arguments="xml-values",
    parameter=Markers(ARGUMENT_HEAD + ' key="', ARGUMENT_CLOSE),
    vocabulary=None,
    no_vocabulary="Kimi K3's tiktoken vocabulary (trust_remote_code) with its XTML tokens is not available offline",
    edge_scenarios=edge_scenarios,
    compose_content_before=compose_content_before,
    role_headers=(ASSISTANT,),
    peers=("canitoolcall:kimi/moonshotai/Kimi-K3", "llama.cpp:Kimi-K3.jinja"),
    grammar="kimi_k3",
    source="Kimi-K3.jinja (llama-cpp-python 0.3.36 sdist), lines 1-323",
)

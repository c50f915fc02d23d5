"""Qwen3-Coder XML tool-call format facts (Qwen3-Coder, NVIDIA Nemotron-3-Nano).

Sources: ``Qwen3-Coder.jinja`` and ``NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja`` in the llama-cpp-python 0.3.36
sdist (``vendor/llama.cpp/models/templates``); line numbers below are those files'.

One call (Qwen3-Coder.jinja lines 85-94, Nemotron lines 148-156)::

    <tool_call>
    <function=NAME>
    <parameter=KEY>
    VALUE
    </parameter>
    </function>
    </tool_call>

- Each argument is its own ``<parameter=KEY>`` block, in the arguments' own order, with a newline after the
  opener and before ``</parameter>`` (Qwen3-Coder lines 88-91, Nemotron 151-153): a value's own leading or
  trailing newlines come on top of that padding.
- VALUE carries no type (Qwen3-Coder line 89, Nemotron 152): a mapping or a non-string sequence is written with
  ``tojson`` (JSON, non-ASCII kept); everything else with Jinja's ``|string``, i.e. Python ``str()``: strings raw
  with nothing escaped (so ``</parameter>``, ``</function>``, ``</tool_call>`` can all occur inside a value),
  booleans ``True``/``False``, null ``None``, floats ``1e-07`` / ``6.02e+23`` / ``100.0``. The string ``"True"``
  and the boolean ``True`` look alike: the tool's schema decides (``parsers.own._schema_types``).
- Qwen3-Coder writes ``\\n<tool_call>`` before each call (line 85) and the message content first, trimmed,
  between newlines (lines 78-79); Nemotron writes the content first, trimmed, then ``\\n`` (line 126) and
  ``</tool_call>\\n`` after each call (line 156). Both end the turn with ``<|im_end|>\\n`` (line 96 / 158).
- Reasoning (Nemotron only; Qwen3-Coder has none): ``<think>\\nREASONING\\n</think>\\n`` before the content (line
  108); a turn without reasoning gets ``<think></think>`` (line 114). The generation prompt is
  ``<|im_start|>assistant\\n<think>\\n`` with thinking on and ``<|im_start|>assistant\\n<think></think>`` with
  thinking off (lines 199-203); Qwen3-Coder's is ``<|im_start|>assistant\\n`` (line 116). Rendered cases never
  carry a prefix: the full render repeats the pre-filled text, so with thinking on the completion starts
  inside the reasoning (``REASONING\\n</think>\\n<tool_call>...``) with prefix ``""`` (harness/template/render.py's
  documented limitation).
- Neither template uses ``bos_token``; the ChatML markers are written as text.
"""

from harness.core.scenarios import call, edge, last_case, object_schema, text_case
from harness.formats import FormatSpec, Markers

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
FUNCTION_OPEN = "<function="
FUNCTION_CLOSE = "</function>"
PARAMETER_OPEN = "<parameter="
PARAMETER_CLOSE = "</parameter>"
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"


def edge_scenarios() -> list:
    """Qwen3-Coder-specific curated shapes (ids ``edge-qwen3_coder-...``): the format's closers inside string
    values, the template's Python ``str()`` scalars under typed and ``anyOf`` schemas, strings that look like
    other types, values made of or padded with newlines (the template adds one newline on each side), and
    calls after reasoning (Nemotron; Qwen3-Coder writes no reasoning, so those are skipped for it)."""

    def text(id: str, tags: list[str], value: str, note: str = ""):
        return text_case(f"qwen3_coder-{id}", ["closer-in-string", *tags], value, note)

    def last(id: str, tags: list[str], value: str, note: str = ""):
        return last_case(f"qwen3_coder-{id}", ["closer-in-string", *tags], value, note)

    s = [
        # ---- the format's own closers inside string values --------------------------------------------
        text("parameter-close-in-value", ["marker-in-string"], "a </parameter> b"),
        text(
            "parameter-close-alone",
            ["marker-in-string"],
            "</parameter>",
            note="The value is only the closer: the first </parameter> is followed by another closer.",
        ),
        last(
            "parameter-close-ends-last-value",
            ["marker-in-string"],
            "x\n</parameter>",
            note="The last value ends with its own closer text on a line of its own.",
        ),
        text("function-close-in-value", ["marker-in-string"], "end of </function> here"),
        text("tool-call-close-in-value", ["marker-in-string"], "</tool_call>\nafter"),
        text(
            "closer-chain-in-value",
            ["marker-in-string"],
            "x\n</parameter>\n</function>\n</tool_call>\nmore",
            note="A whole call end inside a middle value; only the text after it shows it is data.",
        ),
        last(
            "closer-chain-in-last-value",
            ["marker-in-string"],
            "</parameter>\n</function>\n</tool_call>\ntail",
            note="A whole call end inside the last value: the first parse is not a clean end.",
        ),
        text("opener-in-value", ["marker-in-string"], "<tool_call>\n<function=rm>\n<parameter=path>\n/"),
        text("parameter-open-in-value", ["marker-in-string"], "see <parameter=version>\n3 here"),
        edge(
            "qwen3_coder-closers-parallel",
            ["closer-in-string", "marker-in-string", "parallel"],
            [
                call("set_pattern", {"pattern": "</tool_call>\n<tool_call>"}),
                call("set_pattern", {"pattern": "</parameter></function>"}),
            ],
            note="Two calls whose values hold the markers that separate calls.",
        ),
        # ---- Python str() scalars under typed and anyOf schemas -------------------------------------------
        edge(
            "qwen3_coder-python-scalars",
            ["python-scalar", "boolean", "null"],
            call(
                "configure", {"debug": True, "dry_run": False, "parent": None, "ratio": 1e-07, "big": 1e16, "count": 12}
            ),
            note="Written True, False, None, 1e-07, 1e+16, 12 (Python str()).",
        ),
        edge(
            "qwen3_coder-anyof-scalars",
            ["python-scalar", "schema-anyof", "boolean", "null"],
            call("configure", {"a": True, "b": None, "c": 7, "d": 2.5}),
            parameters={
                "configure": object_schema(
                    {
                        "a": {"anyOf": [{"type": "string"}, {"type": "boolean"}]},
                        "b": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                        "c": {"type": ["integer", "string"]},
                        "d": {"anyOf": [{"type": "number"}, {"type": "null"}]},
                    }
                )
            },
        ),
        edge(
            "qwen3_coder-containers-with-python-values",
            ["python-scalar", "nested-object", "null"],
            call(
                "query_issues",
                {"filter": {"open": True, "owner": None, "labels": ["bug", None]}, "ids": [1, 2.5, True]},
            ),
            note="Containers are written as JSON (tojson), so their scalars are true/null, not True/None.",
        ),
        # ---- strings that look like other types ---------------------------------------------------------
        edge(
            "qwen3_coder-string-lookalikes-anyof",
            ["string-looks-like-type", "schema-anyof"],
            call("lookup", {"code": "001", "exp": "1e5x", "flag": "yes", "none": "none", "list": "[1, 2"}),
            parameters={
                "lookup": object_schema(
                    {
                        "code": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                        "exp": {"anyOf": [{"type": "string"}, {"type": "number"}]},
                        "flag": {"anyOf": [{"type": "string"}, {"type": "boolean"}]},
                        "none": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                        "list": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "integer"}}]},
                    }
                )
            },
            note='No other type reads these texts: "001" is not a JSON integer, so it stays a string.',
        ),
        edge(
            "qwen3_coder-string-lookalikes-string",
            ["string-looks-like-type"],
            call("lookup", {"a": "True", "b": "None", "c": "-5", "d": "{'x': 1}", "e": "1.10"}),
            note="Under string schemas the template's own spellings of other types stay strings.",
        ),
        # ---- newlines: the template pads each value with one on each side -----------------------------
        text("value-only-newline", ["whitespace-string", "newline-in-string"], "\n"),
        text("value-two-newlines", ["whitespace-string", "newline-in-string"], "\n\n"),
        text("value-leading-newline", ["leading-trailing-space", "multiline"], "\nfirst line\nsecond"),
        last("value-trailing-newline", ["leading-trailing-space", "multiline"], "last line\n"),
        edge(
            "qwen3_coder-multiline-and-empty",
            ["multiline", "empty-string"],
            call("write_file", {"path": "a.py", "content": "def f():\n    return 1\n", "mode": ""}),
        ),
        # ---- calls after reasoning (Nemotron) -----------------------------------------------------------
        edge(
            "qwen3_coder-reasoning-then-parallel",
            ["reasoning", "parallel"],
            [call("get_weather", {"city": "Paris"}), call("get_weather", {"city": "Oslo"})],
            reasoning="Two cities.\nCall get_weather twice: <parameter=city> each.",
            note="Reasoning that mentions the format's tags, then two calls.",
        ),
        edge(
            "qwen3_coder-reasoning-content-closer-value",
            ["reasoning", "content-after", "closer-in-string"],
            call("set_pattern", {"pattern": "</function>\n</tool_call>"}),
            reasoning="Set the pattern.",
            content_after="Setting it.",
        ),
    ]
    return s


SPEC = FormatSpec(
    name="qwen3_coder",
    markers=(
        CALL_OPEN,
        CALL_CLOSE,
        THINK_OPEN,
        THINK_CLOSE,
        "<|im_start|>",
        "<|im_end|>",
        "<tool_response>",
        "</tool_response>",
    ),
    stop_markers=("<|im_end|>", "<|endoftext|>"),
    call=Markers(CALL_OPEN, CALL_CLOSE),
    reasoning=Markers(THINK_OPEN, THINK_CLOSE),
    arguments="xml-values",
    parameter=Markers(PARAMETER_OPEN, PARAMETER_CLOSE),
    parameter_padding="\n",
    call_newlines=True,
    vocabulary="qwen",
    edge_scenarios=edge_scenarios,
    role_headers=("<|im_start|>assistant\n",),
    peers=(
        "canitoolcall:qwen3-xml",
        "llama.cpp:Qwen3-Coder.jinja",
        "llama.cpp:NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja",
        "llama.cpp:Qwen3.5-4B.jinja",
        "llama.cpp:StepFun3.5-Flash.jinja",
    ),
    grammar="qwen_3_coder",
    source="Qwen3-Coder.jinja, NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja (llama-cpp-python 0.3.36 sdist)",
)

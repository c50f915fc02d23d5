"""ByteDance Seed-OSS XML tool-call format facts.

Source: ``ByteDance-Seed-OSS.jinja`` in the llama-cpp-python 0.3.36 sdist (``vendor/llama.cpp/models/templates``);
line numbers below are that file's.

One call (lines 137-148)::

    <seed:tool_call>
    <function=NAME>
    <parameter=KEY>VALUE</parameter>
    </function>
    </seed:tool_call>

- The markers are set at the top (lines 2-10): ``<seed:bos>`` / ``<seed:eos>`` open and end a turn,
  ``<seed:tool_call>`` / ``</seed:tool_call>`` a call, ``<seed:think>`` / ``</seed:think>`` reasoning.
- Each call is its own block, ``\\n`` before it (line 139); ``<function=NAME>`` and each
  ``<parameter=KEY>VALUE</parameter>`` are followed by ``\\n`` (lines 139-144); ``</function>\\n`` then the block
  closer (line 147). A value has no padding (unlike Qwen3-Coder's).
- VALUE carries no type and nothing is escaped (line 143): strings raw; everything else Jinja's ``|string``,
  i.e. Python ``str()``: ``True``/``False``, ``None``, ``1e-07``, and containers as Python literals
  (``{'a': 1}``, ``[1, None]``). The tool's schema decides the type (``parsers.own._schema_types``).
- An assistant turn is ``<seed:bos>assistant`` (line 130), then ``\\n<seed:think>REASONING</seed:think>`` when
  it has reasoning (trimmed, line 132), then ``\\nCONTENT\\n`` (trimmed, line 135), then the calls, then
  ``<seed:eos>`` (line 149), which ends generation.
- The generation prompt is ``<seed:bos>assistant\\n`` (line 167); nothing is pre-filled (``thinking_budget=0``
  pre-fills a closed think block, line 169), so a completion writes its own ``<seed:think>`` opener.
"""

from harness.core.scenarios import call, edge, text_case
from harness.formats import FormatSpec, Markers

CALL_OPEN = "<seed:tool_call>"
CALL_CLOSE = "</seed:tool_call>"
FUNCTION_OPEN = "<function="
FUNCTION_CLOSE = "</function>"
PARAMETER_OPEN = "<parameter="
PARAMETER_CLOSE = "</parameter>"
THINK_OPEN = "<seed:think>"
THINK_CLOSE = "</seed:think>"
BOS = "<seed:bos>"
EOS = "<seed:eos>"


def edge_scenarios() -> list:
    """Seed-OSS-specific curated shapes (ids ``edge-seed_oss-...``): the format's closers inside string values,
    the template's Python ``str()`` scalars and containers, and calls after reasoning."""

    def text(id: str, tags: list[str], value: str, note: str = ""):
        return text_case(f"seed_oss-{id}", ["closer-in-string", *tags], value, note)

    return [
        text("parameter-close-in-value", ["marker-in-string"], "a </parameter> b"),
        text("call-close-in-value", ["marker-in-string"], "</function>\n</seed:tool_call>\nafter"),
        text("newline-padded-value", ["leading-trailing-space", "multiline"], "\nfirst\nlast\n"),
        edge(
            "seed_oss-python-literals",
            ["python-scalar", "nested-object", "null", "boolean"],
            call("configure", {"debug": True, "parent": None, "ratio": 1e-07, "opts": {"a": [1, None], "b": False}}),
            note="Written True, None, 1e-07 and {'a': [1, None], 'b': False} (Python str()).",
        ),
        edge(
            "seed_oss-reasoning-then-parallel",
            ["reasoning", "parallel"],
            [call("get_weather", {"city": "Paris"}), call("get_weather", {"city": "Oslo"})],
            reasoning="Two cities: <parameter=city> each.",
        ),
    ]


SPEC = FormatSpec(
    name="seed_oss",
    markers=(CALL_OPEN, CALL_CLOSE, THINK_OPEN, THINK_CLOSE, BOS, EOS),
    stop_markers=(EOS,),
    call=Markers(CALL_OPEN, CALL_CLOSE),
    reasoning=Markers(THINK_OPEN, THINK_CLOSE),
    arguments="xml-values",
    parameter=Markers(PARAMETER_OPEN, PARAMETER_CLOSE),
    call_newlines=True,
    vocabulary=None,
    no_vocabulary="Seed-OSS's tokenizer is not available offline",
    edge_scenarios=edge_scenarios,
    role_headers=(BOS + "assistant\n",),
    peers=("llama.cpp:ByteDance-Seed-OSS.jinja",),
    source="ByteDance-Seed-OSS.jinja (llama-cpp-python 0.3.36 sdist)",
)

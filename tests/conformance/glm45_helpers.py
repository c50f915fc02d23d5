"""Shared helpers of the GLM conformance tests (``test_glm45.py``, ``test_glm45_properties.py``,
``test_glm47.py``): the parsers, calls written in the two template layouts (GLM-4.6 newline, GLM-4.7 inline) and
the one-shot-equals-streaming check.
"""

from __future__ import annotations

import json

from conformance.suite import assert_stream_matches, delta_checker
from harness.formats import get_format
from parsers.own.glm45 import Glm45Parser
from parsers.own.glm47 import Glm47Parser

FMT = get_format("glm45")
PARSER = Glm45Parser()
BOTH = [Glm45Parser(), Glm47Parser()]
CHECK_DELTA = delta_checker(FMT)


def stream_matches(text: str, prefix: str = "", tools=None, parser=PARSER, seed: int = 0, leak_check: bool = True):
    """:func:`conformance.suite.assert_stream_matches` with the text first and the parser a keyword."""
    return assert_stream_matches(parser, text, tools, prefix, seed, leak_check)


def arg_value(v) -> str:
    """``v`` as the templates write it inside ``<arg_value>``: a string raw, anything else as JSON."""
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)


def call45(name: str, arguments: dict) -> str:
    """A call as GLM-4.6.jinja writes it (newline layout), without the leading newline."""
    return (
        f"<tool_call>{name}\n"
        + "".join(f"<arg_key>{k}</arg_key>\n<arg_value>{arg_value(v)}</arg_value>\n" for k, v in arguments.items())
        + "</tool_call>"
    )


def call47(name: str, arguments: dict) -> str:
    """A call as GLM-4.7-Flash.jinja writes it (inline layout)."""
    return (
        f"<tool_call>{name}"
        + "".join(f"<arg_key>{k}</arg_key><arg_value>{arg_value(v)}</arg_value>" for k, v in arguments.items())
        + "</tool_call>"
    )

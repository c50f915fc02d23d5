"""Conformance of the project's own DeepSeek V4.1 parser (``parsers/own/deepseek_v41.py``, DeepSeek V3.2's DSML
reader with V4.1's spaced tags in a ``<｜DSML｜ calls>`` block) and of the deepseek_v41 family (no offline template:
canitoolcall's DeepSeek-V4.1-Flash fixtures run).
"""

from __future__ import annotations

import re

import pytest

from conformance.suite import Conformance, ParserConformance, Text
from harness.core.errors import TemplateNotFoundError
from harness.corpus.peers.canitoolcall import peer_cases
from harness.formats import get_format
from harness.formats.deepseek_v4 import BLOCK_OPEN as V4_BLOCK_OPEN
from harness.formats.deepseek_v31 import EOS
from harness.formats.deepseek_v41 import BLOCK_CLOSE, BLOCK_OPEN, INVOKE_CLOSE, INVOKE_OPEN, PARAM_CLOSE, PARAM_OPEN
from harness.score.runner import evaluate_case
from harness.template.catalog import load_catalog
from harness.template.sources import load_template
from parsers.own.deepseek_v41 import DeepSeekV41Parser

FMT = get_format("deepseek_v41")
PARSER = DeepSeekV41Parser()


def invoke(name: str, *params: str) -> str:
    return f'{INVOKE_OPEN} name="{name}">\n' + "".join(params) + ("" if params else "\n") + f"{INVOKE_CLOSE}\n"


def param(key: str, value: str, string: bool = True) -> str:
    return f'{PARAM_OPEN} name="{key}" string="{"true" if string else "false"}">{value}{PARAM_CLOSE}\n'


def block(*calls: str) -> str:
    return f"\n\n{BLOCK_OPEN}\n" + "".join(calls) + BLOCK_CLOSE


STRICT = {
    "one-call": (block(invoke("get_weather", param("city", "Paris"))), [("get_weather", {"city": "Paris"})]),
    "typed-and-empty": (
        "Both." + block(invoke("f", param("n", "42", False), param("s", "42")), invoke("g")),
        [("f", {"n": 42, "s": "42"}), ("g", {})],
        "Both.",
    ),
    "unspaced-tags-in-string": (
        block(invoke("echo", param("t", f'{V4_BLOCK_OPEN}<｜DSML｜invoke name="x">'))),
        [("echo", {"t": f'{V4_BLOCK_OPEN}<｜DSML｜invoke name="x">'})],
    ),
}
RECOVERED = {
    "self-closing-invoke": (f'{BLOCK_OPEN}\n{INVOKE_OPEN} name="submit"/>\n{BLOCK_CLOSE}', [("submit", {})]),
    "no-invoke-closer": (
        f"{BLOCK_OPEN}\n" + invoke("f", param("a", "1"))[: -len(INVOKE_CLOSE) - 1] + BLOCK_CLOSE,
        [("f", {"a": "1"})],
    ),
}
SURFACED = {"bad-invoke-tag": f"{BLOCK_OPEN}\n{INVOKE_OPEN} nam=x>\n{INVOKE_CLOSE}\n{BLOCK_CLOSE}"}
CUT_OFF = {"mid-value": (f'{BLOCK_OPEN}\n{INVOKE_OPEN} name="f">\n{PARAM_OPEN} name="a" string="true">Zür', [])}


def test_every_canitoolcall_fixture_passes():
    cases, _ = peer_cases(FMT)
    assert len(cases) == 21  # v41.jsonl 19, engine-tests.jsonl 2 (vLLM's test_deepseek_v41.py)
    for case in cases:
        records = list(evaluate_case(case, PARSER, FMT, ("oneshot", "whole", "char", "random"), seed=3))
        assert [r.verdict for r in records] == ["pass"] * 4, (case.id, [r.detail for r in records])


def test_the_fixtures_use_exactly_the_spec_tags():
    """The facts come from the fixtures: every DSML tag they write is one of the six spaced tags."""
    cases, _ = peer_cases(FMT)
    tags = {m.group(0) for c in cases for m in re.finditer(r"</?｜DSML｜ [a-z_]+", c.text)}
    assert tags == {BLOCK_OPEN[:-1], BLOCK_CLOSE[:-1], INVOKE_OPEN, INVOKE_CLOSE[:-1], PARAM_OPEN, PARAM_CLOSE[:-1]}
    assert {c.prefix for c in cases} == {"</think>", "<think>"}


def test_the_v4_spelling_is_content_here():
    """V4's unspaced ``<｜DSML｜tool_calls>`` block is not this format's: it stays content."""
    text = f'{V4_BLOCK_OPEN}\n<｜DSML｜invoke name="f">\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>'
    message = PARSER.parse(text, None, "</think>")
    assert (message.content, message.tool_calls, message.diagnostics) == (text, [], [])


def test_catalog_row_has_no_offline_template(monkeypatch):
    entry = load_catalog()["deepseek-v4.1-flash"]
    assert (entry.format, entry.hf_repo, entry.offline_template) == (
        "deepseek_v41",
        "deepseek-ai/DeepSeek-V4.1-Flash",
        "",
    )
    assert "no offline template" in entry.offline_note
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", "/nonexistent/hf-home-for-tests")
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    with pytest.raises(TemplateNotFoundError, match="has no template for deepseek-v4.1-flash"):
        load_template("deepseek-v4.1-flash")


class TestDeepSeekV41(ParserConformance):
    CONFIG = Conformance(
        format="deepseek_v41",
        parser=DeepSeekV41Parser,
        prefix="</think>",
        strict={k: Text(*v) for k, v in STRICT.items()},
        stops=("", EOS),
        recovered={k: Text(*v) for k, v in RECOVERED.items()},
        surfaced=SURFACED,
        cut_off={k: Text(*v) for k, v in CUT_OFF.items()},
        hold_back=(block(invoke("f", param("a", "x <｜DSML｜ y"))) + EOS,),
        hold_back_prefixes=("</think>", "<think>"),
    )
    test_own_parser_passes_every_strict_rendered_case = None  # no offline template (test_catalog_row_...)

"""The exported hypothesis strategies (harness.corpus.strategies) as another project would use them, and the examples
in the module docstring and the README run as written."""

import json
import re
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings

import harness.corpus.strategies
from harness.core.cases import Case
from harness.core.errors import UnknownModelError
from harness.corpus.strategies import rendered_tool_calls
from harness.formats import get_format
from harness.parse.registry import get_parser
from harness.score.verdicts import score

README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.mark.parametrize("model, fmt", [("gemma-4-e2b", "gemma4"), ("qwen3-0.6b", "hermes")])
def test_the_own_parser_reads_every_rendered_case(model, fmt):
    parser = get_parser(f"toolcall-harness:{fmt}", fmt)
    spec = get_format(fmt)

    @settings(max_examples=25, deadline=None, database=None)
    @given(rendered_tool_calls(model))
    def check(case):
        assert isinstance(case, Case) and case.format == fmt and case.slice == "generated"
        assert case.expected.tool_calls and spec.call_open in case.text
        verdict = score(case, parser.parse(case.text, case.tools, case.prefix), spec)
        assert verdict.passed, f"{verdict.error_type}: {verdict.detail}\n{case.text!r}"

    check()


def test_forbidden_substrings_never_appear():
    @settings(max_examples=15, deadline=None, database=None)
    @given(rendered_tool_calls("gemma-4-e2b", forbid=("東京", "\\")))
    def check(case):
        arguments = json.dumps([c.arguments for c in case.expected.tool_calls], ensure_ascii=False)
        assert "東京" not in case.text and "東京" not in arguments
        assert '<|"|>' not in arguments  # the format's own unrepresentable delimiter

    check()


def test_an_unknown_model_fails_when_the_strategy_is_built():
    with pytest.raises(UnknownModelError, match="no-such-model"):
        rendered_tool_calls("no-such-model")


def _python_blocks(text: str) -> list[str]:
    return [textwrap.dedent(block) for block in re.findall(r"```python\n(.*?)```", text, re.DOTALL)]


def _run_tests_in(source: str, namespace: dict) -> list[str]:
    """Execute ``source`` and call every ``test_*`` function it defines; returns their names."""
    exec(compile(source, "<example>", "exec"), namespace)
    names = [name for name in namespace if name.startswith("test_")]
    for name in names:
        namespace[name]()
    return names


def test_the_readme_example_runs_as_written():
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Use the corpus from your own test suite") :]
    section = section[: section.index("\n## ", 1)] if "\n## " in section[1:] else section
    [example] = _python_blocks(section)
    assert "rendered_tool_calls" in example
    assert len(_run_tests_in(example, {})) >= 2


def test_the_module_docstring_example_runs():
    doc = harness.corpus.strategies.__doc__
    after = doc[doc.index("Use from another project's tests") :].split("::\n", 1)[1].splitlines()
    block = []
    for line in after:  # the indented literal block, up to the first line back at the margin
        if line.strip() and not line.startswith("    "):
            break
        block.append(line)
    example = textwrap.dedent("\n".join(block))
    own = get_parser("toolcall-harness:gemma4", "gemma4")
    names = _run_tests_in(example, {"parse": own.parse, "write": json.dumps, "read_back": json.loads})
    assert names == ["test_my_parser", "test_my_argument_writer"]

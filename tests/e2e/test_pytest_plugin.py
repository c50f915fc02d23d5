"""The pytest plugin (harness/extra/pytest_plugin.py), run in real pytest subprocesses against small parsers written
to a temporary folder; expected counts come from the harness itself, run here on the same corpus."""

import json
import os
import re
import subprocess
import sys
from collections import Counter

import pytest

from harness.core.protocol import BufferedStream
from harness.corpus.build import build_corpus
from harness.formats import get_format
from harness.score.runner import evaluate_case
from harness.template.sources import load_template

MODEL = "gemma-4-e2b"
FMT = get_format("gemma4")
MODES = ["oneshot", "char"]

CANDIDATES = '''
from harness.core.messages import Message, ToolCall
from parsers.own.gemma4 import Gemma4Parser


class Good(Gemma4Parser):
    """The project's own parser under another name: the full protocol (parse and stream)."""
    name = "candidate-good"


class IntsAsStrings:
    """parse() only (streaming modes buffer): integers come back as strings, a classic wrong-type bug."""

    def __init__(self):
        self._inner = Gemma4Parser()

    def parse(self, text, tools=None, prefix=""):
        got = self._inner.parse(text, tools, prefix)
        return Message(got.content, got.reasoning, [ToolCall(c.name, _mangle(c.arguments)) for c in got.tool_calls])


def _mangle(value):
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dict):
        return {k: _mangle(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mangle(v) for v in value]
    return value
'''


class _ParseOnly:
    """The in-process twin of the plugin's handling of a parse-only parser: BufferedStream for streaming."""

    name, library, version, formats, incremental = "parse-only", "test", "0", ("gemma4",), False

    def __init__(self, inner):
        self.inner = inner

    def parse(self, text, tools=None, prefix=""):
        return self.inner.parse(text, tools, prefix)

    def stream(self, tools=None, prefix=""):
        return BufferedStream(self, tools, prefix)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A folder holding the candidate parsers, a pytest.ini (so it is the rootdir) and one plain test."""
    path = tmp_path_factory.mktemp("plugin")
    (path / "candidates.py").write_text(CANDIDATES, encoding="utf-8")
    (path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (path / "test_plain.py").write_text("def test_plain():\n    assert 1 + 1 == 2\n", encoding="utf-8")
    sys.path.insert(0, str(path))
    yield path
    sys.path.remove(str(path))
    sys.modules.pop("candidates", None)


@pytest.fixture(scope="module")
def corpus_cases():
    return build_corpus(load_template(MODEL), FMT, seed=0, n_generated=0, slices=("curated",)).cases


def expected_outcomes(cases, parser) -> list[tuple[str, str, str]]:
    """``[(case id, mode, pytest outcome)]`` in corpus order, from the harness run directly."""
    outcome = {"pass": "passed", "fail": "failed", "error": "failed", "surfaced": "xfailed"}
    return [
        (case.id, r.mode, outcome[r.verdict]) for case in cases for r in evaluate_case(case, parser, FMT, MODES, seed=0)
    ]


def run_pytest(cwd, *args) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONPATH"))}
    env["PYTHONPATH"] = str(cwd)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def summary_counts(output: str) -> Counter:
    """The counts of pytest's last summary line (``3 failed, 2 passed, 1 xfailed in 0.5s``)."""
    last = output.strip().splitlines()[-1]
    return Counter({word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|xfailed|deselected|errors?)", last)})


def corpus_args(parser: str, *more: str) -> list[str]:
    return [
        "--toolcall-parser",
        f"candidates:{parser}",
        "--toolcall-model",
        MODEL,
        "--toolcall-slices",
        "curated",
        "-m",
        "toolcall",
        *more,
    ]


@pytest.fixture(scope="module")
def bad_expected(workdir, corpus_cases):
    import candidates

    return expected_outcomes(corpus_cases, _ParseOnly(candidates.IntsAsStrings()))


@pytest.fixture(scope="module")
def bad_run(workdir):
    return run_pytest(workdir, *corpus_args("IntsAsStrings", "-q"))


def test_good_parser_counts_match_the_harness(workdir, corpus_cases):
    import candidates

    expected = Counter(o for _, _, o in expected_outcomes(corpus_cases, candidates.Good()))
    run = run_pytest(workdir, *corpus_args("Good", "-q"))
    counts = summary_counts(run.stdout)
    assert counts["passed"] == expected["passed"] == 2 * len(corpus_cases)
    assert counts["failed"] == expected["failed"] == 0
    assert counts["deselected"] == 1  # test_plain.py, left out by -m toolcall
    assert run.returncode == 0, run.stdout[-2000:]


def test_failing_parser_counts_match_the_harness(bad_run, bad_expected):
    expected = Counter(o for _, _, o in bad_expected)
    counts = summary_counts(bad_run.stdout)
    assert expected["failed"] > 0 and expected["passed"] > 0
    assert (counts["passed"], counts["failed"], counts["xfailed"]) == (
        expected["passed"],
        expected["failed"],
        expected["xfailed"],
    )
    assert bad_run.returncode == 1


def test_failure_report_shows_input_expected_and_got(bad_run, corpus_cases, workdir):
    import candidates

    case = next(c for c in corpus_cases if c.id == "edge-nested-object")
    record = next(evaluate_case(case, _ParseOnly(candidates.IntsAsStrings()), FMT, ["oneshot"], seed=0))
    assert record.verdict == "fail"
    out = bad_run.stdout
    header = "toolcall[gemma-4-e2b]::[curated][edge-nested-object][oneshot]"
    block = out[out.index(f"_ {header} _") :]
    block = block[: block.index("\n____")] if "\n____" in block else block
    assert f"case edge-nested-object (curated, strict) in mode oneshot: fail {record.error_type}" in block
    assert f"detail:   {record.detail}" in block
    assert f"input:    {json.dumps(case.text, ensure_ascii=False)}" in block
    assert f"expected: {json.dumps(case.expected.to_json(), ensure_ascii=False)}" in block
    assert f"got:      {json.dumps(record.got, ensure_ascii=False)}" in block
    assert "Traceback" not in out


def test_k_selects_the_items_of_one_case(workdir):
    run = run_pytest(workdir, *corpus_args("IntsAsStrings", "-q", "-k", "[edge-nested-object]"))
    counts = summary_counts(run.stdout)
    assert counts["passed"] + counts["failed"] == len(MODES)
    assert "[edge-nested-object-3]" not in run.stdout


def test_x_stops_at_the_first_failure(workdir, bad_expected):
    first = next(i for i, (_, _, o) in enumerate(bad_expected) if o == "failed")
    run = run_pytest(workdir, *corpus_args("IntsAsStrings", "-q", "-x"))
    counts = summary_counts(run.stdout)
    assert counts["failed"] == 1
    assert counts["passed"] == sum(o == "passed" for _, _, o in bad_expected[:first])


def test_xdist_gives_the_same_counts(workdir, bad_expected):
    expected = Counter(o for _, _, o in bad_expected)
    run = run_pytest(workdir, *corpus_args("IntsAsStrings", "-q", "-n", "2"))
    counts = summary_counts(run.stdout)
    assert (counts["passed"], counts["failed"], counts["xfailed"]) == (
        expected["passed"],
        expected["failed"],
        expected["xfailed"],
    ), run.stdout[-3000:]


def test_failure_report_shows_the_minimal_input(bad_run, corpus_cases, workdir):
    import candidates

    from harness.analysis.minimize import minimize_case

    case = next(c for c in corpus_cases if c.id == "edge-nested-object")
    parser = _ParseOnly(candidates.IntsAsStrings())
    record = next(evaluate_case(case, parser, FMT, ["oneshot"], seed=0))
    minimal = minimize_case(case, parser, FMT, "oneshot", record.error_type, template=load_template(MODEL))
    assert len(minimal["text"]) < len(case.text)
    shown = re.search(
        r"_ toolcall\[gemma-4-e2b\]::\[curated\]\[edge-nested-object\]\[oneshot\] _.*?"
        r"minimal input \(structure reduction, \d+ checks, \d+ -> \d+ chars\): (.*?)\n",
        bad_run.stdout,
        re.DOTALL,
    )
    assert shown and json.loads(shown.group(1)) == minimal["text"]


def test_generated_failure_shows_seed_and_minimal_input(workdir):
    run = run_pytest(
        workdir,
        "--toolcall-parser",
        "candidates:IntsAsStrings",
        "--toolcall-slices",
        "generated",
        "--toolcall-cases",
        "20",
        "--toolcall-seed",
        "3",
        "--toolcall-modes",
        "oneshot",
        "-x",
        "-q",
    )
    assert summary_counts(run.stdout)["failed"] == 1
    assert "(reproduce: --toolcall-cases 20 --toolcall-seed 3)" in run.stdout
    minimal = re.search(r"minimal input \(structure reduction, .*?\): (.*)", run.stdout)
    assert minimal, run.stdout[-3000:]
    assert json.loads(minimal.group(1)).startswith("<|tool_call>call:")


def test_without_the_option_the_plugin_adds_nothing(workdir):
    run = run_pytest(workdir, "--collect-only")
    assert re.search(r"^plugins: .*toolcall-harness", run.stdout, re.MULTILINE)  # installed and loaded
    assert "<Function test_plain>" in run.stdout and "collected 1 item" in run.stdout
    assert "toolcall[" not in run.stdout and "toolcall items" not in run.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["--toolcall-parser", "no_such_module:Parser"], "cannot import no_such_module"),
        (["--toolcall-parser", "candidates:Missing"], "has no attribute 'Missing'"),
        (
            ["--toolcall-parser", "candidates:Good", "--toolcall-model", "no-such-model"],
            "unknown model 'no-such-model'",
        ),
        (["--toolcall-parser", "candidates:Good", "--toolcall-modes", "oneshot,sideways"], "unknown mode(s) sideways"),
        (["--toolcall-parser", "candidates:Good", "--toolcall-slices", "generated"], "needs --toolcall-cases"),
        (["--toolcall-parser", "candidates:Good", "--toolcall-timeout", "inf"], "at most 86400, got inf"),
        (["--toolcall-parser", "candidates:Good", "--toolcall-timeout", "1e10"], "at most 86400, got 1e+10"),
    ],
)
def test_bad_options_are_one_error_line(workdir, args, message):
    run = run_pytest(workdir, *args)
    assert run.returncode == 4  # pytest's usage error
    assert message in run.stderr and "ERROR:" in run.stderr
    assert "Traceback" not in run.stderr + run.stdout


def test_harness_parser_names_and_parse_only_parsers_load(workdir):
    from harness.extra.corpus_items import UserParser, load_parser

    own = load_parser("toolcall-harness:gemma4", "gemma4")
    assert own.name == "toolcall-harness:gemma4" and own.incremental
    user = load_parser("candidates:IntsAsStrings", "gemma4")
    assert isinstance(user, UserParser)
    assert (user.name, user.library, user.incremental) == ("candidates:IntsAsStrings", "candidates", False)
    text = "<|tool_call>call:f{n:7}<tool_call|>"
    session = user.stream(None, "")
    assert session.feed(text) == []  # buffered: everything comes at finish
    [delta] = session.finish()
    assert delta.tool_calls[0].arguments == '{"n": "7"}'


def test_a_parse_returning_no_message_is_the_parsers_exception(workdir):
    from harness.extra.corpus_items import UserParser

    class ReturnsDict:
        def parse(self, text, tools=None, prefix=""):
            return {"content": text}

    case = next(iter(build_corpus(load_template(MODEL), FMT, seed=0, n_generated=0, slices=("curated",)).cases))
    [record] = evaluate_case(case, UserParser(ReturnsDict(), "x:ReturnsDict"), FMT, ["oneshot"], seed=0)
    assert (record.verdict, record.error_type) == ("error", "exception")
    assert "parse() returned dict, expected harness.core.messages.Message" in record.detail

"""``toolcall-harness compare`` end to end (harness/jobs/compare.py, harness/report/compare.py): the project's Gemma 4
parser against a ``py:`` adapter, written here, that wraps it with a known fault put back (seed 000's: a nested
object argument comes back as its text), in subprocesses on the real Gemma 4 template. The cases that must flip,
and the table's numbers, are computed here apart from the harness' runs: both parsers run on a corpus built here
and each output is judged by the scorer."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import main
from harness.core.cases import SLICES
from harness.core.protocol import run_stream
from harness.corpus.build import build_corpus
from harness.formats import get_format
from harness.parse.loader import load_parser_object
from harness.parse.registry import create_parsers
from harness.report.compare import compare_markdown
from harness.report.files import write_reports
from harness.report.runlog import RunLog
from harness.score.verdicts import score
from harness.template.sources import load_template
from parsers.own.gemma4 import Gemma4Parser

MODEL = "gemma-4-e2b"
FMT = get_format("gemma4")
REPO = Path(__file__).resolve().parents[2]
SLICES_RUN = ("curated", "generated")
MODES = ("oneshot", "whole")
SMALL = ["--model", MODEL, "--slices", ",".join(SLICES_RUN), "--modes", ",".join(MODES), "--cases", "12"]

FAULTY = '''
"""The project's Gemma 4 parser with a known fault put back: a nested object argument comes back as its text
(the seeds' GemmaFunctionParser before the fix). Streaming is the one-shot parse at the end, so every mode fails
alike."""
import json

from harness.core.protocol import BufferedStream
from parsers.own.gemma4 import Gemma4Parser


class NestedAsText(Gemma4Parser):
    def parse(self, text, tools=None, prefix=""):
        message = super().parse(text, tools, prefix)
        for call in message.tool_calls:
            if isinstance(call.arguments, dict):
                call.arguments = {k: json.dumps(v) if isinstance(v, dict) else v for k, v in call.arguments.items()}
        return message

    def stream(self, tools=None, prefix=""):
        return BufferedStream(self, tools, prefix)
'''


def _compare(parsers: str, out: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", "compare", "--parsers", parsers, *SMALL, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=REPO,
    )


@pytest.fixture(scope="module")
def faulty(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("adapter") / "nested_as_text.py"
    path.write_text(FAULTY, encoding="utf-8")
    return f"py:{path}:NestedAsText"


@pytest.fixture(scope="module")
def expected(faulty) -> dict:
    """Computed apart from the harness' runs, from both parsers' one-shot and whole-stream outputs on a corpus built
    here, judged by the scorer: ``broken`` ``{case id: slice}`` (the good parser passes every mode, the faulty one
    not), ``slices`` ``{slice: (cases, good passing every mode, faulty passing every mode)}`` and ``modes``
    ``{mode: (cases, good passing, faulty passing)}``."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        corpus = build_corpus(load_template(MODEL), FMT, seed=0, n_generated=12, slices=SLICES_RUN)
    good, bad = Gemma4Parser(), load_parser_object(faulty[3:])

    def passes(parser, case) -> dict[str, bool]:
        outputs = {
            "oneshot": parser.parse(case.text, case.tools, case.prefix),
            "whole": run_stream(parser, [case.text], case.tools, case.prefix),
        }
        return {mode: score(case, got, FMT).verdict in ("pass", "soft_pass") for mode, got in outputs.items()}

    broken, slices, modes = {}, {}, {}
    for case in corpus.cases:
        a, b = passes(good, case), passes(bad, case)
        if all(a.values()) and not all(b.values()):
            broken[case.id] = case.slice
        n, pa, pb = slices.get(case.slice, (0, 0, 0))
        slices[case.slice] = (n + 1, pa + all(a.values()), pb + all(b.values()))
        for mode in MODES:
            n, pa, pb = modes.get(mode, (0, 0, 0))
            modes[mode] = (n + 1, pa + a[mode], pb + b[mode])
    return {"broken": broken, "slices": slices, "modes": modes}


@pytest.fixture(scope="module")
def regressed(tmp_path_factory, faulty):
    out = tmp_path_factory.mktemp("compare") / "run"
    return _compare(f"own,{faulty}", out), out


@pytest.fixture(scope="module")
def fixed(tmp_path_factory, faulty):
    out = tmp_path_factory.mktemp("compare") / "run"
    return _compare(f"{faulty},own", out), out


def sections(markdown: str) -> dict[str, list[tuple[str, str, str]]]:
    """``{heading: [(case id, slice, modes)]}`` of the flipped-case sections (``### Regressions (N cases)``...)."""
    found: dict[str, list[tuple[str, str, str]]] = {}
    heading = None
    for line in markdown.splitlines():
        if line.startswith("### "):
            heading = line[4:].split(" (")[0]
            found[heading] = []
        hit = re.match(r"(?:<summary>|- )(\S+) \(([\w.-]+); ([^)]*)\): ", line)  # in full, or one line
        if hit and heading is not None:
            found[heading].append(hit.groups())
    return found


def test_a_regression_lists_exactly_the_broken_cases_and_exits_1(regressed, expected):
    proc, out = regressed
    broken = expected["broken"]
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "edge-nested-object" in broken and any(cid.startswith("gen-") for cid in broken)  # the fault bites
    md = (out / "compare.md").read_text(encoding="utf-8")
    flipped = sections(md)
    assert {cid: slice_name for cid, slice_name, _ in flipped["Regressions"]} == broken
    assert all(modes == ", ".join(MODES) for _, _, modes in flipped["Regressions"])
    assert flipped["Fixes"] == []
    assert f"### Regressions ({len(broken)} cases)" in md and "### Fixes (0 cases)" in md
    assert f"**FAILED: B regressed {len(broken)} cases ({2 * len(broken)} case × mode results)" in md
    assert f"| regressed | wrong_argument_type | {2 * len(broken)} |" in md
    regressions = {line.split()[1] for line in proc.stdout.splitlines() if line.startswith("REGRESSION ")}
    assert regressions == set(broken)
    assert f"compare report: {out / 'compare.md'}" in proc.stdout


def test_the_per_slice_table_has_the_numbers_computed_apart(regressed, expected):
    proc, out = regressed
    broken = expected["broken"]
    md = (out / "compare.md").read_text(encoding="utf-8")
    for slice_name, (n, a, b) in expected["slices"].items():
        lost = sum(s == slice_name for s in broken.values())
        assert f"| {slice_name} | {a}/{n} → {b}/{n} | 0 | {lost} |" in md, slice_name
    n, a, b = (sum(column) for column in zip(*expected["slices"].values(), strict=True))
    assert f"| all | {a}/{n} → {b}/{n} | 0 | {len(broken)} |" in md
    for mode, (n, a, b) in expected["modes"].items():
        assert f"| {mode} | {a}/{n} → {b}/{n} | 0 | {a - b} |" in md, mode
    assert "| curated | 126/126 → 120/126 | 0 | 6 |" in md  # as measured on 2026-12-04 (README)


def test_each_flipped_case_shows_its_input_both_outputs_and_a_minimal_repro(regressed):
    _, out = regressed
    md = (out / "compare.md").read_text(encoding="utf-8")
    block = md.split("<summary>edge-nested-object (curated; oneshot, whole)")[1].split("</details>")[0]
    assert "<|tool_call>call:" in block and "input:" in block
    assert re.search(r'^- oneshot, whole: A pass, got `\{.*"user": \{"age": 36, "name": "Ada"\}', block, re.M)
    assert re.search(r'^- oneshot, whole: B fail wrong_argument_type: .*got `\{.*"user": "\{', block, re.M)
    small = re.search(r"minimal failing input \(oneshot; (\d+) of (\d+) chars; (\w+)\):", block)
    assert small and int(small[1]) < int(small[2])
    assert md.count("<details>") == md.count("</details>") == md.count("<summary>")
    log = RunLog.load(out)
    assert log.comparison["a"]["spec"] == "own" and log.comparison["b"]["spec"].startswith("py:")
    assert log.comparison["b"]["name"] == f"toolcall-harness:gemma4 [{log.comparison['b']['spec']}]"


def test_past_the_budget_cases_are_listed_one_line_each(regressed, expected):
    """A page too long for a pull request keeps its first cases in full and lists the others, every one named."""
    _, out = regressed
    log = RunLog.load(out)
    full = "\n".join(compare_markdown(log))
    short = "\n".join(compare_markdown(log, budget=len(full) // 2))
    assert len(short) <= len(full) // 2
    in_full = re.findall(r"^<summary>(\S+) \(", short, re.M)
    listed = re.findall(r"^- (\S+) \((?:curated|generated); ", short, re.M)
    assert in_full and listed and set(in_full) | set(listed) == set(expected["broken"])
    assert f"<summary>{len(listed)} more, one line each (each in full in report.html)</summary>" in short
    assert short.count("<details>") == short.count("</details>")


def test_the_fix_direction_exits_0_and_lists_the_improvements(fixed, expected):
    proc, out = fixed
    broken = expected["broken"]
    assert proc.returncode == 0, proc.stderr[-2000:]
    md = (out / "compare.md").read_text(encoding="utf-8")
    flipped = sections(md)
    assert {cid: slice_name for cid, slice_name, _ in flipped["Fixes"]} == broken and flipped["Regressions"] == []
    assert f"**passed: B regressed 0 cases (0 case × mode results) and fixed {len(broken)} cases" in md
    for slice_name, (n, a, b) in expected["slices"].items():
        fixed_here = sum(s == slice_name for s in broken.values())
        assert f"| {slice_name} | {b}/{n} → {a}/{n} | {fixed_here} | 0 |" in md, slice_name
    assert "minimal failing input (fails with A; oneshot;" in md
    assert {line.split()[1] for line in proc.stdout.splitlines() if line.startswith("FIXED ")} == set(broken)


def test_the_reports_render_again_from_the_run_folder_alone(regressed, tmp_path):
    import shutil

    _, out = regressed
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    (copy / "compare.md").unlink()
    (copy / "report.html").unlink()
    write_reports(RunLog.load(copy))
    for name in ("compare.md", "report.html"):
        assert (copy / name).read_bytes() == (out / name).read_bytes(), name


def test_the_compare_section_of_report_html_opens_offline(regressed, expected, browser):
    _, out = regressed
    page = browser.new_page()
    errors, network = [], []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.route(
        "**/*",
        lambda route: (
            route.continue_()
            if route.request.url.startswith(("file:", "data:", "blob:"))
            else (network.append(route.request.url), route.abort())
        ),
    )
    page.goto((out / "report.html").as_uri())
    assert "FAILED: B regressed" in page.locator("#compare ~ p.verdict").first.text_content()
    rows = page.locator("#compare-slices tr")
    n, a, b = expected["slices"]["curated"]
    assert [c.text_content() for c in rows.nth(1).locator("td").all()][:3] == ["curated", f"{a}/{n}", f"{b}/{n}"]
    flips = page.locator("details.flip")
    assert {flips.nth(i).get_attribute("data-case") for i in range(flips.count())} == set(expected["broken"])
    target = page.locator('details.flip[data-case="edge-nested-object"]')
    assert not target.locator("pre.raw").first.is_visible()  # collapsed until opened
    target.locator("summary").click()
    assert target.locator("pre.raw").first.is_visible()
    assert target.locator("pre.raw mark.marker").first.text_content() == "<|tool_call>"
    assert target.locator("table.flip-sides tr").count() == 1 + 2 * len(MODES)
    assert target.locator("pre.minimal").count() == 1
    assert errors == [] and network == []
    page.close()


def test_usage_errors_are_one_line_and_exit_2(capsys, tmp_path):
    base = ["compare", "--model", MODEL, "--slices", "curated", "--cases", "0", "--modes", "oneshot"]
    for i, (argv, needle) in enumerate(
        (
            (["--parsers", "own"], "compare takes two parsers, --parsers A,B (got 1: own)"),
            (["--parsers", "own,own"], "--parsers names own twice"),
            (["--parsers", "own,toolcall-harness:gemma4"], "name one parser (toolcall-harness:gemma4)"),
            (
                ["--parsers", "own,transformers", "--slices", "nosuch"],
                "unknown slice nosuch; known: " + ", ".join(SLICES),
            ),
            (["--parsers", "own,nosuch"], "unknown parser 'nosuch'"),
            (["--parsers", "own,py:nosuch.py:Parser"], "nosuch.py"),
            (["--parsers", "own,cmd:/nonexistent/worker --x"], "parser cmd:/nonexistent/worker --x could not run: "),
        )
    ):
        out = tmp_path / f"run{i}"
        assert main([*base, *argv, "--out", str(out)]) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and needle in err[0], err
        assert i >= 4 or not out.exists()  # compare's own checks come first
        assert not (out / "results.jsonl").exists()  # the others before any parser runs
    with pytest.raises(SystemExit) as exit_:
        main(["compare", "--model", MODEL])  # --parsers is required: argparse's usage error
    assert exit_.value.code == 2


def test_two_parsers_of_one_name_are_told_apart_when_one_is_a_py_candidate(faulty):
    parsers, _ = create_parsers(["own", faulty], "gemma4")
    assert [p.name for p in parsers] == ["toolcall-harness:gemma4", f"toolcall-harness:gemma4 [{faulty}]"]
    parsers, _ = create_parsers([faulty, "own"], "gemma4")
    assert [p.name for p in parsers] == ["toolcall-harness:gemma4", "toolcall-harness:gemma4 [own]"]
    parsers, _ = create_parsers(["own", "toolcall-harness:gemma4"], "gemma4")  # one parser named twice
    assert [p.name for p in parsers] == ["toolcall-harness:gemma4"]


def test_an_out_of_process_worker_equal_to_the_own_parser_flips_nothing(tmp_path):
    """Any two specs: B a ``cmd:`` worker serving the own parser (tests/engines/workers/faulty_worker.py, whose
    triggers no corpus case holds) gives the same verdicts, so nothing flips and compare exits 0."""
    worker = f"cmd:{sys.executable} {REPO / 'tests' / 'engines' / 'workers' / 'faulty_worker.py'}"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    argv = ["compare", "--parsers", f"own,{worker}", "--model", MODEL, "--slices", "curated", "--modes", "oneshot,char"]
    proc = subprocess.run(
        [sys.executable, "-m", "harness.cli", *argv, "--no-shrink", "--out", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    md = (tmp_path / "run" / "compare.md").read_text(encoding="utf-8")
    n = len(RunLog.load(tmp_path / "run").cases)
    assert re.search(
        rf"^\| B \(after\) \| `toolcall-harness==[^`]+:gemma4` \| [^|]+ \| `{re.escape(worker)}` \|$", md, re.M
    )
    assert f"| curated | {n}/{n} → {n}/{n} | 0 | 0 |" in md
    assert "### Regressions (0 cases)" in md and "### Fixes (0 cases)" in md and "<details>" not in md
    assert f"**passed: B regressed 0 cases (0 case × mode results) and fixed 0 cases (0 results) of {2 * n} " in md

"""report.html end to end: a small real eval (the real Gemma 4 template, the project's parser and the two
reference parsers, captured answers re-scored from a capture file) writes report.html, which Debian's Chromium
(headless, through Playwright) opens from disk with every network request blocked: no console errors, the
plots drawn, the failing-cases table searchable, protocol markers highlighted, a screenshot with real content.
Chromium comes from ``scripts/install_chromium.sh`` (``make test`` runs it); the ``browser`` fixture is
``tests/conftest.py``'s."""

import io
import json
import re

import pandas as pd
import pytest
from PIL import Image
from rich.console import Console

from harness.assets.tokenizers import token_pieces
from harness.capture.records import Capture, CaptureWriter
from harness.capture.run import CaptureSettings, reference_text
from harness.capture.suites import load_suite
from harness.core.cases import load_cases
from harness.formats import get_format
from harness.jobs.evaluate import EvalConfig, library_versions, run_eval
from harness.report.html import highlight_markers, write_report_html
from harness.report.progress import ConsoleProgress
from harness.report.runlog import Provenance, RunLog
from harness.report.terminal import show_run
from harness.template.sources import load_template

FMT = get_format("gemma4")


def capture(prompt, text: str, finish: str) -> Capture:
    return Capture(
        prompt_id=prompt.id,
        suite=prompt.suite,
        format="gemma4",
        backend="fixture",
        model={"name": "reference-answer", "file": "", "sha256": ""},
        text=text,
        prefix="",
        pieces=[[piece, ids] for piece, ids in token_pieces(text, "gemma4")],
        finish_reason=finish,
    )


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A small eval with captured answers: three reference answers and one cut off half-way (a model that
    ran out of tokens). The console is a terminal, so the progress bar draws. The costly chunkings (char,
    tokens, prefix) are left out: the page does not depend on them."""
    root = tmp_path_factory.mktemp("report")
    prompts = load_suite("code-with-quotes")[:4]
    template = load_template("gemma-4-e2b")
    captures = root / "captures.jsonl"
    with CaptureWriter(captures) as writer:
        for prompt in prompts[:3]:
            writer.write(capture(prompt, reference_text(template, FMT, prompt), "stop"))
        full = reference_text(template, FMT, prompts[3])
        cut = full[: len(full) // 2]
        writer.write(capture(prompts[3], cut, "length"))
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=160)
    settings = CaptureSettings(backend="files", suites=("code-with-quotes",), limit=4, files=(captures,))
    log = run_eval(
        EvalConfig(
            model="gemma-4-e2b",
            n_generated=6,
            seed=3,
            out_dir=root / "run",
            shrink=False,
            modes=("oneshot", "roundtrip", "whole", "random"),
            capture=settings,
        ),
        progress=ConsoleProgress(console),
    )
    show_run(console, log)
    run_dir = log.run_dir
    records = [json.loads(line) for line in (run_dir / "results.jsonl").read_text(encoding="utf-8").split("\n") if line]
    corpus = {
        c["id"]: c
        for c in (
            json.loads(line) for line in (run_dir / "corpus.jsonl").read_text(encoding="utf-8").split("\n") if line
        )
    }
    return run_dir, records, corpus, out.getvalue()


@pytest.fixture(scope="module")
def page(run, browser):
    """report.html opened from disk with all network blocked; ``(page, console errors, network requests)``."""
    run_dir = run[0]
    page = browser.new_page()
    errors, network = [], []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    def block(route):
        if route.request.url.startswith(("file:", "data:", "blob:")):
            return route.continue_()
        network.append(route.request.url)
        return route.abort()

    page.route("**/*", block)
    page.goto((run_dir / "report.html").as_uri())
    page.wait_for_selector("#failing-cases.dataTable", timeout=30_000)
    page.wait_for_function(
        "[...document.querySelectorAll('.js-plotly-plot')].filter(p => p.querySelector('.main-svg')).length == 4",
        timeout=30_000,
    )
    return page, errors, network


def failing_groups(records, case_id=None):
    """(case, parser, slice, error type) of failing records: the rows of the failing-cases table."""
    return {
        (r["case_id"], r["parser"], r["slice"], r["error_type"])
        for r in records
        if r["verdict"] in ("fail", "error") and case_id in (None, r["case_id"])
    }


def test_eval_writes_a_self_contained_report_html(run):
    run_dir, records, _, output = run
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    assert f"wrote {run_dir / 'report.html'}" in output
    assert not re.search(r"<(script|link|img)\b[^>]*\b(src|href)\s*=", page)  # nothing fetched at view time
    assert page.count("Plotly.newPlot") == 4
    assert "No drift slice in this run" not in page and "No captured output in this run" not in page
    assert any(r["slice"] == "capture:code-with-quotes" and r["verdict"] != "pass" for r in records)


def test_page_renders_offline_without_console_errors(page, run, tmp_path):
    page, errors, network = page
    records = run[1]
    assert errors == []
    assert network == []
    assert page.locator(".js-plotly-plot").count() == 4
    for plot in ("plot-pass-rate", "plot-failure-types", "plot-drift", "plot-backends"):
        assert page.locator(f"#{plot} svg.main-svg").count() >= 1, plot
    assert page.locator("#plot-pass-rate .hm, #plot-pass-rate .heatmaplayer image").count() >= 1
    assert page.locator("#plot-backends .bars .point").count() >= 1
    legend = page.locator("#plot-drift .legendtext")
    outcomes = {r["outcome"] for r in records if r["slice"] == "drift"}
    assert outcomes and {legend.nth(i).text_content() for i in range(legend.count())} == outcomes
    shot = tmp_path / "report.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 50_000
    with Image.open(shot) as image:
        assert image.height > 2000  # the whole page: four plots and the table
        colours = image.convert("RGB").resize((400, 400)).getcolors(maxcolors=1 << 16)
        assert len(colours) > 200


def test_search_box_filters_the_failing_cases(page, run):
    page, _, _ = page
    _, records, _, _ = run
    total = len(failing_groups(records))
    assert f"of {total} entries" in page.locator(".dt-info").inner_text()
    case_id = sorted(failing_groups(records))[0][0]
    page.locator(".dt-search input").fill(case_id)
    rows = page.locator("#failing-cases tbody tr")
    expected = len(failing_groups(records, case_id))
    page.wait_for_function(f"document.querySelectorAll('#failing-cases tbody tr').length == {expected}")
    assert all(case_id in rows.nth(i).inner_text() for i in range(expected))
    page.locator(".dt-search input").fill("no-such-case-anywhere")
    page.wait_for_selector("#failing-cases td.dt-empty")
    page.locator(".dt-search input").fill("")


def test_markers_are_highlighted_and_the_raw_text_shows_as_written(page, run):
    page, _, _ = page
    _, records, corpus, _ = run
    marks = page.locator("#failing-cases mark.marker")
    assert marks.count() > 0
    assert {marks.nth(i).inner_text() for i in range(marks.count())} >= {FMT.call_open, FMT.call_close}
    # escaping round trip: the browser shows the raw text as written, quotes and angle brackets included
    case_id = min(
        (c for c, *_ in failing_groups(records) if c in corpus and '"' in corpus[c]["text"]),
        key=lambda c: len(corpus[c]["text"]),
    )
    page.locator(".dt-search input").fill(case_id)
    page.wait_for_function(
        f"document.querySelectorAll('#failing-cases tbody tr').length == {len(failing_groups(records, case_id))}"
    )
    assert page.locator("#failing-cases tbody tr pre.raw").first.inner_text() == corpus[case_id]["text"]
    page.locator(".dt-search input").fill("")


def test_progress_shows_count_rate_and_eta_on_a_terminal_only(run, tmp_path):
    _, records, _, output = run
    rendered = len([r for r in records if not r["slice"].startswith("capture:")])
    assert "parsing" in output and f"{rendered}/{rendered}" in output
    assert re.search(r"\d/s", output) and re.search(r"\d:\d\d:\d\d", output)
    quiet = io.StringIO()
    console = Console(file=quiet, width=160)
    log = run_eval(
        EvalConfig(
            model="gemma-4-e2b",
            parsers=["own"],
            modes=("oneshot",),
            slices=("observed",),
            out_dir=tmp_path,
            shrink=False,
            no_capture=True,
        ),
        progress=ConsoleProgress(console),
    )
    show_run(console, log)
    assert "parsing" not in quiet.getvalue() and "\x1b" not in quiet.getvalue()
    assert (tmp_path / "report.html").stat().st_size > 0


def test_results_and_summary_load_with_pandas(run):
    """As README says: results.jsonl line by line (``pd.read_json`` rejects the integers beyond 64 bits that
    generated cases carry in ``got``), summary.csv directly."""
    run_dir, records, _, _ = run
    with open(run_dir / "results.jsonl", encoding="utf-8") as fh:
        results = pd.DataFrame(json.loads(line) for line in fh)
    summary = pd.read_csv(run_dir / "summary.csv")
    assert len(results) == len(records) == summary.total.sum()
    assert set(results.columns) >= {"case_id", "slice", "parser", "mode", "verdict", "error_type", "detail"}


def test_markers_are_escaped_and_wrapped():
    text = 'say "<b>" & <|tool_call>call:x{a:<|"|>1<|"|>}<tool_call|>'
    assert highlight_markers(text, FMT.markers) == (
        'say &quot;&lt;b&gt;&quot; &amp; <mark class="marker">&lt;|tool_call&gt;</mark>call:x{a:'
        '<mark class="marker">&lt;|&quot;|&gt;</mark>1<mark class="marker">&lt;|&quot;|&gt;</mark>}'
        '<mark class="marker">&lt;tool_call|&gt;</mark>'
    )


def _log(run_dir, info: dict, records: list[dict], cases: list) -> RunLog:
    """A run log of ``records`` (no capture summary, no parser list: the page takes the parsers from the records)."""
    return RunLog(run_dir, Provenance(**info), slices=(), modes=(), records=records, cases=cases)


def test_sections_without_data_say_so(run, tmp_path):
    run_dir, records, _, _ = run
    info = {
        "model": "gemma-4-e2b",
        "format": "gemma4",
        "run_id": "plain",
        "started": "-",
        "duration_s": 0.0,
        "template": load_template("gemma-4-e2b").provenance,
        "versions": library_versions(),
        "seeds": {"run_seed": 3},
        "corpus": {},
    }
    plain = [r for r in records if r["slice"] != "drift" and not r["slice"].startswith("capture:")]
    write_report_html(_log(tmp_path, info, plain, []), tmp_path / "report.html")
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "No drift slice in this run" in page and "No captured output in this run" in page
    assert page.count("Plotly.newPlot") == 2


def test_failing_table_is_capped_and_says_so(run, tmp_path):
    run_dir, records, _, _ = run
    info = {
        "model": "gemma-4-e2b",
        "format": "gemma4",
        "run_id": "capped",
        "started": "-",
        "duration_s": 0.0,
        "template": load_template("gemma-4-e2b").provenance,
        "versions": library_versions(),
        "seeds": {"run_seed": 3},
        "corpus": {},
    }
    log = _log(tmp_path, info, records, load_cases(run_dir / "corpus.jsonl"))
    write_report_html(log, tmp_path / "report.html", max_rows=3)
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert f"Showing 3 of {len(failing_groups(records))} rows (one-shot failures first)" in page
    assert len(re.findall(r'<pre class=\\+"raw', page)) == 3  # rows travel as (escaped) JSON to DataTables


def test_a_failed_capture_without_text_gives_an_empty_raw_cell():
    """A capture error has no text (the backend answered nothing): the row shows an empty raw text, no crash."""
    from harness.report.html import failing_rows

    record = {
        "case_id": "no-tool-01",
        "parser": "toolcall-harness:gemma4",
        "slice": "capture:openai",
        "mode": "oneshot",
        "verdict": "error",
        "error_type": "capture_error",
        "detail": "connection refused",
        "got": None,
    }
    rows, total = failing_rows([record], [], {"no-tool-01": None}, get_format("gemma4").markers)
    assert total == 1 and rows[0]["raw text"] == '<pre class="raw"></pre>' and rows[0]["got"] == "raised"


def test_heatmap_cells_count_surfaced_results_apart():
    from harness.report.html import pass_rate_figure

    records = [
        {"parser": "p", "slice": "observed", "mode": "oneshot", "verdict": v} for v in ("pass", "surfaced", "fail")
    ]
    heatmap = pass_rate_figure(records, ["p"]).data[0]
    assert [list(row) for row in heatmap.text] == [["1/3 +1s"]] and list(heatmap.z[0]) == [33.3]


def test_the_reports_render_again_from_the_run_folder_alone(run, tmp_path):
    """With captured output (capture slices, capture summary and texts in the log): the same bytes."""
    import shutil

    from harness.report.files import REPORT_FILES, write_reports

    run_dir = run[0]
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    for name in REPORT_FILES:
        (copy / name).unlink()
    write_reports(RunLog.load(copy))
    for name in REPORT_FILES:
        assert (copy / name).read_bytes() == (run_dir / name).read_bytes(), name


def test_the_matrix_page_opens_offline_and_links_each_family_to_its_report(run, browser, tmp_path):
    """The ``eval --all-models`` matrix page (harness/report/matrix.py) from this run's real records, as two
    families: no console error, no request, one row per family with its cells, links that open report.html."""
    from harness.report.matrix import matrix, write_matrix_html

    run_dir, records, _, _ = run
    root = tmp_path / "all"
    (root / "gemma-4-e2b").mkdir(parents=True)
    (root / "gemma-4-e2b" / "report.html").write_text((run_dir / "report.html").read_text(encoding="utf-8"))
    hermes = [{**r, "parser": "toolcall-harness:hermes"} for r in records if r["parser"].startswith("toolcall")]
    families = {"gemma4": records, "hermes": hermes}
    runs = {"gemma4": [("gemma-4-e2b", "gemma-4-e2b/report.html")]}
    write_matrix_html(root / "index.html", "r1", families, runs, "malformed=either", {"toolcall-harness": "0.9"})
    libraries, cells = matrix(families)
    assert libraries[0] == "toolcall-harness" and "transformers" in libraries
    own = [
        r for r in records if r["parser"].startswith("toolcall") and r["slice"] in ("curated", "generated", "observed")
    ]
    passing = sum(r["verdict"] in ("pass", "soft_pass") for r in own if r["mode"] == "oneshot")
    assert cells["gemma4"]["toolcall-harness"]["one-shot"] == (passing, sum(r["mode"] == "oneshot" for r in own))
    assert cells["gemma4"]["toolcall-harness"]["drift"][1] > 0
    page = browser.new_page()
    errors, network = [], []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.route(
        "**/*",
        lambda route: (
            route.continue_()
            if route.request.url.startswith("file:")
            else (network.append(route.request.url), route.abort())
        ),
    )
    page.goto((root / "index.html").as_uri())
    assert page.locator("#matrix tbody tr").count() == 2
    assert page.locator("#matrix thead th").count() == 1 + len(libraries)
    assert "policy malformed=either" in page.locator("p.meta").first.text_content()
    assert page.locator("#matrix tbody tr").nth(1).locator("td.none").count() == len(libraries) - 1  # hermes: own only
    page.locator("#matrix a", has_text="gemma-4-e2b").click()
    page.wait_for_selector("#failing-cases", timeout=30_000)
    assert page.url.endswith("gemma-4-e2b/report.html")
    assert errors == [] and network == []
    page.close()

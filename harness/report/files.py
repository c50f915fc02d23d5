"""The report files of a run folder, each rendered from the run's :class:`~harness.report.runlog.RunLog`:
``report.md`` (:mod:`harness.report.markdown`), ``summary.csv`` (:mod:`harness.report.summary`) and
``report.html`` (:mod:`harness.report.html`), and for a ``compare`` run ``compare.md``
(:mod:`harness.report.compare`). ``toolcall-harness report RUN_DIR`` writes them again from the folder alone: the
same bytes."""

from __future__ import annotations

from pathlib import Path

from harness.report.compare import COMPARE_FILE, write_compare_md
from harness.report.html import write_report_html
from harness.report.markdown import write_report_md
from harness.report.runlog import RunLog
from harness.report.summary import write_summary_csv

REPORT_FILES = ("report.md", "summary.csv", "report.html")


def write_reports(log: RunLog) -> list[Path]:
    """Write ``report.md``, ``summary.csv`` and ``report.html`` into the log's run folder, and ``compare.md`` when
    the log holds a comparison; returns their paths. Raises ``OSError`` when one cannot be written."""
    md, csv, page = (log.run_dir / name for name in REPORT_FILES)
    write_report_md(log, md)
    write_summary_csv(log, csv)
    write_report_html(log, page)
    if not log.comparison:
        return [md, csv, page]
    write_compare_md(log, log.run_dir / COMPARE_FILE)
    return [md, csv, page, log.run_dir / COMPARE_FILE]

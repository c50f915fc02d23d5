"""Stage 6, report: run logs rendered as terminal tables, ``summary.csv``, ``report.md``, ``report.html``,
``gate.md`` and the sweep's report."""

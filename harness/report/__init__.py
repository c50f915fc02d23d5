"""Stage 6, report: a run's typed log (:mod:`.runlog`) and everything rendered from it, printing or writing only
what the log holds: the terminal (:mod:`.terminal`, :mod:`.progress`), ``report.md`` (:mod:`.markdown`),
``summary.csv`` (:mod:`.summary`), ``report.html`` (:mod:`.html`), their sections (:mod:`.flips`, :mod:`.drift`,
:mod:`.faults`, :mod:`.captures`), the all-models tables (:mod:`.families`), ``gate.md`` and the sweep's report."""

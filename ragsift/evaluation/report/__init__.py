"""The report wing of the evaluation: what a run directory's records say. The summary (means,
bootstrap intervals, paired tests: :mod:`.summary` with :mod:`.statistics`), the HTML report
(:mod:`.html`, drawn from ``templates/`` with :mod:`.plots` and :mod:`.example_view`) and
``ragsift report`` (:mod:`.command`). It reads the run directory's files (the predictions format of
:mod:`ragsift.evaluation.predictions`, manifest.json, summary.json) and imports nothing from the
run wing (:mod:`ragsift.evaluation.run`)."""

"""Evaluation: run compressors (and a reader) over a dataset, with statistics and a manifest.

Two wings: the run (:mod:`ragsift.evaluation.run`: plan, engines, manifest, caches, shards, merge,
sweep, tune) and the report (:mod:`ragsift.evaluation.report`: summary, statistics, HTML, plots,
example view, ``ragsift report``), which share only the run directory's record formats
(:mod:`ragsift.evaluation.predictions`, :mod:`ragsift.evaluation.columnar`). This module is the
package's front door: the names below, imported lazily."""

from __future__ import annotations

__all__ = [
    "run_evaluation", "RunOptions", "EvaluationSettings", "bootstrap_ci", "paired_comparison", "holm_adjust",
    "mcnemar_exact",
]


def __getattr__(name: str):  # lazy: the CLI imports this package on every start
    if name in ("run_evaluation", "RunOptions"):
        from ragsift.evaluation.run import runner

        return getattr(runner, name)
    if name == "EvaluationSettings":
        from ragsift.evaluation.run.settings import EvaluationSettings

        return EvaluationSettings
    if name in ("bootstrap_ci", "paired_comparison", "holm_adjust", "mcnemar_exact"):
        from ragsift.evaluation.report import statistics

        return getattr(statistics, name)
    raise AttributeError(name)

"""Evaluation: run compressors (and a reader) over a dataset, with statistics and a manifest.
Two wings, :mod:`.run` and :mod:`.report`, sharing only the record formats (:mod:`.predictions`,
:mod:`.columnar`); docs/architecture.md maps them. This front door imports lazily."""

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

"""Answer metrics of the reader's prediction: exact match, token F1 and accuracy.

All take the maximum over the gold answers and are reported x100.
"""

from __future__ import annotations

from typing import ClassVar

from ragsift.metrics.base import Metric, MetricInput, MetricOutput
from ragsift.metrics.normalize import best_over_gold, contains_answer, exact_match, token_f1

__all__ = ["ExactMatchMetric", "TokenF1Metric", "AccuracyMetric"]


class ExactMatchMetric(Metric):
    """1 when the normalised prediction equals a normalised gold answer (SQuAD EM)."""

    outputs: ClassVar[dict[str, MetricOutput]] = {"em": MetricOutput("EM", 100.0, "%", binary=True)}
    needs_reader: ClassVar[bool] = True

    def compute(self, item: MetricInput) -> dict[str, float]:
        if item.prediction is None:
            return {}
        return {"em": best_over_gold(exact_match, item.prediction, item.example.answers)}


class TokenF1Metric(Metric):
    """Token-overlap F1 between the normalised prediction and the best gold answer (SQuAD F1)."""

    outputs: ClassVar[dict[str, MetricOutput]] = {"f1": MetricOutput("F1", 100.0, "%")}
    needs_reader: ClassVar[bool] = True

    def compute(self, item: MetricInput) -> dict[str, float]:
        if item.prediction is None:
            return {}
        return {"f1": best_over_gold(token_f1, item.prediction, item.example.answers)}


class AccuracyMetric(Metric):
    """1 when a normalised gold answer occurs, as whole tokens, in the normalised prediction."""

    outputs: ClassVar[dict[str, MetricOutput]] = {"accuracy": MetricOutput("Acc", 100.0, "%", binary=True)}
    needs_reader: ClassVar[bool] = True

    def compute(self, item: MetricInput) -> dict[str, float]:
        if item.prediction is None:
            return {}
        prediction = item.prediction
        return {"accuracy": float(any(contains_answer(prediction, g) for g in item.example.answers))}

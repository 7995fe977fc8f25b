"""Answer metrics of the reader's prediction: exact match, token F1 and accuracy.

All take the maximum over the gold answers and are reported x100. An example without gold
answers has no EM, F1 or accuracy (undefined, left out of the means), except a question marked
unanswerable (``metadata["is_impossible"]``, SQuAD 2.0): its one gold answer is the empty answer,
so EM and F1 are 1 exactly when the prediction normalises to nothing (the official SQuAD 2.0
rule); accuracy stays undefined there.
"""

from __future__ import annotations

from typing import ClassVar

from ragsift.metrics.base import Metric, MetricInput, MetricOutput
from ragsift.metrics.normalize import best_over_gold, contains_answer, exact_match, token_f1
from ragsift.types import Example

__all__ = ["ExactMatchMetric", "TokenF1Metric", "AccuracyMetric", "gold_answers"]


def gold_answers(example: Example) -> tuple[str, ...]:
    """The answers a prediction is scored against: the example's answers; ``("",)`` for a question
    marked unanswerable (SQuAD 2.0: the right answer is no answer); ``()`` when unlabelled."""
    if example.answers:
        return example.answers
    return ("",) if example.metadata.get("is_impossible") else ()


class ExactMatchMetric(Metric):
    """1 when the normalised prediction equals a normalised gold answer (SQuAD EM)."""

    outputs: ClassVar[dict[str, MetricOutput]] = {"em": MetricOutput("EM", 100.0, "%", binary=True)}
    needs_reader: ClassVar[bool] = True

    def compute(self, item: MetricInput) -> dict[str, float]:
        golds = gold_answers(item.example)
        if item.prediction is None or not golds:
            return {}
        return {"em": best_over_gold(exact_match, item.prediction, golds)}


class TokenF1Metric(Metric):
    """Token-overlap F1 between the normalised prediction and the best gold answer (SQuAD F1)."""

    outputs: ClassVar[dict[str, MetricOutput]] = {"f1": MetricOutput("F1", 100.0, "%")}
    needs_reader: ClassVar[bool] = True

    def compute(self, item: MetricInput) -> dict[str, float]:
        golds = gold_answers(item.example)
        if item.prediction is None or not golds:
            return {}
        return {"f1": best_over_gold(token_f1, item.prediction, golds)}


class AccuracyMetric(Metric):
    """1 when a normalised gold answer occurs, as whole tokens, in the normalised prediction."""

    outputs: ClassVar[dict[str, MetricOutput]] = {"accuracy": MetricOutput("Acc", 100.0, "%", binary=True)}
    needs_reader: ClassVar[bool] = True

    def compute(self, item: MetricInput) -> dict[str, float]:
        if item.prediction is None or not item.example.answers:
            return {}
        prediction = item.prediction
        return {"accuracy": float(any(contains_answer(prediction, g) for g in item.example.answers))}

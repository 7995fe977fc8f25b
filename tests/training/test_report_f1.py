"""The development figures a trainer's selection is chosen by: per-question precision, recall and
F1 of the kept sentences, averaged over questions (``ragsift evaluate``'s evidence metrics), an
empty selection precise only where the question has no evidence."""

from __future__ import annotations

import numpy as np
import pytest

from ragsift.trainers.base import DevPredictions
from ragsift.trainers.selection import selection_curves


def _dev(*questions: tuple[list[float], list[bool]]) -> DevPredictions:
    dev = DevPredictions()
    for i, (scores, labels) in enumerate(questions):
        dev.add(f"q{i}", np.array(scores), np.array(labels), ["positive" if y else "hard_negative" for y in labels])
    return dev


def test_an_empty_selection_is_not_precise_where_the_question_has_evidence() -> None:
    """Planted version that this catches: a question that keeps nothing counts as precise
    (precision 1.0) although it has evidence, which rewards thresholds that empty questions."""
    dev = _dev(([0.3, 0.1], [True, False]),  # at 0.5 keeps nothing, has evidence: P = R = F1 = 0
               ([0.9, 0.2], [True, False]),  # at 0.5 keeps its one fact: P = R = F1 = 1
               ([0.2, 0.1], [False, False]))  # at 0.5 keeps nothing, has none: P = R = 1 (nothing to find)
    row = selection_curves(dev)["threshold"][0.5]
    assert row["empty"] == pytest.approx(2 / 3)
    assert row["precision"] == pytest.approx((0 + 1 + 1) / 3)
    assert row["recall"] == pytest.approx((0 + 1 + 1) / 3)
    assert row["f1"] == pytest.approx((0 + 1 + 1) / 3)


def test_f1_is_the_mean_of_the_per_question_f1() -> None:
    """Planted version that this catches: development F1 computed from the mean precision and
    mean recall (``2 * P * R / (P + R)`` of the means) instead of the mean per-question F1."""
    dev = _dev(([0.9, 0.8], [True, False]),  # top-2: P 1/2, R 1, F1 2/3
               ([0.9, 0.8, 0.1], [True, False, True]))  # top-2: P 1/2, R 1/2, F1 1/2
    row = selection_curves(dev)["top_k"][2]
    assert row["precision"] == pytest.approx(0.5) and row["recall"] == pytest.approx(0.75)
    assert row["f1"] == pytest.approx((2 / 3 + 1 / 2) / 2)  # 0.5833..., not 2PR/(P+R) = 0.6
    assert row["f1"] != pytest.approx(2 * 0.5 * 0.75 / 1.25)

"""benchmarks/sentence_scores.py: ROC-AUC and selections of a run's sentence scores against the
gold evidence, on hand-made records whose figures are known."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from ragsift.types import EvidenceSpan

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def script(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import sentence_scores

    return sentence_scores


def test_roc_auc_equals_scikit_learn_with_ties(script):
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 5, 40).astype(float)  # many ties
    gold = rng.random(40) < 0.3
    assert script.roc_auc(scores, gold) == pytest.approx(roc_auc_score(gold, scores))


def _sentence(doc, start, end, score):
    return {"doc": doc, "start": start, "end": end, "text": "x" * (end - start), "score": score}


def test_score_table_marks_gold_by_overlap_and_pools_the_selections(script):
    # question a: gold = doc 0 chars 0-10 (sentence 1 inside it; sentence 2 only 2 of its 10 chars)
    records = [{"id": "a", "sentences": [_sentence(0, 0, 10, 0.9), _sentence(0, 8, 18, 0.95), _sentence(1, 0, 10, 0.2)]},
               # question b: gold = doc 1 chars 0-10, scored lowest
               {"id": "b", "sentences": [_sentence(0, 0, 10, 0.6), _sentence(1, 0, 10, 0.1)]}]
    evidence = {"a": (EvidenceSpan(0, 0, 10),), "b": (EvidenceSpan(1, 0, 10),)}
    table = script.score_table(records, evidence)
    assert table["questions"] == 2
    assert table["mean_auc"] == pytest.approx((0.5 + 0.0) / 2)  # a: gold between the two others; b: gold last
    p, r, f1, empty, kept = table["threshold 0.5"]  # kept: a's first two, b's first
    assert (p, r, empty, kept) == (pytest.approx(1 / 3), 0.5, 0.0, 1.5)
    assert f1 == pytest.approx(2 * (1 / 3) * 0.5 / (1 / 3 + 0.5))
    p, r, f1, empty, kept = table["threshold 0.95"]  # a's second only (not gold); b keeps nothing
    assert (p, r, empty) == (0.0, 0.0, 0.5)
    p, r, _, _, _ = table["top 2"]  # a: 0.95, 0.9 (one gold); b: both (one gold)
    assert (p, r) == (0.5, 1.0)

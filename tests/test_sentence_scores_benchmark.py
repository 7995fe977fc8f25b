"""benchmarks/sentence_scores.py: ROC-AUC and selections of a run's sentence scores against the
gold evidence, on hand-made records whose figures are known."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsift.types import EvidenceSpan

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def script(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import sentence_scores

    return sentence_scores


def _sentence(doc, start, end, score):
    return {"doc": doc, "start": start, "end": end, "text": "x" * (end - start), "score": score}


def test_score_table_marks_gold_by_overlap_and_averages_the_selections_per_question(script):
    # question a: gold = doc 0 chars 0-10 (sentence 1 inside it; sentence 2 only 2 of its 10 chars)
    records = [{"id": "a", "sentences": [_sentence(0, 0, 10, 0.9), _sentence(0, 8, 18, 0.95), _sentence(1, 0, 10, 0.2)]},
               # question b: gold = doc 1 chars 0-10, scored lowest
               {"id": "b", "sentences": [_sentence(0, 0, 10, 0.6), _sentence(1, 0, 10, 0.1)]}]
    evidence = {"a": (EvidenceSpan(0, 0, 10),), "b": (EvidenceSpan(1, 0, 10),)}
    table = script.score_table(records, evidence)
    assert table["questions"] == 2
    assert table["mean_auc"] == pytest.approx((0.5 + 0.0) / 2)  # a: gold between the two others; b: gold last
    # mean over questions, as ragsift evaluate's evidence metrics: a keeps its two best (one gold), b its first
    assert table["threshold 0.5"] == pytest.approx({"precision": 0.25, "recall": 0.5, "f1": (2 / 3) / 2,
                                                    "kept": 1.5, "empty": 0.0})
    assert table["threshold 0.96"] == pytest.approx({"precision": 0.0, "recall": 0.0, "f1": 0.0, "kept": 0.0,
                                                     "empty": 1.0})
    assert table["top 2"] == pytest.approx({"precision": 0.5, "recall": 1.0, "f1": 2 / 3, "kept": 2.0, "empty": 0.0})


def test_unnormalised_scores_get_no_fixed_threshold_rows(script):
    records = [{"id": "a", "sentences": [_sentence(0, 0, 10, 7.5), _sentence(1, 0, 10, 2.0)]}]
    table = script.score_table(records, {"a": (EvidenceSpan(0, 0, 10),)})
    assert not any(name.startswith("threshold") for name in table)
    assert table["top 1"]["f1"] == 1.0

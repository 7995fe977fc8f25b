"""Evidence precision / recall / F1 against hand-computed values."""

from __future__ import annotations

import pytest

from ragsift.metrics.base import MetricInput
from ragsift.metrics.evidence import EvidenceMetric, evidence_scores
from ragsift.testing import sample_example
from ragsift.types import CompressionResult, EvidenceSpan, Example, Sentence


def _s(doc: int, start: int, end: int) -> Sentence:
    return Sentence(doc, 0, start, end, "x" * (end - start))


def test_exact_sentences() -> None:
    gold = [EvidenceSpan(0, 0, 10), EvidenceSpan(1, 20, 40)]
    kept = [_s(0, 0, 10), _s(2, 0, 10), _s(3, 0, 10)]
    scores = evidence_scores(kept, gold)
    # 1 of 3 kept is evidence; 1 of 2 gold spans recalled
    assert scores["evidence_precision"] == pytest.approx(1 / 3)
    assert scores["evidence_recall"] == pytest.approx(1 / 2)
    assert scores["evidence_f1"] == pytest.approx(2 * (1 / 3) * (1 / 2) / (1 / 3 + 1 / 2))


def test_fifty_percent_rule_on_both_sides() -> None:
    gold = [EvidenceSpan(0, 0, 100)]
    # a sentence of 40 chars, 20 of them inside gold: 50% -> evidence
    half = _s(0, 80, 120)
    # a sentence of 40 chars, 19 inside: not evidence
    less = _s(0, 81, 121)
    assert evidence_scores([half], gold)["evidence_precision"] == 1.0
    assert evidence_scores([less], gold)["evidence_precision"] == 0.0
    # gold span of 100 chars: kept sentences covering 50 of them recall it, 49 do not
    assert evidence_scores([_s(0, 0, 25), _s(0, 25, 50)], gold)["evidence_recall"] == 1.0
    assert evidence_scores([_s(0, 0, 49)], gold)["evidence_recall"] == 0.0
    # the same characters in another document do not count
    assert evidence_scores([_s(1, 0, 100)], gold) == {
        "evidence_precision": 0.0,
        "evidence_recall": 0.0,
        "evidence_f1": 0.0,
    }


def test_edge_cases() -> None:
    assert evidence_scores([], []) == {"evidence_precision": 1.0, "evidence_recall": 1.0, "evidence_f1": 1.0}
    assert evidence_scores([], [EvidenceSpan(0, 0, 5)])["evidence_f1"] == 0.0
    nothing_to_find = evidence_scores([_s(0, 0, 5)], [])
    assert nothing_to_find["evidence_precision"] == 0.0 and nothing_to_find["evidence_recall"] == 1.0


def test_metric_on_presplit_sentences_and_absent_without_labels() -> None:
    from ragsift.splitters.base import sentences_from_spans

    example = sample_example()
    sentences = []
    for i, doc in enumerate(example.documents):
        sentences.extend(sentences_from_spans(doc, i, doc.sentence_spans or ()))
    gold_ids = {(e.doc_index, e.start) for e in example.evidence or ()}
    gold_idx = [i for i, s in enumerate(sentences) if (s.doc_index, s.start) in gold_ids]
    assert len(gold_idx) == 2
    result = CompressionResult("sample", sentences, [0.0] * len(sentences), [gold_idx[0], 0], "")
    values = EvidenceMetric().compute(MetricInput(example, result))
    # kept: the first gold sentence (doc 0, sentence 1) and sentence 0 (not gold)
    assert values == {"evidence_precision": 0.5, "evidence_recall": 0.5, "evidence_f1": 0.5}
    unlabelled = Example("u", "q", ("a",), example.documents, None)
    assert EvidenceMetric().compute(MetricInput(unlabelled, result)) == {}



def test_metric_edge_cases_nothing_kept_and_no_gold_evidence() -> None:
    example = sample_example()
    nothing_kept = CompressionResult("sample", [_s(0, 0, 5)], [0.0], [], "")
    kept_one = CompressionResult("sample", [_s(0, 0, 5)], [0.0], [0], "xxxxx")
    # gold evidence, nothing kept: nothing found and nothing right
    assert EvidenceMetric().compute(MetricInput(example, nothing_kept)) == {
        "evidence_precision": 0.0, "evidence_recall": 0.0, "evidence_f1": 0.0}
    # labelled with no evidence (evidence == ()): keeping nothing is exactly right ...
    no_gold = Example("n", "q", ("a",), example.documents, ())
    assert EvidenceMetric().compute(MetricInput(no_gold, nothing_kept)) == {
        "evidence_precision": 1.0, "evidence_recall": 1.0, "evidence_f1": 1.0}
    # ... keeping anything is not: R = 1 (nothing to find), P = 0, F1 = 0
    assert EvidenceMetric().compute(MetricInput(no_gold, kept_one)) == {
        "evidence_precision": 0.0, "evidence_recall": 1.0, "evidence_f1": 0.0}


def test_overlapping_spans_count_their_characters_once() -> None:
    # two gold spans overlapping in [4, 12): their union covers 16 of the sentence's 40 characters
    # (40%), although their lengths add up to 24 (60%)
    gold = [EvidenceSpan(0, 0, 12), EvidenceSpan(0, 4, 16)]
    assert evidence_scores([_s(0, 0, 40)], gold)["evidence_precision"] == 0.0
    assert evidence_scores([_s(0, 0, 30)], gold)["evidence_precision"] == 1.0  # 16 of 30
    # two kept sentences overlapping on a gold span of 100: union 40 (not 60) -> not recalled
    assert evidence_scores([_s(0, 0, 30), _s(0, 10, 40)], [EvidenceSpan(0, 0, 100)])["evidence_recall"] == 0.0
    assert evidence_scores([_s(0, 0, 30), _s(0, 30, 50)], [EvidenceSpan(0, 0, 100)])["evidence_recall"] == 1.0

"""Document-level evidence (``gold-documents``): recall, precision and all-gold against hand counts,
from sentence-level spans (HotpotQA, 2Wiki) and from paragraph labels (MuSiQue, IRCoT)."""

from __future__ import annotations

import pytest

from ragsift.metrics.base import MetricInput
from ragsift.metrics.documents import GoldDocumentsMetric, gold_documents
from ragsift.types import CompressionResult, Document, EvidenceSpan, Example, Sentence


def _example(evidence: tuple[EvidenceSpan, ...] | None, metadata: dict | None = None) -> Example:
    docs = tuple(Document(title=f"t{i}", text="x" * 10, id=str(i)) for i in range(4))
    return Example(id="q", question="q?", answers=("a",), documents=docs, evidence=evidence, metadata=metadata or {})


def _compute(example: Example, kept_docs: list[int]) -> dict[str, float]:
    sentences = [Sentence(d, 0, 0, 10, "x" * 10) for d in range(4)]
    result = CompressionResult("q", sentences, [0.0] * 4, kept_docs, "")
    return GoldDocumentsMetric().compute(MetricInput(example, result))


def test_from_sentence_spans():
    ex = _example((EvidenceSpan(0, 0, 5), EvidenceSpan(0, 5, 10), EvidenceSpan(2, 0, 10)))
    assert gold_documents(ex) == {0, 2}
    assert _compute(ex, [0, 1, 3]) == pytest.approx(
        {"gold_document_recall": 0.5, "gold_document_precision": 1 / 3, "all_gold_documents": 0.0})
    assert _compute(ex, [2, 0]) == {"gold_document_recall": 1.0, "gold_document_precision": 1.0,
                                    "all_gold_documents": 1.0}
    assert _compute(ex, []) == {"gold_document_recall": 0.0, "gold_document_precision": 0.0, "all_gold_documents": 0.0}


def test_from_paragraph_labels_and_without_labels():
    ex = _example(None, {"supporting_docs": [1, 3]})
    assert _compute(ex, [1, 2, 3]) == pytest.approx(
        {"gold_document_recall": 1.0, "gold_document_precision": 2 / 3, "all_gold_documents": 1.0})
    assert _compute(_example(None), [0]) == {}
    # labels with no gold document (an unanswerable question): nothing to recall
    assert _compute(_example(()), [0]) == {"gold_document_recall": 1.0, "gold_document_precision": 0.0,
                                           "all_gold_documents": 1.0}

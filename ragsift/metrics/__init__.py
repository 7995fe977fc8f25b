"""ragsift's built-in metrics, registered through the same hook as third-party plugins."""

from __future__ import annotations

from ragsift.hookspecs import Register, hookimpl


@hookimpl
def register_metrics(register: Register) -> None:
    from ragsift.metrics.answer import AccuracyMetric, ExactMatchMetric, TokenF1Metric
    from ragsift.metrics.compression import (
        AnswerRetentionMetric,
        EmptyCompressionMetric,
        TokenCountMetric,
    )
    from ragsift.metrics.documents import GoldDocumentsMetric
    from ragsift.metrics.evidence import EvidenceMetric

    register("exact-match", ExactMatchMetric)
    register("f1", TokenF1Metric)
    register("accuracy", AccuracyMetric)
    register("evidence", EvidenceMetric)
    register("gold-documents", GoldDocumentsMetric)
    register("answer-retention", AnswerRetentionMetric)
    register("tokens", TokenCountMetric)
    register("empty", EmptyCompressionMetric)

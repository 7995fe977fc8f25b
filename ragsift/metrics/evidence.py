"""Evidence precision, recall and F1 of the kept sentences against gold evidence spans.

Sentences from a splitter rarely match gold spans character for character, so matching uses
character overlap with a 50% rule on each side:

- a kept sentence counts as **evidence** when at least 50% of its characters lie inside gold
  spans of its own document (precision = evidence sentences / kept sentences);
- a gold span counts as **recalled** when the kept sentences cover at least 50% of its
  characters (recall = recalled spans / gold spans).

With the ``presplit`` splitter on HotpotQA the sentences are the gold spans, so both rules are
exact. Edge cases: nothing kept and no gold spans gives P = R = F1 = 1; nothing kept with gold
spans gives P = R = 0; gold labels with no span (``evidence == ()``) give R = 1 and P = 0 if
anything was kept. Examples without labels (``evidence is None``) give no values at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from pydantic import Field

from ragsift.evidence import covered_spans, evidence_mask
from ragsift.metrics.base import Metric, MetricInput, MetricOutput
from ragsift.plugin import Params
from ragsift.types import EvidenceSpan, Sentence

__all__ = ["EvidenceMetric", "EvidenceParams", "evidence_scores"]


def evidence_scores(
    kept: Sequence[Sentence], gold: Sequence[EvidenceSpan], min_overlap: float = 0.5
) -> dict[str, float]:
    """Precision, recall and F1 of ``kept`` sentences against ``gold`` spans (rules above).

    The matching itself is :mod:`ragsift.evidence`, shared with the oracle scorer."""
    hits = sum(evidence_mask(kept, gold, min_overlap))
    found = sum(covered_spans(gold, kept, min_overlap))
    precision = hits / len(kept) if kept else float(not gold)
    recall = found / len(gold) if gold else 1.0
    f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
    return {"evidence_precision": precision, "evidence_recall": recall, "evidence_f1": f1}


class EvidenceParams(Params):
    min_overlap: float = Field(0.5, gt=0, le=1, description="share of characters that must overlap")


class EvidenceMetric(Metric):
    """Evidence precision / recall / F1 by character overlap (see the module docstring)."""

    Params = EvidenceParams
    outputs: ClassVar[dict[str, MetricOutput]] = {
        "evidence_precision": MetricOutput("Ev-P", 100.0, "%"),
        "evidence_recall": MetricOutput("Ev-R", 100.0, "%"),
        "evidence_f1": MetricOutput("Ev-F1", 100.0, "%"),
    }

    def compute(self, item: MetricInput) -> dict[str, float]:
        if item.example.evidence is None:
            return {}
        result = item.compression
        kept = [result.sentences[i] for i in result.kept]
        return evidence_scores(kept, item.example.evidence, self.params.min_overlap)

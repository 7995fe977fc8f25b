"""Document-level evidence: which gold documents the compression kept anything of.

The gold documents of a question are those holding its gold evidence spans (HotpotQA's and
2WikiMultihopQA's supporting-fact sentences) or, for paragraph-labelled data (MuSiQue's and
IRCoT's ``is_supporting``), ``metadata["supporting_docs"]``; a document counts as kept when at
least one of its sentences is. Outputs: recall (gold documents kept / gold documents), precision
(kept documents that are gold / kept documents) and ``all_gold_documents`` (1 when every gold
document is kept: the multi-hop question's whole chain survived). Examples without labels give
no values; labels with no gold document give recall 1, precision 0 if anything was kept.
"""

from __future__ import annotations

from typing import ClassVar

from ragsift.metrics.base import Metric, MetricInput, MetricOutput
from ragsift.types import Example

__all__ = ["GoldDocumentsMetric", "gold_documents"]


def gold_documents(example: Example) -> set[int] | None:
    """The indices of the gold documents of ``example`` (None: it has no evidence labels)."""
    if example.evidence is not None:
        return {e.doc_index for e in example.evidence}
    docs = example.metadata.get("supporting_docs")
    return None if docs is None else {int(i) for i in docs}


class GoldDocumentsMetric(Metric):
    """Recall and precision of the gold documents, and whether all were kept (module docstring)."""

    outputs: ClassVar[dict[str, MetricOutput]] = {
        "gold_document_recall": MetricOutput("Doc-R", 100.0, "%"),
        "gold_document_precision": MetricOutput("Doc-P", 100.0, "%"),
        "all_gold_documents": MetricOutput("All-gold-docs", 100.0, "%", binary=True),
    }

    def compute(self, item: MetricInput) -> dict[str, float]:
        gold = gold_documents(item.example)
        if gold is None:
            return {}
        result = item.compression
        kept = {result.sentences[i].doc_index for i in result.kept}
        hits = len(gold & kept)
        return {"gold_document_recall": hits / len(gold) if gold else 1.0,
                "gold_document_precision": hits / len(kept) if kept else float(not gold),
                "all_gold_documents": float(gold <= kept)}

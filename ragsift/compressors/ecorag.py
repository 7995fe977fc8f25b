"""ECoRAG (Jeong et al., Findings of ACL 2025): evidentiality-guided compression with reflection.

NLTK Punkt sentences, scored by a dual encoder (dot product), grown in rank order 4 at a time up
to 20 until a judge (the paper's Flan-T5-large evaluator, ``<EVI>`` / ``<NOT>``) finds them
sufficient, output in rank order with document titles. The paper's trained models are not
public: the defaults name the public models they start from (``facebook/contriever``,
``google/flan-t5-large`` with the two tokens added, untrained). ``configs/ecorag.toml`` writes the
paper's settings out, ``configs/ecorag-offline.toml`` runs on a CPU; every unpublished detail is
a documented parameter (docs/ecorag.md).
"""

from __future__ import annotations

from ragsift.compressors.pipeline import PipelineCompressor
from ragsift.judges.seq2seq import PAPER_EVALUATOR_MODEL

__all__ = ["EcoragCompressor", "PAPER_ENCODER_MODEL"]

#: the public checkpoint ECoRAG's dual encoder is initialised from (the trained one is not public)
PAPER_ENCODER_MODEL = "facebook/contriever"


class EcoragCompressor(PipelineCompressor):
    """nltk-punkt -> dual-encoder (dot) -> reflection (step 4, max 20) -> rank-order with titles."""

    default_stages = {
        "splitter": {"name": "nltk-punkt"},
        "scorer": {"name": "dual-encoder", "model": PAPER_ENCODER_MODEL, "pooling": "mean", "similarity": "dot"},
        "selector": {
            "name": "reflection",
            "step": 4,
            "max_sentences": 20,
            "mode": "sequential",
            "judge": {"name": "seq2seq", "model": PAPER_EVALUATOR_MODEL, "threshold": 0.5},
        },
        "assembler": {"name": "rank-order", "title_prefix": True, "order": "rank"},
    }

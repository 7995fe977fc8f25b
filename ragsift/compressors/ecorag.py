"""ECoRAG (Jeong et al., Findings of ACL 2025): evidentiality-guided compression with reflection.

Split the retrieved documents with NLTK's Punkt splitter, score every sentence with a dual
encoder (query-sentence dot product; the paper's encoder is Contriever fine-tuned on
evidentiality labels, mean pooling), then grow the evidence in rank order, 4 sentences at a
time up to 20, until a judge (the paper's evaluator: Flan-T5-large emitting ``<EVI>`` / ``<NOT>``)
finds it sufficient. The kept sentences are output in rank order, each prefixed with its document's
title.

Neither of the paper's trained models is public. The defaults below name the public models they
start from (``facebook/contriever``, ``google/flan-t5-large`` with the two tokens added, untrained),
so ``ecorag`` with its defaults runs the paper's pipeline but not the paper's weights.
``configs/ecorag.toml`` writes the paper's settings out; ``configs/ecorag-offline.toml`` runs
on a CPU with no Hub access (all-MiniLM-L6-v2 and a zero-shot SmolLM2 Yes/No judge).
Every unpublished detail is a documented parameter: see ``docs/ecorag.md``.
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

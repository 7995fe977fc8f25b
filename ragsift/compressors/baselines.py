"""Baseline compressors: compositions of the four stages with fixed defaults.

Every baseline carries its settings explicitly, so a comparison never depends on an unstated
default of another framework.
"""

from __future__ import annotations

from ragsift.compressors.pipeline import PipelineCompressor
from ragsift.models import OFFLINE_MINILM

__all__ = [
    "OracleCompressor", "RandomCompressor", "BM25Compressor", "EmbeddingCompressor", "SelectiveContextCompressor",
    "LongLLMLinguaCompressor", "RecompExtractiveCompressor", "LLMLingua2Compressor", "ProvenceCompressor",
    "SELECTIVE_CONTEXT_SPLIT",
]

#: the sentence splitting of Selective-Context's released code: after "." or "?" and whitespace,
#: not after an "e.g."-like abbreviation or a capitalised two-letter one ("Mr.")
SELECTIVE_CONTEXT_SPLIT = r"(?<!\w\.\w.)(?<![A-Z][a-z]\.)(?<=\.|\?)\s"


class OracleCompressor(PipelineCompressor):
    """Keeps exactly the gold evidence sentences (dataset sentences where the dataset has them)."""

    default_stages = {
        "splitter": {"name": "presplit", "fallback": "sentencizer"},
        "scorer": {"name": "oracle"},
        "selector": {"name": "threshold", "threshold": 0.5},
        "assembler": {"name": "original-order"},
    }


class RandomCompressor(PipelineCompressor):
    """k sentences chosen at random (seeded), in original order."""

    default_stages = {
        "splitter": {"name": "sentencizer"},
        "scorer": {"name": "random", "seed": 0},
        "selector": {"name": "top-k", "k": 5},
        "assembler": {"name": "original-order"},
    }


class BM25Compressor(PipelineCompressor):
    """The k sentences with the highest BM25 score against the question, in original order."""

    default_stages = {
        "splitter": {"name": "sentencizer"},
        "scorer": {"name": "bm25"},
        "selector": {"name": "top-k", "k": 5},
        "assembler": {"name": "original-order"},
    }


class EmbeddingCompressor(PipelineCompressor):
    """RECOMP's extractive compressor: dual-encoder similarity, top k, rank order."""

    default_stages = {
        "splitter": {"name": "sentencizer"},
        "scorer": {"name": "dual-encoder", "model": OFFLINE_MINILM, "similarity": "cosine"},
        "selector": {"name": "top-k", "k": 5},
        "assembler": {"name": "rank-order", "title_prefix": False},
    }


class SelectiveContextCompressor(PipelineCompressor):
    """Selective-Context (Li et al., 2023): remove the sentences of least self-information under a
    causal LM, half of them by default; the rest in original order (docs/baselines.md)."""

    description = "Selective-Context (Li et al., 2023): drops the least self-informative half of the sentences."

    default_stages = {
        "splitter": {"name": "regex", "pattern": SELECTIVE_CONTEXT_SPLIT},
        "scorer": {"name": "self-information"},
        "selector": {"name": "percentile", "ratio": 0.5},
        "assembler": {"name": "original-order"},
    }


class LongLLMLinguaCompressor(PipelineCompressor):
    """LongLLMLingua's question-aware coarse stage (Jiang et al., 2024): documents ranked by the
    likelihood of the question (with the restrictive statement) given each, kept whole in rank
    order up to half of the tokens (docs/baselines.md)."""

    description = "LongLLMLingua's coarse stage (Jiang et al., 2024): whole documents by question likelihood, up to half the tokens."

    default_stages = {
        "splitter": {"name": "sentencizer"},
        "scorer": {"name": "question-likelihood", "granularity": "document"},
        "selector": {"name": "rate", "rate": 0.5, "granularity": "document", "overflow": "keep-last"},
        "assembler": {"name": "original-order", "document_order": "rank"},
    }


class RecompExtractiveCompressor(PipelineCompressor):
    """RECOMP's extractive compressor (Xu et al., 2024) as BERGEN runs it: the published
    Contriever-based dual encoder (mean pooling, dot product) scores "{title} {sentence}"; the
    top k sentences of each document are kept under its title (docs/baselines.md)."""

    description = "RECOMP's extractive compressor (Xu et al., 2024), as BERGEN runs it: top 3 sentences per document."

    default_stages = {
        "splitter": {"name": "nltk-punkt"},
        "scorer": {"name": "dual-encoder", "model": "fangyuan/hotpotqa_extractive_compressor", "pooling": "mean",
                   "similarity": "dot", "sentence_title": True, "max_length": 512},
        "selector": {"name": "top-k", "k": 3, "per_document": True},
        "assembler": {"name": "original-order", "title": True},
    }


class LLMLingua2Compressor(PipelineCompressor):
    """LLMLingua-2 (Pan et al., 2024): whitespace words, each scored by the published token
    classifier's mean P(preserve); in each document the words above the 51st percentile kept
    (keep rate 0.5, LLMLingua's default), in original order (docs/baselines.md)."""

    description = "LLMLingua-2 (Pan et al., 2024): keeps each document's words scored above its 51st percentile."

    default_stages = {
        "splitter": {"name": "regex", "pattern": r"\s+"},
        "scorer": {"name": "token-classifier"},
        "selector": {"name": "percentile", "ratio": 0.51, "comparison": ">", "per_document": True},
        "assembler": {"name": "original-order"},
    }


class ProvenceCompressor(PipelineCompressor):
    """Provence (Chirkova et al., 2025): sentences (Provence's rule: after ".", "!" or "?" and
    whitespace) kept when the mean keep probability of their tokens is at least 0.1 (the paper's
    default; BERGEN also runs 0.5), in original order, each document under its title
    (docs/baselines.md)."""

    description = "Provence (Chirkova et al., 2025): sentences whose tokens' mean keep probability is at least 0.1."

    default_stages = {
        "splitter": {"name": "regex"},
        "scorer": {"name": "provence"},
        "selector": {"name": "threshold", "threshold": 0.1},
        "assembler": {"name": "original-order", "title": True},
    }

"""Baseline compressors: compositions of the four stages with fixed defaults.

Every baseline carries its settings explicitly, so a comparison never depends on an unstated
default of another framework.
"""

from __future__ import annotations

from ragsift.compressors.pipeline import PipelineCompressor
from ragsift.models import OFFLINE_MINILM

__all__ = ["OracleCompressor", "RandomCompressor", "BM25Compressor", "EmbeddingCompressor"]


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

"""Lexical BM25 scoring of each sentence against the question.

The collection is the example's own sentences (so IDF reflects how rare a term is among the
retrieved sentences). Tokens: lower-cased word characters.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
from pydantic import Field

from ragsift.plugin import Params
from ragsift.scorers.base import Scorer
from ragsift.types import Example, Sentence

__all__ = ["BM25Scorer", "tokenize"]

_TOKEN = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class BM25Params(Params):
    k1: float = Field(1.5, ge=0)
    b: float = Field(0.75, ge=0, le=1)
    epsilon: float = Field(0.25, ge=0)


class BM25Scorer(Scorer):
    """Okapi BM25 (rank-bm25) over the example's sentences."""

    Params = BM25Params

    def score(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray:
        if not sentences:
            return np.zeros(0)
        from rank_bm25 import BM25Okapi

        corpus = [tokenize(s.text) or [""] for s in sentences]
        bm25 = BM25Okapi(corpus, k1=self.params.k1, b=self.params.b, epsilon=self.params.epsilon)
        return np.asarray(bm25.get_scores(tokenize(example.question)), dtype=np.float64)

"""Keep the best-ranked units until a fraction of the example's tokens is used: LongLLMLingua's
coarse-grained budget control.

The budget is ``rate`` times the tokens of all sentences (counted in a named tokenizer, or
whitespace words). Units are taken in score order (ties: original order). ``overflow = "keep-last"``
(default, as LLMLingua's budget controller does) keeps the unit that crosses the budget and
stops; ``"skip"`` leaves it out and goes on with smaller ones below it, so the budget is never
exceeded. ``granularity = "document"`` ranks whole documents by their best sentence score (every
sentence of a document has the document's score under a document-level scorer) and keeps them
whole; the kept sentences are listed document by document in rank order, each document's in
original order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import Field

from ragsift.plugin import Params
from ragsift.selectors.base import rank_by_score
from ragsift.selectors.documents import document_scores
from ragsift.selectors.token_budget import TokenCountingSelector, count_tokens
from ragsift.types import Example, Selection, Sentence

__all__ = ["RateSelector"]


class RateParams(Params):
    #: the fraction of the example's tokens to keep
    rate: float = Field(0.5, gt=0.0, le=1.0)
    granularity: Literal["sentence", "document"] = "sentence"
    #: "whitespace" (words) or a model location whose tokenizer counts (see ragsift.models)
    tokenizer: str = "whitespace"
    overflow: Literal["keep-last", "skip"] = "keep-last"


class RateSelector(TokenCountingSelector):
    """The best units up to ``rate`` of the tokens (LongLLMLingua's coarse stage)."""

    Params = RateParams

    def units(self, sentences: Sequence[Sentence], scores: np.ndarray) -> list[list[int]]:
        """Units (lists of sentence indices) in rank order."""
        if self.params.granularity == "sentence":
            return [[i] for i in rank_by_score(scores)]
        docs = document_scores(sentences, scores, "max")
        return [docs.members[j] for j in docs.ranked()]

    def select(self, example: Example, sentences: Sequence[Sentence], scores: np.ndarray) -> Selection:
        if not sentences:
            return Selection([], {"tokens": 0, "budget": 0.0})
        self.warm_up()
        counts = [count_tokens(self._tokenizer, s.text) for s in sentences]
        budget = self.params.rate * sum(counts)
        used, kept = 0, []
        for unit in self.units(sentences, scores):
            size = sum(counts[i] for i in unit)
            if used + size <= budget:
                kept += unit
                used += size
            elif self.params.overflow == "keep-last":
                kept += unit
                used += size
                break
        return Selection(kept, {"tokens": used, "budget": budget})

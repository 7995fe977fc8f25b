"""Keep the k best-scored sentences, over all documents or per document."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import Field

from ragsift.plugin import Params
from ragsift.selectors.base import Selector, rank_by_score
from ragsift.types import Example, Selection, Sentence

__all__ = ["TopKSelector"]


class TopKParams(Params):
    k: int = Field(5, ge=1)
    #: k per document instead of k overall
    per_document: bool = False


class TopKSelector(Selector):
    """The k highest scores (ties broken by original order)."""

    Params = TopKParams

    def max_kept(self, sentences: Sequence[Sentence]) -> int | None:
        groups = len({s.doc_index for s in sentences}) if self.params.per_document else 1
        return self.params.k * groups

    def select(self, example: Example, sentences: Sequence[Sentence], scores: np.ndarray) -> Selection:
        ranked = rank_by_score(scores)
        if not self.params.per_document:
            return Selection(ranked[: self.params.k])
        taken: dict[int, int] = {}
        kept = []
        for i in ranked:
            doc = sentences[i].doc_index
            if taken.get(doc, 0) < self.params.k:
                taken[doc] = taken.get(doc, 0) + 1
                kept.append(i)
        return Selection(kept)

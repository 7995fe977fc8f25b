"""Selective-Context's filter: drop the units whose score lies below a percentile of the example's scores.

With ``ratio = r`` the threshold is the ``100 r``-th percentile of the example's scores (numpy's
linear interpolation, as the authors' ``np.nanpercentile``) and every unit scoring at least the
threshold is kept, so about a fraction ``r`` of the units is removed (ties at the threshold are
kept). The paper's headline setting removes half: ``ratio = 0.5``.

LLMLingua-2 filters the same way inside each document with a strict comparison (``comparison =
">"``, ``per_document = true``; its percentile for a keep rate ``r`` is ``int(100 (1 - r) + 1)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import Field

from ragsift.plugin import Params
from ragsift.selectors.base import Selector, rank_by_score
from ragsift.types import Example, Selection, Sentence

__all__ = ["PercentileSelector"]


class PercentileParams(Params):
    #: the fraction of units to remove (Selective-Context's reduce ratio)
    ratio: float = Field(0.5, ge=0.0, lt=1.0)
    #: keep scores at or above the threshold (Selective-Context), or strictly above (LLMLingua-2)
    comparison: Literal[">=", ">"] = ">="
    #: one threshold per document (LLMLingua-2 compresses each document on its own) or per example
    per_document: bool = False


class PercentileSelector(Selector):
    """Keeps ``score >= percentile(scores, 100 * ratio)``, best first."""

    Params = PercentileParams

    def max_kept(self, sentences: Sequence[Sentence]) -> int | None:
        return len(sentences)

    def select(self, example: Example, sentences: Sequence[Sentence], scores: np.ndarray) -> Selection:
        if not len(scores):
            return Selection([], {"threshold": None})
        scores = np.asarray(scores, dtype=np.float64)
        groups: dict[int, list[int]] = {}
        for i in range(len(scores)):
            groups.setdefault(sentences[i].doc_index if self.params.per_document else 0, []).append(i)
        threshold = np.empty(len(scores))
        for members in groups.values():
            threshold[members] = np.percentile(scores[members], 100.0 * self.params.ratio)
        passes = scores > threshold if self.params.comparison == ">" else scores >= threshold
        info = {"threshold": None if self.params.per_document else float(threshold[0])}
        return Selection([i for i in rank_by_score(scores) if passes[i]], info)

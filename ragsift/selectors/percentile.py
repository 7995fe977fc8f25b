"""Selective-Context's filter: drop the units whose score lies below a percentile of the example's scores.

With ``ratio = r`` the threshold is the ``100 r``-th percentile of the example's scores (numpy's
linear interpolation, as the authors' ``np.nanpercentile``) and every unit scoring at least the
threshold is kept, so about a fraction ``r`` of the units is removed (ties at the threshold are
kept). The paper's headline setting removes half: ``ratio = 0.5``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import Field

from ragsift.plugin import Params
from ragsift.selectors.base import Selector, rank_by_score
from ragsift.types import Example, Selection, Sentence

__all__ = ["PercentileSelector"]


class PercentileParams(Params):
    #: the fraction of units to remove (Selective-Context's reduce ratio)
    ratio: float = Field(0.5, ge=0.0, lt=1.0)


class PercentileSelector(Selector):
    """Keeps ``score >= percentile(scores, 100 * ratio)``, best first."""

    Params = PercentileParams

    def max_kept(self, sentences: Sequence[Sentence]) -> int | None:
        return len(sentences)

    def select(self, example: Example, sentences: Sequence[Sentence], scores: np.ndarray) -> Selection:
        if not len(scores):
            return Selection([], {"threshold": None})
        threshold = float(np.percentile(np.asarray(scores, dtype=np.float64), 100.0 * self.params.ratio))
        return Selection([i for i in rank_by_score(scores) if scores[i] >= threshold], {"threshold": threshold})

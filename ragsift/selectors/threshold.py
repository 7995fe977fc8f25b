"""Keep every sentence whose score is at least a threshold (EXIT: tau = 0.5, note >=).

``min_keep`` (default 0: EXIT's rule, which may keep nothing) keeps the best ``min_keep``
sentences even when they score below the threshold, so no compression is empty (ties: the
earlier sentence). Left at 0 it is omitted from the selector's config, so the configs, run
manifests and caches of every existing threshold selector stay as they were."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import Field, field_validator

from ragsift.plugin import Params
from ragsift.selectors.base import Selector, check_threshold_in_range, rank_by_score
from ragsift.types import Example, Selection, Sentence

__all__ = ["ThresholdSelector"]


class ThresholdParams(Params):
    threshold: float = 0.5
    #: keep at least this many sentences (the best-scoring ones), even below the threshold
    min_keep: int = Field(0, ge=0)

    @field_validator("threshold")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value


class ThresholdSelector(Selector):
    """Keeps ``score >= threshold`` (and the best ``min_keep`` in any case); the number kept adapts
    to the example (zero is possible when ``min_keep`` is 0)."""

    Params = ThresholdParams

    def config(self) -> dict[str, Any]:
        out = super().config()
        if not out.get("min_keep"):
            out.pop("min_keep", None)
        return out

    def check_score_range(self, score_range: tuple[float, float] | None, scorer: str) -> None:
        check_threshold_in_range(type(self).__name__, self.params.threshold, score_range, scorer)

    def select(self, example: Example, sentences: Sequence[Sentence], scores: np.ndarray) -> Selection:
        tau, floor = self.params.threshold, self.params.min_keep
        return Selection([i for n, i in enumerate(rank_by_score(scores)) if scores[i] >= tau or n < floor])

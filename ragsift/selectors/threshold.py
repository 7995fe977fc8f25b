"""Keep every sentence whose score is at least a threshold (EXIT: tau = 0.5, note >=)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import field_validator

from ragsift.errors import ConfigError
from ragsift.plugin import Params
from ragsift.selectors.base import Selector, rank_by_score
from ragsift.types import Example, Selection, Sentence

__all__ = ["ThresholdSelector"]


class ThresholdParams(Params):
    threshold: float = 0.5

    @field_validator("threshold")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value


class ThresholdSelector(Selector):
    """Keeps ``score >= threshold``; the number kept adapts to the example (may be zero)."""

    Params = ThresholdParams

    def check_score_range(self, score_range: tuple[float, float] | None, scorer: str) -> None:
        tau = self.params.threshold
        if score_range is None:
            return
        low, high = score_range
        if not low <= tau <= high:
            effect = "keeps nothing" if tau > high else "keeps every sentence"
            raise ConfigError(
                f"ThresholdSelector: threshold {tau} is outside the score range [{low}, {high}] of scorer "
                f"'{scorer}', so it {effect} on every example; choose a threshold in that range."
            )

    def select(self, example: Example, sentences: Sequence[Sentence], scores: np.ndarray) -> Selection:
        tau = self.params.threshold
        return Selection([i for i in rank_by_score(scores) if scores[i] >= tau])

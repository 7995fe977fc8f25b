"""Seeded random scores: the floor any real scorer must beat."""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np

from ragsift.plugin import Params
from ragsift.scorers.base import Scorer
from ragsift.types import Example, Sentence

__all__ = ["RandomScorer"]


class RandomParams(Params):
    seed: int = 0


class RandomScorer(Scorer):
    """Uniform scores in [0, 1); the same example gets the same scores whatever the run order."""

    Params = RandomParams

    def score_range(self) -> tuple[float, float] | None:
        return (0.0, 1.0)  # uniform in [0, 1)

    def score(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray:
        rng = np.random.default_rng([self.params.seed, zlib.crc32(example.id.encode("utf-8"))])
        return rng.random(len(sentences))

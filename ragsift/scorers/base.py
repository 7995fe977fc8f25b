"""The scorer stage: one relevance score per sentence (higher = more useful)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence

import numpy as np

from ragsift.plugin import Plugin
from ragsift.types import Example, Sentence

__all__ = ["Scorer"]


class Scorer(Plugin):
    """Scores the sentences of an example against its question."""

    @abstractmethod
    def score(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray:
        """A float array with one score per sentence, in the order given."""

    def score_range(self) -> tuple[float, float] | None:
        """The closed interval every score lies in (probabilities: ``(0.0, 1.0)``), or None when
        scores are unbounded (BM25, dot products). Selectors with a threshold check it."""
        return None

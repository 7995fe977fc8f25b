"""The scorer stage: one relevance score per sentence (higher = more useful)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from ragsift.plugin import Plugin
from ragsift.types import Example, Sentence

__all__ = ["Scorer"]


class Scorer(Plugin):
    """Scores the sentences of an example against its question."""

    stage: ClassVar[str] = "scorer"

    @abstractmethod
    def score(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray | Sequence[float]:
        """One finite float score per sentence, in the order given: a 1-D numpy array or any
        sequence of floats (the pipeline converts it with ``np.asarray(..., dtype=float64)``)."""

    def score_range(self) -> tuple[float, float] | None:
        """Capability: the closed interval every score lies in (probabilities: ``(0.0, 1.0)``), or
        None when scores are unbounded (BM25, dot products). Selectors with a threshold and the
        conformance kit check it."""
        return None

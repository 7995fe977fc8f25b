"""Keep every sentence (the splitter and assembler alone shape the context)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragsift.selectors.base import Selector
from ragsift.types import Example, Selection, Sentence

__all__ = ["AllSelector"]


class AllSelector(Selector):
    """Keeps all sentences in original order."""

    def max_kept(self, sentences: Sequence[Sentence]) -> int | None:
        return len(sentences)

    def select(self, example: Example, sentences: Sequence[Sentence], scores: np.ndarray) -> Selection:
        return Selection(list(range(len(sentences))))

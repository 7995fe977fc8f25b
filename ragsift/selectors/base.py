"""The selector stage: scores -> the sentences to keep, in priority order."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import ClassVar

import numpy as np

from ragsift.errors import ConfigError
from ragsift.plugin import Plugin
from ragsift.types import Example, Selection, Sentence

__all__ = ["Selector", "rank_by_score", "check_threshold_in_range"]


def rank_by_score(scores: np.ndarray) -> list[int]:
    """Indices sorted by descending score; ties keep the original order (stable)."""
    return [int(i) for i in np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")]


def check_threshold_in_range(owner: str, tau: float, score_range: tuple[float, float] | None, scorer: str,
                             unit: str = "sentence") -> None:
    """A ConfigError when threshold ``tau`` lies outside ``score_range`` (None: unbounded) of the
    named scorer: it would keep nothing, or every ``unit``, on every example."""
    if score_range is None:
        return
    low, high = score_range
    if not low <= tau <= high:
        effect = "keeps nothing" if tau > high else f"keeps every {unit}"
        raise ConfigError(
            f"{owner}: threshold {tau} is outside the score range [{low}, {high}] of scorer "
            f"'{scorer}', so it {effect} on every example; choose a threshold in that range."
        )


class Selector(Plugin):
    """Chooses which sentences to keep."""

    stage: ClassVar[str] = "selector"

    def max_kept(self, sentences: Sequence[Sentence]) -> int | None:
        """Capability: the most sentences :meth:`select` keeps out of ``sentences`` (None: no promise)."""
        return None

    def token_budget(self) -> tuple[int, Callable[[str], int]] | None:
        """Capability: ``(budget, count)``: the kept sentences hold at most ``budget`` tokens as
        ``count(text)`` counts them (None: no promise)."""
        return None

    @abstractmethod
    def select(self, example: Example, sentences: Sequence[Sentence], scores: np.ndarray) -> Selection:
        """Indices of the kept sentences into ``sentences`` (priority order) and info."""

    def check_score_range(self, score_range: tuple[float, float] | None, scorer: str) -> None:  # noqa: B027
        """Raise ConfigError when this selector's settings cannot work with scores in
        ``score_range`` (None: unbounded) of the named scorer; by default every range works."""

"""Issue 53 row 13: a NaN score (and an infinity a scorer does not declare) is refused, naming the
scorer and the example, instead of answering ``score: null`` with arbitrary sentences kept."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from ragsift.api import make_example
from ragsift.compressors.baselines import BM25Compressor
from ragsift.disk_cache import JsonStore
from ragsift.errors import PluginContractError
from ragsift.scorers.base import Scorer
from ragsift.scorers.caching import CachingScorer
from ragsift.types import Example, Sentence

EXAMPLE = make_example("Who owns MTV?", ["MTV is owned by Viacom. It is a channel. Paris is in France."])


class FixedScorer(Scorer):
    """Returns the class's ``values`` (cycled over the sentences) in the class's ``declared`` range."""

    values: tuple[float, ...] = (1.0,)
    declared: tuple[float, float] | None = None

    def score_range(self) -> tuple[float, float] | None:
        return self.declared

    def score(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray:
        return np.array([self.values[i % len(self.values)] for i in range(len(sentences))], dtype=np.float64)


def _compressor(values: tuple[float, ...], declared: tuple[float, float] | None = None) -> BM25Compressor:
    scorer_cls = type("FixedScorer", (FixedScorer,), {"values": values, "declared": declared})
    scorer = scorer_cls()
    scorer.registered_name = "fixed"
    compressor = BM25Compressor()
    compressor.scorer = scorer
    return compressor


@pytest.mark.parametrize("values", [(math.nan,), (1.0, math.nan, 2.0), (math.inf, 1.0), (2.0, -math.inf)])
def test_a_nan_or_undeclared_infinity_is_refused_naming_the_scorer(values):
    with pytest.raises(PluginContractError) as info:
        _compressor(values).compress(EXAMPLE)
    message = str(info.value)
    assert "scorer 'fixed'" in message and "non-finite" in message and f"'{EXAMPLE.id}'" in message


def test_an_infinity_inside_the_declared_range_is_ranked():
    # a log-probability of -inf (question-likelihood declares (-inf, 0]) is the lowest score, not an error
    result = _compressor((-1.0, -math.inf, -2.0), declared=(-math.inf, 0.0)).compress(EXAMPLE)
    assert result.scores[1] == -math.inf
    # and a NaN stays refused in any range
    with pytest.raises(PluginContractError, match="sentence 1: nan"):
        _compressor((-1.0, math.nan), declared=(-math.inf, 0.0)).compress(EXAMPLE)


def test_the_score_cache_does_not_keep_a_nan(tmp_path):
    # a passing failure (a server's broken answer) must not make every rerun refuse too
    compressor = _compressor((1.0, math.nan))
    store = JsonStore(tmp_path / "scores")
    compressor.replace_scorer("scorer", CachingScorer(compressor.scorer, store, splitter={"name": "regex"}))
    with pytest.raises(PluginContractError):
        compressor.compress(EXAMPLE)
    assert len(JsonStore(tmp_path / "scores")) == 0

"""Gold-evidence scores: 1 for evidence sentences, 0 otherwise (an upper bound, not a method).

Data labelled by paragraph (MuSiQue's and IRCoT's ``is_supporting``: ``metadata["supporting_docs"]``,
no sentence spans) makes every sentence of a supporting paragraph evidence: the oracle then keeps
the supporting paragraphs whole, the upper bound at the labels' own granularity."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import Field

from ragsift.errors import ConfigError
from ragsift.evidence import evidence_mask
from ragsift.plugin import Params
from ragsift.scorers.base import Scorer
from ragsift.types import Example, Sentence

__all__ = ["OracleScorer"]


class OracleParams(Params):
    #: share of a sentence's characters that must lie in gold spans
    min_overlap: float = Field(0.5, gt=0, le=1)


class OracleScorer(Scorer):
    """Needs examples with gold evidence labels (sentence spans, or supporting paragraphs)."""

    Params = OracleParams

    def score_range(self) -> tuple[float, float] | None:
        return (0.0, 1.0)  # 1 for gold evidence, else 0

    def score(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray:
        if not sentences:
            return np.zeros(0)
        supporting = example.metadata.get("supporting_docs") if example.evidence is None else None
        if supporting is not None:
            gold = {int(i) for i in supporting}
            return np.asarray([float(s.doc_index in gold) for s in sentences], dtype=np.float64)
        if example.evidence is None:
            raise ConfigError(
                f"OracleScorer: example '{example.id}' has no gold evidence labels; the oracle needs a dataset "
                "with evidence (HotpotQA supporting facts, SQuAD answer sentences, MuSiQue supporting paragraphs)."
            )
        return np.asarray(evidence_mask(sentences, example.evidence, self.params.min_overlap), dtype=np.float64)

"""Keep whole documents: each document scored from its sentences' scores, the best ``k`` (or
those whose score reaches a threshold, at least ``min_keep`` and at most ``max_keep`` of them)
kept with every sentence they hold.

A document's score is an aggregate of its sentences' scores (:func:`document_scores`):
``"max"`` (its best sentence), ``"mean"`` (all of them) or ``"top-m"`` (the mean of its ``m``
best; a document with fewer sentences: the mean of those it has). Under a document scorer,
which gives each sentence its document's score (``question-likelihood`` with ``granularity =
"document"``, :class:`ragsift.scorers.document.DocumentScorer`), all three give that score.

The kept sentences are listed document by document in rank order (ties: the earlier document),
each document's in original order, as :class:`ragsift.selectors.rate.RateSelector` lists them.
This selector alone makes the "documents kept whole" compressors (``[compressor.selector]
name = "top-documents"`` under any pipeline); as the coarse stage of a ``cascade`` compressor it
decides which documents the fine stage's scorer reads.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal, Self

import numpy as np
from pydantic import Field, model_validator

from ragsift.plugin import Params
from ragsift.selectors.base import Selector, check_threshold_in_range, rank_by_score
from ragsift.types import Example, Selection, Sentence

__all__ = ["TopDocumentsSelector", "TopDocumentsParams", "DocumentScores", "document_scores"]

Aggregate = Literal["max", "mean", "top-m"]


class DocumentScores:
    """The documents of a sentence list with their scores: ``docs[j]`` (a document index) holds the
    sentences ``members[j]`` (indices into the list, in original order) and scores ``scores[j]``."""

    def __init__(self, docs: list[int], members: list[list[int]], scores: np.ndarray) -> None:
        self.docs, self.members, self.scores = docs, members, scores

    def ranked(self) -> list[int]:
        """Positions into ``docs``, best document first (ties: the earlier document)."""
        return rank_by_score(self.scores)


def document_scores(sentences: Sequence[Sentence], scores: np.ndarray, aggregate: Aggregate = "max",
                    m: int | None = None) -> DocumentScores:
    """Group ``sentences`` by document (in document order) and score each document by
    ``aggregate`` of its sentences' ``scores`` (``"top-m"``: the mean of the ``m`` best)."""
    if aggregate == "top-m" and (m is None or m < 1):
        raise ValueError("aggregate 'top-m' needs m >= 1")
    scores = np.asarray(scores, dtype=np.float64)
    groups: dict[int, list[int]] = {}
    for i in sorted(range(len(sentences)), key=lambda j: (sentences[j].doc_index, sentences[j].index)):
        groups.setdefault(sentences[i].doc_index, []).append(i)
    members = list(groups.values())
    values = []
    for member in members:
        own = scores[member]
        if aggregate == "max":
            values.append(float(own.max()))
        elif aggregate == "mean":
            values.append(float(own.mean()))
        else:
            values.append(float(np.sort(own)[::-1][:m].mean()))
    return DocumentScores(list(groups), members, np.asarray(values, dtype=np.float64))


class TopDocumentsParams(Params):
    #: a document's score from its sentences' scores: the best, the mean, or the mean of the m best
    aggregate: Aggregate = "max"
    #: with aggregate = "top-m": how many of a document's best sentence scores are averaged
    m: int | None = Field(None, ge=1)
    #: keep the k best documents ...
    k: int | None = Field(None, ge=1)
    #: ... or every document whose score is >= threshold
    threshold: float | None = Field(None, allow_inf_nan=False)
    #: with a threshold: keep at least this many documents (the best), even below it
    min_keep: int = Field(0, ge=0)
    #: with a threshold: keep at most this many documents (the best), even if more reach it
    max_keep: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _one_rule(self) -> Self:
        if (self.k is None) == (self.threshold is None):
            raise ValueError("give exactly one of 'k' (keep the k best documents) or 'threshold' (keep the documents "
                             f"scoring at least it); got k = {self.k}, threshold = {self.threshold}")
        if (self.aggregate == "top-m") != (self.m is not None):
            raise ValueError("'m' goes with aggregate = 'top-m' (the mean of a document's m best sentence scores) "
                             f"and only with it; got aggregate = '{self.aggregate}', m = {self.m}")
        if (self.min_keep or self.max_keep is not None) and self.threshold is None:
            raise ValueError("'min_keep' and 'max_keep' go with 'threshold'; with 'k' the k best documents are kept anyway")
        if self.max_keep is not None and self.max_keep < self.min_keep:
            raise ValueError(f"'max_keep' ({self.max_keep}) is below 'min_keep' ({self.min_keep}): no count satisfies both")
        return self


class TopDocumentsSelector(Selector):
    """Whole documents: the ``k`` best, or those scoring at least ``threshold``, by the
    ``aggregate`` of their sentences' scores."""

    Params = TopDocumentsParams
    conformance_params = {"k": 2}

    def config(self) -> dict[str, Any]:
        return {k: v for k, v in super().config().items() if v is not None and not (k == "min_keep" and v == 0)}

    def check_score_range(self, score_range: tuple[float, float] | None, scorer: str) -> None:
        if self.params.threshold is not None:
            check_threshold_in_range(type(self).__name__, self.params.threshold, score_range, scorer, "document")

    def max_kept(self, sentences: Sequence[Sentence]) -> int | None:
        most = self.params.k if self.params.k is not None else self.params.max_keep
        if most is None:
            return None
        return sum(n for _, n in Counter(s.doc_index for s in sentences).most_common(most))  # the largest documents

    def rank_documents(self, sentences: Sequence[Sentence], scores: np.ndarray) -> tuple[DocumentScores, list[int]]:
        """The documents' scores and the positions (into ``DocumentScores.docs``) of the kept ones,
        best first."""
        p = self.params
        docs = document_scores(sentences, scores, p.aggregate, p.m)
        ranked = docs.ranked()
        if p.k is not None:
            return docs, ranked[: p.k]
        assert p.threshold is not None
        kept = [j for n, j in enumerate(ranked) if docs.scores[j] >= p.threshold or n < p.min_keep]
        return docs, kept if p.max_keep is None else kept[: p.max_keep]

    def select(self, example: Example, sentences: Sequence[Sentence], scores: np.ndarray) -> Selection:
        if not sentences:
            return Selection([], {"documents": []})
        docs, kept = self.rank_documents(sentences, scores)
        return Selection([i for j in kept for i in docs.members[j]],
                         {"documents": [{"doc": docs.docs[j], "score": float(docs.scores[j])} for j in kept]})

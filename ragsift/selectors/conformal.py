"""Keep every unit scoring at or above a threshold calibrated by split conformal prediction, so
that the kept context holds the chosen target (gold sentences, gold documents, the answer) for at
least 1 - alpha of new questions from the calibration questions' distribution (docs/conformal.md).

The threshold is frozen by ``ragsift calibrate``, which writes it with a ``calibrated`` record
(alpha, target, n, the calibration file's path and SHA-256, when, and the scorer it was
calibrated for). At run time this is the ``threshold`` selector (``level = "sentence"``) or
``top-documents`` with a threshold (``level = "document"``: documents scored by the
``aggregate`` of their sentences' scores, kept whole): the same code, so the number kept adapts
per question exactly as those selectors' does. Nothing caps the number kept (a cap would break
the guarantee), and nothing is kept below the threshold.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal, Self

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ragsift.errors import ConfigError
from ragsift.plugin import Params
from ragsift.selectors.base import Selector, check_threshold_in_range, rank_by_score
from ragsift.selectors.documents import Aggregate, TopDocumentsSelector, document_scores
from ragsift.selectors.threshold import ThresholdSelector
from ragsift.types import Example, Selection, Sentence

__all__ = ["ConformalSelector", "ConformalParams", "CalibrationRecord"]


class CalibrationRecord(BaseModel):
    """Where the threshold came from (written by ``ragsift calibrate``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: the miscoverage the threshold was calibrated for: coverage >= 1 - alpha
    alpha: float = Field(gt=0.0, lt=1.0)
    #: what must be kept: every gold sentence, every gold document, or one unit with the answer
    target: Literal["sentences", "documents", "answer"]
    #: calibration questions
    n: int = Field(ge=1)
    #: the calibration file (development data) and its SHA-256
    path: str = Field(min_length=1)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    #: the dataset the questions came from (a named dataset, else the loader's name): a
    #: threshold applied to another dataset carries no guarantee
    dataset: str = Field(min_length=1)
    #: the registered name of the scorer whose scores were calibrated
    scorer: str = Field(min_length=1)
    created_at: str = Field(min_length=1)


class ConformalParams(Params):
    #: the calibrated threshold: keep the units scoring at least this (-inf: keep everything)
    threshold: float
    #: what is kept: sentences, or whole documents
    level: Literal["sentence", "document"] = "sentence"
    #: document level: a document's score from its sentences' (as ``top-documents``)
    aggregate: Aggregate = "max"
    m: int | None = Field(None, ge=1)
    #: where the threshold came from; required: a threshold without it carries no guarantee
    #: (use the ``threshold`` selector for a hand-set one)
    calibrated: CalibrationRecord

    @field_validator("threshold")
    @classmethod
    def _not_nan(cls, value: float) -> float:
        if math.isnan(value):
            raise ValueError("must be a number, not NaN")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if (self.aggregate == "top-m") != (self.m is not None):
            raise ValueError("'m' goes with aggregate = 'top-m' and only with it; "
                             f"got aggregate = '{self.aggregate}', m = {self.m}")
        if self.level == "sentence" and (self.aggregate != "max" or self.m is not None):
            raise ValueError("'aggregate' and 'm' go with level = 'document' (a document's score from its sentences')")
        if self.calibrated.target == "documents" and self.level != "document":
            raise ValueError("target 'documents' needs level = 'document': a sentence-level selector keeps sentences, "
                             "not whole documents")
        return self


class ConformalSelector(Selector):
    """Keeps the sentences (or whole documents) scoring at or above a conformally calibrated
    threshold; the number kept adapts per question (module docstring)."""

    Params = ConformalParams
    conformance_params = {
        "threshold": 0.5,
        "calibrated": {"alpha": 0.1, "target": "sentences", "n": 100, "path": "dev.json", "sha256": "0" * 64,
                       "dataset": "hotpotqa", "scorer": "bm25", "created_at": "2026-01-01T00:00:00+00:00"},
    }

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        p = self.params
        # the threshold and top-documents selectors' own code keeps the units (one way to select);
        # an infinite threshold (which they refuse) is handled in select()
        self._inner: Selector | None = None
        if math.isfinite(p.threshold):
            self._inner = (ThresholdSelector(threshold=p.threshold) if p.level == "sentence"
                           else TopDocumentsSelector(aggregate=p.aggregate, m=p.m, threshold=p.threshold))

    def config(self) -> dict[str, Any]:
        out = {k: v for k, v in super().config().items() if v is not None}
        if self.params.level == "sentence":  # a document's score means nothing to a sentence selector
            out.pop("aggregate", None)
        return out

    def check_score_range(self, score_range: tuple[float, float] | None, scorer: str) -> None:
        calibrated = self.params.calibrated.scorer
        if scorer != calibrated:
            raise ConfigError(f"ConformalSelector: the threshold was calibrated on the scores of scorer '{calibrated}', "
                              f"but this compressor's scorer is '{scorer}': a threshold carries no guarantee for "
                              "another scorer's scores; calibrate again with 'ragsift calibrate'.")
        if math.isfinite(self.params.threshold):
            check_threshold_in_range(type(self).__name__, self.params.threshold, score_range, scorer, self.params.level)

    def select(self, example: Example, sentences: Sequence[Sentence], scores: np.ndarray) -> Selection:
        if self._inner is not None:
            selection = self._inner.select(example, sentences, scores)
        elif self.params.threshold > 0:  # +inf: keeps nothing (most calibration questions needed nothing)
            selection = Selection([], {"documents": []} if self.params.level == "document" else {})
        elif self.params.level == "sentence":  # -inf: too few calibration questions for alpha: keep everything
            selection = Selection(rank_by_score(scores))
        else:
            docs = document_scores(sentences, scores, self.params.aggregate, self.params.m)
            ranked = docs.ranked()
            selection = Selection([i for j in ranked for i in docs.members[j]],
                                  {"documents": [{"doc": docs.docs[j], "score": float(docs.scores[j])} for j in ranked]})
        selection.info["threshold"] = self.params.threshold
        return selection

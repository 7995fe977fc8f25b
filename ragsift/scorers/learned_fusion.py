"""The learned-fusion scorer: a model fitted by ``ragsift train`` combines other scorers' scores
with document-level and structural features (:mod:`ragsift.scorers.fusion_features`).

The model folder holds ``fusion.json``: the feature recipe (component scorer specs, feature
names) and the fitted model (a boosted tree ensemble as JSON arrays, evaluated with numpy; no
pickle). The score is the model's probability that the sentence is evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragsift.errors import ConfigError
from ragsift.plugin import Params
from ragsift.scorers.fusion_features import FusionFeatures
from ragsift.scorers.json_model import JsonModelScorer, read_model_json, write_model_json
from ragsift.scorers.tree_ensemble import TreeEnsemble
from ragsift.types import Example, Sentence

__all__ = ["LearnedFusionScorer", "FusionModel", "MODEL_FILE"]

MODEL_FILE = "fusion.json"
FORMAT_VERSION = 1


class FusionModel:
    """Feature recipe + fitted ensemble, as saved by the fusion trainer."""

    def __init__(self, scorers: dict[str, dict[str, Any]], document_scorers: dict[str, dict[str, Any]],
                 ensemble: TreeEnsemble, feature_names: list[str]) -> None:
        self.features = FusionFeatures(scorers, document_scorers)
        if feature_names != self.features.names or ensemble.n_features != len(feature_names):
            raise ConfigError("FusionModel: the saved feature names do not match the features its scorers give; "
                              "was the model saved by another ragsift version?")
        self.ensemble = ensemble

    def to_json(self) -> dict[str, Any]:
        return {"format": "ragsift-learned-fusion", "version": FORMAT_VERSION,
                "scorers": self.features.scorer_specs, "document_scorers": self.features.document_specs,
                "feature_names": self.features.names, "model": self.ensemble.to_json()}

    def save(self, folder: str | Path) -> Path:
        return write_model_json(folder, MODEL_FILE, self.to_json())

    @classmethod
    def load(cls, location: str | Path) -> FusionModel:
        path, data = read_model_json(location, MODEL_FILE, "ragsift-learned-fusion", FORMAT_VERSION, "LearnedFusionScorer",
                                     "train one with 'ragsift train'")
        try:
            return cls(data["scorers"], data["document_scorers"], TreeEnsemble.from_json(data["model"]), list(data["feature_names"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{path}: malformed learned-fusion model ({type(exc).__name__}: {exc}).") from None

    def score(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray:
        if not sentences:
            return np.zeros(0)
        return self.ensemble.probability(self.features.compute(example, sentences))


class LearnedFusionParams(Params):
    #: a model folder written by ``ragsift train`` (or its fusion.json), ``package:PKG/PATH``, or a Hub
    #: id (``org/name``, ``hub:org/name@revision``) whose repository holds fusion.json
    model: str


class LearnedFusionScorer(JsonModelScorer):
    """P(evidence) from a fitted fusion model (see the module docstring)."""

    Params = LearnedFusionParams
    model_file = MODEL_FILE
    model_class = FusionModel
    conformance_params = {"model": "models/fusion-trained"}

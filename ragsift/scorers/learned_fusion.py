"""The learned-fusion scorer: a model fitted by ``ragsift train`` combines other scorers' scores
with document-level and structural features (:mod:`ragsift.scorers.fusion_features`).

The model folder holds ``fusion.json``: the feature recipe (the names of its component features,
from a closed vocabulary: :mod:`ragsift.scorers.feature_components`; the feature names) and the
fitted model (a boosted tree ensemble as JSON arrays, evaluated with numpy; no pickle). The score
is the model's probability that the sentence is evidence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragsift.errors import ConfigError
from ragsift.scorers.feature_components import check_model_keys, component_specs
from ragsift.scorers.fusion_features import FusionFeatures
from ragsift.scorers.json_model import JsonModelParams, JsonModelScorer, read_model_json, write_model_json
from ragsift.scorers.tree_ensemble import TreeEnsemble
from ragsift.types import Example, Sentence

__all__ = ["LearnedFusionScorer", "FusionModel", "MODEL_FILE"]

MODEL_FILE = "fusion.json"
FORMAT = "ragsift-learned-fusion"
#: 2: components named by feature name (version 1 held plugin specs; refused)
FORMAT_VERSION = 2


class FusionModel:
    """Feature recipe + fitted ensemble, as saved by the fusion trainer."""

    def __init__(self, scorers: Mapping[str, Mapping[str, Any]], document_scorers: Mapping[str, Mapping[str, Any]],
                 ensemble: TreeEnsemble, feature_names: list[str]) -> None:
        self.features = FusionFeatures(scorers, document_scorers)
        if feature_names != self.features.names or ensemble.n_features != len(feature_names):
            raise ConfigError("FusionModel: the saved feature names do not match the features its scorers give; "
                              "was the model saved by another ragsift version?")
        self.ensemble = ensemble

    def to_json(self) -> dict[str, Any]:
        # names only: the specs behind them stay in ragsift's table or the user's config
        return {"format": FORMAT, "version": FORMAT_VERSION,
                "scorers": list(self.features.scorer_specs), "document_scorers": list(self.features.document_specs),
                "feature_names": self.features.names, "model": self.ensemble.to_json()}

    def save(self, folder: str | Path) -> Path:
        return write_model_json(folder, MODEL_FILE, self.to_json())

    @classmethod
    def load(cls, location: str | Path, components: Mapping[str, Mapping[str, Any]] | None = None) -> FusionModel:
        """The model of ``location``; its feature names resolved by ragsift's table and the
        user's ``components`` (anything else in the file is refused, naming it)."""
        owner = "LearnedFusionScorer"
        path, data = read_model_json(location, MODEL_FILE, FORMAT, FORMAT_VERSION, owner, "train one with 'ragsift train'")
        check_model_keys(path, data, {"format", "version", "scorers", "document_scorers", "feature_names", "model"})
        scorers = component_specs(data.get("scorers"), "scorers", path, components or {}, owner)
        document_scorers = component_specs(data.get("document_scorers"), "document_scorers", path, components or {}, owner)
        try:
            return cls(scorers, document_scorers, TreeEnsemble.from_json(data["model"]), list(data["feature_names"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{path}: malformed learned-fusion model ({type(exc).__name__}: {exc}).") from None

    def score(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray:
        if not sentences:
            return np.zeros(0)
        return self.ensemble.probability(self.features.compute(example, sentences))


class LearnedFusionParams(JsonModelParams):
    #: a model folder written by ``ragsift train`` (or its fusion.json), ``package:PKG/PATH``, or a Hub
    #: id (``org/name``, ``hub:org/name@revision``) whose repository holds fusion.json
    model: str


class LearnedFusionScorer(JsonModelScorer):
    """P(evidence) from a fitted fusion model (see the module docstring)."""

    Params = LearnedFusionParams
    model_file = MODEL_FILE
    model_class = FusionModel
    conformance_params = {"model": "models/fusion-trained"}

"""The two-hop document ranker: documents chosen one at a time, each scored given the question and
the documents already chosen, so that the second document of a multi-hop question (the bridge,
which the question does not name) is found through the first.

A fitted model (``ragsift train`` with the ``bridge-documents`` trainer) maps the features of
:mod:`ragsift.scorers.bridge_features` to P(the document is gold). Ranking is greedy: the best
document by the question alone first; then every other document rescored given the kept ones,
the best kept; and so on until every document has a rank. Nothing assumes how many documents
there are or how many are gold.

As a scorer (``bridge-documents``), every sentence gets its document's score: the probability the
model gave the document when it was chosen, made strictly decreasing along the greedy order (a
document's score is at most just below the previous one's), so ``top-documents`` with ``k = D``
keeps exactly the greedy first ``D`` documents under any aggregate, and a threshold keeps a
greedy prefix. It is the coarse stage of a ``cascade`` that keeps whole documents.

The model folder holds ``bridge-documents.json``: the feature recipe (the names of its component
features, from a closed vocabulary: :mod:`ragsift.scorers.feature_components`; the feature names)
and the boosted tree ensemble as JSON arrays (no pickle).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragsift.errors import ConfigError
from ragsift.scorers.bridge_features import BridgeContext, BridgeFeatures
from ragsift.scorers.feature_components import check_model_keys, component_specs
from ragsift.scorers.json_model import JsonModelParams, JsonModelScorer, read_model_json, write_model_json
from ragsift.scorers.tree_ensemble import TreeEnsemble
from ragsift.types import Example, Sentence

__all__ = ["BridgeDocumentScorer", "BridgeDocumentModel", "MODEL_FILE", "greedy_ranking"]

MODEL_FILE = "bridge-documents.json"
FORMAT = "ragsift-bridge-documents"
#: 2: components named by feature name (version 1 held plugin specs; refused)
FORMAT_VERSION = 2

def greedy_ranking(features: BridgeFeatures, ensemble: TreeEnsemble, ctx: BridgeContext,
                   candidates: Sequence[int]) -> tuple[list[int], np.ndarray]:
    """``candidates`` (document indices) in greedy order, and each one's probability when chosen
    (the first by the question alone, each next given the ones chosen before it)."""
    left = list(candidates)
    order: list[int] = []
    chosen_p: list[float] = []
    second: np.ndarray | None = None
    while left:
        p = ensemble.probability(features.rows(ctx, left, second))
        best = int(np.argmax(p))  # ties: the earlier document
        doc = left.pop(best)
        order.append(doc)
        chosen_p.append(float(p[best]))
        if left:
            hop = features.second_hop(ctx, doc)
            second = hop if second is None else np.maximum(second, hop)
    return order, np.asarray(chosen_p)


def decreasing(p: np.ndarray) -> np.ndarray:
    """``p`` made strictly decreasing: each value at most just below the one before it."""
    out = np.array(p, dtype=np.float64)
    for i in range(1, len(out)):
        out[i] = min(out[i], np.nextafter(out[i - 1], -np.inf))
    return out


class BridgeDocumentModel:
    """Feature recipe + fitted ensemble, as saved by the bridge-documents trainer."""

    def __init__(self, scorers: Mapping[str, Mapping[str, Any]], ensemble: TreeEnsemble, feature_names: list[str]) -> None:
        self.features = BridgeFeatures(scorers)
        if feature_names != self.features.names or ensemble.n_features != len(feature_names):
            raise ConfigError("BridgeDocumentModel: the saved feature names do not match the features its scorers give; "
                              "was the model saved by another ragsift version?")
        self.ensemble = ensemble

    def to_json(self) -> dict[str, Any]:
        # names only: the specs behind them stay in ragsift's table or the user's config
        return {"format": FORMAT, "version": FORMAT_VERSION, "scorers": list(self.features.scorer_specs),
                "feature_names": self.features.names, "model": self.ensemble.to_json()}

    def save(self, folder: str | Path) -> Path:
        return write_model_json(folder, MODEL_FILE, self.to_json())

    @classmethod
    def load(cls, location: str | Path, components: Mapping[str, Mapping[str, Any]] | None = None) -> BridgeDocumentModel:
        """The model of ``location``; its feature names resolved by ragsift's table and the
        user's ``components`` (anything else in the file is refused, naming it)."""
        owner = "BridgeDocumentScorer"
        path, data = read_model_json(location, MODEL_FILE, FORMAT, FORMAT_VERSION, owner,
                                     "train one with 'ragsift train -c configs/train/bridge-documents.toml'")
        check_model_keys(path, data, {"format", "version", "scorers", "feature_names", "model"})
        scorers = component_specs(data.get("scorers"), "scorers", path, components or {}, owner)
        try:
            return cls(scorers, TreeEnsemble.from_json(data["model"]), list(data["feature_names"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{path}: malformed bridge-documents model ({type(exc).__name__}: {exc}).") from None

    def rank(self, example: Example, sentences: Sequence[Sentence]) -> tuple[list[int], np.ndarray]:
        """The documents that hold ``sentences``, in greedy order, with their probabilities when
        chosen (:func:`greedy_ranking`)."""
        ctx = self.features.context(example, sentences)
        return greedy_ranking(self.features, self.ensemble, ctx, sorted({s.doc_index for s in sentences}))

    def score(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray:
        if not sentences:
            return np.zeros(0)
        order, p = self.rank(example, sentences)
        by_doc = dict(zip(order, decreasing(p), strict=True))
        return np.array([by_doc[s.doc_index] for s in sentences], dtype=np.float64)


class BridgeDocumentParams(JsonModelParams):
    #: a model folder written by ``ragsift train`` (or its bridge-documents.json), ``package:PKG/PATH``,
    #: or a Hub id whose repository holds bridge-documents.json
    model: str


class BridgeDocumentScorer(JsonModelScorer):
    """Each sentence scored by its document's two-hop greedy rank (see the module docstring)."""

    Params = BridgeDocumentParams
    model_file = MODEL_FILE
    model_class = BridgeDocumentModel
    conformance_params = {"model": "models/bridge-documents"}

    def score(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray:
        if not sentences:
            return np.zeros(0)
        self.warm_up()
        assert isinstance(self._model, BridgeDocumentModel)
        return self._model.score(example, sentences)

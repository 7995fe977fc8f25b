"""A boosted tree ensemble stored as plain JSON arrays and evaluated with numpy (no pickle).

Each tree holds scikit-learn's array layout (``children_left``, ``children_right``,
``feature``, ``threshold`` and one ``value`` per node, leaves marked by ``children_left == -1``);
a sample goes left when ``x[feature] <= threshold``, as in scikit-learn. The raw score is
``base + sum of the leaf values`` (learning rate already applied); the probability is its
logistic sigmoid.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragsift.errors import ConfigError

__all__ = ["Tree", "TreeEnsemble", "sigmoid"]


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -500, 500)))


@dataclass(frozen=True)
class Tree:
    children_left: np.ndarray
    children_right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    value: np.ndarray

    def leaves(self, x: np.ndarray) -> np.ndarray:
        """The leaf each row of ``x`` ends in."""
        node = np.zeros(len(x), dtype=np.int64)
        rows = np.arange(len(x))
        while True:
            inner = self.children_left[node] != -1
            if not inner.any():
                return node
            at = node[inner]
            go_left = x[rows[inner], self.feature[at]] <= self.threshold[at]
            node[inner] = np.where(go_left, self.children_left[at], self.children_right[at])

    def predict(self, x: np.ndarray) -> np.ndarray:
        return self.value[self.leaves(x)]

    def to_json(self) -> dict[str, list[Any]]:
        return {
            "children_left": self.children_left.tolist(), "children_right": self.children_right.tolist(),
            "feature": self.feature.tolist(), "threshold": self.threshold.tolist(), "value": self.value.tolist(),
        }

    @classmethod
    def from_json(cls, data: dict[str, list[Any]]) -> Tree:
        tree = cls(
            np.asarray(data["children_left"], dtype=np.int64), np.asarray(data["children_right"], dtype=np.int64),
            np.asarray(data["feature"], dtype=np.int64), np.asarray(data["threshold"], dtype=np.float64),
            np.asarray(data["value"], dtype=np.float64),
        )
        n = len(tree.children_left)
        if not all(len(a) == n for a in (tree.children_right, tree.feature, tree.threshold, tree.value)):
            raise ConfigError("TreeEnsemble: every array of a tree must have one entry per node.")
        inner = tree.children_left != -1
        if inner.any() and (tree.children_left[inner].max() >= n or tree.children_right[inner].max() >= n
                            or tree.children_left[inner].min() <= 0 or tree.children_right[inner].min() <= 0):
            raise ConfigError("TreeEnsemble: a child index points outside its tree.")
        return tree


@dataclass
class TreeEnsemble:
    """``base`` + the sum of the trees' leaf values, on ``n_features`` columns."""

    n_features: int
    base: float
    trees: list[Tree] = field(default_factory=list)

    def raw(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.n_features:
            raise ConfigError(f"TreeEnsemble: expected rows of {self.n_features} features; got shape {x.shape}.")
        out = np.full(len(x), self.base)
        for tree in self.trees:
            out += tree.predict(x)
        return out

    def probability(self, x: np.ndarray) -> np.ndarray:
        return sigmoid(self.raw(x))

    def to_json(self) -> dict[str, Any]:
        return {"kind": "boosted-trees", "n_features": self.n_features, "base": self.base,
                "trees": [t.to_json() for t in self.trees]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TreeEnsemble:
        if data.get("kind") != "boosted-trees":
            raise ConfigError(f"TreeEnsemble: expected kind 'boosted-trees'; got {data.get('kind')!r}.")
        ensemble = cls(int(data["n_features"]), float(data["base"]), [Tree.from_json(t) for t in data["trees"]])
        for tree in ensemble.trees:
            inner = tree.children_left != -1
            if inner.any() and tree.feature[inner].max() >= ensemble.n_features:
                raise ConfigError("TreeEnsemble: a tree splits on a feature the model does not have.")
        return ensemble

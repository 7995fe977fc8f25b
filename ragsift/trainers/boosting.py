"""Gradient boosting for binary labels, one tree per step, with JSON checkpoints.

The weak learner is scikit-learn's ``DecisionTreeRegressor`` (squared error) fitted to the
log-loss gradient ``y - p``; each leaf then takes the Newton step ``sum(y - p) / sum(p (1 - p))``
over its training rows, times the learning rate. That is the update of scikit-learn's
``GradientBoostingClassifier``; it is run here step by step so that the state after any step is
a :class:`~ragsift.scorers.tree_ensemble.TreeEnsemble` (JSON arrays), which makes checkpoints
pickle-free and ``--resume`` exact: the trees so far are reloaded, the raw scores recomputed
from them, and step ``t`` draws its subsample from ``seed + t`` whether or not the run was
interrupted.

With ``monotone`` (one entry per feature: 1 = the score never falls as the feature grows, -1 =
never rises, 0 = free) each tree is grown under scikit-learn's ``monotonic_cst`` and keeps its own
leaf values (the leaves' mean gradients, which obey the constraints), scaled by one Newton step
along the tree, ``sum(g v) / sum(p (1 - p) v^2)`` (clipped at 0), times the learning rate: a
per-leaf Newton step could break the order of the leaves, one common factor cannot.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import Field

from ragsift.output_files import write_text_atomically
from ragsift.plugin import Params
from ragsift.scorers.tree_ensemble import Tree, TreeEnsemble, sigmoid
from ragsift.trainers.checkpoint import read_json_state

__all__ = ["BoostingParams", "BoostingSettings", "fit_boosting", "log_loss"]


@dataclass(frozen=True)
class BoostingSettings:
    steps: int = 300
    learning_rate: float = 0.05
    max_depth: int = 3
    min_samples_leaf: int = 20
    subsample: float = 0.8
    seed: int = 0
    #: per feature: 1 (non-decreasing), -1 (non-increasing) or 0 (free); None: no constraint
    monotone: tuple[int, ...] | None = None


class BoostingParams(Params):
    """The boosting hyper-parameters of a trainer's config (the trainers built on :func:`fit_boosting`)."""

    steps: int = Field(300, ge=1)
    learning_rate: float = Field(0.05, gt=0, le=1)
    max_depth: int = Field(3, ge=1, le=12)
    min_samples_leaf: int = Field(20, ge=1)
    subsample: float = Field(0.8, gt=0, le=1)

    def boosting_settings(self, seed: int, monotone: tuple[int, ...] | None = None) -> BoostingSettings:
        return BoostingSettings(steps=self.steps, learning_rate=self.learning_rate, max_depth=self.max_depth,
                                min_samples_leaf=self.min_samples_leaf, subsample=self.subsample, seed=seed,
                                monotone=monotone)


def log_loss(y: np.ndarray, raw: np.ndarray) -> float:
    p = np.clip(sigmoid(raw), 1e-12, 1 - 1e-12)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def _fit_tree(x: np.ndarray, y: np.ndarray, raw: np.ndarray, settings: BoostingSettings, step: int) -> Tree:
    from sklearn.tree import DecisionTreeRegressor

    rng = np.random.default_rng([settings.seed, step])
    rows = np.arange(len(y))
    if settings.subsample < 1.0:
        rows = np.sort(rng.choice(len(y), size=max(1, int(settings.subsample * len(y))), replace=False))
    p = sigmoid(raw[rows])
    residual = y[rows] - p
    tree = DecisionTreeRegressor(max_depth=settings.max_depth, min_samples_leaf=settings.min_samples_leaf,
                                 criterion="squared_error", random_state=settings.seed + step,
                                 monotonic_cst=None if settings.monotone is None else list(settings.monotone))
    tree.fit(x[rows], residual)
    inner = tree.tree_
    leaf = tree.apply(x[rows])
    if settings.monotone is not None:
        own = inner.value[:, 0, 0].astype(np.float64)
        v = own[leaf]
        curvature = float(np.sum(p * (1 - p) * v * v))
        scale = max(0.0, float(np.sum(residual * v)) / curvature) if curvature > 1e-150 else 0.0
        return Tree(inner.children_left.astype(np.int64), inner.children_right.astype(np.int64), inner.feature.astype(np.int64),
                    inner.threshold.astype(np.float64), settings.learning_rate * scale * own)
    value = np.zeros(inner.node_count)
    numerator = np.bincount(leaf, weights=residual, minlength=inner.node_count)
    denominator = np.bincount(leaf, weights=p * (1 - p), minlength=inner.node_count)
    is_leaf = inner.children_left == -1
    value[is_leaf] = np.where(denominator[is_leaf] > 1e-150, numerator[is_leaf] / np.maximum(denominator[is_leaf], 1e-150), 0.0)
    return Tree(inner.children_left.astype(np.int64), inner.children_right.astype(np.int64), inner.feature.astype(np.int64),
                inner.threshold.astype(np.float64), settings.learning_rate * value)


def fit_boosting(
    x: np.ndarray, y: np.ndarray, settings: BoostingSettings, *, dev: tuple[np.ndarray, np.ndarray] | None = None,
    checkpoint: Path | None = None, checkpoint_every: int = 50, resume: bool = False,
    on_step: Callable[[int, dict[str, float]], None] | None = None,
) -> tuple[TreeEnsemble, list[dict[str, float]]]:
    """Fit ``settings.steps`` trees; return the ensemble and the loss history (one entry per step:
    ``step``, ``train_loss`` and, with ``dev``, ``dev_loss``)."""
    y = np.asarray(y, dtype=np.float64)
    prior = float(np.clip(y.mean(), 1e-6, 1 - 1e-6))
    ensemble = TreeEnsemble(x.shape[1], float(np.log(prior / (1 - prior))))
    history: list[dict[str, float]] = []
    if resume and checkpoint is not None and checkpoint.is_file():
        state = read_json_state(checkpoint)
        ensemble = TreeEnsemble.from_json(state["ensemble"])
        history = list(state["history"])
    raw = ensemble.raw(x)
    dev_raw = ensemble.raw(dev[0]) if dev is not None else None
    for step in range(len(ensemble.trees), settings.steps):
        tree = _fit_tree(x, y, raw, settings, step)
        ensemble.trees.append(tree)
        raw += tree.predict(x)
        entry = {"step": step + 1, "train_loss": log_loss(y, raw)}
        if dev is not None and dev_raw is not None:
            dev_raw += tree.predict(dev[0])
            entry["dev_loss"] = log_loss(np.asarray(dev[1], dtype=np.float64), dev_raw)
        history.append(entry)
        if on_step is not None:
            on_step(step + 1, entry)
        if checkpoint is not None and ((step + 1) % checkpoint_every == 0 or step + 1 == settings.steps):
            checkpoint.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomically(checkpoint, json.dumps({"ensemble": ensemble.to_json(), "history": history}))  # never half a checkpoint
    return ensemble, history

"""Choosing a selection on the development questions: top-k and threshold curves of a scorer's
development predictions, and the best of them. Used by the training report and by trainers that
choose a checkpoint by its development selection.

Evidence F1 here is the mean over development questions of the per-question F1 of the kept
sentences against the gold ones (``ragsift evaluate``'s ``evidence_f1`` on dataset sentences).
The chosen selection is the top-k or threshold with the best development F1 (top-k wins ties).
Every curve point also gives ``empty``, the share of development questions that keep nothing;
with ``max_empty`` (``[training] max_empty``) only thresholds that keep something on at least
``1 - max_empty`` of the development questions can be chosen (top-k never keeps nothing).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ragsift.trainers.base import DevPredictions

__all__ = ["selection_curves", "thresholds_for", "chooser", "KS"]

KS = tuple(range(1, 11))


def _f1(kept: np.ndarray, labels: np.ndarray) -> tuple[float, float, float]:
    gold = int(labels.sum())
    hits = int(labels[kept].sum()) if len(kept) else 0
    precision = hits / len(kept) if len(kept) else float(gold == 0)
    recall = hits / gold if gold else 1.0
    f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
    return precision, recall, f1


def _mean_prf(dev: DevPredictions, choose: Any) -> dict[str, float]:
    rows = [_f1(choose(s), y) for s, y in zip(dev.scores, dev.labels, strict=True)]
    p, r, f = (float(np.mean(col)) for col in zip(*rows, strict=True)) if rows else (0.0, 0.0, 0.0)
    counts = [len(choose(s)) for s in dev.scores]
    kept = float(np.mean(counts)) if rows else 0.0
    empty = float(np.mean([n == 0 for n in counts])) if rows else 0.0
    return {"precision": p, "recall": r, "f1": f, "kept": kept, "empty": empty}


def chooser(selector: dict[str, Any]) -> Any:
    """The kept indices of one question's scores under a chosen selector (``top-k`` or ``threshold``)."""
    return _top(selector["k"]) if selector["name"] == "top-k" else _above(selector["threshold"])


def _top(k: int) -> Any:
    return lambda s: np.argsort(-s, kind="stable")[:k]


def _above(t: float) -> Any:
    return lambda s: np.flatnonzero(s >= t)


def thresholds_for(dev: DevPredictions) -> list[float]:
    """A grid over the development scores: 0.02 steps for probabilities, else 49 quantiles."""
    scores = np.concatenate(dev.scores) if dev.scores else np.zeros(0)
    if len(scores) and scores.min() >= 0 and scores.max() <= 1:
        return [round(float(t), 2) for t in np.arange(0.02, 1.0, 0.02)]
    return sorted({float(q) for q in np.quantile(scores, np.linspace(0.02, 0.98, 49))}) if len(scores) else []


def selection_curves(dev: DevPredictions, max_empty: float | None = None) -> dict[str, Any]:
    """Mean P / R / F1 / sentences kept / share kept empty for every k in ``KS`` and every
    threshold; the best of each (thresholds: among those with ``empty <= max_empty``, if given)."""
    top_k = {k: _mean_prf(dev, _top(k)) for k in KS}
    threshold = {t: _mean_prf(dev, _above(t)) for t in thresholds_for(dev)}
    best_k = max(KS, key=lambda k: (top_k[k]["f1"], -k))
    allowed = [t for t in threshold if max_empty is None or threshold[t]["empty"] <= max_empty + 1e-12]
    best_t = float(max(allowed, key=lambda t: threshold[t]["f1"])) if allowed else None
    if best_t is not None and threshold[best_t]["f1"] > top_k[best_k]["f1"]:
        chosen = {"selector": {"name": "threshold", "threshold": best_t}, **threshold[best_t]}
    else:
        chosen = {"selector": {"name": "top-k", "k": best_k}, **top_k[best_k]}
    return {"top_k": top_k, "threshold": threshold, "best_k": best_k, "best_threshold": best_t, "chosen": chosen}

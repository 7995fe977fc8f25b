"""The training report every trainer gets: loss curve, ROC-AUC, threshold and top-k curves on the
development questions, the selection chosen there, and a confusion matrix per sample type.

Evidence F1 here is the mean over development questions of the per-question F1 of the kept
sentences against the gold ones (``ragsift evaluate``'s ``evidence_f1`` on dataset sentences).
The chosen selection is the top-k or threshold with the best development F1 (top-k wins ties).
Every curve point also gives ``empty``, the share of development questions that keep nothing;
with ``max_empty`` (``[training] max_empty``) only thresholds that keep something on at least
``1 - max_empty`` of the development questions can be chosen (top-k never keeps nothing).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ragsift.trainers.base import DevPredictions

__all__ = ["selection_curves", "write_report", "KS"]

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


def _confusion(dev: DevPredictions, selector: dict[str, Any]) -> dict[str, dict[str, int]]:
    choose = _top(selector["k"]) if selector["name"] == "top-k" else _above(selector["threshold"])
    table: dict[str, dict[str, int]] = {}
    for scores, kinds in zip(dev.scores, dev.kinds, strict=True):
        kept = np.zeros(len(scores), dtype=bool)
        kept[choose(scores)] = True
        for kind, k in zip(kinds, kept, strict=True):
            row = table.setdefault(kind, {"kept": 0, "dropped": 0})
            row["kept" if k else "dropped"] += 1
    return dict(sorted(table.items()))


def _roc_auc(dev: DevPredictions) -> float | None:
    from sklearn.metrics import roc_auc_score

    labels = np.concatenate(dev.labels) if dev.labels else np.zeros(0)
    if len(set(labels.tolist())) < 2:
        return None
    return float(roc_auc_score(labels, np.concatenate(dev.scores)))


def _plots(output: Path, history: list[dict[str, float]], curves: dict[str, Any] | None) -> list[str]:
    try:
        import matplotlib
    except ImportError:
        from ragsift.errors import ConfigError

        raise ConfigError("the training report draws its figures with matplotlib: pip install 'ragsift[train]'.") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    if history:
        fig, ax = plt.subplots(figsize=(6, 4))
        steps = [h["step"] for h in history]
        for key in ("train_loss", "dev_loss"):
            points = [(h["step"], h[key]) for h in history if key in h]  # dev_loss: every eval_every steps
            if points:
                ax.plot([x for x, _ in points], [y for _, y in points], label=key.replace("_", " "),
                        marker="." if len(points) < len(steps) else None)
        ax.set_xlabel("step")
        ax.set_ylabel("loss")
        ax.set_title("training loss")
        ax.legend()
        fig.tight_layout()
        fig.savefig(output / "loss.png", dpi=100)
        plt.close(fig)
        written.append("loss.png")
    if curves is not None:
        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
        ts = list(curves["threshold"])
        for key in ("f1", "precision", "recall"):
            left.plot(ts, [curves["threshold"][t][key] for t in ts], label=key)
            right.plot(list(KS), [curves["top_k"][k][key] for k in KS], marker="o", label=key)
        left.set_xlabel("threshold")
        right.set_xlabel("k (top-k)")
        left.set_title("development questions: threshold")
        right.set_title("development questions: top-k")
        left.legend()
        fig.tight_layout()
        fig.savefig(output / "threshold.png", dpi=100)
        plt.close(fig)
        written.append("threshold.png")
    return written


def write_report(output: Path, history: list[dict[str, float]], dev: DevPredictions | None,
                 max_empty: float | None = None) -> dict[str, Any]:
    """Write ``report.json``, ``loss.png`` and ``threshold.png`` in ``output``; return the report."""
    curves = selection_curves(dev, max_empty) if dev is not None and dev.scores else None
    report: dict[str, Any] = {
        "steps": len(history),
        "final": history[-1] if history else None,
        "development_questions": len(dev.scores) if dev is not None else 0,
        "development_sentences": int(sum(len(s) for s in dev.scores)) if dev is not None else 0,
    }
    if curves is not None and dev is not None:
        report["roc_auc"] = _roc_auc(dev)
        report["chosen"] = curves["chosen"]
        report["max_empty"] = max_empty
        report["confusion"] = _confusion(dev, curves["chosen"]["selector"])
        report["top_k"] = {str(k): v for k, v in curves["top_k"].items()}
        report["threshold"] = {f"{t:g}": v for t, v in curves["threshold"].items()}
    report["figures"] = _plots(output, history, curves)
    (output / "report.json").write_text(json.dumps({**report, "history": history}, indent=2) + "\n", encoding="utf-8")
    return report

"""The training report every trainer gets: loss curve, ROC-AUC, threshold and top-k curves on the
development questions, the selection chosen there (:mod:`ragsift.trainers.selection`), and a
confusion matrix per sample type.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ragsift.trainers.base import DevPredictions
from ragsift.trainers.selection import KS, chooser, selection_curves

__all__ = ["write_report"]

def _confusion(dev: DevPredictions, selector: dict[str, Any]) -> dict[str, dict[str, int]]:
    choose = chooser(selector)
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

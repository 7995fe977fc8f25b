"""How well a run's sentence scores rank the gold evidence, whatever the selector then kept.

Reads ``RUN_DIR/predictions/<label>.jsonl`` (each record's sentences with their scores and
character offsets) and the run's dataset (the path in ``RUN_DIR/manifest.json``, or ``--data``),
marks each sentence gold as the evidence metrics do (:func:`ragsift.evidence.is_evidence`, at
least half of its characters inside a supporting fact of its document), and prints per
compressor: the mean per-question ROC-AUC of the scores (questions with gold and non-gold
sentences), and for fixed thresholds and the top k the training report's selection curves: mean
per-question evidence precision / recall / F1 (as ``ragsift evaluate`` averages them), sentences
kept and the share of questions keeping nothing. It reads the evaluation's
records only: it chooses nothing (a threshold read off it on the evaluation file would be tuned
there; use it on development runs).

    python benchmarks/sentence_scores.py runs/qwen-yes-no-dev-1.5b exit-qwen-1.5b exit-trained bm25-top2
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import roc_auc_score

from ragsift.datasets import load_examples
from ragsift.evidence import is_evidence
from ragsift.trainers.base import DevPredictions
from ragsift.trainers.selection import selection_curves
from ragsift.types import Sentence

THRESHOLDS = (0.3, 0.5, 0.7, 0.8, 0.9, 0.96)  # points of the selection curves' 0.02 grid
TOP = (1, 2, 3, 4, 6, 8)


def score_table(records: list[dict[str, Any]], evidence: dict[str, Any]) -> dict[str, Any]:
    """The figures of one compressor's records (``evidence``: example id -> its gold spans): the
    mean per-question ROC-AUC, and the training report's selection curves
    (:func:`ragsift.trainers.selection.selection_curves`: mean per-question P / R / F1, as
    ``ragsift evaluate``'s evidence metrics, sentences kept, share kept empty)."""
    dev = DevPredictions()
    for record in records:
        sentences = record["sentences"]
        gold = [is_evidence(Sentence(s["doc"], 0, s["start"], s["end"], s["text"]), evidence[record["id"]])
                for s in sentences]
        dev.add(record["id"], np.array([s["score"] for s in sentences]), np.array(gold), ["sentence"] * len(gold))
    aucs = [roc_auc_score(y, s) for s, y in zip(dev.scores, dev.labels, strict=True) if 0 < y.sum() < len(y)]
    curves = selection_curves(dev)
    rows: dict[str, Any] = {"questions": len(records), "mean_auc": float(np.mean(aucs)) if aucs else None}
    # scores outside [0, 1] (BM25's) get a quantile grid instead: no fixed threshold rows for them
    rows.update({f"threshold {t}": curves["threshold"][t] for t in THRESHOLDS if t in curves["threshold"]})
    rows.update({f"top {k}": curves["top_k"][k] for k in TOP})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("labels", nargs="+", help="compressor labels (predictions/<label>.jsonl)")
    parser.add_argument("--data", help="the run's dataset (default: the input of RUN_DIR/manifest.json)")
    args = parser.parse_args(argv)
    data = args.data or json.loads((args.run_dir / "manifest.json").read_text(encoding="utf-8"))["input"]["path"]
    evidence = {ex.id: tuple(ex.evidence or ()) for ex in load_examples(data)}
    for label in args.labels:
        path = args.run_dir / "predictions" / f"{label}.jsonl"
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        table = score_table(records, evidence)
        auc = table.pop("mean_auc")
        print(f"{label}: {table.pop('questions')} questions, mean per-question ROC-AUC "
              f"{'n/a' if auc is None else f'{auc:.3f}'}")
        print("  selection        Ev-P   Ev-R  Ev-F1  empty  kept/question")
        for name, row in table.items():
            print(f"  {name:15s} {100 * row['precision']:5.1f}  {100 * row['recall']:5.1f}  {100 * row['f1']:5.1f}  "
                  f"{100 * row['empty']:5.1f}  {row['kept']:6.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""How well a run's sentence scores rank the gold evidence, whatever the selector then kept.

Reads ``RUN_DIR/predictions/<label>.jsonl`` (each record's sentences with their scores and
character offsets) and the run's dataset (the path in ``RUN_DIR/manifest.json``, or ``--data``),
marks each sentence gold as the evidence metrics do (:func:`ragsift.evidence.is_evidence`, at
least half of its characters inside a supporting fact of its document), and prints per
compressor: the mean per-question ROC-AUC of the scores (questions with gold and non-gold
sentences), and the evidence precision / recall / F1 (pooled over questions) and the share of
questions keeping nothing for fixed thresholds and for the top k. It reads the evaluation's
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

from ragsift.datasets import load_examples
from ragsift.evidence import is_evidence
from ragsift.types import Sentence

THRESHOLDS = (0.3, 0.5, 0.7, 0.8, 0.9, 0.95)
TOP = (1, 2, 3, 4, 6, 8)


def roc_auc(scores: np.ndarray, gold: np.ndarray) -> float:
    """ROC-AUC as the probability that a gold sentence outscores a non-gold one (ties: half)."""
    pos, neg = scores[gold], scores[~gold]
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


def _prf(pairs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[float, float, float, float]:
    """Pooled precision, recall, F1 of the kept masks, and the share of questions keeping nothing."""
    tp = sum(int((kept & gold).sum()) for kept, gold in pairs)
    kept_n = sum(int(kept.sum()) for kept, _ in pairs)
    gold_n = sum(int(gold.sum()) for _, gold in pairs)
    p = tp / kept_n if kept_n else 0.0
    r = tp / gold_n if gold_n else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f1, float(np.mean([not kept.any() for kept, _ in pairs]))


def score_table(records: list[dict[str, Any]], evidence: dict[str, Any]) -> dict[str, Any]:
    """The figures of one compressor's records (``evidence``: example id -> its gold spans)."""
    questions = []
    for record in records:
        spans = evidence[record["id"]]
        sentences = record["sentences"]
        gold = np.array([is_evidence(Sentence(s["doc"], 0, s["start"], s["end"], s["text"]), spans)
                         for s in sentences], dtype=bool)
        questions.append((np.array([s["score"] for s in sentences], dtype=float), gold))
    aucs = [roc_auc(s, g) for s, g in questions if 0 < g.sum() < len(g)]
    rows: dict[str, Any] = {"questions": len(questions), "mean_auc": float(np.mean(aucs)) if aucs else None}
    for t in THRESHOLDS:
        rows[f"threshold {t}"] = _prf([(s >= t, g) for s, g in questions]) + (
            float(np.mean([(s >= t).sum() for s, _ in questions])),)
    for k in TOP:
        masks = []
        for s, g in questions:
            kept = np.zeros(len(s), dtype=bool)
            kept[np.argsort(-s, kind="stable")[:k]] = True
            masks.append((kept, g))
        rows[f"top {k}"] = _prf(masks) + (float(min(k, np.mean([len(s) for s, _ in questions]))),)
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
        for name, (p, r, f1, empty, kept) in table.items():
            print(f"  {name:15s} {100 * p:5.1f}  {100 * r:5.1f}  {100 * f1:5.1f}  {100 * empty:5.1f}  {kept:6.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

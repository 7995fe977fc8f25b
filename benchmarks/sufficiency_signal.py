"""Can a judge tell when the two-hop ranker's 3 documents do not suffice? (issue 23, "Where a
second read would pay")

The main job's primary compressor (``configs/tuned/bridge-order.toml#bridge-ranked``: the ranker's
3 best documents whole, best first) loses the answer string for some questions; reading everything
for exactly those would pay. This measures the signal a second-read compressor would need, on
development questions only (``data/training/hotpotqa-dev-pool.json``; the evaluation file is refused):

1. For every question, ECoRAG's evaluator question asked zero-shot of a GGUF instruct model through
   the ``causal`` judge on llama.cpp (the prompt of ``configs/ecorag-qwen-1.5b.toml``): P(Yes) /
   (P(Yes) + P(No)) that the 3 documents (``title: text`` each) suffice. Beside it, the ranker's own
   document probabilities (the 1st..4th best), free signals.
2. ROC-AUC of each signal (low judge probability, a high 4th probability, ...) for "the 3
   documents lose every gold answer string".
3. With ``--records`` (a run's ``records.csv`` holding ``none`` and the bridge-ranked point on the
   same questions, e.g. ``runs/tune-bridge-order/records.csv``): the AUC for "none answers right
   where bridge-ranked does not", and what a compressor that reads all documents instead of the 3
   for the questions the judge trusts least would score, as many as the issue's token bar (35% of
   none's prompt tokens) allows, and what a perfect trigger would score within the same bar.

    python benchmarks/sufficiency_signal.py --judge split:qwen2.5-coder-1.5b-instruct \
        --records runs/tune-bridge-order/records.csv --json benchmarks/results/document-ranking/sufficiency-1.5b.json
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ragsift.api import load_compressor
from ragsift.datasets import load_examples
from ragsift.datasets.holdout import refuse_evaluation_data
from ragsift.metrics.normalize import contains_answer
from ragsift.registry import build_plugin
from ragsift.selectors.documents import document_scores

DEV = "data/training/hotpotqa-dev-pool.json"
COMPRESSOR = "configs/tuned/bridge-order.toml#bridge-ranked"
POINT = "bridge-ranked@k=3,document_order=rank"
TEMPLATE = ('Is the evidence sufficient to answer the question?\nQuestion: {question}\nEvidence:\n{evidence}\n'
            'Answer only "Yes" or "No".')
TOKEN_BAR = 0.35


def auc(scores: list[float], positive: list[bool]) -> float:
    """ROC-AUC (NaN when every question has the same label)."""
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(positive, scores)) if len(set(positive)) == 2 else float("nan")


def measure(judge_model: str, limit: int | None) -> list[dict[str, Any]]:
    compressor = load_compressor(COMPRESSOR)
    examples = list(load_examples(DEV, "hotpotqa", limit=limit))
    refuse_evaluation_data(Path(DEV), examples, "benchmarks/sufficiency_signal.py")
    judge = build_plugin("judge", {"name": "causal", "backend": "llama-cpp", "model": judge_model, "n_threads": 2,
                                   "readout": "", "max_length": 8192, "share_prefix": True, "template": TEMPLATE},
                         "benchmarks/sufficiency_signal.py")
    judge.warm_up()
    rows = []
    for n, e in enumerate(examples, 1):
        r = compressor.compress(e)
        docs = document_scores(r.sentences, np.asarray(r.info["coarse"].get("scores", r.scores)), "max")
        order = docs.ranked()
        ranked = [docs.docs[j] for j in order]
        evidence = [f"{e.documents[d].title}: {e.documents[d].text}" for d in ranked[:3]]
        t = time.perf_counter()
        p = float(judge.probabilities(e.question, [evidence])[0])
        rows.append({"id": e.id, "judge3": p, "judge_s": time.perf_counter() - t, "docs": ranked,
                     "doc_probs": [float(docs.scores[j]) for j in order],
                     "answer_in_3": any(contains_answer(r.text, a) for a in e.answers)})
        print(f"{n}/{len(examples)} judge {p:.3f} answer kept {rows[-1]['answer_in_3']}", file=sys.stderr, flush=True)
    return rows


def signals(rows: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Each signal oriented so that high means "the 3 documents may not suffice"."""
    return {"low judge probability": [-r["judge3"] for r in rows],
            "low 2nd document probability": [-r["doc_probs"][1] for r in rows],
            "high 4th document probability": [r["doc_probs"][3] for r in rows],
            "small gap 3rd - 4th": [-(r["doc_probs"][2] - r["doc_probs"][3]) for r in rows]}


def with_records(rows: list[dict[str, Any]], path: Path) -> dict[str, Any]:
    by: dict[str, dict[str, dict[str, str]]] = {}
    with path.open(newline="", encoding="utf-8") as f:
        for rec in csv.DictReader(f):
            by.setdefault(rec["compressor"], {})[rec["id"]] = rec
    bridge, none = by[POINT], by["none"]
    mine = [r for r in rows if r["id"] in bridge and r["id"] in none]
    ids = [r["id"] for r in mine]

    def em(table: dict[str, dict[str, str]], i: str) -> float:
        return float(table[i]["em"])

    def tokens(table: dict[str, dict[str, str]], i: str) -> float:
        return float(table[i]["prompt_tokens"])

    gain = [em(none, i) == 1 and em(bridge, i) == 0 for i in ids]
    budget = TOKEN_BAR * sum(tokens(none, i) for i in ids)

    def switched(order: list[str]) -> tuple[int, float]:
        """Read all documents (none's prompt) instead of the 3 for the first questions of ``order``,
        while the mean prompt stays within the bar: (questions switched, EM)."""
        total, score, k = sum(tokens(bridge, i) for i in ids), sum(em(bridge, i) for i in ids), 0
        for i in order:
            extra = tokens(none, i) - tokens(bridge, i)
            if total + extra > budget:
                break
            total, score, k = total + extra, score + em(none, i) - em(bridge, i), k + 1
        return k, 100 * score / len(ids)

    judged = {r["id"]: r["judge3"] for r in mine}
    by_judge = switched(sorted(ids, key=lambda i: judged[i]))
    perfect = switched(sorted((i for i, g in zip(ids, gain, strict=True) if g), key=lambda i: tokens(none, i)))
    return {"questions": len(ids), "none_em": 100 * sum(em(none, i) for i in ids) / len(ids),
            "bridge_em": 100 * sum(em(bridge, i) for i in ids) / len(ids), "none_right_bridge_wrong": sum(gain),
            "auc_none_right_bridge_wrong": {k: auc([v for r, v in zip(rows, vals, strict=True) if r["id"] in judged],
                                                   gain) for k, vals in signals(rows).items()},
            "switch_by_judge": {"questions": by_judge[0], "em": by_judge[1]},
            "switch_perfect": {"questions": perfect[0], "em": perfect[1]}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judge", default="split:qwen2.5-coder-1.5b-instruct", help="the judge's GGUF model")
    parser.add_argument("--limit", type=int, help="only the first N development questions")
    parser.add_argument("--records", type=Path, help="a run's records.csv with none and the bridge-ranked point")
    parser.add_argument("--rows", type=Path, help="the per-question signals: read if it exists, else written")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    if args.rows is not None and args.rows.is_file():
        rows = json.loads(args.rows.read_text(encoding="utf-8"))
    else:
        rows = measure(args.judge, args.limit)
        if args.rows is not None:
            args.rows.write_text(json.dumps(rows), encoding="utf-8")
    lost = [not r["answer_in_3"] for r in rows]
    out: dict[str, Any] = {
        "command": " ".join(sys.argv), "judge": args.judge, "development_file": DEV, "questions": len(rows),
        "answer_lost": sum(lost), "judge_seconds_mean": float(np.mean([r["judge_s"] for r in rows])),
        "auc_answer_lost": {k: auc(v, lost) for k, v in signals(rows).items()},
    }
    if args.records is not None:
        out["records"] = {"file": str(args.records), **with_records(rows, args.records)}
    text = json.dumps(out, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

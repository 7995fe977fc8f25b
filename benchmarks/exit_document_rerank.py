"""Does EXIT's classifier find the bridging document the two-hop ranker ranks 4th or 5th? (issue 23)

Reads the predictions of ``ragsift evaluate -c configs/dev/exit-rerank-top5.toml --no-reader --out
runs/exit-rerank-top5`` (the ranker keeps its 5 best documents; EXIT's classifier, the Qwen2.5-Coder-0.5B
readout trained on 160 training questions, scores every sentence in them) and re-ranks those 5
documents by ``(1 - w) * ranker probability + w * EXIT's best sentence in the document``. Reported
per w: the share of questions with both gold documents in the new top 3, and with a gold answer string
in the new top 3's text (the documents the main job's primary compressor reads), against the ranker's
own top 3 (w = 0) and the 5 documents (the bound). Development questions only
(``data/training/hotpotqa-dev-pool.json``; the evaluation file is refused).

    python benchmarks/exit_document_rerank.py runs/exit-rerank-top5 \
        --json benchmarks/results/document-ranking/exit-rerank-top5.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ragsift.datasets import load_examples
from ragsift.datasets.holdout import refuse_evaluation_data
from ragsift.metrics.normalize import contains_answer
from ragsift.trainers.bridge_documents import gold_documents

DEV = "data/training/hotpotqa-dev-pool.json"
LABEL = "exit-top5"
WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0)


def reranked(record: dict[str, Any], w: float) -> list[int]:
    """The 5 kept documents, best first by the blend (ties: the ranker's order)."""
    docs = [(d["doc"], d["score"]) for d in record["info"]["coarse"]["documents"]]
    best: dict[int, float] = {}
    for s in record["sentences"]:
        if s["score"] is not None:
            best[s["doc"]] = max(best.get(s["doc"], 0.0), float(s["score"]))
    blend = [((1 - w) * r + w * best.get(d, 0.0), -n, d) for n, (d, r) in enumerate(docs)]
    return [d for _, _, d in sorted(blend, reverse=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path, help="the run directory of configs/dev/exit-rerank-top5.toml")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    examples = {e.id: e for e in load_examples(DEV, "hotpotqa")}
    refuse_evaluation_data(Path(DEV), examples.values(), "benchmarks/exit_document_rerank.py")
    with (args.run / "predictions" / f"{LABEL}.jsonl").open(encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    out: dict[str, Any] = {"run": str(args.run), "development_file": DEV, "questions": len(records), "by_weight": {}}
    for w in WEIGHTS:
        both = answer = 0
        for r in records:
            e = examples[r["id"]]
            top3 = reranked(r, w)[:3]
            both += gold_documents(e) <= set(top3)
            text = "\n".join(f"{e.documents[d].title}\n{e.documents[d].text}" for d in top3)
            answer += any(contains_answer(text, a) for a in e.answers)
        out["by_weight"][str(w)] = {"both_gold_top3": round(100 * both / len(records), 1),
                                    "answer_in_top3": round(100 * answer / len(records), 1)}
    bound = sum(gold_documents(examples[r["id"]]) <= set(reranked(r, 0.0)) for r in records)
    out["both_gold_in_the_5"] = round(100 * bound / len(records), 1)
    text = json.dumps(out, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

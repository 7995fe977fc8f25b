"""Document ranking on the development pool: how often every gold document is in a ranker's top k.

Rankers, each through the scorer stage (a document's score: its best sentence's, as the
``top-documents`` selector's ``aggregate = "max"`` computes it):

- ``bm25``: BM25's best sentence;
- ``fusion-trained``: the learned-fusion scorer's best sentence (``models/fusion-trained``);
- ``bridge-documents``: the two-hop greedy ranker (``models/bridge-documents``);
- ``bridge-first-hop``: the same model with the second hop switched off (every document scored
  by the question alone), to show what the second hop adds.

Variants of the development questions (never the evaluation file):

- ``dev``: as they are (10 documents, 2 gold);
- ``dev-no-titles``: every title blanked;
- ``dev-20``: 20 paragraphs: each question's 10 plus the 10 documents of OTHER development
  questions that BM25 finds most similar to its question (hard distractors), at seeded random
  positions; its gold documents stay its own;
- ``dev-20-no-titles``: both.

Reported per variant and ranker: the share of questions with every gold document in the top
2 / 3 / 4 / 5, and the share whose top 3 / top 5 documents contain a gold answer string.
Then, per variant, the ``bridge-documents`` ranker's operating points as the ``top-documents``
selector keeps them (``POINTS``: fixed counts, and thresholds on its probability bounded by
``min_keep`` / ``max_keep``): the share of questions with every gold document kept, with a gold
answer string in the kept text, and the mean number of documents and words kept.

    python benchmarks/document_ranking.py --json benchmarks/results/document-ranking/dev-pool.json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ragsift.datasets import load_examples
from ragsift.datasets.holdout import refuse_evaluation_data
from ragsift.metrics.normalize import contains_answer
from ragsift.registry import build_plugin, get_registry
from ragsift.scorers.bm25 import tokenize
from ragsift.selectors.documents import document_scores
from ragsift.trainers.bridge_documents import all_gold_within, gold_documents
from ragsift.types import EvidenceSpan, Example

DEV = "data/training/hotpotqa-dev-pool.json"
TOP = (2, 3, 4, 5)
ANSWER_TOP = (3, 5)
#: the bridge ranker's operating points measured through the top-documents selector
POINTS: dict[str, dict[str, Any]] = {
    "k=3": {"k": 3}, "k=4": {"k": 4}, "k=5": {"k": 5},
    "p>=0.1 [3, 5]": {"threshold": 0.1, "min_keep": 3, "max_keep": 5},
    "p>=0.2 [3, 5]": {"threshold": 0.2, "min_keep": 3, "max_keep": 5},
    "p>=0.3 [3, 5]": {"threshold": 0.3, "min_keep": 3, "max_keep": 5},
    "p>=0.2 [2, 5]": {"threshold": 0.2, "min_keep": 2, "max_keep": 5},
}


def blank_titles(example: Example) -> Example:
    return replace(example, documents=tuple(replace(d, title="") for d in example.documents))


def twenty_paragraphs(examples: Sequence[Example], extra: int = 10, seed: int = 0) -> list[Example]:
    """Each example with ``extra`` more documents: those of the other examples most BM25-similar
    to its question, inserted at seeded random positions (the gold spans follow their documents)."""
    from rank_bm25 import BM25Okapi

    pool = [(i, d) for i, e in enumerate(examples) for d in e.documents]
    bm25 = BM25Okapi([tokenize(f"{d.title} {d.text}") or [""] for _, d in pool])
    out = []
    rng = random.Random(seed)
    for i, example in enumerate(examples):
        scores = bm25.get_scores(tokenize(example.question))
        ranked = [j for j in np.argsort(-scores, kind="stable") if pool[j][0] != i]
        added = [pool[j][1] for j in ranked[:extra]]
        docs = list(example.documents)
        slots = list(range(len(docs)))  # where each original document goes
        for d in added:
            at = rng.randint(0, len(docs))
            docs.insert(at, d)
            slots = [s + (s >= at) for s in slots]
        evidence = tuple(EvidenceSpan(slots[s.doc_index], s.start, s.end) for s in example.evidence or ())
        out.append(replace(example, documents=tuple(docs), evidence=evidence))
    return out


def loaded_scorer(spec: dict[str, Any]) -> Any:
    scorer = build_plugin("scorer", spec, "benchmark ranker")
    scorer.warm_up()
    return scorer


def ranker(scorer: Any) -> Callable[[Example, list], list[int]]:
    def rank(example: Example, sentences: list) -> list[int]:
        docs = document_scores(sentences, np.asarray(scorer.score(example, sentences)), "max")
        return [docs.docs[j] for j in docs.ranked()]

    return rank


def first_hop_ranker(model: str) -> Callable[[Example, list], list[int]]:
    """The bridge model with no second hop: every document scored by the question alone."""
    from ragsift.models import resolve_local_path
    from ragsift.scorers.bridge_documents import BridgeDocumentModel

    loaded = BridgeDocumentModel.load(resolve_local_path(model))
    loaded.features.warm_up()

    def rank(example: Example, sentences: list) -> list[int]:
        ctx = loaded.features.context(example, sentences)
        present = sorted({s.doc_index for s in sentences})
        p = loaded.ensemble.probability(loaded.features.rows(ctx, present, None))
        return [present[j] for j in np.argsort(-p, kind="stable")]

    return rank


def measure(examples: Sequence[Example], rank: Callable[[Example, list], list[int]], splitter: Any) -> dict[str, Any]:
    hits = dict.fromkeys(TOP, 0)
    answer = dict.fromkeys(ANSWER_TOP, 0)
    start = time.process_time()
    for example in examples:
        sentences = splitter.split_all(example.documents)
        order = rank(example, sentences)
        gold = gold_documents(example)
        for k in TOP:
            hits[k] += all_gold_within(order, gold, k)
        for k in ANSWER_TOP:
            text = " ".join(example.documents[j].text for j in order[:k])
            answer[k] += any(contains_answer(text, a) for a in example.answers)
    n = len(examples)
    return {"questions": n, **{f"all_gold_top{k}": round(hits[k] / n, 4) for k in TOP},
            **{f"answer_top{k}": round(answer[k] / n, 4) for k in ANSWER_TOP},
            "cpu_ms_per_question": round(1000 * (time.process_time() - start) / n, 1)}


def operating_points(examples: Sequence[Example], scorer: Any, splitter: Any) -> dict[str, Any]:
    """Each of ``POINTS`` as ``top-documents`` keeps it over ``scorer``'s scores (scored once per question)."""
    selectors = {name: get_registry().create("selector", "top-documents", params) for name, params in POINTS.items()}
    totals = {name: {"all_gold_kept": 0.0, "answer_kept": 0.0, "documents": 0.0, "words": 0.0} for name in POINTS}
    for example in examples:
        sentences = splitter.split_all(example.documents)
        scores = np.asarray(scorer.score(example, sentences))
        gold = gold_documents(example)
        for name, selector in selectors.items():
            docs = [d["doc"] for d in selector.select(example, sentences, scores).info["documents"]]
            text = " ".join(example.documents[j].text for j in docs)
            row = totals[name]
            row["all_gold_kept"] += gold <= set(docs)
            row["answer_kept"] += any(contains_answer(text, a) for a in example.answers)
            row["documents"] += len(docs)
            row["words"] += len(text.split())
    n = len(examples)
    return {name: {key: round(value / n, 4 if key.endswith("kept") else 2) for key, value in row.items()}
            for name, row in totals.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=DEV, help="development questions (HotpotQA JSON); never the evaluation file")
    parser.add_argument("--model", default="models/bridge-documents")
    parser.add_argument("--fusion", default="models/fusion-trained")
    parser.add_argument("--variants", default="dev,dev-no-titles,dev-20,dev-20-no-titles")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)
    examples = list(load_examples(args.data))
    refuse_evaluation_data(Path(args.data), examples, "the document-ranking benchmark")
    twenty = twenty_paragraphs(examples)
    variants = {"dev": examples, "dev-no-titles": [blank_titles(e) for e in examples], "dev-20": twenty,
                "dev-20-no-titles": [blank_titles(e) for e in twenty]}
    bridge = loaded_scorer({"name": "bridge-documents", "model": args.model})
    rankers = {
        "bm25": ranker(loaded_scorer({"name": "bm25"})),
        "fusion-trained": ranker(loaded_scorer({"name": "learned-fusion", "model": args.fusion})),
        "bridge-first-hop": first_hop_ranker(args.model),
        "bridge-documents": ranker(bridge),
    }
    splitter = build_plugin("splitter", {"name": "presplit", "fallback": "sentencizer"})
    results: dict[str, Any] = {"data": args.data, "model": args.model, "variants": {}}
    for name in args.variants.split(","):
        results["variants"][name] = {r: measure(variants[name], rank, splitter) for r, rank in rankers.items()}
        for r, row in results["variants"][name].items():
            print(f"{name:18s} {r:18s} " + " ".join(f"{k}={v}" for k, v in row.items() if k != "questions"), file=sys.stderr)
        points = operating_points(variants[name], bridge, splitter)
        results["variants"][name]["bridge-documents points"] = points
        for point, row in points.items():
            print(f"{name:18s} bridge {point:13s} " + " ".join(f"{k}={v}" for k, v in row.items()), file=sys.stderr)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A learned second hop for the two-hop document ranker: does a cross-encoder over (question + kept
document, candidate) find the bridge better than the ranker's hand-made link features? (issue 23)

1. Pairs from the training pool (``data/training/hotpotqa-train-pool.json``): for each gold document
   kept, the other gold documents are positives and the ``--hard`` non-gold documents BM25 ranks
   highest against the question + the kept document are negatives; with BM25's best non-gold
   document kept (a wrong first pick), one gold positive and one negative. The kept side is the
   question and the whole kept document, the candidate side its title and first sentence (who or
   what it is about); ``--max-length`` tokens, longest first truncated.
2. MiniLM-L6 (the offline all-MiniLM-L6-v2) fine-tuned in full as a one-logit cross-encoder, binary
   cross-entropy, AdamW with linear warm-up and decay, one epoch. Saved to ``--model`` (not shipped).
3. Every development question (``data/training/hotpotqa-dev-pool.json``): the shipped ranker's
   greedy order, and the greedy order with the second-hop probability mixed with the pair model's
   sigmoid, ``(1 - w) * p + w * sigmoid(logit)`` (the logit the maximum over the kept documents),
   or by ranks, for every step or the second pick only. Reported: the share of questions with both
   gold documents in the top 2 / 3 / 4, and with a gold answer string in the top 3.

The evaluation file is never read. Figures and reading: docs/document-ranking.md ("A learned pair
scorer for the second hop").

    python benchmarks/pair_cross_encoder.py --model runs/pair-cross-encoder \
        --json benchmarks/results/document-ranking/pair-cross-encoder.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ragsift.datasets import load_examples
from ragsift.datasets.holdout import refuse_evaluation_data
from ragsift.metrics.normalize import contains_answer
from ragsift.models import OFFLINE_MINILM, resolve_model
from ragsift.registry import build_plugin
from ragsift.scorers.bm25 import tokenize
from ragsift.scorers.bridge_documents import BridgeDocumentModel
from ragsift.trainers.bridge_documents import gold_documents
from ragsift.types import Document, Example

TRAIN = "data/training/hotpotqa-train-pool.json"
DEV = "data/training/hotpotqa-dev-pool.json"
WEIGHTS = (0.2, 0.35, 0.5, 0.65, 0.8, 1.0)


def doc_text(d: Document) -> str:
    return f"{d.title}: {d.text}" if d.title else d.text


def lead_text(d: Document) -> str:
    """A candidate's title and first sentence."""
    text = d.text[: d.sentence_spans[0][1]] if d.sentence_spans else d.text[:300]
    return f"{d.title}: {text}" if d.title else text


def kept_text(question: str, kept: Document, sep: str) -> str:
    return f"{question} {sep} {doc_text(kept)}"


def training_pairs(examples: list[Example], sep: str, hard: int) -> list[tuple[str, str, float]]:
    from rank_bm25 import BM25Okapi

    out: list[tuple[str, str, float]] = []
    for e in examples:
        gold, docs = gold_documents(e), e.documents
        tokens = [tokenize(doc_text(d)) or [""] for d in docs]
        bm25 = BM25Okapi(tokens)
        question = tokenize(e.question)
        first = np.asarray(bm25.get_scores(question))
        wrong = [int(j) for j in np.argsort(-first, kind="stable") if j not in gold]
        for kept, is_gold in [(a, True) for a in sorted(gold)] + [(w, False) for w in wrong[:1]]:
            s = np.asarray(bm25.get_scores(question + tokens[kept]))
            others = [j for j in range(len(docs)) if j != kept]
            positives = [j for j in others if j in gold]
            negatives = [j for j in sorted(others, key=lambda j: -s[j]) if j not in gold][:hard]
            if not is_gold:
                positives, negatives = positives[:1], negatives[:1]
            query = kept_text(e.question, docs[kept], sep)
            out += [(query, lead_text(docs[j]), 1.0) for j in positives]
            out += [(query, lead_text(docs[j]), 0.0) for j in negatives]
    return out


def train(pairs: list[tuple[str, str, float]], folder: Path, args: argparse.Namespace) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup

    torch.manual_seed(0)
    base = resolve_model(OFFLINE_MINILM).path
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=1, use_safetensors=True)
    order = np.random.default_rng(0).permutation(len(pairs))
    steps = len(order) // args.batch_size
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate, weight_decay=0.01)
    schedule = get_linear_schedule_with_warmup(optimizer, int(0.1 * steps), steps)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    model.train()
    start = time.time()
    for step in range(steps):
        batch = [pairs[i] for i in order[step * args.batch_size : (step + 1) * args.batch_size]]
        inputs = tokenizer([b[0] for b in batch], [b[1] for b in batch], truncation="longest_first",
                           max_length=args.max_length, padding=True, return_tensors="pt")
        loss = loss_fn(model(**inputs).logits[:, 0], torch.tensor([b[2] for b in batch]))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        if step % 50 == 0 or step == steps - 1:
            print(f"step {step + 1}/{steps} loss {loss.item():.4f} {time.time() - start:.0f}s", file=sys.stderr, flush=True)
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)


def question_records(examples: list[Example], folder: Path, max_length: int) -> list[dict[str, Any]]:
    """Per development question: the ranker's first-hop rows and probabilities, its second-hop rows
    given each document, the pair model's logit for every (kept, candidate), gold and answer flags."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    pair_model = AutoModelForSequenceClassification.from_pretrained(folder, use_safetensors=True).eval()
    ranker = BridgeDocumentModel.load("models/bridge-documents")
    splitter = build_plugin("splitter", {"name": "presplit", "fallback": "sentencizer"}, "pair_cross_encoder")
    out = []
    for e in examples:
        ctx = ranker.features.context(e, splitter.split_all(e.documents))
        n = ctx.n_docs
        logits = np.full((n, n), -np.inf)
        for kept in range(n):
            others = [j for j in range(n) if j != kept]
            inputs = tokenizer([kept_text(e.question, e.documents[kept], tokenizer.sep_token)] * len(others),
                               [lead_text(e.documents[j]) for j in others], truncation="longest_first",
                               max_length=max_length, padding=True, return_tensors="pt")
            with torch.inference_mode():
                logits[kept, others] = pair_model(**inputs).logits[:, 0].numpy()
        out.append({**ranker_record(e, ctx, ranker), "logits": logits})
    return out


def ranker_record(example: Example, ctx: Any, ranker: BridgeDocumentModel) -> dict[str, Any]:
    """What the greedy orders and their figures read of one question: its gold documents, the
    ranker's first-hop rows and probabilities, its second-hop rows given each document, and which
    documents hold a gold answer string."""
    n = ctx.n_docs
    return {"gold": gold_documents(example), "first_hop": ctx.first_hop,
            "p1": ranker.ensemble.probability(ranker.features.rows(ctx, range(n), None)),
            "hop": [ranker.features.second_hop(ctx, k) for k in range(n)],
            "answer": [any(contains_answer(f"{d.title} {d.text}", a) for a in example.answers) for d in example.documents]}


def greedy(record: dict[str, Any], ranker: BridgeDocumentModel, mix: Callable[[np.ndarray, np.ndarray], np.ndarray] | None,
           last_mixed_step: float) -> list[int]:
    left, order = list(range(len(record["p1"]))), []
    second: np.ndarray | None = None
    pair: np.ndarray | None = None
    while left:
        idx = np.array(left)
        if second is None or pair is None:
            p = record["p1"][idx]
        else:
            p = ranker.ensemble.probability(np.concatenate([record["first_hop"][idx], second[idx]], axis=1))
            if mix is not None and len(order) <= last_mixed_step:
                p = mix(p, pair[idx])
        doc = left.pop(int(np.argmax(p)))
        order.append(doc)
        second = record["hop"][doc] if second is None else np.maximum(second, record["hop"][doc])
        pair = record["logits"][doc] if pair is None else np.maximum(pair, record["logits"][doc])
    return order


def by_probability(w: float) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    return lambda p, logit: (1 - w) * p + w / (1 + np.exp(-logit))


def by_rank(w: float) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    def mix(p: np.ndarray, logit: np.ndarray) -> np.ndarray:
        rank_p, rank_l = np.argsort(np.argsort(-p)), np.argsort(np.argsort(-logit))
        return -((1 - w) * rank_p + w * rank_l) + 1e-6 * p
    return mix


def figures(records: list[dict[str, Any]], order_of: Callable[[dict[str, Any]], list[int]]) -> dict[str, float]:
    hits = {k: 0 for k in (2, 3, 4)}
    answer = 0
    for r in records:
        order = order_of(r)
        for k in hits:
            hits[k] += r["gold"] <= set(order[:k])
        answer += any(r["answer"][j] for j in order[:3])
    n = len(records)
    return {**{f"both gold top {k}": round(100 * v / n, 1) for k, v in hits.items()}, "answer in top 3": round(100 * answer / n, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, required=True, help="the pair model's folder (trained there unless it exists)")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--hard", type=int, default=3)
    parser.add_argument("--max-length", type=int, default=192)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=4e-5)
    parser.add_argument("--limit", type=int, help="only the first N development questions (smoke runs)")
    args = parser.parse_args()
    train_examples, dev = list(load_examples(TRAIN)), list(load_examples(DEV, limit=args.limit))
    refuse_evaluation_data(Path(TRAIN), train_examples, "benchmarks/pair_cross_encoder.py")
    refuse_evaluation_data(Path(DEV), dev, "benchmarks/pair_cross_encoder.py")
    if not (args.model / "model.safetensors").is_file():
        pairs = training_pairs(train_examples, "[SEP]", args.hard)
        print(f"{len(pairs)} training pairs, {int(sum(p[2] for p in pairs))} positive", file=sys.stderr)
        train(pairs, args.model, args)
    records = question_records(dev, args.model, args.max_length)
    ranker = BridgeDocumentModel.load("models/bridge-documents")
    rows: dict[str, dict[str, float]] = {"shipped ranker": figures(records, lambda r: greedy(r, ranker, None, 0))}
    for name, make in (("probability", by_probability), ("rank", by_rank)):
        for w, last in [(w, math.inf) for w in WEIGHTS] + [(w, 1.0) for w in (0.35, 0.5, 0.65)]:
            mix = make(w)
            label = f"{name} mix w={w}" + (", second pick only" if last == 1 else "")
            rows[label] = figures(records, lambda r, m=mix, s=last: greedy(r, ranker, m, s))
    for name, values in rows.items():
        print(f"{name:40s} " + "  ".join(f"{k} {v:5.1f}" for k, v in values.items()))
    if args.json:
        args.json.write_text(json.dumps({"development_questions": len(dev), "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()

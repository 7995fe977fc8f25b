"""A reader-grade second hop on the CPU: a linear readout of a frozen instruct LM's final hidden
state, asked whether a candidate document completes a kept one (issue 23).

The notes of issue 23 leave one lead: a pair model that *reads* (question + kept document,
candidate), where the two-hop ranker's hand-made link features and a fine-tuned MiniLM
cross-encoder (benchmarks/pair_cross_encoder.py) only move a few questions. Fine-tuning a 0.5B-1.5B
LM is out of reach on these 2 cores; a frozen LM with a trained linear readout is not: EXIT's
readout on the same models found evidence far better than BM25 (BENCHMARKS, issue 28). Here:

1. The prompt, in Qwen's chat format: the question, the kept document whole ("Document A"), then
   the candidate's title and first sentence ("Document B") and the question whether B is needed
   too. The question and A are a prefix shared by every
   candidate: llama.cpp evaluates it once and each candidate after it (the KV cache cut back
   between candidates), in embedding mode, and the final hidden state at the prompt's last
   position is the feature vector (Qwen2.5-Coder-0.5B-Instruct Q4_K_M by default: 896 values).
2. Training pairs from the training pool (``data/training/hotpotqa-train-pool.json``, the first
   ``--train`` questions): each gold document kept, every other document a candidate, the other
   gold document the positive. A logistic regression on the features (``fit_readout``, the
   trainers' L-BFGS fit).
3. Every development question (``data/training/hotpotqa-dev-pool.json``): the shipped ranker's
   greedy order, and the greedy order with its second-hop probability mixed with the readout's,
   ``(1 - w) * p + w * readout`` (the maximum over the kept documents). Reported: both gold
   documents in the top 2 / 3 / 4, a gold answer string in the top 3, and the CPU seconds of the
   readout per question.

The evaluation file is never read (refused by content). Features are cached in ``--work`` so that
a stopped run continues.

    python benchmarks/pair_readout.py --work runs/pair-readout --train 150 --limit 100 \
        --json benchmarks/results/document-ranking/pair-readout.json

(the recorded run: 26 minutes of training features, 22 of development questions, on 2 cores;
figures and reading: docs/document-ranking.md, "A frozen LM's readout as the second hop").
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

# the pair cross-encoder's texts and figures (this script's folder is on sys.path when it runs)
from pair_cross_encoder import doc_text, figures, lead_text, ranker_record

from ragsift.datasets import load_examples
from ragsift.datasets.holdout import refuse_evaluation_data
from ragsift.lm.llamacpp_model import gguf_path, import_llama_cpp
from ragsift.models import OFFLINE_QWEN_0_5B
from ragsift.registry import build_plugin
from ragsift.scorers.bridge_documents import BridgeDocumentModel
from ragsift.trainers.bridge_documents import gold_documents
from ragsift.trainers.yes_no_readout import fit_readout
from ragsift.types import Document, Example

TRAIN = "data/training/hotpotqa-train-pool.json"
DEV = "data/training/hotpotqa-dev-pool.json"
WEIGHTS = (0.1, 0.2, 0.35, 0.5, 0.65, 0.8, 1.0)
#: the kept document is cut to this many tokens (a HotpotQA paragraph is ~130); the candidate's lead to 48
KEPT_TOKENS, LEAD_TOKENS = 400, 48

#: the prompt around the question, the kept document (A) and the candidate (B)
HEAD = ("<|im_start|>system\nYou help answer multi-hop questions.<|im_end|>\n<|im_start|>user\nQuestion: ",
        "\n\nDocument A: ", "\n\nDocument B: ")
TAIL = "\n\nIs document B needed too? Answer Yes or No.<|im_end|>\n<|im_start|>assistant\n"


class PairFeatures:
    """Final hidden states of HEAD + candidate + TAIL, the head evaluated once per kept document."""

    def __init__(self, model: str, threads: int) -> None:
        llama_cpp = import_llama_cpp()
        self.lib = llama_cpp
        self.llm = llama_cpp.Llama(model_path=gguf_path(model, "pair_readout"), n_ctx=2048, n_batch=512, n_ubatch=512,
                                   n_threads=threads, n_threads_batch=threads, embedding=True,
                                   pooling_type=llama_cpp.LLAMA_POOLING_TYPE_NONE, verbose=False)
        self.n_embd = int(self.llm.n_embd())
        self.tokens = 0

    def ids(self, text: str, limit: int | None = None) -> list[int]:
        ids = self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        return ids[:limit] if limit else ids

    def _decode(self, ids: Sequence[int], start: int) -> None:
        for a in range(0, len(ids), 512):
            chunk = list(ids[a : a + 512])
            self.llm._batch.set_batch(chunk, n_past=start + a, logits_all=False)
            self.llm._ctx.decode(self.llm._batch)
            self.tokens += len(chunk)

    def rows(self, question: str, kept: Document, candidates: Sequence[Document]) -> np.ndarray:
        head = (self.ids(HEAD[0]) + self.ids(question) + self.ids(HEAD[1]) + self.ids(doc_text(kept), KEPT_TOKENS)
                + self.ids(HEAD[2]))
        tail = self.ids(TAIL)
        ctx = self.llm._ctx
        ctx.kv_cache_clear()
        self._decode(head, 0)
        out = np.empty((len(candidates), self.n_embd), dtype=np.float32)
        for i, candidate in enumerate(candidates):
            if not ctx.kv_cache_seq_rm(0, len(head), -1):
                raise RuntimeError("llama.cpp could not cut the KV cache back")
            self._decode(self.ids(lead_text(candidate), LEAD_TOKENS) + tail, len(head))
            pointer = self.lib.llama_get_embeddings_ith(ctx.ctx, -1)
            out[i] = np.ctypeslib.as_array(pointer, shape=(self.n_embd,))
        return out


def training_rows(examples: list[Example], features: PairFeatures, cache: Path) -> tuple[np.ndarray, np.ndarray]:
    """(features, labels) of every (gold document kept, other document) pair, cached per question."""
    done: dict[str, Any] = dict(np.load(cache)) if cache.is_file() else {}
    start = time.time()
    for n, e in enumerate(examples, 1):
        if f"x/{e.id}" in done:
            continue
        gold, xs, ys = gold_documents(e), [], []
        for kept in sorted(gold):
            others = [j for j in range(len(e.documents)) if j != kept]
            xs.append(features.rows(e.question, e.documents[kept], [e.documents[j] for j in others]))
            ys += [float(j in gold) for j in others]
        done[f"x/{e.id}"], done[f"y/{e.id}"] = np.concatenate(xs), np.array(ys)
        if n % 20 == 0 or n == len(examples):
            np.savez(cache, **done)
            print(f"train {n}/{len(examples)} {time.time() - start:.0f}s {features.tokens} tokens", file=sys.stderr, flush=True)
    keys = [e.id for e in examples]
    return np.concatenate([done[f"x/{k}"] for k in keys]), np.concatenate([done[f"y/{k}"] for k in keys])


class ReadoutRows:
    """The readout's probability of every document given a kept one, computed on first use and
    kept (the greedy orders of every weight share them), with the CPU seconds they took."""

    def __init__(self, example: Example, features: PairFeatures, weight: np.ndarray, bias: float) -> None:
        self.example, self.features, self.weight, self.bias = example, features, weight, bias
        self.rows: dict[int, np.ndarray] = {}
        self.seconds = 0.0

    def __call__(self, kept: int) -> np.ndarray:
        if kept not in self.rows:
            e, n = self.example, len(self.example.documents)
            others = [j for j in range(n) if j != kept]
            started = time.process_time()
            logits = self.features.rows(e.question, e.documents[kept], [e.documents[j] for j in others]) @ self.weight + self.bias
            row = np.zeros(n)
            row[others] = 1 / (1 + np.exp(-logits))
            self.rows[kept] = row
            self.seconds += time.process_time() - started
        return self.rows[kept]


def question_records(examples: list[Example], features: PairFeatures, weight: np.ndarray, bias: float,
                     ranker: BridgeDocumentModel) -> list[dict[str, Any]]:
    """Per development question: what the pair cross-encoder's greedy reads of the ranker
    (``ranker_record``) and the readout's rows (:class:`ReadoutRows`)."""
    splitter = build_plugin("splitter", {"name": "presplit", "fallback": "sentencizer"}, "pair_readout")
    return [{**ranker_record(e, ranker.features.context(e, splitter.split_all(e.documents)), ranker),
             "readout": ReadoutRows(e, features, weight, bias)} for e in examples]


def greedy(record: dict[str, Any], ranker: BridgeDocumentModel, w: float, mixed: int = 2) -> list[int]:
    """The ranker's greedy order; with ``w > 0`` the readout rows of the first ``mixed`` picks (their
    maximum) mix into every pick after the first (1: as the scorer's next hop mixes in, one row a
    question; 2: the third pick also given the second)."""
    left, order = list(range(len(record["p1"]))), []
    second: np.ndarray | None = None
    pair: np.ndarray | None = None
    while left:
        idx = np.array(left)
        if second is None:
            p = record["p1"][idx]
        else:
            p = ranker.ensemble.probability(np.concatenate([record["first_hop"][idx], second[idx]], axis=1))
            if pair is not None:
                p = (1 - w) * p + w * pair[idx]
        doc = left.pop(int(np.argmax(p)))
        order.append(doc)
        second = record["hop"][doc] if second is None else np.maximum(second, record["hop"][doc])
        if w > 0 and len(order) <= mixed:
            row = record["readout"](doc)
            pair = row if pair is None else np.maximum(pair, row)
    return order


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True, help="folder for the cached training features")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--model", default=OFFLINE_QWEN_0_5B, help="a GGUF model spec (default: the 0.5B)")
    parser.add_argument("--train", type=int, default=150, help="training questions (the pool's first N)")
    parser.add_argument("--limit", type=int, help="only the first N development questions")
    parser.add_argument("--l2", type=float, default=1e-2)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    train_examples = list(load_examples(TRAIN, limit=args.train))
    dev = list(load_examples(DEV, limit=args.limit))
    refuse_evaluation_data(Path(TRAIN), train_examples, "benchmarks/pair_readout.py")
    refuse_evaluation_data(Path(DEV), dev, "benchmarks/pair_readout.py")
    args.work.mkdir(parents=True, exist_ok=True)
    features = PairFeatures(args.model, args.threads)
    started = time.time()
    x, y = training_rows(train_examples, features, args.work / "train-features.npz")
    train_seconds = time.time() - started
    weight, bias, history = fit_readout(x, y, 200, args.l2)
    print(f"{len(y)} training pairs ({int(y.sum())} positive), train accuracy {history[-1]['train_accuracy']:.3f}, "
          f"loss {history[-1]['train_loss']:.4f}", file=sys.stderr)
    ranker = BridgeDocumentModel.load("models/bridge-documents")
    records = question_records(dev, features, weight.astype(np.float32), bias, ranker)
    rows: dict[str, dict[str, float]] = {"shipped ranker": figures(records, lambda r: greedy(r, ranker, 0.0))}
    for mixed in (1, 2):
        for w in WEIGHTS:
            rows[f"readout of {mixed} pick(s), w={w}"] = figures(records, lambda r, w=w, m=mixed: greedy(r, ranker, w, m))
    readout_cpu = sum(r["readout"].seconds for r in records)
    rows_per_question = float(np.mean([len(r["readout"].rows) for r in records]))
    for name, values in rows.items():
        print(f"{name:28s} " + "  ".join(f"{k} {v:5.1f}" for k, v in values.items()))
    print(f"readout: {rows_per_question:.2f} kept documents read per question (all weights together), "
          f"{readout_cpu / len(records):.2f} CPU s per question", file=sys.stderr)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({
            "model": args.model, "training_questions": len(train_examples), "training_pairs": int(len(y)),
            "training_seconds": round(train_seconds, 1), "development_questions": len(dev),
            "kept_rows_per_question": round(rows_per_question, 2),
            "readout_cpu_seconds_per_question": round(readout_cpu / len(records), 2), "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()

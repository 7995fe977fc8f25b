from __future__ import annotations

import math
from collections import Counter

from ragsift.datasets import load_examples
from ragsift.evidence import evidence_mask
from ragsift.registry import get_registry
from ragsift.splitters.presplit import PresplitSplitter

TRAIN = "hotpotqa-train-sf100.json"


def _records(examples, **params):
    return [r.to_record() for r in get_registry().create("labeler", "exit-pairs", params).label(examples)]


def test_default_is_the_papers_recipe_and_the_option_only_adds_distractors(data_dir):
    examples = list(load_examples(data_dir / TRAIN, limit=12))
    default = _records(examples)
    assert "distractor_negative" not in {r["kind"] for r in default}
    assert _records(examples, distractor_negatives=0) == default
    with_distractors = _records(examples, distractor_negatives=2)
    assert [r for r in with_distractors if r["kind"] != "distractor_negative"] == default


def test_distractor_negatives_come_from_the_examples_own_non_supporting_documents(data_dir):
    examples = list(load_examples(data_dir / TRAIN, limit=12))
    records = _records(examples, distractor_negatives=2, seed=3)
    kinds = Counter(r["kind"] for r in records)
    splitter = PresplitSplitter()
    for example in examples:
        sentences = splitter.split_all(example.documents)
        gold = evidence_mask(sentences, example.evidence)
        gold_docs = {s.doc_index for s, g in zip(sentences, gold, strict=True) if g}
        allowed = {(example.documents[s.doc_index].title, s.text) for s in sentences if s.doc_index not in gold_docs}
        mine = [r for r in records if r["example_id"] == example.id and r["kind"] == "distractor_negative"]
        positives = sum(gold)
        assert len(mine) == min(2 * math.ceil(positives / 2), len(allowed))
        for r in mine:
            assert r["label"] is False and r["query"] == example.question
            assert (r["context"].split("\n", 1)[0], r["sentence"]) in allowed
    # 2:1:1 plus 2 distractors per two positives
    assert kinds["distractor_negative"] >= kinds["positive"]
    assert _records(examples, distractor_negatives=2, seed=3) == records
    assert _records(examples, distractor_negatives=2, seed=4) != records

from __future__ import annotations

import json
from collections import Counter

import pytest

from ragsift.datasets import load_examples
from ragsift.errors import ConfigError
from ragsift.registry import get_registry
from ragsift.types import Example

TRAIN = "hotpotqa-train-sf100.json"


def test_exit_pairs_on_hotpotqa_train(data_dir):
    examples = list(load_examples(data_dir / TRAIN, limit=20))
    raw = {r["_id"]: r for r in json.loads((data_dir / TRAIN).read_text())}
    records = list(get_registry().create("labeler", "exit-pairs").label(examples))
    kinds = Counter(r.kind for r in records)
    # 2:1:1 up to rounding: each example draws ceil(positives / 2) negatives of each kind
    assert kinds["positive"] / 2 <= kinds["random_negative"] <= kinds["positive"] / 2 + len(examples)
    assert kinds["hard_negative"] > 0 and kinds["random_negative"] > 0
    by_id = {e.id: e for e in examples}
    for r in records:
        example = by_id[r.example_id]
        assert r.query == example.question
        if r.kind == "positive":
            facts = raw[r.example_id]["supporting_facts"]
            context = dict((t, s) for t, s in raw[r.example_id]["context"])
            assert r.sentence in {context[t][i].strip() for t, i in facts if i < len(context[t])}
            assert r.label is True
        elif r.kind == "hard_negative":
            assert r.label is False
            title = r.context.split("\n", 1)[0]
            assert title in {t for t, _ in raw[r.example_id]["supporting_facts"]}
        else:
            assert r.label is False
            assert r.context.split("\n", 1)[1] not in {d.text for d in example.documents}


def test_exit_pairs_is_seeded(data_dir):
    examples = list(load_examples(data_dir / TRAIN, limit=5))
    def make(seed: int) -> list:
        return [r.to_record() for r in get_registry().create("labeler", "exit-pairs", {"seed": seed}).label(examples)]

    assert make(0) == make(0) and make(0) != make(1)


def test_exit_pairs_needs_evidence(data_dir):
    example = next(iter(load_examples(data_dir / TRAIN)))
    with pytest.raises(ConfigError, match="has no gold evidence"):
        list(get_registry().create("labeler", "exit-pairs").label([Example("x", "q", ("a",), example.documents, None)]))

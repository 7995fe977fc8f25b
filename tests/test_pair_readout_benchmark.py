"""benchmarks/pair_readout.py's ranking arithmetic, without a language model: at weight 0 its greedy
order is the shipped ranker's own, a readout that singles out one document moves it to the second
pick, and the readout is asked once for each of the first ``mixed`` picks only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragsift.datasets import load_examples
from ragsift.registry import build_plugin
from ragsift.scorers.bridge_documents import BridgeDocumentModel, greedy_ranking

ROOT = Path(__file__).resolve().parents[1]


class FakeFeatures:
    """One feature per candidate: 1.0 for the document whose title is ``target``, else 0.0."""

    def __init__(self, target: str) -> None:
        self.target, self.calls = target, []

    def rows(self, question, kept, candidates):
        self.calls.append(kept.title)
        return np.array([[1.0 if c.title == self.target else 0.0] for c in candidates], dtype=np.float32)


@pytest.fixture(scope="module")
def script():
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import pair_readout
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return pair_readout


@pytest.fixture(scope="module")
def ranker() -> BridgeDocumentModel:
    return BridgeDocumentModel.load(ROOT / "models" / "bridge-documents")


@pytest.fixture
def examples(data_dir):
    return list(load_examples(data_dir / "hotpotqa-train-sf100.json", limit=5))


def test_weight_zero_is_the_shipped_rankers_greedy_order(script, ranker, examples):
    splitter = build_plugin("splitter", {"name": "presplit", "fallback": "sentencizer"}, "test")
    features = FakeFeatures("nothing")
    records = script.question_records(examples, features, np.ones(1, dtype=np.float32), 0.0, ranker)
    for example, record in zip(examples, records, strict=True):
        ctx = ranker.features.context(example, splitter.split_all(example.documents))
        shipped, _ = greedy_ranking(ranker.features, ranker.ensemble, ctx, range(ctx.n_docs))
        assert script.greedy(record, ranker, 0.0) == shipped
    assert features.calls == []  # weight 0 never reads a pair


def test_a_readout_that_singles_out_a_document_makes_it_the_second_pick(script, ranker, examples):
    example = examples[0]
    base = script.greedy(script.question_records([example], FakeFeatures("nothing"), np.ones(1, dtype=np.float32),
                                                 0.0, ranker)[0], ranker, 0.0)
    target = base[-1]  # the ranker's last document
    features = FakeFeatures(example.documents[target].title)
    record = script.question_records([example], features, np.array([20.0], dtype=np.float32), -10.0, ranker)[0]
    order = script.greedy(record, ranker, 1.0, mixed=1)
    assert order[0] == base[0] and order[1] == target
    assert features.calls == [example.documents[base[0]].title]  # one row: the first pick's
    # another weight reuses the row
    script.greedy(record, ranker, 0.1, mixed=1)
    assert len(features.calls) == 1


def test_mixed_two_reads_the_second_pick_too(script, ranker, examples):
    example = examples[1]
    features = FakeFeatures("nothing")
    record = script.question_records([example], features, np.ones(1, dtype=np.float32), 0.0, ranker)[0]
    order = script.greedy(record, ranker, 0.5, mixed=2)
    assert features.calls == [example.documents[order[0]].title, example.documents[order[1]].title]

"""The gold-evidentiality labeler: ECoRAG's kinds from supporting facts, capped and seeded."""

from __future__ import annotations

from collections import Counter

import pytest

from ragsift.datasets import load_examples
from ragsift.errors import ConfigError
from ragsift.evidence import evidence_mask
from ragsift.registry import get_registry
from ragsift.splitters.presplit import PresplitSplitter
from ragsift.types import Document, Example

TRAIN = "hotpotqa-train-sf100.json"


def _records(examples, **params):
    labeler = get_registry().create("labeler", "gold-evidentiality", params)
    return [r.to_record() for r in labeler.label(examples)], labeler.report()


def test_handmade_example_gets_the_expected_kinds():
    docs = (Document(title="A", text="A one. A two. A three.", sentence_spans=((0, 6), (7, 13), (14, 22))),
            Document(title="B", text="B one. B two.", sentence_spans=((0, 6), (7, 13))))
    from ragsift.types import EvidenceSpan

    example = Example(id="q1", question="What?", answers=("x",), documents=docs, evidence=(EvidenceSpan(0, 7, 13),))
    records, report = _records([example])
    assert [(r["sentence"], r["kind"], r["label"]) for r in records] == [
        ("A two.", "strong", True), ("A one.", "weak", False), ("A three.", "weak", False),
        ("B one.", "distractor", False), ("B two.", "distractor", False)]
    assert records[0]["context"] == "A\nA one. A two. A three."
    assert report == {"questions": 1, "no_evidence": 0, "strong": 1, "weak": 2, "distractor": 2}
    capped, _ = _records([example], max_weak=1, max_distractors=0)
    assert Counter(r["kind"] for r in capped) == {"strong": 1, "weak": 1}


def test_kinds_follow_the_supporting_facts_and_caps_are_seeded(data_dir):
    examples = list(load_examples(data_dir / TRAIN, limit=10))
    records, report = _records(examples, max_weak=2, max_distractors=3, seed=1)
    splitter = PresplitSplitter()
    for example in examples:
        sentences = splitter.split_all(example.documents)
        gold = evidence_mask(sentences, example.evidence)
        docs = {s.doc_index for s, g in zip(sentences, gold, strict=True) if g}
        mine = [r for r in records if r["example_id"] == example.id]
        kinds = Counter(r["kind"] for r in mine)
        assert kinds["strong"] == sum(gold) and kinds["weak"] <= 2 and kinds["distractor"] == 3
        titles = {r["context"].split("\n", 1)[0] for r in mine if r["kind"] == "distractor"}
        assert not titles & {example.documents[d].title for d in docs}
    assert report["strong"] == sum(r["kind"] == "strong" for r in records)
    assert _records(examples, max_weak=2, max_distractors=3, seed=1)[0] == records
    assert _records(examples, max_weak=2, max_distractors=3, seed=2)[0] != records


def test_examples_without_gold_evidence_are_refused(data_dir):
    example = next(iter(load_examples(data_dir / TRAIN, limit=1)))
    with pytest.raises(ConfigError, match="no gold evidence"):
        _records([Example(id="x", question=example.question, answers=example.answers, documents=example.documents)])

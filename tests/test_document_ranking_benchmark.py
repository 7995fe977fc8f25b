"""benchmarks/document_ranking.py's 20-paragraph variant: every question gets the extra documents
of other questions, and its gold evidence still points at its own gold sentences."""

from __future__ import annotations

from pathlib import Path

from ragsift.datasets import load_examples
from ragsift.evidence import evidence_mask
from ragsift.splitters.presplit import PresplitSplitter

ROOT = Path(__file__).resolve().parents[1]


def test_twenty_paragraphs_keeps_each_questions_gold_sentences(monkeypatch, data_dir):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    from document_ranking import blank_titles, twenty_paragraphs

    examples = list(load_examples(data_dir / "hotpotqa-train-sf100.json", limit=6))
    splitter = PresplitSplitter(fallback="sentencizer")
    for before, after in zip(examples, twenty_paragraphs(examples), strict=True):
        assert len(after.documents) == len(before.documents) + 10
        own = {(d.title, d.text) for d in before.documents}
        added = [d for d in after.documents if (d.title, d.text) not in own]
        assert len(added) == 10
        def gold(example):
            sentences = splitter.split_all(example.documents)
            mask = evidence_mask(sentences, example.evidence or ())
            return sorted((example.documents[s.doc_index].title, s.text) for s, g in zip(sentences, mask, strict=True) if g)
        assert gold(after) == gold(before) and gold(before)
        assert all(d.title == "" for d in blank_titles(after).documents)


def test_operating_points_count_what_top_documents_keeps(monkeypatch, data_dir):
    # the oracle scorer gives gold sentences 1 and the rest 0: a threshold of 0.2 keeps exactly the
    # gold documents, bounded by min_keep / max_keep; k = 3 keeps three documents
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import document_ranking

    monkeypatch.setattr(document_ranking, "POINTS", {
        "k=3": {"k": 3}, "gold": {"threshold": 0.2}, "one": {"threshold": 0.2, "max_keep": 1},
        "floor": {"threshold": 0.2, "min_keep": 4, "max_keep": 5}})
    examples = list(load_examples(data_dir / "hotpotqa-train-sf100.json", limit=6))
    splitter = PresplitSplitter(fallback="sentencizer")
    points = document_ranking.operating_points(examples, document_ranking.loaded_scorer({"name": "oracle"}), splitter)
    gold_counts = [len({s.doc_index for s in e.evidence}) for e in examples]
    assert points["gold"]["all_gold_kept"] == 1.0 and points["gold"]["documents"] == round(sum(gold_counts) / 6, 2)
    assert points["one"]["documents"] == 1.0 and points["one"]["all_gold_kept"] == 0.0  # every question has 2 gold
    assert points["floor"]["documents"] == 4.0 and points["floor"]["all_gold_kept"] == 1.0
    assert points["k=3"]["documents"] == 3.0 and points["k=3"]["words"] < points["floor"]["words"]

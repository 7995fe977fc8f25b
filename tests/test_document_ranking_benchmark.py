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

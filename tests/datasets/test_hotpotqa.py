"""The HotpotQA loader on real samples and the bundled evaluation sample."""

from __future__ import annotations

import json
from pathlib import Path

from ragsift.datasets.hotpotqa import HotpotQALoader
from ragsift.registry import get_registry
from ragsift.types import Example


def _load(path: Path) -> list[Example]:
    return list(get_registry().create("dataset", "hotpotqa").load(path))


def _check_evidence_text(examples: list[Example], raw: list[dict]) -> int:
    """Every evidence span reads back exactly the supporting sentence; returns how many."""
    checked = 0
    for ex, rec in zip(examples, raw, strict=True):
        context = dict((title, sents) for title, sents in rec["context"])
        assert len(ex.evidence) == len({tuple(sf) for sf in rec["supporting_facts"]})
        for span, (title, sent_id) in zip(ex.evidence, rec["supporting_facts"], strict=True):
            doc = ex.documents[span.doc_index]
            assert doc.title == title
            assert doc.text[span.start : span.end] == context[title][sent_id].strip()
            checked += 1
    return checked


def test_train_sample_counts_and_evidence(data_dir: Path) -> None:
    path = data_dir / "hotpotqa-train-sf100.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    examples = _load(path)
    assert len(examples) == 100
    assert sum(len(ex.evidence or ()) for ex in examples) == 229
    assert _check_evidence_text(examples, raw) == 229
    first = examples[0]
    assert first.question == "If Gallu is a demon Lilu is what?"
    assert first.answers == (raw[0]["answer"],)
    assert first.id == raw[0]["_id"]
    assert first.metadata["level"] == "easy"
    assert first.metadata["dropped_supporting_facts"] == 0
    assert [d.id for d in first.documents] == [t for t, _ in raw[0]["context"]]


def test_documents_keep_hotpotqa_sentences(data_dir: Path) -> None:
    path = data_dir / "hotpotqa-dev-ircot52-sf.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    examples = _load(path)
    assert len(examples) == 52
    assert sum(len(ex.documents) for ex in examples) == 512
    for ex, rec in zip(examples, raw, strict=True):
        for doc, (title, sentences) in zip(ex.documents, rec["context"], strict=True):
            assert doc.title == title
            assert doc.sentence_spans is not None
            assert [doc.text[a:b] for a, b in doc.sentence_spans] == [s.strip() for s in sentences]
    assert _check_evidence_text(examples, raw) == 127


def test_bundled_sample_facts() -> None:
    from ragsift.datasets import bundled_sample_path, load_examples

    examples = list(load_examples(None))
    assert bundled_sample_path().name == "hotpotqa-dev-sf100.json"
    assert len(examples) == 100
    assert all(len(ex.documents) == 10 for ex in examples)
    # every one of the 249 supporting facts points at an existing sentence
    assert sum(len(ex.evidence or ()) for ex in examples) == 249
    assert sum(ex.metadata["dropped_supporting_facts"] for ex in examples) == 0
    assert sum(len(d.sentence_spans or ()) for ex in examples for d in ex.documents) == 4260
    assert {ex.metadata["level"] for ex in examples} == {"hard"}
    assert sum(ex.metadata["type"] == "comparison" for ex in examples) == 15
    first = examples[0]
    assert first.question.startswith("VIVA Media AG changed it's name in 2004")
    assert first.answers == ("Gesellschaft mit beschränkter Haftung",)
    span = first.evidence[0]
    assert first.documents[span.doc_index].text[span.start : span.end].startswith("VIVA Media GmbH (until 2004")


def test_missing_supporting_sentence_is_dropped_and_counted(tmp_path: Path) -> None:
    record = {
        "_id": "q1",
        "question": "Who?",
        "answer": "Ann",
        "type": "bridge",
        "level": "easy",
        "supporting_facts": [["A", 0], ["A", 5], ["Missing title", 0], ["B", 1], ["B", 2]],
        "context": [["A", ["Ann was here.", " She left."]], ["B", ["Bob too.", " Then Ann came.", " "]]],
    }
    path = tmp_path / "h.json"
    path.write_text(json.dumps([record]), encoding="utf-8")
    (ex,) = _load(path)
    assert ex.metadata["dropped_supporting_facts"] == 3
    assert ex.metadata["dropped"] == [["A", 5], ["Missing title", 0], ["B", 2]]
    assert [ex.documents[s.doc_index].text[s.start : s.end] for s in ex.evidence] == ["Ann was here.", "Then Ann came."]
    assert ex.documents[0].text == "Ann was here. She left."


def test_test_file_without_labels(tmp_path: Path) -> None:
    record = {"_id": "t", "question": "Q?", "context": [["A", ["x."]]]}
    path = tmp_path / "test.json"
    path.write_text(json.dumps([record]), encoding="utf-8")
    (ex,) = _load(path)
    assert ex.evidence is None and ex.answers == ()


def test_empty_array_and_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text("", encoding="utf-8")
    array = tmp_path / "array.json"
    array.write_text(" [ ]\n", encoding="utf-8")
    assert _load(empty) == [] and _load(array) == []


def test_sniff(data_dir: Path) -> None:
    head = (data_dir / "hotpotqa-train-sf100.json").read_text(encoding="utf-8")[:65536]
    assert HotpotQALoader.sniff(data_dir / "hotpotqa-train-sf100.json", head)
    other = (data_dir / "hotpotqa-dev-ircot40.jsonl").read_text(encoding="utf-8")[:65536]
    assert not HotpotQALoader.sniff(data_dir / "hotpotqa-dev-ircot40.jsonl", other)


def test_presplit_splitter_reproduces_sentences_and_evidence(data_dir: Path) -> None:
    """With the ``presplit`` splitter each supporting fact is exactly one sentence."""
    splitter = get_registry().create("splitter", "presplit")
    raw = json.loads((data_dir / "hotpotqa-train-sf100.json").read_text(encoding="utf-8"))
    examples = _load(data_dir / "hotpotqa-train-sf100.json")
    total = 0
    for ex, rec in zip(examples, raw, strict=True):
        sentences = splitter.split_all(ex.documents)
        expected = [s.strip() for _, sents in rec["context"] for s in sents if s.strip()]
        assert [s.text for s in sentences] == expected
        spans = {(s.doc_index, s.start, s.end) for s in sentences}
        assert all((e.doc_index, e.start, e.end) in spans for e in ex.evidence)
        total += len(sentences)
    assert total == 4137  # 4,139 sentence strings, two of them empty

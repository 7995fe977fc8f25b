"""The IRCoT JSONL loader: paragraph-level labels, sentences recovered from two-space joins."""

from __future__ import annotations

import json
from pathlib import Path

from ragsift.datasets.ircot import split_ircot_paragraph
from ragsift.registry import get_registry


def test_ircot_sample(data_dir: Path) -> None:
    path = data_dir / "hotpotqa-dev-ircot40.jsonl"
    raw = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    examples = list(get_registry().create("dataset", "ircot").load(path))
    assert len(examples) == 40
    first = examples[0]
    assert first.id == "5a8c7595554299585d9e36b6"
    assert first.question.startswith("What government position was held by the woman who portrayed Corliss Archer")
    assert first.answers == ("Chief of Protocol",)
    assert first.evidence is None
    assert first.metadata["supporting_docs"] == [i for i, c in enumerate(raw[0]["contexts"]) if c["is_supporting"]]
    assert all(len(ex.documents) == 10 and len(ex.metadata["supporting_docs"]) == 2 for ex in examples)
    shirley = first.documents[1]
    assert shirley.title == "Shirley Temple" and shirley.metadata["is_supporting"] is True
    assert shirley.text[slice(*shirley.sentence_spans[1])].startswith(
        "As an adult, she was named United States ambassador"
    )


def test_sentences_match_official_hotpotqa(data_dir: Path) -> None:
    """The two-space split recovers HotpotQA's own sentences for almost every paragraph."""
    official = {
        r["_id"]: dict((t, s) for t, s in r["context"])
        for r in json.loads((data_dir / "hotpotqa-dev-ircot52-sf.json").read_text(encoding="utf-8"))
    }
    same = total = 0
    for ex in get_registry().create("dataset", "ircot").load(data_dir / "hotpotqa-dev-ircot40.jsonl"):
        if ex.id not in official:
            continue
        for doc in ex.documents:
            sentences = [s.strip() for s in official[ex.id][doc.title] if s.strip()]
            total += 1
            same += [doc.text[a:b] for a, b in doc.sentence_spans] == sentences
    assert total == 380
    assert same == 365  # the rest: sentences with stray inner/trailing spaces in the source


def test_split_ircot_paragraph() -> None:
    text, spans = split_ircot_paragraph("First one.  Second one.  Third.")
    assert text == "First one. Second one. Third."
    assert [text[a:b] for a, b in spans] == ["First one.", "Second one.", "Third."]

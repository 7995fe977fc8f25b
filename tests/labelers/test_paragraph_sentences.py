from __future__ import annotations

from pathlib import Path

import pytest

from ragsift.datasets import load_examples
from ragsift.errors import ConfigError
from ragsift.labelers.paragraph_sentences import agreement_with_gold, heuristic_evidence
from ragsift.registry import get_registry
from ragsift.splitters.presplit import PresplitSplitter
from ragsift.types import Document, Example, sentence_spans_from_list

POOL = Path(__file__).resolve().parents[2] / "data" / "training"


def _doc(title: str, sentences: list[str], supporting: bool) -> Document:
    text, spans = sentence_spans_from_list(sentences)
    return Document(title=title, text=text, id=title, sentence_spans=spans, metadata={"is_supporting": supporting})


def _example() -> Example:
    docs = (
        _doc("Lake Voss", ["Lake Voss is a lake in Norway.", " It is deep.", " Anna Berg swam across it in 1990.",
                           " Fish are common.", " The lake freezes in winter near the northern shore village."], True),
        _doc("Anna Berg", ["Anna Berg is a swimmer.", " She was born in Bergen.", " She likes tea."], True),
        _doc("Other", ["Something else entirely.", " Bergen is a city."], False),
    )
    return Example("q1", "Where was the swimmer who crossed the lake in winter born?", ("Bergen",), docs,
                   metadata={"supporting_docs": [0, 1]})


def test_rules_on_a_handmade_example():
    example = _example()
    sentences = PresplitSplitter().split_all(example.documents)
    got = {(s.doc_index, s.index) for s, m in zip(sentences, heuristic_evidence(example, sentences), strict=True) if m}
    # first sentences (0,0) (1,0); the answer "Bergen" (1,1); the other title "Anna Berg" (0,2).
    # (0,4) shares only "winter" with the question ("lake" is its own title's word): not enough at 3
    assert got == {(0, 0), (0, 2), (1, 0), (1, 1)}
    # the distractor paragraph's answer sentence is never evidence
    assert (2, 1) not in got
    stricter = heuristic_evidence(example, sentences, min_question_words=1)
    assert stricter[4] and not heuristic_evidence(example, sentences)[4]  # one shared word suffices at 1


def test_labeler_records_kinds_and_determinism():
    labeler = get_registry().create("labeler", "paragraph-sentences", {"distractor_negatives": 1})
    records = list(labeler.label([_example()]))
    kinds = {(r.sentence, r.kind) for r in records}
    assert ("Anna Berg swam across it in 1990.", "positive") in kinds
    assert ("It is deep.", "hard_negative") in kinds
    distractors = [r for r in records if r.kind == "distractor_negative"]
    assert len(distractors) == 2 and all(r.context.startswith("Other\n") and not r.label for r in distractors)
    again = [r.to_record() for r in get_registry().create("labeler", "paragraph-sentences").label([_example()])]
    assert again == [r.to_record() for r in records]
    evidence = labeler.with_evidence(_example()).evidence
    assert evidence is not None and len(evidence) == 4


def test_needs_paragraph_labels():
    example = _example()
    bare = Example("q2", example.question, example.answers, tuple(
        Document(d.title, d.text, d.id, sentence_spans=d.sentence_spans) for d in example.documents))
    with pytest.raises(ConfigError, match="no supporting paragraph"):
        list(get_registry().create("labeler", "paragraph-sentences").label([bare]))


def test_agreement_with_gold_supporting_facts_on_the_52_questions(data_dir):
    result = agreement_with_gold(load_examples(POOL / "hotpotqa-dev-ircot52.jsonl"),
                                 load_examples(data_dir / "hotpotqa-dev-ircot52-sf.json"))
    assert result["questions"] == 52
    # the figures docs/training.md reports (P 0.770, R 0.921)
    assert result["precision"] == pytest.approx(117 / 152) and result["recall"] == pytest.approx(117 / 127)

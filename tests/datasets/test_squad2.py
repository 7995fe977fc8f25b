"""The SQuAD 2.0 loader: own paragraph first, distractors from the article, answer sentences."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsift.datasets.squad2 import align_answer, answer_sentences
from ragsift.errors import ConfigError
from ragsift.registry import get_registry


@pytest.fixture(scope="module")
def squad(request: pytest.FixtureRequest) -> list:
    path = Path(request.config.rootpath) / "tests" / "data" / "squad-v2-dev-small.json"
    return list(get_registry().create("dataset", "squad2").load(path))


def test_counts(squad: list) -> None:
    assert len(squad) == 626
    answerable = [ex for ex in squad if ex.answers]
    assert len(answerable) == 293
    assert all(len(ex.documents) == 10 for ex in squad)
    assert sum(ex.metadata["unaligned_answers"] for ex in squad) == 0


def test_known_question(squad: list) -> None:
    ex = squad[0]
    assert ex.id == "56ddde6b9a695914005b9628"
    assert ex.question == "In what country is Normandy located?"
    assert ex.answers == ("France",)
    assert [d.id for d in ex.documents] == [f"Normans#{i}" for i in range(10)]
    (span,) = ex.evidence
    sentence = ex.documents[0].text[span.start : span.end]
    assert sentence.startswith("The Normans (Norman: Nourmands;") and sentence.endswith("a region in France.")
    assert (span.start, span.end) in ex.documents[0].sentence_spans


def test_evidence_sentences_hold_the_answer(squad: list) -> None:
    for ex in squad:
        if not ex.answers:
            continue
        own = ex.documents[0]
        assert ex.evidence and all(s.doc_index == 0 for s in ex.evidence)
        assert all((s.start, s.end) in own.sentence_spans for s in ex.evidence)
        joined = " ".join(own.text[s.start : s.end] for s in ex.evidence)
        assert any(answer in joined for answer in ex.answers), ex.id


def test_unanswerable_has_no_evidence(squad: list) -> None:
    impossible = [ex for ex in squad if ex.metadata["is_impossible"]]
    assert len(impossible) == 333
    assert all(ex.answers == () and ex.evidence == () for ex in impossible)
    assert any(ex.metadata.get("plausible_answers") for ex in impossible)


def test_own_paragraph_first_and_distractors_from_same_article(squad: list) -> None:
    raw = json.loads((Path(__file__).parents[1] / "data" / "squad-v2-dev-small.json").read_text(encoding="utf-8"))
    contexts = {a["title"]: [p["context"] for p in a["paragraphs"]] for a in raw["data"]}
    for ex in squad[::37]:
        paragraphs = contexts[ex.metadata["article"]]
        own = ex.metadata["paragraph"]
        assert ex.documents[0].text == paragraphs[own]
        expected = [(own + k) % len(paragraphs) for k in range(1, 10)]
        assert [d.metadata["paragraph"] for d in ex.documents[1:]] == expected


def test_params(tmp_path: Path) -> None:
    data = {
        "version": "v2.0",
        "data": [
            {
                "title": "T_x",
                "paragraphs": [
                    {
                        "context": f"Paragraph {i} is here. It ends.",
                        "qas": [
                            {
                                "id": f"q{i}",
                                "question": "Which?",
                                "answers": [{"text": f"{i}", "answer_start": 10}],
                                "is_impossible": False,
                            }
                        ],
                    }
                    for i in range(5)
                ],
            }
        ],
    }
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    loader = get_registry().create("dataset", "squad2", {"max_distractors": 2, "splitter": "regex"})
    examples = list(loader.load(path))
    assert [d.metadata["paragraph"] for d in examples[3].documents] == [3, 4, 0]
    assert examples[3].documents[0].title == "T x"
    assert [examples[3].documents[0].text[s.start : s.end] for s in examples[3].evidence] == ["Paragraph 3 is here."]
    rand = get_registry().create("dataset", "squad2", {"max_distractors": 3, "distractors": "random", "seed": 1})
    first = [[d.metadata["paragraph"] for d in ex.documents] for ex in rand.load(path)]
    again = [[d.metadata["paragraph"] for d in ex.documents] for ex in rand.load(path)]
    assert first == again
    assert all(len(docs) == 4 and docs[0] == i and i not in docs[1:] for i, docs in enumerate(first))
    none = get_registry().create("dataset", "squad2", {"max_distractors": 0})
    assert all(len(ex.documents) == 1 for ex in none.load(path))
    with pytest.raises(ConfigError, match="max_distractors"):
        get_registry().create("dataset", "squad2", {"max_distractors": -1})


def test_align_answer_and_sentences() -> None:
    context = "Alpha beta. Gamma beta."
    assert align_answer(context, "beta", 6) == (6, 10)
    assert align_answer(context, "beta", 16) == (18, 22)  # off by two: nearest occurrence
    assert align_answer(context, "delta", 0) is None
    assert answer_sentences([(0, 11), (12, 23)], (6, 14)) == [(0, 11), (12, 23)]
    assert answer_sentences([(0, 11)], (11, 12)) == [(11, 12)]

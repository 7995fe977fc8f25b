"""The MuSiQue loader on the shipped files: every question, answer aliases as gold answers,
paragraph-level labels as IRCoT's are (no sentence evidence), hops; malformed records name file
and line."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from ragsift.datasets import detect_format, load_examples
from ragsift.datasets.musique import musique_hops
from ragsift.errors import DataFormatError
from ragsift.metrics.normalize import best_over_gold, exact_match

SHIPPED = Path(__file__).parents[2] / "ragsift" / "data"


@pytest.mark.parametrize(("name", "questions", "supporting", "answers", "types"), [
    ("musique-ans-dev50.jsonl", 50, 120, 65, {"2hop": 36, "3hop1": 8, "4hop1": 6}),
    ("musique-ans-eval150.jsonl", 150, 358, 249,
     {"2hop": 109, "3hop1": 20, "4hop1": 12, "3hop2": 4, "4hop3": 4, "4hop2": 1}),
])
def test_the_shipped_files_load_whole(name: str, questions: int, supporting: int, answers: int,
                                      types: dict[str, int]) -> None:
    path = SHIPPED / name
    examples = list(load_examples(path, format="musique"))
    assert len(examples) == questions and len({ex.id for ex in examples}) == questions
    assert all(ex.evidence is None and len(ex.documents) == 20 for ex in examples)  # paragraph-level labels only
    assert sum(len(ex.metadata["supporting_docs"]) for ex in examples) == supporting
    assert all(ex.metadata["supporting_docs"] == [i for i, d in enumerate(ex.documents) if d.metadata["is_supporting"]]
               for ex in examples)
    assert all(len(ex.metadata["supporting_docs"]) == ex.metadata["hops"] for ex in examples)
    assert sum(len(ex.answers) for ex in examples) == answers
    assert Counter(ex.metadata["type"] for ex in examples) == types
    assert detect_format(path) == "musique"


def test_a_known_question_with_its_aliases() -> None:
    examples = {ex.id: ex for ex in load_examples(SHIPPED / "musique-ans-eval150.jsonl")}
    ex = examples["2hop__335418_279684"]
    assert ex.question == "What team was Anna Benson's husband on?"
    assert ex.answers == ("Pittsburgh Pirates", "Orioles", "Pirates", "Baltimore Orioles", "New York Mets", "Mets")
    assert best_over_gold(exact_match, "the Mets", ex.answers) == 1.0  # an alias is a gold answer
    assert [ex.documents[i].id for i in ex.metadata["supporting_docs"]] == ["9", "16"]
    assert ex.metadata["hops"] == 2 and ex.metadata["answerable"] is True
    assert [(s["answer"], s["paragraph_support_idx"]) for s in ex.metadata["decomposition"]] == [
        ("Kris Benson", 9), ("Pittsburgh Pirates", 16)]
    first = examples["2hop__574419_270105"]
    assert first.answers == ("Stanley",)
    assert first.documents[8].metadata == {"is_supporting": True, "idx": 8} and first.documents[8].sentence_spans is None


def test_answers_are_deduplicated(tmp_path: Path) -> None:
    record = json.loads((SHIPPED / "musique-ans-dev50.jsonl").read_text(encoding="utf-8").splitlines()[0])
    record.update(answer="Stanley", answer_aliases=["Stanley", "Stanley, ND", ""])
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    assert next(iter(load_examples(path, format="musique"))).answers == ("Stanley", "Stanley, ND")


def test_hops_from_the_id() -> None:
    assert musique_hops("2hop__574419_270105") == ("2hop", 2)
    assert musique_hops("4hop3__1_2_3_4") == ("4hop3", 4)
    assert musique_hops("q17") == (None, None)


@pytest.mark.parametrize(("change", "needle"), [
    ({"answer_aliases": "Stanley"}, "field 'answer_aliases'"),
    ({"paragraphs": [{"idx": 0, "title": "T"}]}, "missing field 'paragraphs.0.paragraph_text'"),
    ({"paragraphs": [{"idx": "0", "title": "T", "paragraph_text": "x"}]}, "field 'paragraphs.0.idx'"),
    ({"id": None}, "field 'id'"),
])
def test_a_malformed_record_names_file_line_and_field(tmp_path: Path, change: dict[str, object], needle: str) -> None:
    lines = (SHIPPED / "musique-ans-dev50.jsonl").read_text(encoding="utf-8").splitlines()[:3]
    bad = json.loads(lines[2])
    bad.update(change)
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([*lines[:2], json.dumps(bad)]) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError) as info:
        list(load_examples(path, format="musique"))
    message = str(info.value)
    assert str(path) in message and "line 3" in message and needle in message and "MuSiQue question" in message, message


def test_a_broken_line_names_file_and_line(tmp_path: Path) -> None:
    lines = (SHIPPED / "musique-ans-dev50.jsonl").read_text(encoding="utf-8").splitlines()[:2]
    path = tmp_path / "cut.jsonl"
    path.write_text(lines[0] + "\n" + lines[1][:200] + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"cut\.jsonl.*line 2"):
        list(load_examples(path, format="musique"))

"""The 2WikiMultihopQA loader on the shipped files: every question, sentence-level evidence, the
question types; malformed records name file and line; HotpotQA files are not claimed."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from ragsift.datasets import detect_format, load_examples
from ragsift.datasets.json_records import read_head
from ragsift.errors import DataFormatError
from ragsift.registry import get_registry

SHIPPED = Path(__file__).parents[2] / "ragsift" / "data"


@pytest.mark.parametrize(("name", "questions", "facts", "types"), [
    ("2wiki-dev40.json", 40, 100, {"compositional": 14, "comparison": 14, "bridge_comparison": 10, "inference": 2}),
    ("2wiki-eval123.json", 123, 310, {"compositional": 43, "comparison": 40, "bridge_comparison": 32, "inference": 8}),
])
def test_the_shipped_files_load_whole(name: str, questions: int, facts: int, types: dict[str, int]) -> None:
    path = SHIPPED / name
    examples = list(load_examples(path, format="2wiki"))
    assert len(examples) == questions and len({ex.id for ex in examples}) == questions
    assert sum(len(ex.evidence or ()) for ex in examples) == facts  # every supporting fact is a sentence span
    assert all(ex.metadata["dropped_supporting_facts"] == 0 for ex in examples)
    assert Counter(ex.metadata["type"] for ex in examples) == types
    assert all(len(ex.documents) == 10 and len(ex.evidence or ()) in (2, 4) and len(ex.answers) == 1 for ex in examples)
    assert detect_format(path) == "2wiki"


def test_a_known_question() -> None:
    first = next(iter(load_examples(SHIPPED / "2wiki-eval123.json")))
    assert first.id == "b088d3ca08e211ebbda4ac1f6bf848b6"
    assert first.question == "Which film whose director is younger, Forbidden Ground or Free Guy?"
    assert first.answers == ("Free Guy",)
    assert first.metadata["type"] == "bridge_comparison"
    assert first.metadata["evidences"][1] == ["Free Guy", "director", "Shawn Levy"]
    gold = {(first.documents[e.doc_index].title, first.documents[e.doc_index].text[e.start:e.end]) for e in first.evidence or ()}
    assert {title for title, _ in gold} == {"Forbidden Ground", "Free Guy", "Pál Gábor", "Shawn Levy"}
    raw = json.loads((SHIPPED / "2wiki-eval123.json").read_text(encoding="utf-8"))[0]
    sentences = {t: s for t, s in raw["context"]}
    assert ("Free Guy", sentences["Free Guy"][0].strip()) in gold


def test_hotpotqa_and_2wiki_sniffs_are_disjoint(data_dir: Path) -> None:
    registry = get_registry()
    hotpotqa, twowiki = registry.get("dataset", "hotpotqa"), registry.get("dataset", "2wiki")
    for path in (SHIPPED / "2wiki-dev40.json", SHIPPED / "2wiki-eval123.json"):
        head = read_head(path)
        assert twowiki.sniff(path, head) and not hotpotqa.sniff(path, head)
    for path in (SHIPPED / "hotpotqa-dev-sf100.json", SHIPPED / "hotpotqa-dev-eval151.json", data_dir / "hotpotqa-train-sf100.json"):
        head = read_head(path)
        assert hotpotqa.sniff(path, head) and not twowiki.sniff(path, head)


def _record(**changes: object) -> dict[str, object]:
    record = json.loads((SHIPPED / "2wiki-dev40.json").read_text(encoding="utf-8"))[0]
    record.update(changes)
    return record


@pytest.mark.parametrize(("change", "needle"), [
    ({"question": 7}, "field 'question'"),
    ({"evidences": "none"}, "field 'evidences'"),
    ({"supporting_facts": [["Bloody Moon", "zero"]]}, "field 'supporting_facts.0.1'"),
    ({"context": None}, "field 'context'"),
])
def test_a_malformed_record_names_file_line_and_field(tmp_path: Path, change: dict[str, object], needle: str) -> None:
    path = tmp_path / "bad.json"
    good = _record()
    path.write_text("[\n" + json.dumps(good) + ",\n" + json.dumps(_record(**change)) + "\n]\n", encoding="utf-8")
    with pytest.raises(DataFormatError) as info:
        list(load_examples(path, format="2wiki"))
    message = str(info.value)
    assert str(path) in message and "line 3" in message and "record 2" in message and needle in message, message
    assert "2WikiMultihopQA question" in message

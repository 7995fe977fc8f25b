"""The retrieval exchange-format loader (JSON array and JSONL)."""

from __future__ import annotations

import json
from pathlib import Path

from ragsift.registry import get_registry


def test_json_array(data_dir: Path) -> None:
    dpr = json.loads((data_dir / "dpr-nq-dev-sample.json").read_text(encoding="utf-8"))
    examples = list(get_registry().create("dataset", "retrieval").load(data_dir / "retrieval-nq-dev3.json"))
    assert len(examples) == 3
    first = examples[0]
    assert first.id == "0" and first.question == dpr[0]["question"] and first.answers == ("Linda Davis",)
    assert [d.id for d in first.documents] == ["11828866"] + [c["passage_id"] for c in dpr[0]["hard_negative_ctxs"][:4]]
    assert first.documents[1].score == dpr[0]["hard_negative_ctxs"][0]["score"]
    assert first.documents[0].text == dpr[0]["positive_ctxs"][0]["text"]
    assert [ex.metadata["answer_docs"] for ex in examples] == [[0], [0], []]
    assert first.evidence is None


def test_jsonl_and_top_k(data_dir: Path) -> None:
    path = data_dir / "retrieval-hotpotqa-dev5.jsonl"
    examples = list(get_registry().create("dataset", "retrieval").load(path))
    assert len(examples) == 5 and all(len(ex.documents) == 10 for ex in examples)
    assert examples[0].id == "5a8c7595554299585d9e36b6"
    assert examples[0].answers == ("Chief of Protocol",)
    assert examples[0].metadata["answer_docs"] == [1]
    assert examples[0].documents[1].title == "Shirley Temple" and examples[0].documents[1].score is None
    top3 = list(get_registry().create("dataset", "retrieval", {"top_k": 3}).load(path))
    assert [len(ex.documents) for ex in top3] == [3] * 5
    assert top3[0].metadata["retrieved"] == 10
    assert top3[0].documents == examples[0].documents[:3]


def test_string_scores_and_single_answer(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(
        json.dumps(
            {"_id": "x", "question": "Q?", "answers": "A", "ctxs": [{"title": "T", "text": "A b.", "score": "1.5"}]}
        )
        + "\n\n",
        encoding="utf-8",
    )
    (ex,) = get_registry().create("dataset", "retrieval").load(path)
    assert ex.id == "x" and ex.answers == ("A",) and ex.documents[0].score == 1.5
    assert "answer_docs" not in ex.metadata

"""The FlashRAG JSONL loader."""

from __future__ import annotations

import json
from pathlib import Path

from ragsift.datasets.flashrag import split_contents
from ragsift.registry import get_registry


def test_flashrag_sample(data_dir: Path) -> None:
    hotpot = json.loads((data_dir / "hotpotqa-dev-ircot52-sf.json").read_text(encoding="utf-8"))
    examples = list(get_registry().create("dataset", "flashrag").load(data_dir / "flashrag-hotpotqa-dev5.jsonl"))
    assert len(examples) == 5
    first = examples[0]
    assert first.id == hotpot[0]["_id"]
    assert first.question == "Were Scott Derrickson and Ed Wood of the same nationality?"
    assert first.answers == ("yes",)
    assert first.metadata["flashrag"]["type"] == "comparison"
    assert [d.title for d in first.documents] == [t for t, _ in hotpot[0]["context"]]
    assert first.documents[0].text == "".join(hotpot[0]["context"][0][1]).strip()
    assert first.evidence is None
    top2 = list(
        get_registry().create("dataset", "flashrag", {"top_k": 2}).load(data_dir / "flashrag-hotpotqa-dev5.jsonl")
    )
    assert [len(ex.documents) for ex in top2] == [2] * 5


def test_saved_run_and_no_retrieval(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    items = [
        {
            "id": "a",
            "question": "Q1?",
            "golden_answers": ["x", 3],
            "metadata": {},
            "output": {"retrieval_result": [{"id": "7", "contents": '"Aaron"\nAaron is a prophet.'}]},
        },
        {"id": 2, "question": "Q2?", "golden_answers": ["y"], "choices": ["y", "z"]},
    ]
    path.write_text("\n".join(json.dumps(i) for i in items), encoding="utf-8")
    first, second = get_registry().create("dataset", "flashrag").load(path)
    assert first.answers == ("x", "3")
    assert (
        first.documents[0].title == "Aaron"
        and first.documents[0].text == "Aaron is a prophet."
        and first.documents[0].id == "7"
    )
    assert second.id == "2" and second.documents == () and second.metadata["choices"] == ["y", "z"]


def test_split_contents() -> None:
    assert split_contents("T\nline one\nline two") == ("T", "line one\nline two")
    assert split_contents("\nno title") == ("", "no title")
    assert split_contents("just text") == ("", "just text")
    assert split_contents('"Q"\nx', strip_quotes=False) == ('"Q"', "x")


def test_saved_run_as_json_array_is_detected(tmp_path: Path) -> None:
    """FlashRAG's Dataset.save writes a JSON array; HotpotQA keys inside metadata must not
    make it look like the official HotpotQA format."""
    from ragsift.datasets import detect_format, load_examples

    item = {
        "id": "q", "question": "Q?", "golden_answers": ["a"],
        "metadata": {"_id": "q", "context": [["T", ["s."]]]},
        "output": {"retrieval_result": [{"id": "1", "contents": "T\ns."}]},
    }
    path = tmp_path / "run.json"
    path.write_text(json.dumps([item], indent=4), encoding="utf-8")
    assert detect_format(path) == "flashrag"
    (ex,) = load_examples(path)
    assert ex.documents[0].title == "T" and ex.metadata["flashrag"]["_id"] == "q"

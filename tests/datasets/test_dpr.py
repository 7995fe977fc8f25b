"""The DPR retriever-JSON loader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsift.errors import ConfigError
from ragsift.registry import get_registry


def test_dpr_defaults(data_dir: Path) -> None:
    path = data_dir / "dpr-nq-dev-sample.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    examples = list(get_registry().create("dataset", "dpr").load(path))
    assert len(examples) == 5
    first = examples[0]
    assert first.question == "who sings does he love me with reba"
    assert first.answers == ("Linda Davis",)
    assert first.evidence is None
    assert len(first.documents) == 10
    assert first.metadata["positive_docs"] == [0]
    assert first.documents[0].title == "Does He Love You" and first.documents[0].id == "11828866"
    assert first.documents[0].score == 1000
    kinds = [d.metadata["kind"] for d in first.documents]
    assert kinds == ["positive"] + ["hard_negative"] * 5 + ["negative"] * 4
    assert first.documents[1].text == raw[0]["hard_negative_ctxs"][0]["text"]
    assert first.documents[6].text == raw[0]["negative_ctxs"][0]["text"]
    assert first.metadata["available"] == {"positive": 5, "hard_negative": 96, "negative": 50}
    assert [ex.id for ex in examples] == ["0", "1", "2", "3", "4"]


def test_dpr_counts_and_shuffle(data_dir: Path) -> None:
    path = data_dir / "dpr-nq-dev-sample.json"
    everything = list(
        get_registry()
        .create("dataset", "dpr", {"positives": None, "hard_negatives": None, "negatives": None})
        .load(path)
    )
    assert [len(ex.documents) for ex in everything] == [151, 151, 151, 151, 151]
    assert [len(ex.metadata["positive_docs"]) for ex in everything] == [5, 6, 3, 1, 7]
    loader = get_registry().create(
        "dataset", "dpr", {"positives": 3, "hard_negatives": 2, "negatives": 0, "shuffle": True, "seed": 3}
    )
    shuffled = list(loader.load(path))
    assert shuffled == list(loader.load(path))  # deterministic
    for ex in shuffled:
        positives = [i for i, d in enumerate(ex.documents) if d.metadata["kind"] == "positive"]
        assert ex.metadata["positive_docs"] == positives
    assert any(ex.metadata["positive_docs"] != list(range(len(ex.metadata["positive_docs"]))) for ex in shuffled)
    with pytest.raises(ConfigError, match="positives"):
        get_registry().create("dataset", "dpr", {"positives": -1})

"""load_examples, format detection and the bundled sample path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsift.datasets import bundled_sample_path, detect_format, load_examples
from ragsift.datasets.json_records import read_head
from ragsift.errors import DataFormatError
from ragsift.registry import get_registry

FORMATS = {
    "hotpotqa-train-sf100.json": "hotpotqa",
    "hotpotqa-dev-ircot52-sf.json": "hotpotqa",
    "hotpotqa-dev-ircot40.jsonl": "ircot",
    "squad-v2-dev-small.json": "squad2",
    "dpr-nq-dev-sample.json": "dpr",
    "retrieval-nq-dev3.json": "retrieval",
    "retrieval-hotpotqa-dev5.jsonl": "retrieval",
    "flashrag-hotpotqa-dev5.jsonl": "flashrag",
    # the shipped data (ragsift/data/): HotpotQA and 2Wiki files told apart by 2Wiki's "evidences"
    "../../ragsift/data/hotpotqa-dev-eval151.json": "hotpotqa",
    "../../ragsift/data/hotpotqa-dev-eval251.json": "hotpotqa",
    "../../ragsift/data/2wiki-dev40.json": "2wiki",
    "../../ragsift/data/2wiki-eval123.json": "2wiki",
    "../../ragsift/data/musique-ans-dev50.jsonl": "musique",
    "../../ragsift/data/musique-ans-eval150.jsonl": "musique",
}


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_detect_format(data_dir: Path, name: str) -> None:
    path = data_dir / name
    assert detect_format(path) == FORMATS[name]
    head = read_head(path)
    registry = get_registry()
    accepted = [n for n in registry.names("dataset") if registry.get("dataset", n).sniff(path, head)]
    assert accepted == [FORMATS[name]]  # exactly one loader claims each format


def test_bundled_sample_is_in_the_package() -> None:
    path = bundled_sample_path()
    assert path.is_file() and path.parent.name == "data" and path.parent.parent.name == "ragsift"
    assert detect_format(path) == "hotpotqa"


def test_load_examples_limit_and_format(data_dir: Path) -> None:
    assert len(list(load_examples(None, limit=7))) == 7
    assert [ex.id for ex in load_examples(data_dir / "dpr-nq-dev-sample.json", limit=2)] == ["0", "1"]
    examples = list(
        load_examples(str(data_dir / "retrieval-hotpotqa-dev5.jsonl"), format="retrieval", params={"top_k": 2})
    )
    assert [len(ex.documents) for ex in examples] == [2] * 5


def test_undetectable_format_lists_loaders(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps([{"foo": 1}]), encoding="utf-8")
    with pytest.raises(DataFormatError) as info:
        load_examples(path)
    message = str(info.value)
    assert str(path) in message and "could not detect" in message
    for name in ("hotpotqa", "ircot", "squad2", "dpr", "retrieval", "flashrag"):
        assert name in message


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataFormatError, match="no such file"):
        load_examples(tmp_path / "nope.json")
    with pytest.raises(DataFormatError, match="no such file"):
        list(get_registry().create("dataset", "hotpotqa").load(tmp_path / "nope.json"))


def test_path_param(data_dir: Path) -> None:
    loader = get_registry().create("dataset", "ircot", {"path": str(data_dir / "hotpotqa-dev-ircot40.jsonl")})
    assert sum(1 for _ in loader.load()) == 40
    assert loader.config()["path"].endswith("hotpotqa-dev-ircot40.jsonl")

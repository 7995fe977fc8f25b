"""``ragsift config list``: every config a name finds, with its one-line description and compressors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsift.cli import main
from ragsift.config_catalogue import first_sentence

REPO = Path(__file__).resolve().parents[2]


def test_json_lists_every_shipped_config_with_its_compressors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "list", "--json"]) == 0
    entries = {e["name"]: e for e in json.loads(capsys.readouterr().out)}
    assert set(entries) >= {p.stem for p in (REPO / "configs").glob("*.toml")}
    assert entries["bm25"]["compressors"] == ["bm25"]
    assert entries["bm25"]["description"] == "Top-5 sentences by BM25 against the question, original order."
    assert entries["fusion-trained"]["compressors"] == ["bm25-top2", "fusion-trained"]
    assert all(e["problem"] is None for e in entries.values()), [e for e in entries.values() if e["problem"]]
    assert all("\n" not in e["description"] for e in entries.values())


def test_text_has_one_line_per_config_and_its_compressors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    (bm25,) = [i for i, line in enumerate(lines) if line.startswith("bm25 ")]
    assert "Top-5 sentences by BM25" in lines[bm25] and lines[bm25 + 1].split() == ["compressors:", "bm25"]
    assert all(len(line) <= 140 for line in lines if not line.lstrip().startswith("compressors:"))


def test_a_config_in_the_working_directory_comes_first_and_a_broken_one_is_listed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "bm25.toml").write_text('description = "Mine. Not the shipped one."\n'
                                                    '[compressors.a]\nname = "bm25"\n[compressors.b]\nname = "random"\n')
    (tmp_path / "configs" / "broken.toml").write_text("[compressor\n")
    monkeypatch.chdir(tmp_path)
    assert main(["config", "list", "--json"]) == 0
    entries = {e["name"]: e for e in json.loads(capsys.readouterr().out)}
    assert (entries["bm25"]["description"], entries["bm25"]["compressors"]) == ("Mine.", ["a", "b"])
    assert entries["broken"]["problem"] and entries["broken"]["compressors"] == []
    assert "exit-offline" in entries  # the shipped ones are still listed


@pytest.mark.parametrize(("text", "first"), [
    ("One. Two.", "One."),
    ("Scores (e.g. BM25. Or not) then\n  keeps. Rest.", "Scores (e.g. BM25. Or not) then keeps."),
    ("No full stop", "No full stop"),
    ("A model, e.g. MiniLM. Then more.", "A model, e.g. MiniLM."),
    ("Version 2.0 of it. More.", "Version 2.0 of it."),
])
def test_first_sentence(text: str, first: str) -> None:
    assert first_sentence(text) == first

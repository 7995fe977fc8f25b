"""Prediction files: appended lines, a truncated last line tolerated, corruption refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsift.errors import DataFormatError
from ragsift.evaluation.predictions import PredictionWriter, prediction_path, read_records


def test_append_and_read(tmp_path: Path) -> None:
    path = prediction_path(tmp_path, "exit/offline v1")
    assert path.name == "exit_offline_v1.jsonl"
    with PredictionWriter(path) as writer:
        writer.write({"id": "a", "x": 1})
        writer.write({"id": "b", "x": (1, 2)})
    assert [r["id"] for r in read_records(path)] == ["a", "b"]
    assert read_records(tmp_path / "missing.jsonl") == []


def test_truncated_last_line_is_dropped_and_cut(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"id": "a"}) + "\n" + json.dumps({"id": "b"}) + "\n" + '{"id": "c", "metr')
    assert [r["id"] for r in read_records(path)] == ["a", "b"]
    assert path.read_text().endswith('{"id": "b"}\n')  # appends now start on a clean line
    with PredictionWriter(path) as writer:
        writer.write({"id": "c"})
    assert [r["id"] for r in read_records(path)] == ["a", "b", "c"]


def test_complete_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"id": "a"}))
    assert [r["id"] for r in read_records(path)] == ["a"]
    assert path.read_text().endswith("\n")


def test_a_corrupt_line_in_the_middle_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text('{"id": "a"}\nnot json\n{"id": "b"}\n')
    with pytest.raises(DataFormatError, match="line 2"):
        read_records(path)

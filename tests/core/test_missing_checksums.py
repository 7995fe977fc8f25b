"""Issue 53 row 7: a checksum deleted or set to ``null`` where one is expected is a corrupt entry,
in the caches (a score / answer cache folder, a labeler's JSONL cache) and in predictions records
(``--resume``, ``merge`` and ``report`` read them through :func:`read_records`). Before, such an
entry was used silently, as if it had been written before checksums existed."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from ragsift.disk_cache import MARKER, JsonlStore, JsonStore
from ragsift.errors import DataFormatError
from ragsift.evaluation.predictions import PredictionWriter, read_records


def _entry(folder: Path) -> Path:
    (entry,) = folder.glob("??/*.json")
    return entry


@pytest.mark.parametrize("change", ["deleted", "null"])
def test_a_cache_entry_without_its_checksum_is_a_miss(tmp_path: Path, caplog: pytest.LogCaptureFixture, change: str) -> None:
    JsonStore(tmp_path / "c").put("k" * 64, {"scores": [1.0]})
    assert (tmp_path / "c" / MARKER).is_file()  # a folder this version started
    entry = _entry(tmp_path / "c")
    stored = json.loads(entry.read_text())
    edited = {**stored, "scores": [9.0]}
    if change == "deleted":
        del edited["checksum"]
    else:
        edited["checksum"] = None
    entry.write_text(json.dumps(edited))
    with caplog.at_level(logging.WARNING):
        assert JsonStore(tmp_path / "c").get("k" * 64) is None
    assert str(entry) in caplog.text and "no checksum where one is expected" in caplog.text


def test_an_entry_of_a_folder_from_before_checksums_is_read_as_before(tmp_path: Path) -> None:
    old = tmp_path / "old" / "kk"
    old.mkdir(parents=True)
    (old / f"{'k' * 64}.json").write_text(json.dumps({"key": "k" * 64, "scores": [1.0]}))
    store = JsonStore(tmp_path / "old")
    assert store.get("k" * 64) == {"key": "k" * 64, "scores": [1.0]}
    store.put("j" * 64, {"scores": [2.0]})
    assert not (tmp_path / "old" / MARKER).exists()  # a folder with entries from before is not claimed


@pytest.mark.parametrize("change", ["deleted", "null"])
def test_a_jsonl_cache_line_without_its_checksum_is_a_miss(tmp_path: Path, change: str) -> None:
    path = tmp_path / "c.jsonl"
    JsonlStore(path).put("k", {"text": "Paris"})
    header, line = path.read_text().splitlines()
    record = {**json.loads(line), "text": "Lyon"}
    if change == "deleted":
        del record["checksum"]
    else:
        record["checksum"] = None
    path.write_text(header + "\n" + json.dumps(record) + "\n")
    assert JsonlStore(path).get("k") is None


def _two_records(path: Path) -> list[str]:
    with PredictionWriter(path) as writer:
        writer.write({"id": "a", "em": 1.0})
        writer.write({"id": "b", "em": 0.0})
    return path.read_text().splitlines()


def test_a_record_whose_checksum_was_deleted_is_refused_naming_its_line(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    first, second = _two_records(path)
    edited = {k: v for k, v in json.loads(second).items() if k != "checksum"} | {"em": 1.0}
    path.write_text(first + "\n" + json.dumps(edited) + "\n")
    with pytest.raises(DataFormatError, match=rf"^{path}, line 2: record 'b' has no checksum, unlike the other records"):
        read_records(path)


def test_a_record_with_a_null_checksum_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    first, second = _two_records(path)
    path.write_text(first + "\n" + json.dumps({**json.loads(second), "checksum": None}) + "\n")
    with pytest.raises(DataFormatError, match=rf"^{path}, line 2: record 'b' has a null checksum"):
        read_records(path)


def test_records_of_a_file_from_before_checksums_are_read_as_before(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text('{"id": "a", "em": 1}\n{"id": "b", "em": 0}\n')
    assert read_records(path) == [{"id": "a", "em": 1}, {"id": "b", "em": 0}]

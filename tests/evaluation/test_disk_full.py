"""Issue 24, case 5: ``evaluate`` on a disk that fills up reports the first error with its path
and the resume hint, even when the manifest cannot be written either, and leaves no temporary
manifest behind; ``--resume`` then finishes the run."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from ragsift.cli import main
from ragsift.evaluation import predictions

DATA = Path(__file__).parents[1] / "data" / "hotpotqa-train-sf100.json"
NONE = Path(__file__).parents[2] / "configs" / "none.toml"


@pytest.fixture
def disk_fills_after(monkeypatch):
    """``fill(n)``: after n records, every prediction write and every manifest write fails with
    ENOSPC, as on a full disk (the manifest's temporary file is created, then the write fails)."""
    state = {"left": None}
    real_write = predictions.PredictionWriter.write
    real_write_text = Path.write_text

    def full() -> bool:
        return state["left"] is not None and state["left"] <= 0

    def write(self, record):
        if full():
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_write(self, record)
        if state["left"] is not None:
            state["left"] -= 1

    def write_text(self, *args, **kwargs):
        if full() and ".tmp" in self.name:
            self.open("w").close()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write_text(self, *args, **kwargs)

    monkeypatch.setattr(predictions.PredictionWriter, "write", write)
    monkeypatch.setattr(Path, "write_text", write_text)

    def fill(n: int | None) -> None:
        state["left"] = n

    return fill


def test_a_full_disk_names_the_file_and_says_how_to_resume(tmp_path, disk_fills_after, capsys):
    run = tmp_path / "run"
    args = ["evaluate", "-c", str(NONE), "--data", str(DATA), "--limit", "4", "--no-reader", "--out", str(run), "-q"]
    disk_fills_after(2)
    assert main(args) == 2
    err = capsys.readouterr().err
    path = run / "predictions" / "none.jsonl"
    assert f"cannot write {path}: No space left on device" in err, err
    assert "2 of 4 examples are saved" in err and "--resume" in err, err
    assert "manifest could not be updated" in err and str(run / "manifest.json") in err, err
    assert not [p.name for p in run.iterdir() if ".tmp" in p.name]
    disk_fills_after(None)  # space freed
    assert main([*args, "--resume"]) == 0
    assert len(path.read_text().splitlines()) == 4


@pytest.mark.parametrize("store", ["json", "jsonl"])
def test_a_cache_write_on_a_full_disk_names_the_cache_file(tmp_path, monkeypatch, store):
    """A score or answer cache that cannot be written names its own file (the run's message names
    the file whose write failed, not the predictions file it was computing a record for)."""
    from ragsift import disk_cache

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(disk_cache.os, "fsync" if store == "jsonl" else "replace", full)
    cache = disk_cache.JsonlStore(tmp_path / "c.jsonl") if store == "jsonl" else disk_cache.JsonStore(tmp_path / "c")
    with pytest.raises(OSError) as caught:
        cache.put("ab" * 32, {"text": "x"})
    want = tmp_path / "c.jsonl" if store == "jsonl" else tmp_path / "c" / "ab" / f"{'ab' * 32}.json"
    assert caught.value.filename == str(want)
    assert not list(tmp_path.rglob("*.tmp"))

"""Issue 24, cases 12 and 13 (merge): every predictions record carries a checksum of its content;
a well-formed but altered record is refused by ``merge`` and ``--resume``, naming the file and
line; records written before checksums existed are read as before. ``merge`` into a run folder
does not suggest a ``--resume`` it does not have."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ragsift.cli import main
from ragsift.errors import DataFormatError
from ragsift.evaluation.predictions import PredictionWriter, read_records

CONFIG = """
[compressors.none]
name = "none"
[compressors.bm25]
name = "bm25"
[evaluation]
limit = 4
warmup = 0
bootstrap_samples = 100
"""


def _evaluate(config: Path, out: Path, *extra: str) -> int:
    return main(["evaluate", "-c", str(config), "--no-reader", "-q", "--out", str(out), *extra])


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("checksums")
    (root / "run.toml").write_text(CONFIG)
    for i in range(2):
        assert _evaluate(root / "run.toml", root / f"s{i}", "--shard", f"{i}/2") == 0
    return root


def _alter_first_record(path: Path) -> None:
    """A well-formed edit that keeps the old checksum: the question of line 1 changes."""
    lines = path.read_text().splitlines(keepends=True)
    record = json.loads(lines[0])
    assert "checksum" in record
    record["question"] += " (edited)"
    path.write_text(json.dumps(record) + "\n" + "".join(lines[1:]))


def test_records_carry_a_checksum_and_are_read_without_it(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    with PredictionWriter(path) as writer:
        writer.write({"id": "a", "score": 0.5, "checksum": "stale"})  # a checksum it had is replaced
    stored = json.loads(path.read_text())
    assert set(stored) == {"id", "score", "checksum"} and stored["checksum"] != "stale"
    assert read_records(path) == [{"id": "a", "score": 0.5}]
    path.write_text('{"id": "old", "score": 1}\n')  # written before checksums: read as before
    assert read_records(path) == [{"id": "old", "score": 1}]


def test_an_altered_record_is_refused_with_its_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    with PredictionWriter(path) as writer:
        writer.write({"id": "a", "question": "q"})
        writer.write({"id": "b", "question": "q"})
    lines = path.read_text().splitlines()
    path.write_text(lines[0] + "\n" + lines[1].replace('"question": "q"', '"question": "other"') + "\n")
    with pytest.raises(DataFormatError, match=rf"^{path}, line 2: record 'b' does not match its checksum"):
        read_records(path)


def test_merge_refuses_an_edited_record(shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edited = tmp_path / "s0"
    shutil.copytree(shards / "s0", edited)
    _alter_first_record(edited / "predictions" / "bm25.jsonl")
    out = tmp_path / "merged"
    assert main(["merge", str(edited), str(shards / "s1"), "--out", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"{edited / 'predictions' / 'bm25.jsonl'}, line 1" in err and "checksum" in err, err
    assert not out.exists()


def test_merge_accepts_records_without_a_checksum(shards: Path, tmp_path: Path) -> None:
    old = tmp_path / "s0"
    shutil.copytree(shards / "s0", old)
    for path in (old / "predictions").glob("*.jsonl"):
        records = [json.loads(line) for line in path.read_text().splitlines()]
        path.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "checksum"}) + "\n" for r in records))
    assert main(["merge", str(old), str(shards / "s1"), "--out", str(tmp_path / "merged"), "-q"]) == 0
    assert all("checksum" in json.loads(line)
               for line in (tmp_path / "merged" / "predictions" / "bm25.jsonl").read_text().splitlines())


def test_resume_refuses_an_edited_record(shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "s1"
    shutil.copytree(shards / "s1", run)
    _alter_first_record(run / "predictions" / "none.jsonl")
    assert _evaluate(run / "config.toml", run, "--shard", "1/2", "--resume") == 2
    err = capsys.readouterr().err
    assert f"{run / 'predictions' / 'none.jsonl'}, line 1" in err and "checksum" in err, err


def test_merge_into_a_run_does_not_suggest_resume(shards: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["merge", str(shards / "s0"), str(shards / "s1"), "--out", str(shards / "s1"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "already holds a run" in err and "--resume" not in err, err

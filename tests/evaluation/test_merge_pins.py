"""What ``ragsift merge`` must check before a merged table exists: shards are matched by the
content of their input file (not its path), only finished shards are merged, and a record a
shard holds twice (a resumed shard) is read once, as that shard's own summary read it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ragsift.cli import main
from ragsift.evaluation.predictions import prediction_path, read_records

TRAIN = Path(__file__).parents[1] / "data" / "hotpotqa-train-sf100.json"  # development data
CONFIG = """
[dataset]
name = "hotpotqa"
[compressors.none]
name = "none"
[compressors.random]
name = "random"
splitter = "regex"
[evaluation]
limit = 6
warmup = 0
bootstrap_samples = 100
metrics = ["evidence", "empty"]
"""
LABELS = ("none", "random")
pytestmark = pytest.mark.slow  # four shard runs and three merges (as test_shards.py)


def _evaluate(root: Path, data: Path, out: str, shard: str) -> Path:
    assert main(["evaluate", "-c", str(root / "merge.toml"), "--data", str(data), "--no-reader", "-q",
                 "--out", str(root / out), "--shard", shard]) == 0
    return root / out


def _merge(capsys: pytest.CaptureFixture[str], out: Path, *shards: Path) -> tuple[int, str]:
    code = main(["merge", *map(str, shards), "--out", str(out), "-q"])
    return code, capsys.readouterr().err


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Shards 0/2 and 1/2 of one run over six development questions (data.json)."""
    root = tmp_path_factory.mktemp("merge")
    (root / "merge.toml").write_text(CONFIG)
    (root / "data.json").write_text(json.dumps(json.loads(TRAIN.read_text())[:6]))
    _evaluate(root, root / "data.json", "s0", "0/2")
    _evaluate(root, root / "data.json", "s1", "1/2")
    return root


@pytest.mark.parametrize("status", ["running", "interrupted"])
def test_an_unfinished_shard_is_refused(shards: Path, tmp_path: Path, status: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Planted version that this catches: merge refuses only a *failed* shard (``status ==
    "failed"``) and accepts one still running or interrupted, whose records may be cut short or
    still being written, although it holds a record for every example."""
    unfinished = tmp_path / "s1"
    shutil.copytree(shards / "s1", unfinished)
    manifest = json.loads((unfinished / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    (unfinished / "manifest.json").write_text(json.dumps({**manifest, "status": status}))
    code, err = _merge(capsys, tmp_path / "merged", shards / "s0", unfinished)
    assert code == 2 and "did not finish" in err and f"status: {status}" in err and str(unfinished) in err
    assert not (tmp_path / "merged").exists()


def test_a_record_a_shard_holds_twice_is_read_once(shards: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Planted version that this catches: ``_records`` no longer skips a shard's repeated record
    (the ``if example_id in seen: continue``), so a resumed shard that wrote one example twice is
    refused as overlapping itself, or (with the overlap check gone too) counted twice."""
    resumed = tmp_path / "s1"
    shutil.copytree(shards / "s1", resumed)
    for label in LABELS:
        path = prediction_path(resumed, label)
        first = path.read_text(encoding="utf-8").splitlines()[0]
        with path.open("a", encoding="utf-8") as fh:
            fh.write(first + "\n")  # the first example written again
    code, err = _merge(capsys, tmp_path / "merged", shards / "s0", resumed)
    assert code == 0, err
    clean_code, err = _merge(capsys, tmp_path / "clean", shards / "s0", shards / "s1")
    assert clean_code == 0, err
    for label in LABELS:
        merged = [r["id"] for r in read_records(prediction_path(tmp_path / "merged", label))]
        assert len(merged) == len(set(merged)) == 6
        assert merged == [r["id"] for r in read_records(prediction_path(tmp_path / "clean", label))]
    summaries = [json.loads((tmp_path / d / "summary.json").read_text()) for d in ("merged", "clean")]
    assert [{k: v["n"] for k, v in s["compressors"].items()} for s in summaries] == [{"none": 6, "random": 6}] * 2
    assert summaries[0]["compressors"]["random"]["values"] == summaries[1]["compressors"]["random"]["values"]


def test_shards_are_matched_by_the_content_of_their_input_not_its_path(shards: Path, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Planted version that this catches: the shards' input files are compared by path
    (``m["input"]["path"]``) instead of content hash: the same file at another path is refused,
    and a file edited in place between two shards is merged without a word."""
    copy = tmp_path / "copy.json"
    shutil.copy(shards / "data.json", copy)
    s1_copy = _evaluate(shards, copy, f"{tmp_path.name}-s1-copy", "1/2")
    code, err = _merge(capsys, tmp_path / "merged", shards / "s0", s1_copy)
    assert code == 0, err  # the same content: one run, wherever the file lay

    # the copy edited in place (the same ids, one question reworded), then shard 0 run on it
    records = json.loads(copy.read_text())
    records[0]["question"] += " (reworded)"
    copy.write_text(json.dumps(records))
    s0_edited = _evaluate(shards, copy, f"{tmp_path.name}-s0-edited", "0/2")
    code, err = _merge(capsys, tmp_path / "mixed", s0_edited, s1_copy)
    assert code == 2 and "differ in the input file" in err and str(s0_edited) in err and str(s1_copy) in err, err
    assert not (tmp_path / "mixed").exists()

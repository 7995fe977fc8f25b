"""``ragsift evaluate --shard i/N`` and ``ragsift merge``: three shards merged give the unsharded
run's summary; shards that overlap, miss, or come from another run are refused, naming them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ragsift.cli import main
from ragsift.errors import ConfigError
from ragsift.evaluation.predictions import read_records
from ragsift.evaluation.run.shards import Shard, parse_shard, select_shard

CONFIG = """
[compressors.none]
name = "none"
[compressors.random]
name = "random"
[compressors.bm25]
name = "bm25"
[evaluation]
limit = 7
warmup = 0
bootstrap_samples = 200
reader_limit = 5
limits = { random = 6 }
"""


def _evaluate(config: Path, out: Path, *extra: str) -> int:
    return main(["evaluate", "-c", str(config), "--no-reader", "-q", "--out", str(out), *extra])


def _comparable(run_dir: Path) -> dict:  # type: ignore[type-arg]
    """summary.json without what legitimately differs between two runs: where it is, and timings."""
    summary = json.loads((run_dir / "summary.json").read_text())
    summary.pop("run_dir")
    for entry in summary["compressors"].values():
        entry.pop("latency_ms")
    return summary


def _stable(record: dict) -> dict:  # type: ignore[type-arg]
    """A record without its measured seconds (stage timings, the score cache's own timing)."""
    out = {k: v for k, v in record.items() if k != "timings"}
    cache = dict(out.get("info", {}).get("score_cache") or {})
    if cache:
        out["info"] = {**out["info"], "score_cache": {k: v for k, v in cache.items() if "seconds" not in k}}
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One unsharded run and shards 0/3, 1/3, 2/3 of the same job (bundled sample, no reader)."""
    root = tmp_path_factory.mktemp("shards")
    config = root / "shards.toml"
    config.write_text(CONFIG)
    assert _evaluate(config, root / "full") == 0
    for i in range(3):
        assert _evaluate(config, root / f"s{i}", "--shard", f"{i}/3") == 0
    return root


def test_parse_shard_and_position_modulo_rule() -> None:
    assert parse_shard("1/3") == Shard(1, 3) and parse_shard(" 0 / 1 ") == Shard(0, 1)
    assert select_shard(list("abcdefg"), Shard(1, 3)) == ["b", "e"]
    assert sorted(x for i in range(3) for x in select_shard(list("abcdefg"), Shard(i, 3))) == list("abcdefg")
    for bad, said in [("3/3", "0 <= i < N"), ("0/0", "N >= 1"), ("x/2", "expected i/N"), ("-1/2", "expected i/N"),
                      ("1", "expected i/N"), ("1/2/3", "expected i/N")]:
        with pytest.raises(ConfigError, match=said.replace("/", "/")):
            parse_shard(bad)


@pytest.mark.parametrize("value", ["3/3", "0/0", "x/2"])
def test_bad_shard_values_are_clear_errors(tmp_path: Path, value: str, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.toml"
    config.write_text(CONFIG)
    assert _evaluate(config, tmp_path / "run", "--shard", value) == 2
    err = capsys.readouterr().err
    assert err.startswith("ragsift: error: --shard") and value in err
    assert not (tmp_path / "run").exists()  # refused before anything is written


@pytest.mark.slow
def test_a_shard_with_no_example_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.toml"
    config.write_text(CONFIG)
    assert _evaluate(config, tmp_path / "run", "--shard", "2/3", "--limit", "2") == 2
    assert "holds no example" in capsys.readouterr().err and not (tmp_path / "run").exists()


@pytest.mark.slow
def test_three_shards_merged_equal_the_unsharded_run(runs: Path) -> None:
    manifests = [json.loads((runs / f"s{i}" / "manifest.json").read_text()) for i in range(3)]
    assert [m["run"]["shard"] for m in manifests] == [{"index": i, "count": 3, "examples": n} for i, n in enumerate((3, 2, 2))]
    # each shard holds its share: positions 0, 3, 6 / 1, 4 / 2, 5 (random: its limit of 6 first)
    full_ids = [r["id"] for r in read_records(runs / "full" / "predictions" / "bm25.jsonl")]
    assert [r["id"] for r in read_records(runs / "s0" / "predictions" / "bm25.jsonl")] == full_ids[0::3]
    assert [r["id"] for r in read_records(runs / "s0" / "predictions" / "random.jsonl")] == full_ids[0:6:3]

    assert main(["merge", str(runs / "s2"), str(runs / "s0"), str(runs / "s1"), "--out", str(runs / "merged"), "-q"]) == 0
    assert _comparable(runs / "merged") == _comparable(runs / "full")
    for label in ("none", "random", "bm25"):
        merged = read_records(runs / "merged" / "predictions" / f"{label}.jsonl")
        full = read_records(runs / "full" / "predictions" / f"{label}.jsonl")
        assert [_stable(r) for r in merged] == [_stable(r) for r in full]  # example order, every field but timings
    manifest = json.loads((runs / "merged" / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["run"]["shard"] is None
    assert [m["shard"]["index"] for m in manifest["merged_from"]] == [0, 1, 2]
    assert manifest["records"] == {"none": 7, "random": 6, "bm25": 7}
    assert (runs / "merged" / "report.html").is_file()
    # reading is limited by position in the whole run: examples 0-4 would be read, 5-6 not
    assert manifest["input"]["examples"] == 7


def _refused(args: list[str], capsys: pytest.CaptureFixture[str], *needles: str | Path) -> str:
    assert main(["merge", *args, "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ragsift: error: ")
    for needle in needles:
        assert str(needle) in err, err
    return err


@pytest.mark.slow
def test_overlapping_missing_and_foreign_shards_are_refused(runs: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    s0, s1, s2, full = (runs / n for n in ("s0", "s1", "s2", "full"))
    out = tmp_path / "merged"
    _refused([str(s0), str(s1), str(s1), str(s2), "--out", str(out)], capsys, "both shard 1/3", s1)
    _refused([str(s0), str(s2), "--out", str(out)], capsys, "shard(s) 1/3 missing", s0, s2)
    _refused([str(s0), str(s1), str(full), "--out", str(out)], capsys, "not a shard", full)

    # a shard of another job: other config (a different hash), or another N
    other = tmp_path / "other.toml"
    other.write_text(CONFIG.replace("bootstrap_samples = 200", "bootstrap_samples = 300"))
    assert _evaluate(other, tmp_path / "other1", "--shard", "1/3") == 0
    _refused([str(s0), str(tmp_path / "other1"), str(s2), "--out", str(out)], capsys,
             "differ in the config file", s0, tmp_path / "other1")
    config = tmp_path / "same.toml"
    shutil.copy(s0 / "config.toml", config)
    assert _evaluate(config, tmp_path / "half", "--shard", "1/2") == 0
    _refused([str(s0), str(tmp_path / "half"), "--out", str(out)], capsys, "number of shards N", tmp_path / "half")

    # an unfinished shard, and a tampered one holding another shard's example
    broken = tmp_path / "broken"
    shutil.copytree(s1, broken)
    manifest = json.loads((broken / "manifest.json").read_text())
    (broken / "manifest.json").write_text(json.dumps({**manifest, "status": "failed"}))
    _refused([str(s0), str(broken), str(s2), "--out", str(out)], capsys, "did not finish", "--resume", broken)
    (broken / "manifest.json").write_text(json.dumps(manifest))
    stolen = (s0 / "predictions" / "bm25.jsonl").read_text().splitlines()[0]
    with (broken / "predictions" / "bm25.jsonl").open("a") as fh:
        fh.write(stolen + "\n")
    _refused([str(s0), str(broken), str(s2), "--out", str(out)], capsys, "in both", s0, broken)
    assert not out.exists()  # nothing written by a refused merge


@pytest.mark.slow
def test_a_shard_resumes_and_refuses_another_shard(runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "s1"
    shutil.copytree(runs / "s1", run)
    path = run / "predictions" / "bm25.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(lines[0])  # as if killed after one example
    config = run / "config.toml"
    assert _evaluate(config, run, "--shard", "1/3", "--resume") == 0
    resumed, whole = read_records(path), read_records(runs / "s1" / "predictions" / "bm25.jsonl")
    assert [(r["id"], r["kept"], r["metrics"]) for r in resumed] == [(r["id"], r["kept"], r["metrics"]) for r in whole]
    assert _evaluate(config, run, "--shard", "2/3", "--resume") == 2
    assert "--shard differs" in capsys.readouterr().err


@pytest.mark.slow
def test_a_killed_merge_is_refused_with_a_way_forward(runs: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 53 row 16: a merge killed while it wrote its report (complete) or its records
    (running) leaves a folder whose rerun names what to do: 'ragsift report DIR', or delete it."""
    shards = [str(runs / n) for n in ("s0", "s1", "s2")]
    out = tmp_path / "merged"
    assert main(["merge", *shards, "--out", str(out), "-q"]) == 0
    (out / "report.html").unlink()  # killed while the report was written
    _refused([*shards, "--out", str(out)], capsys, f"'ragsift report {out}'")
    assert main(["report", str(out)]) == 0 and (out / "report.html").is_file()
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["status"] = "running"  # killed while the records were written
    (out / "manifest.json").write_text(json.dumps(manifest))
    _refused([*shards, "--out", str(out)], capsys, "did not finish", f"delete {out} and run the merge again")

"""A suite run (``--data A,B,C`` / ``[evaluation] datasets``): every compressor on every dataset,
records carrying their dataset, per-dataset summaries beside a pooled one whose paired tests are
stratified by dataset; a suite of one dataset equals the run of that dataset alone; resume,
shards and merge, the report and ``ragsift tune`` read it."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from ragsift.cli import main
from ragsift.errors import ConfigError
from ragsift.evaluation.run.plan import suite_names
from ragsift.evaluation.run.runner import RunOptions, run_evaluation

SAMPLE = Path(__file__).parents[1] / "data" / "hotpotqa-train-sf100.json"

CONFIG = """
[compressors.none]
name = "none"
[compressors.oracle]
name = "oracle"
[compressors.bm25]
name = "bm25"
[evaluation]
warmup = 0
bootstrap_samples = 200
"""


def _split(tmp: Path, sizes: tuple[int, ...]) -> list[Path]:
    """Consecutive slices of the HotpotQA sample as separate files, one per dataset."""
    records = json.loads(SAMPLE.read_text(encoding="utf-8"))
    paths, start = [], 0
    for i, size in enumerate(sizes):
        path = tmp / f"part{i}.json"
        path.write_text(json.dumps(records[start:start + size]), encoding="utf-8")
        paths.append(path)
        start += size
    return paths


def _run(tmp: Path, data: str, out: str, **kw: Any) -> Any:
    config = tmp / "suite.toml"
    config.write_text(CONFIG, encoding="utf-8")
    return run_evaluation(RunOptions(config=config, out=tmp / out, data=data, no_reader=True, progress=False,
                                     echo=lambda _: None, **kw))


def _without_place(summary: dict) -> dict:
    """A summary without where it ran and its measured seconds."""
    out = {k: v for k, v in summary.items() if k not in ("run_dir",)}
    out["compressors"] = {label: {k: v for k, v in c.items() if k != "latency_ms"} for label, c in out["compressors"].items()}
    return out


def _close(a: object, b: object) -> bool:
    """Equal structures, floats equal to 1e-12 relative."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
    return a == b


def test_suite_names_from_data_or_config():
    assert suite_names("a,b", None) == ["a", "b"]
    assert suite_names("a,", None) == ["a"]
    assert suite_names("a", ["x", "y"]) is None  # --data with one file: that file alone
    assert suite_names(None, ["x", "y"]) == ["x", "y"]
    assert suite_names(None, None) is None
    with pytest.raises(ConfigError, match="no dataset named"):
        suite_names(" , ", None)


def test_a_suite_run_has_a_table_per_dataset_and_a_pooled_one(tmp_path):
    a, b = _split(tmp_path, (3, 4))
    result = _run(tmp_path, f"{a},{b}", "suite", limit=3)
    # --limit N: the first N of each dataset
    assert result["examples"] == 6
    assert {name: sub["examples"] for name, sub in result["datasets"].items()} == {"part0": 3, "part1": 3}
    assert result["pooling"]["datasets"] == {"part0": 3, "part1": 3}
    for label, recs in result.records.items():
        assert [r["dataset"] for r in recs] == ["part0"] * 3 + ["part1"] * 3, label
    # the pooled mean weighs every question once
    pooled = result["compressors"]["bm25"]["values"]["evidence_recall"]["mean"]
    per = [result["datasets"][d]["compressors"]["bm25"]["values"]["evidence_recall"]["mean"] for d in ("part0", "part1")]
    assert pooled == pytest.approx(sum(per) / 2)
    run_dir = tmp_path / "suite"
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert [d["name"] for d in manifest["input"]["datasets"]] == ["part0", "part1"]
    assert manifest["input"]["data"] == f"{a},{b}"
    md = (run_dir / "summary.md").read_text()
    assert "Pooled over 2 datasets (part0 3, part1 3)" in md
    assert "## Dataset: part0 (3 questions)" in md and "## Dataset: part1 (3 questions)" in md
    html = (run_dir / "report.html").read_text()
    assert 'id="datasets"' in html and "part1 (3 questions)" in html
    assert "results-table-2" in html
    assert "a suite of 2 datasets, 6 questions read (part0: " in html and "; part1: " in html  # not the first file alone
    assert "small hollow markers: the same compressor on each dataset alone" in html  # the plots' per-dataset means


def test_a_suite_of_one_dataset_pools_to_the_run_of_that_dataset(tmp_path):
    (a,) = _split(tmp_path, (5,))
    alone = _run(tmp_path, str(a), "alone")
    suite = _run(tmp_path, f"{a},", "suite")
    assert "datasets" not in alone
    pooled = _without_place(dict(suite.summary))
    for key in ("datasets", "pooling", "strata"):
        pooled.pop(key, None)
    # the same numbers (to the last few bits: one stratum's variance is summed in another order)
    assert _close(pooled, _without_place(dict(alone.summary)))
    alone_table = {k: v for k, v in _without_place(dict(alone.summary)).items() if k not in ("config", "run_dir")}
    assert _close(_without_place(suite["datasets"]["part0"]), alone_table | {"examples": 5})


def test_a_suite_refuses_an_id_in_two_datasets_and_a_dataset_named_twice(tmp_path):
    a, b = _split(tmp_path, (2, 2))
    b.write_text(a.read_text())  # the same questions again
    with pytest.raises(ConfigError, match="is also in dataset 'part0'"):
        _run(tmp_path, f"{a},{b}", "twice")
    with pytest.raises(ConfigError, match="named twice"):
        _run(tmp_path, f"{a},{a}", "same")
    assert not (tmp_path / "twice").exists() and not (tmp_path / "same").exists()  # planned, then refused: nothing written


def test_a_suite_resumes_and_refuses_a_changed_dataset(tmp_path):
    a, b = _split(tmp_path, (3, 3))
    first = _run(tmp_path, f"{a},{b}", "run", limit=1)
    assert first["examples"] == 2
    again = _run(tmp_path, f"{a},{b}", "run", limit=3, resume=True)
    assert again["examples"] == 6
    assert [r["id"] for r in again.records["bm25"]][:1] == [r["id"] for r in first.records["bm25"]][:1]
    b.write_text(json.dumps(json.loads(b.read_text())[:2]))
    with pytest.raises(ConfigError, match="the input file changed"):
        _run(tmp_path, f"{a},{b}", "run", limit=3, resume=True)


def test_suite_shards_merge_into_the_unsharded_suite(tmp_path):
    a, b = _split(tmp_path, (3, 2))
    config = tmp_path / "suite.toml"
    config.write_text(CONFIG, encoding="utf-8")
    data = f"{a},{b}"
    assert main(["evaluate", "-c", str(config), "--data", data, "--no-reader", "-q", "--out", str(tmp_path / "whole")]) == 0
    for i in range(2):
        assert main(["evaluate", "-c", str(config), "--data", data, "--no-reader", "-q", "--shard", f"{i}/2",
                     "--out", str(tmp_path / f"s{i}")]) == 0
    assert main(["merge", str(tmp_path / "s0"), str(tmp_path / "s1"), "-q", "--out", str(tmp_path / "merged")]) == 0

    def comparable(run: str) -> dict:
        summary = _without_place(json.loads((tmp_path / run / "summary.json").read_text()))
        summary["datasets"] = {d: _without_place(s) for d, s in summary["datasets"].items()}
        return summary

    assert comparable("merged") == comparable("whole")


def test_config_datasets_make_a_suite(tmp_path):
    a, b = _split(tmp_path, (2, 2))
    config = tmp_path / "suite.toml"
    config.write_text(CONFIG + f'datasets = ["{a}", "{b}"]\n', encoding="utf-8")
    result = run_evaluation(RunOptions(config=config, out=tmp_path / "run", no_reader=True, progress=False,
                                       echo=lambda _: None))
    assert list(result["datasets"]) == ["part0", "part1"]


def test_a_conformal_selector_reports_its_coverage_per_dataset(tmp_path):
    config = Path(__file__).parents[2] / "configs" / "tuned" / "bm25-docs-conformal-hotpotqa-a10.toml"
    result = run_evaluation(RunOptions(config=config, out=tmp_path / "run", data="2wiki-dev,musique-dev", limit=3,
                                       no_reader=True, progress=False, echo=lambda _: None))
    label = next(iter(result["compressors"]))
    assert "coverage" not in result["compressors"][label]  # no promise for a pool of datasets
    for name in ("2wiki-dev", "musique-dev"):
        coverage = result["datasets"][name]["compressors"][label]["coverage"]
        assert coverage["n"] == 3 and coverage["target"] == "documents" and coverage["nominal"] == 0.9
        assert 0 <= coverage["low"] <= coverage["coverage"] <= coverage["high"] <= 1
        assert "no guarantee across datasets" in coverage["line"]  # calibrated on HotpotQA
    md = (tmp_path / "run" / "summary.md").read_text()
    assert md.count("## Conformal coverage") == 2
    page = (tmp_path / "run" / "report.html").read_text()
    assert page.count('<p class="note coverage">Conformal coverage, ') == 2  # under each dataset's results table

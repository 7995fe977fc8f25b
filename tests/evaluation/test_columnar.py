"""Predictions as Parquet: the records read back equal the JSONL ones, the per-sentence file is
flat, and the report reads a run whose predictions exist only as Parquet."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import counting_plugins as cp
import pyarrow.parquet as pq
import pytest

from ragsift.cli import main
from ragsift.evaluation.columnar import read_parquet, write_parquet
from ragsift.evaluation.predictions import read_predictions, read_records
from ragsift.registry import reset_registry

CONFIG = """
[compressors.none]
name = "none"
[compressors.bm25]
name = "bm25"
[compressors.bm25.scorer]
name = "counting-bm25"
[reader]
name = "counting"
[evaluation]
limit = 4
reader_limit = 3
warmup = 0
bootstrap_samples = 200
metrics = ["evidence", "tokens", "exact-match", "f1"]
"""


def test_records_round_trip_with_absent_values_and_extra_keys(tmp_path: Path) -> None:
    sentence = {"id": "0:0", "doc": 0, "start": 0, "end": 5, "text": "Hello", "score": None, "kept": False, "rank": None}
    records = [
        {"id": "a", "compressor": "x", "question": "q?", "answers": ["A"], "kept": [], "empty": True, "compressed_text": "",
         "sentences": [sentence], "info": {"score_cache": {"hit": False}, "nested": [1, "two"]}, "prediction": None,
         "reader": None, "metrics": {"f1": 0.5}, "timings": {"compress": 0.25}, "extra_key": {"k": [1, 2]}},
        {"id": "b", "compressor": "x", "question": "q2", "answers": [], "kept": ["0:0"], "empty": False,
         "compressed_text": "Hello", "sentences": [{**sentence, "score": 0.75, "kept": True, "rank": 0}], "info": {},
         "prediction": "A", "reader": {"prompt_tokens": None, "completion_tokens": 2, "cached": True},
         "metrics": {}, "timings": {}},  # a metric undefined here is absent, not null
    ]
    jsonl = tmp_path / "x.jsonl"
    main_file, sentences = write_parquet(jsonl, records)
    assert read_parquet(main_file) == [records[0], {**records[1]}]
    assert "extra_key" not in read_parquet(main_file)[1]
    flat = pq.read_table(sentences).to_pylist()
    assert [(r["id"], r["sentence"], r["score"], r["kept"], r["rank"]) for r in flat] == [
        ("a", "0:0", None, False, None), ("b", "0:0", 0.75, True, 0)]


@pytest.fixture
def counting() -> Iterator[None]:
    """The counting plugins for one test; the registry is fresh again afterwards."""
    cp.install()
    yield
    reset_registry()


@pytest.mark.slow
def test_parquet_run_round_trips_and_the_report_reads_it(tmp_path: Path, capsys: pytest.CaptureFixture[str], counting: None) -> None:
    config = tmp_path / "c.toml"
    config.write_text(CONFIG)
    run = tmp_path / "run"
    assert main(["evaluate", "-c", str(config), "--parquet", "-q", "--out", str(run)]) == 0
    for label in ("none", "bm25"):
        jsonl = run / "predictions" / f"{label}.jsonl"
        records = read_records(jsonl)
        assert len(records) == 4 and sum(r["prediction"] is not None for r in records) == 3
        assert read_parquet(jsonl.with_suffix(".parquet")) == records
        flat = pq.read_table(jsonl.with_suffix(".sentences.parquet")).to_pylist()
        assert [(r["sentence"], r["score"], r["kept"]) for r in flat] == [
            (s["id"], s["score"], s["kept"]) for rec in records for s in rec["sentences"]]
    assert any(s["score"] is not None for s in read_records(run / "predictions" / "bm25.jsonl")[0]["sentences"])

    report = (run / "report.html").read_text()
    for label in ("none", "bm25"):  # a run kept as Parquet only
        (run / "predictions" / f"{label}.jsonl").unlink()
    assert read_predictions(run / "predictions" / "bm25.jsonl") == read_parquet(run / "predictions" / "bm25.parquet")
    assert main(["report", str(run), "-q"]) == 0
    assert (run / "report.html").read_text() == report


@pytest.mark.slow
def test_evaluation_table_parquet_setting(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[compressor]\nname = "bm25"\n[evaluation]\nlimit = 2\nwarmup = 0\nparquet = true\n'
                      'bootstrap_samples = 100\nmetrics = ["evidence"]\n')
    assert main(["evaluate", "-c", str(config), "--no-reader", "-q", "--out", str(tmp_path / "run")]) == 0
    assert [r["id"] for r in read_parquet(tmp_path / "run" / "predictions" / "bm25.parquet")] == [
        r["id"] for r in read_records(tmp_path / "run" / "predictions" / "bm25.jsonl")]
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["run"]["evaluation"]["parquet"] is True


def test_a_broken_parquet_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "x.parquet"
    bad.write_bytes(b"not parquet")
    from ragsift.errors import DataFormatError

    with pytest.raises(DataFormatError, match="x.parquet: not a readable Parquet file"):
        read_parquet(bad)

"""End to end: ``ragsift evaluate`` with the ``openai`` reader against a real llama.cpp server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from llamacpp_server import LlamaCppServer, llamacpp_server

from ragsift.cli import main
from ragsift.evaluation.predictions import read_records

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DATA = Path(__file__).parents[1] / "data" / "hotpotqa-train-sf100.json"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LlamaCppServer]:
    with llamacpp_server(tmp_path) as running:
        yield running


def test_evaluate_reads_through_llamacpp(server: LlamaCppServer, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "run.toml"
    config.write_text(f"""
[compressors.oracle]
name = "oracle"
[compressors.bm25]
name = "bm25"
[reader]
name = "openai"
base_url = "{server.base_url}"
model = "{server.model}"
max_new_tokens = 16
stop = ["\\n"]
max_concurrency = 2
[evaluation]
limit = 2
warmup = 0
batch_size = 2
""")
    out = tmp_path / "run"
    assert main(["evaluate", "-c", str(config), "-d", str(DATA), "-o", str(out), "-q"]) == 0
    table = capsys.readouterr().out
    assert "EM" in table and "oracle" in table and "bm25" in table
    for label in ("oracle", "bm25"):
        records = read_records(out / "predictions" / f"{label}.jsonl")
        assert len(records) == 2
        for record in records:
            assert record["prediction"], record
            assert record["reader"]["prompt_tokens"] > 40
            assert {"em", "f1", "accuracy", "evidence_recall", "compressed_tokens"} <= set(record["metrics"])
            assert record["timings"]["read"] > 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["baseline"] == "oracle" and "f1" in summary["comparisons"]["bm25"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["reader"]["server"] == server.base_url and manifest["reader"]["model"] == server.model

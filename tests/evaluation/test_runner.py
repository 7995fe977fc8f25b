"""``run_evaluation`` in-process: records, summary, manifest, refusals, reader failures and resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from openai_fakes import fake_openai_server

from ragsift.datasets import load_examples
from ragsift.errors import ConfigError
from ragsift.evaluation.predictions import read_records
from ragsift.evaluation.run.manifest import sha256_file
from ragsift.evaluation.run.runner import EvaluationInterrupted, RunOptions, run_evaluation

DATA = Path(__file__).parents[1] / "data"
HOTPOT = DATA / "hotpotqa-train-sf100.json"  # development data with gold evidence


def _config(tmp_path: Path, body: str, data: Path = HOTPOT) -> Path:
    path = tmp_path / "run.toml"
    path.write_text(f'[dataset]\nname = "hotpotqa"\npath = "{data}"\n' if data == HOTPOT else "")
    path.write_text(path.read_text() + body)
    return path


def _run(config: Path, out: Path, **kw: object) -> dict:  # type: ignore[type-arg]
    echoed: list[str] = []
    options = RunOptions(config=config, out=out, progress=False, echo=echoed.append, **kw)  # type: ignore[arg-type]
    summary = run_evaluation(options)
    assert echoed and "compressor" in echoed[0]
    return summary


BASELINES = """
[compressors.none]
name = "none"
[compressors.oracle]
name = "oracle"
[compressors.bm25]
name = "bm25"
[evaluation]
limit = 5
warmup = 0
metrics = ["evidence", "answer-retention", "empty", "exact-match", "f1"]
"""


def test_no_reader_run_writes_records_summary_and_manifest(tmp_path: Path) -> None:
    config = _config(tmp_path, BASELINES)
    out = tmp_path / "run"
    summary = _run(config, out, no_reader=True, argv=["ragsift", "evaluate", "--no-reader"])
    for label in ("none", "oracle", "bm25"):
        records = read_records(out / "predictions" / f"{label}.jsonl")
        assert len(records) == 5
        record = records[0]
        assert record["compressor"] == label and record["prediction"] is None
        assert {"kept", "sentences", "compressed_text", "metrics", "timings"} <= set(record)
        assert all("score" in s and "kept" in s for s in record["sentences"])
        assert "em" not in record["metrics"] and "evidence_recall" in record["metrics"]
        assert "compress" in record["timings"]
    oracle = summary["compressors"]["oracle"]["values"]
    assert oracle["evidence_precision"]["mean"] == 100.0 and oracle["evidence_recall"]["mean"] == 100.0
    assert summary["compressors"]["none"]["values"]["evidence_recall"]["mean"] == 100.0
    bm25 = summary["compressors"]["bm25"]["values"]["evidence_recall"]
    assert bm25["low"] <= bm25["mean"] <= bm25["high"] and bm25["n"] == 5
    assert summary["baseline"] == "none" and "evidence_precision" in summary["comparisons"]["oracle"]
    assert json.loads((out / "summary.json").read_text())["compressors"].keys() == {"none", "oracle", "bm25"}
    assert "| oracle | 5 |" in (out / "summary.md").read_text()

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["records"] == {"none": 5, "oracle": 5, "bm25": 5}
    assert manifest["config"]["sha256"] == sha256_file(config)
    assert manifest["input"]["sha256"] == sha256_file(HOTPOT)
    assert manifest["command_line"] == ["ragsift", "evaluate", "--no-reader"]
    assert manifest["ragsift_version"] and "numpy" in manifest["packages"] and "cpu_count" in manifest["device"]
    assert len(manifest["git"].get("commit", "")) == 40
    assert (out / "config.toml").read_bytes() == config.read_bytes()


def test_refusals(tmp_path: Path) -> None:
    config = _config(tmp_path, BASELINES.replace("limit = 5", "limit = 2"))
    out = tmp_path / "run"
    _run(config, out, no_reader=True)
    with pytest.raises(ConfigError, match="already holds a run"):
        _run(config, out, no_reader=True)
    with pytest.raises(ConfigError, match="--no-reader differs"):
        _run(config, out, resume=True)
    config.write_text(config.read_text().replace("limit = 2", "limit = 3"))
    with pytest.raises(ConfigError, match="config file changed"):
        _run(config, out, no_reader=True, resume=True)
    bad = _config(tmp_path, BASELINES + "baseline = 'exit'\n")
    with pytest.raises(ConfigError, match="baseline 'exit' is not a compressor label"):
        _run(bad, tmp_path / "other", no_reader=True)
    assert not (tmp_path / "other").exists()  # the plan is checked before anything is written


def test_examples_without_gold_evidence_have_no_evidence_metrics(tmp_path: Path) -> None:
    config = _config(tmp_path, BASELINES.replace('[compressors.oracle]\nname = "oracle"\n', ""), data=DATA)
    summary = _run(config, tmp_path / "run", data=DATA / "dpr-nq-dev-sample.json", limit=3, no_reader=True)
    records = read_records(tmp_path / "run" / "predictions" / "bm25.jsonl")
    assert len(records) == 3
    assert not any(k.startswith("evidence") for r in records for k in r["metrics"])
    assert "answer_retention" in records[0]["metrics"]
    assert "evidence_recall" not in summary["metrics"]


def _gold_answering_server(script: list[int], block_after: int | None = None):  # type: ignore[no-untyped-def]
    gold = {ex.question: ex.answers[0] for ex in load_examples(HOTPOT, limit=10)}

    def answer(body: dict) -> str:  # type: ignore[type-arg]
        question = body["messages"][-1]["content"].removeprefix("Query: ").removesuffix("\nAnswer:")
        return gold[question]

    return fake_openai_server(script, answer, block_after=block_after)


def _reader_config(tmp_path: Path, base_url: str, limit: int = 5) -> Path:
    return _config(tmp_path, f"""
[compressors.none]
name = "none"
[compressors.oracle]
name = "oracle"
[reader]
name = "openai"
base_url = "{base_url}"
model = "fake"
api_key_env = "RAGSIFT_TEST_KEY"
max_retries = 1
backoff_seconds = 0.0
[evaluation]
limit = {limit}
warmup = 0
metrics = ["exact-match", "f1", "accuracy", "evidence"]
""")


def test_a_failing_server_stops_the_run_with_a_clear_error(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with _gold_answering_server([200, 200, 200, 500]) as server:
        config = _reader_config(tmp_path, server.base_url)
        with pytest.raises(EvaluationInterrupted) as info:
            _run(config, out)
        message = str(info.value)
        assert "HTTP 500" in message and server.base_url.removesuffix("/v1") in message
        assert "3 of 5 examples are saved" in message and "--resume" in message
        assert len(server.requests) == 5  # 3 answered, then 1 try + 1 retry
    assert [r["metrics"]["em"] for r in read_records(out / "predictions" / "none.jsonl")] == [1.0, 1.0, 1.0]
    assert json.loads((out / "manifest.json").read_text())["status"] == "failed"



def test_resume_after_a_reader_failure_keeps_every_example_once(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with _gold_answering_server([200, 200, 500]) as server:
        config = _reader_config(tmp_path, server.base_url)
        with pytest.raises(EvaluationInterrupted):
            _run(config, out)
        assert len(read_records(out / "predictions" / "none.jsonl")) == 2
        server.script = [200]  # the server recovers
        summary = _run(config, out, resume=True)
    for label in ("none", "oracle"):
        ids = [r["id"] for r in read_records(out / "predictions" / f"{label}.jsonl")]
        assert len(ids) == len(set(ids)) == 5
    assert summary["compressors"]["oracle"]["values"]["em"]["mean"] == 100.0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and len(manifest["resumed"]) == 1


def test_per_compressor_limits_and_paired_tests_on_shared_examples(tmp_path: Path) -> None:
    config = _config(tmp_path, BASELINES.replace("limit = 5", "limit = 4\nlimits = {bm25 = 2}"))
    summary = _run(config, tmp_path / "run", no_reader=True)
    assert [summary["compressors"][k]["n"] for k in ("none", "oracle", "bm25")] == [4, 4, 2]
    assert summary["comparisons"]["bm25"]["evidence_recall"]["n"] == 2
    assert summary["comparisons"]["oracle"]["evidence_recall"]["n"] == 4
    wrong = _config(tmp_path, BASELINES + "limits = {exit = 2}\n")
    with pytest.raises(ConfigError, match="limits: exit not compressor label"):
        _run(wrong, tmp_path / "other", no_reader=True)


def test_reader_limit_reads_only_the_first_examples(tmp_path: Path) -> None:
    with _gold_answering_server([200]) as server:
        config = _reader_config(tmp_path, server.base_url, limit=4)
        config.write_text(config.read_text() + "reader_limit = 2\n")
        summary = _run(config, tmp_path / "run")
        assert len(server.requests) == 2 * 2  # two compressors, two examples each
    records = read_records(tmp_path / "run" / "predictions" / "oracle.jsonl")
    assert [r["prediction"] is not None for r in records] == [True, True, False, False]
    assert "em" not in records[3]["metrics"] and "read" not in records[3]["timings"]
    assert "evidence_recall" in records[3]["metrics"]
    assert summary["compressors"]["oracle"]["values"]["em"]["n"] == 2
    assert summary["compressors"]["oracle"]["values"]["evidence_recall"]["n"] == 4

"""Configs as a catalogue (issue 51): ``evaluate -c CONFIG#LABEL`` and ``--compressors a,b`` run some
of a config's compressors (the run holds only those), and a run that failed before its first record
starts again without flags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from openai_fakes import fake_openai_server

from ragsift.cli import main
from ragsift.datasets import load_examples
from ragsift.evaluation.predictions import read_records

DATA = Path(__file__).parents[1] / "data"
HOTPOT = DATA / "hotpotqa-train-sf100.json"

CONFIG = f"""
[dataset]
name = "hotpotqa"
path = "{HOTPOT}"
[compressors.none]
name = "none"
[compressors.oracle]
name = "oracle"
[compressors.bm25]
name = "bm25"
[compressors.random]
name = "random"
[evaluation]
limit = 3
warmup = 0
metrics = ["evidence", "empty"]
primary = "oracle"
limits = {{random = 2}}
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "four.toml"
    path.write_text(CONFIG)
    return path


def _evaluate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["evaluate", "--no-reader", "-q", *args])
    return code, capsys.readouterr().err


def test_compressors_runs_only_those_and_the_run_holds_only_those(tmp_path: Path, config: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    code, err = _evaluate(capsys, "-c", str(config), "--compressors", "none, bm25", "--out", str(out))
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["compressors"]) == {"none", "bm25"} and summary["baseline"] == "none"
    assert sorted(p.name for p in (out / "predictions").iterdir()) == ["bm25.jsonl", "none.jsonl"]
    assert len(read_records(out / "predictions" / "bm25.jsonl")) == 3
    assert summary.get("primary") is None  # the declared primary (oracle) was not run: no primary comparison
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["config"]["compressors"]) == {"none", "bm25"}
    assert "oracle" not in (out / "report.html").read_text(encoding="utf-8")
    # resuming with other compressors would mix two runs into one: refused
    code, err = _evaluate(capsys, "-c", str(config), "--out", str(out), "--resume")
    assert code == 2 and "the compressors differ" in err


def test_the_baseline_must_be_among_the_compressors(tmp_path: Path, config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _evaluate(capsys, "-c", str(config), "--compressors", "oracle,bm25", "--out", str(tmp_path / "run"))
    assert code == 2
    assert "baseline 'none'" in err and "not among the compressors chosen (oracle, bm25)" in err
    assert "--compressors none,oracle,bm25" in err
    assert not (tmp_path / "run").exists()  # refused before anything is written
    code, err = _evaluate(capsys, "-c", str(config), "--compressors", "none,bm52", "--out", str(tmp_path / "run"))
    assert code == 2 and "no compressor labelled 'bm52'" in err and "bm25" in err


def test_config_hash_label_runs_one_compressor_split_on_the_last_hash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "a#b"  # a '#' in the folder's name: the label is what follows the last one
    folder.mkdir()
    config = folder / "four.toml"
    config.write_text(CONFIG)
    out = tmp_path / "run"
    code, err = _evaluate(capsys, "-c", f"{config}#bm25", "--out", str(out))
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["compressors"]) == ["bm25"] and summary["baseline"] == "bm25"
    code, err = _evaluate(capsys, "-c", f"{config}#bm25", "--compressors", "none,bm25", "--out", str(tmp_path / "x"))
    assert code == 2 and "not both" in err


def test_compress_picks_the_compressor_labelled_as_the_config_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "bm25.toml"  # two compressors, one labelled as the file is named
    config.write_text(f'[dataset]\nname = "hotpotqa"\npath = "{HOTPOT}"\n'
                      '[compressors.none]\nname = "none"\n[compressors.bm25]\nname = "bm25"\nselector = {k = 1}\n')
    out = tmp_path / "out.jsonl"
    assert main(["compress", "-c", str(config), "--limit", "2", "-q", "-o", str(out)]) == 0, capsys.readouterr().err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["compressor"] for r in records] == ["bm25", "bm25"]
    assert all(sum(s["kept"] for s in r["sentences"]) == 1 for r in records)
    other = tmp_path / "pair.toml"  # no label is the config's name: still refused, with the way out
    other.write_text(config.read_text())
    assert main(["compress", "-c", str(other), "--limit", "1", "-q"]) == 2
    assert "needs a config with one compressor" in capsys.readouterr().err


def _reader_config(tmp_path: Path, base_url: str) -> Path:
    path = tmp_path / "read.toml"
    path.write_text(f"""
[dataset]
name = "hotpotqa"
path = "{HOTPOT}"
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
limit = 3
warmup = 0
metrics = ["exact-match", "evidence"]
""")
    return path


def test_a_run_that_failed_before_its_first_record_starts_again_without_flags(tmp_path: Path,
                                                                              capsys: pytest.CaptureFixture[str]) -> None:
    gold = {ex.question: ex.answers[0] for ex in load_examples(HOTPOT, limit=5)}

    def answer(body: dict) -> str:  # type: ignore[type-arg]
        return gold[body["messages"][-1]["content"].removeprefix("Query: ").removesuffix("\nAnswer:")]

    out = tmp_path / "run"
    with fake_openai_server([500, 500, 500, 500], answer) as server:
        config = _reader_config(tmp_path, server.base_url)
        assert main(["evaluate", "-q", "-c", str(config), "--out", str(out)]) != 0
        capsys.readouterr()
        assert json.loads((out / "manifest.json").read_text())["status"] == "failed"
        assert not any(p.stat().st_size for p in (out / "predictions").rglob("*") if p.is_file())
        server.script = [200]  # the problem is fixed: the same command runs again, no --resume, no new --out
        assert main(["evaluate", "-q", "-c", str(config), "--out", str(out)]) == 0, capsys.readouterr().err
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["records"] == {"none": 3, "oracle": 3}
    assert "resumed" not in manifest


def test_a_failed_run_with_records_is_still_refused_without_resume(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    config = tmp_path / "four.toml"
    config.write_text(CONFIG)
    assert main(["evaluate", "--no-reader", "-q", "-c", str(config), "--out", str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps({**manifest, "status": "failed"}))  # records kept: never cleared
    assert main(["evaluate", "--no-reader", "-q", "-c", str(config), "--out", str(out)]) == 2
    assert "already holds a run" in capsys.readouterr().err
    assert len(read_records(out / "predictions" / "bm25.jsonl")) == 3

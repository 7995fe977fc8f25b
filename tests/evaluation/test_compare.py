"""``ragsift compare``: runs made separately combine into the summary of one run holding every
compressor (paired by question id), and runs that cannot be combined are refused, naming why."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from ragsift.cli import main
from ragsift.errors import ConfigError
from ragsift.evaluation.run.compare import compare_runs, parse_rename, parse_run
from ragsift.evaluation.run.compare_checks import check_comparable
from ragsift.evaluation.run.runner import RunOptions, run_evaluation

DATA = Path(__file__).parent.parent / "data" / "hotpotqa-train-sf100.json"


def _run(root: Path, name: str, compressors: list[str], *, data: Path = DATA, limit: int = 5,
         evaluation: str = "") -> Path:
    config = root / f"{name}.toml"
    tables = "".join(f'[compressors.{c}]\nname = "{c}"\n' for c in compressors)
    config.write_text(f'[dataset]\nname = "hotpotqa"\npath = "{data}"\n{tables}'
                      f"[evaluation]\nlimit = {limit}\nwarmup = 0\nbootstrap_samples = 200\n{evaluation}\n")
    out = root / name
    run_evaluation(RunOptions(config=config, out=out, no_reader=True, progress=False, echo=lambda _: None))
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("compare")
    changed = root / "changed.json"  # the same questions, one other: another data file
    records = json.loads(DATA.read_text(encoding="utf-8"))
    records[0]["question"] += " (edited)"
    changed.write_text(json.dumps(records), encoding="utf-8")
    return {
        "both": _run(root, "both", ["none", "bm25", "oracle"]),
        "a": _run(root, "a", ["none", "bm25"]),
        "b": _run(root, "b", ["none", "oracle"]),
        "other-data": _run(root, "other-data", ["oracle"], data=changed),
        "other-metrics": _run(root, "other-metrics", ["oracle"], evaluation='metrics = ["evidence", "empty"]'),
        "other-limit": _run(root, "other-limit", ["oracle"], limit=3),
    }


def _numbers(summary: dict[str, Any]) -> dict[str, Any]:
    """A summary without what differs between two runs of the same records: where it was
    written, and the latencies (measured anew by every run)."""
    out = {k: v for k, v in summary.items() if k not in ("run_dir", "config")}
    out["compressors"] = {label: {k: v for k, v in c.items() if k != "latency_ms"}
                          for label, c in summary["compressors"].items()}
    return out


def test_two_runs_combine_into_the_summary_of_one_run(runs: dict[str, Path], tmp_path: Path) -> None:
    result = compare_runs([str(runs["a"]), f"{runs['b']}#oracle"], tmp_path / "ab", echo=None)
    one = json.loads((runs["both"] / "summary.json").read_text())
    combined = json.loads((tmp_path / "ab" / "summary.json").read_text())
    assert combined == result.summary
    assert set(combined["compressors"]) == {"none", "bm25", "oracle"}
    assert combined["baseline"] == "none"
    assert set(combined["comparisons"]) == {"bm25", "oracle"}
    assert _numbers(combined) == _numbers(one)  # same means, intervals, paired tests, Holm families
    assert (tmp_path / "ab" / "report.html").is_file()
    manifest = json.loads((tmp_path / "ab" / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert [s["run_dir"] for s in manifest["compared_from"]] == [os.path.relpath(r, tmp_path / "ab")
                                                                 for r in (runs["a"], runs["b"])]
    assert manifest["compared_from"][1]["compressors"] == {"oracle": "oracle"}
    assert all(len(s["manifest_sha256"]) == 64 for s in manifest["compared_from"])
    assert manifest["questions"] == {"paired_on": "every question of the runs", "count": 5}


def test_question_order_does_not_change_the_pairing(runs: dict[str, Path], tmp_path: Path) -> None:
    shuffled = tmp_path / "b-reversed"
    shutil.copytree(runs["b"], shuffled)
    path = shuffled / "predictions" / "oracle.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(reversed(lines)), encoding="utf-8")
    compare_runs([str(runs["a"]), f"{shuffled}#oracle"], tmp_path / "ab", echo=None)
    combined = json.loads((tmp_path / "ab" / "summary.json").read_text())
    one = json.loads((runs["both"] / "summary.json").read_text())
    assert _numbers(combined) == _numbers(one)


def test_the_combined_folder_is_a_run_that_report_reads(runs: dict[str, Path], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ab"
    assert main(["compare", str(runs["a"]), f"{runs['b']}#oracle", "--out", str(out), "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)  # only the summary on stdout: it parses
    assert set(printed["compressors"]) == {"none", "bm25", "oracle"}
    (out / "report.html").unlink()
    assert main(["report", str(out), "--quiet"]) == 0
    assert (out / "report.html").is_file()
    assert main(["report", str(out), "--format", "md"]) == 0
    assert "| oracle |" in capsys.readouterr().out


def test_the_table_is_printed_as_evaluate_prints_it(runs: dict[str, Path], tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(runs["a"]), f"{runs['b']}#oracle", "--out", str(tmp_path / "ab")]) == 0
    out = capsys.readouterr().out
    assert "difference vs 'none' (paired by example id" in out
    assert out.splitlines()[0].startswith("compressor  n")
    assert f"report: {tmp_path / 'ab' / 'report.html'}" in out


def test_a_duplicate_label_is_refused_with_the_ways_out(runs: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        compare_runs([str(runs["a"]), str(runs["b"])], tmp_path / "ab", echo=None)
    message = str(err.value)
    assert "'none' is in both" in message and str(runs["a"]) in message and str(runs["b"]) in message
    assert f"{runs['b']}#oracle" in message and f"--rename {runs['b']}#none=NEW" in message
    assert not (tmp_path / "ab").exists()  # refused before anything is written


def test_rename_keeps_both_and_baseline_picks_the_reference(runs: dict[str, Path], tmp_path: Path) -> None:
    result = compare_runs([str(runs["a"]), str(runs["b"])], tmp_path / "ab", renames=[f"{runs['b']}#none=none-b"],
                          baseline="bm25", echo=None)
    assert list(result.summary["compressors"]) == ["none", "bm25", "none-b", "oracle"]
    assert result.summary["baseline"] == "bm25"
    assert set(result.summary["comparisons"]) == {"none", "none-b", "oracle"}
    # the two runs' 'none' compress the same way: the renamed one pairs with it, question by question
    # (the bootstrap intervals differ: each compressor's resampling is seeded by its label)
    same, renamed = (result.summary["comparisons"][label]["evidence_f1"] for label in ("none", "none-b"))
    assert (same["mean_difference"], same["p_value"], same["n"]) == (renamed["mean_difference"], renamed["p_value"], 5)
    records = [json.loads(line) for line in (tmp_path / "ab" / "predictions" / "none-b.jsonl").read_text().splitlines()]
    assert {r["compressor"] for r in records} == {"none-b"}
    with pytest.raises(ConfigError, match="--baseline 'nope' is not a compressor"):
        compare_runs([str(runs["a"]), f"{runs['b']}#oracle"], tmp_path / "x", baseline="nope", echo=None)


@pytest.mark.parametrize(("other", "what"), [
    ("other-data", "differ in the input data"),
    ("other-metrics", "differ in the metrics: answer-retention: 'used' vs (absent)"),
    ("other-limit", "differ in the limit: 5 vs 3; they hold different questions"),
])
def test_runs_that_differ_are_refused_naming_the_difference(runs: dict[str, Path], tmp_path: Path, other: str,
                                                            what: str) -> None:
    with pytest.raises(ConfigError) as err:
        compare_runs([str(runs["a"]), str(runs[other])], tmp_path / "x", echo=None)
    message = str(err.value)
    assert what in message, message
    assert f"{runs['a']} and {runs[other]}" in message


def test_the_data_refusal_names_the_files(runs: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"changed\.json\)") as err:
        compare_runs([str(runs["a"]), str(runs["other-data"])], tmp_path / "x", echo=None)
    assert "sha256" in str(err.value)


def _manifest(reader: dict[str, Any] | None) -> dict[str, Any]:
    return {"input": {"sha256": "ab" * 32, "format": "hotpotqa"}, "run": {"limit": 5, "no_reader": reader is None},
            "reader": reader, "metrics": [{"name": "em"}], "status": "complete"}


def _reader(model: str, base_url: str = "http://127.0.0.1:8000/v1", temperature: float = 0.0) -> dict[str, Any]:
    config = {"model": model, "base_url": base_url, "temperature": temperature, "timeout": 60.0}
    return {"name": "openai", "class": "OpenAIReader", "config": config, "server": base_url, "model": model}


def test_a_reader_that_answers_otherwise_is_refused() -> None:
    a, b = Path("runs/a"), Path("runs/b")
    with pytest.raises(ConfigError, match=r"runs/a and runs/b differ in the reader: reader\.config\.model: 'qwen' vs 'llama'"):
        check_comparable([(a, _manifest(_reader("qwen"))), (b, _manifest(_reader("llama")))])
    with pytest.raises(ConfigError, match=r"reader\.config\.temperature: 0\.0 vs 0\.7"):
        check_comparable([(a, _manifest(_reader("qwen"))), (b, _manifest(_reader("qwen", temperature=0.7)))])
    with pytest.raises(ConfigError, match=r"no_reader: False vs True"):
        check_comparable([(a, _manifest(_reader("qwen"))), (b, _manifest(None))])
    # where the server ran, and how long a request may wait, change no answer
    check_comparable([(a, _manifest(_reader("qwen"))), (b, _manifest(_reader("qwen", "http://gpu:9000/v1")))])


def test_unfinished_runs_are_refused_unless_common_questions(runs: dict[str, Path], tmp_path: Path) -> None:
    paused = tmp_path / "b-paused"
    shutil.copytree(runs["b"], paused)
    manifest = json.loads((paused / "manifest.json").read_text())
    manifest["status"] = "paused"
    (paused / "manifest.json").write_text(json.dumps(manifest))
    path = paused / "predictions" / "oracle.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[2:]), encoding="utf-8")  # its first two questions not answered
    with pytest.raises(ConfigError, match=rf"{paused} did not finish \(status: paused\).*--common-questions"):
        compare_runs([str(runs["a"]), f"{paused}#oracle"], tmp_path / "x", echo=None)

    echoed: list[str] = []
    result = compare_runs([str(runs["a"]), f"{paused}#oracle"], tmp_path / "common", common_questions=True,
                          echo=echoed.append)
    kept = {json.loads(line)["id"] for line in lines[2:]}
    assert result.summary["examples"] == 3
    assert {c["n"] for c in result.summary["compressors"].values()} == {3}
    assert {r["id"] for r in result.records["bm25"]} == kept
    assert echoed[0].startswith("paired on the 3 questions every compressor answered (--common-questions)")
    saved = json.loads((tmp_path / "common" / "manifest.json").read_text())
    assert saved["questions"]["count"] == 3 and saved["questions"]["left_out"] == {"none": 2, "bm25": 2, "oracle": 0}
    assert "Paired on the 3 questions every compressor answered" in (tmp_path / "common" / "summary.md").read_text()
    page = (tmp_path / "common" / "report.html").read_text(encoding="utf-8")
    assert "the questions every compressor answered (--common-questions): 3 questions; left out: none 2, bm25 2" in page
    assert "b-paused" in page  # the runs it was made from, relative to it


def test_common_questions_pairs_runs_of_other_limits(runs: dict[str, Path], tmp_path: Path) -> None:
    result = compare_runs([str(runs["a"]), str(runs["other-limit"])], tmp_path / "x", common_questions=True, echo=None)
    assert result.summary["examples"] == 3
    assert set(result.summary["compressors"]) == {"none", "bm25", "oracle"}


def test_run_and_rename_arguments(runs: dict[str, Path]) -> None:
    assert parse_run(str(runs["a"])) == (runs["a"], None)
    assert parse_run(f"{runs['a']}#bm25") == (runs["a"], "bm25")
    assert parse_rename(f"{runs['a']}#bm25@k=3=bm25-k3") == (runs["a"], "bm25@k=3", "bm25-k3")
    with pytest.raises(ConfigError, match="give RUN#LABEL=NEW"):
        parse_rename(str(runs["a"]))
    with pytest.raises(ConfigError, match="no compressor labelled 'bm52'.*Did you mean 'bm25'"):
        compare_runs([f"{runs['a']}#bm52", str(runs["b"])], Path("unused"), echo=None)

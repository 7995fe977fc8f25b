"""Score once, select many: a sweep scores each sentence once, reads each distinct context once,
and gives the results of separate runs; the score cache survives a killed run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import counting_plugins as cp
import pytest

from ragsift.datasets import load_examples
from ragsift.errors import ConfigError
from ragsift.evaluation.predictions import prediction_path, read_records
from ragsift.evaluation.run.runner import RunOptions, run_evaluation
from ragsift.evaluation.run.sweep import point_label
from ragsift.registry import reset_registry
from ragsift.splitters.sentencizer import SentencizerSplitter

TESTS = Path(__file__).parents[1]
HOTPOT = TESTS / "data" / "hotpotqa-train-sf100.json"  # development data
THRESHOLDS = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0]
STAGES = """
[compressors.{label}.splitter]
name = "sentencizer"
[compressors.{label}.scorer]
name = "counting-bm25"
[compressors.{label}.selector]
name = "threshold"
threshold = {threshold}
[compressors.{label}.assembler]
name = "original-order"
"""
#: what a point's records share with a separate run's (timings and cache notes differ)
SAME = ("id", "kept", "empty", "compressed_text", "sentences", "prediction", "metrics")


@pytest.fixture(autouse=True)
def counting() -> object:
    reset_registry()
    cp.install()
    yield
    reset_registry()


def _compressor(label: str, threshold: float) -> str:
    return f'[compressors.{label}]\nname = "pipeline"\n' + STAGES.format(label=label, threshold=threshold)


def _config(tmp_path: Path, body: str, evaluation: str = "", limit: int = 4, reader: bool = True,
            warmup: int = 0) -> Path:
    path = tmp_path / f"run{len(list(tmp_path.glob('run*.toml')))}.toml"
    path.write_text(f'[dataset]\nname = "hotpotqa"\npath = "{HOTPOT}"\n' + body
                    + ('[reader]\nname = "counting"\n' if reader else "")
                    + f'[evaluation]\nlimit = {limit}\nwarmup = {warmup}\nbootstrap_samples = 200\n'
                    + 'metrics = ["evidence", "empty", "exact-match", "f1"]\n' + evaluation)
    return path


def _run(config: Path, out: Path) -> dict:  # type: ignore[type-arg]
    return run_evaluation(RunOptions(config=config, out=out, progress=False, echo=lambda _: None))


def _sentences(limit: int) -> int:
    splitter = SentencizerSplitter()
    return sum(len(splitter.split_all(ex.documents)) for ex in load_examples(HOTPOT, limit=limit))


def test_a_threshold_sweep_scores_once_and_equals_separate_runs(tmp_path: Path) -> None:
    sweep = f"[evaluation.sweep.bm25.selector]\nthreshold = {THRESHOLDS}\n"
    summary = _run(_config(tmp_path, '[compressors.none]\nname = "none"\n' + _compressor("bm25", 0.5), sweep),
                   tmp_path / "sweep")
    total = _sentences(4)
    assert sum(cp.SCORED) == total and len(cp.SCORED) == 4  # 10 points, each sentence scored once
    sweep_reads = list(cp.READ)
    labels = [f"bm25@threshold={t}" for t in THRESHOLDS]
    assert list(summary["compressors"]) == ["none", *labels]
    assert all(summary["compressors"][label]["family"] == "bm25" for label in labels)
    assert "family" not in summary["compressors"]["none"]

    # the same ten settings as ten compressors that share nothing
    cp.SCORED.clear()
    cp.READ.clear()
    separate = "".join(_compressor(f"t{i}", t) for i, t in enumerate(THRESHOLDS))
    _run(_config(tmp_path, separate, 'cache = "off"\n'), tmp_path / "separate")
    assert sum(cp.SCORED) == 10 * total
    for i, label in enumerate(labels):
        swept = read_records(prediction_path(tmp_path / "sweep", label))
        alone = read_records(prediction_path(tmp_path / "separate", f"t{i}"))
        assert len(swept) == len(alone) == 4
        for a, b in zip(swept, alone, strict=True):
            assert {k: a[k] for k in SAME} == {k: b[k] for k in SAME}, label
    kept = {len(r["kept"]) for label in labels for r in read_records(prediction_path(tmp_path / "sweep", label))}
    assert len(kept) > 3  # the grid really selects differently

    # the reader read each distinct (question, context) once in the sweep, ten times apart
    assert len(sweep_reads) == len(set(sweep_reads))
    contexts = {(r["question"], r["compressed_text"]) for label in ["none", *labels]
                for r in read_records(prediction_path(tmp_path / "sweep", label))}
    assert len(sweep_reads) == len(contexts) < 11 * 4
    assert len(cp.READ) == 10 * 4
    records = [r for label in labels for r in read_records(prediction_path(tmp_path / "sweep", label))]
    assert sum(r["reader"]["cached"] for r in records) == len(records) + 4 - len(contexts)
    manifest = json.loads((tmp_path / "sweep" / "manifest.json").read_text())
    assert manifest["caches"]["scores"] == {"hits": 9 * 4, "misses": 4}
    assert manifest["families"] == dict.fromkeys(labels, "bm25")


def test_a_hit_reports_the_scoring_time_measured_when_the_scores_were_computed(tmp_path: Path) -> None:
    sweep = "[evaluation.sweep.bm25.selector]\nthreshold = [0.0, 2.0]\n"
    _run(_config(tmp_path, _compressor("bm25", 0.5), sweep, limit=2, reader=False, warmup=1), tmp_path / "r")
    # warm-up scores one example without storing it (its cold timing is not replayed)
    assert sum(cp.SCORED) == _sentences(2) + _sentences(1)
    first, second = (read_records(prediction_path(tmp_path / "r", f"bm25@threshold={t}")) for t in (0.0, 2.0))
    for a, b in zip(first, second, strict=True):
        assert a["info"]["score_cache"]["hit"] is False and b["info"]["score_cache"]["hit"] is True
        assert b["timings"]["score"] == a["timings"]["score"] == b["info"]["score_cache"]["seconds"]
        assert b["timings"]["compress"] >= b["timings"]["score"]


def test_sweep_labels_limits_and_refusals(tmp_path: Path) -> None:
    assert point_label("exit", {("selector", "threshold"): 0.5}) == "exit@threshold=0.5"
    assert point_label("e", {("selector", "step"): 2, ("assembler", "title_prefix"): False}) == "e@step=2,title_prefix=false"
    assert point_label("e", {("selector", "k"): 2, ("assembler", "k"): 1}) == "e@selector.k=2,assembler.k=1"
    bm25 = '[compressors.none]\nname = "none"\n[compressors.bm25]\nname = "bm25"\n'
    summary = _run(_config(tmp_path, bm25, "limits = {bm25 = 2}\n[evaluation.sweep.bm25.selector]\nk = [1, 3]\n",
                           reader=False), tmp_path / "ok")
    assert {k: v["n"] for k, v in summary["compressors"].items()} == {"none": 4, "bm25@k=1": 2, "bm25@k=3": 2}
    bad = {
        "[evaluation.sweep.bm25.scorer]\nk1 = [1.2, 1.5]\n": "cannot be swept",
        "[evaluation.sweep.bm25.selector]\nk = 3\n": "non-empty list",
        "[evaluation.sweep.bm25.selector]\nname = [\"top-k\"]\n": "not the plugin",
        "[evaluation.sweep.bm25.selector]\nk = [1, 1]\n": "listed twice",
        "[evaluation.sweep.bm25.selector]\nk = [0]\n": "point 'bm25@k=0'",
        "[evaluation.sweep.bm26.selector]\nk = [1]\n": "bm26 not compressor",
        "[evaluation.sweep.none.selector]\nk = [1]\n": "no selector or assembler",
        "cache = \"\"\n": "cache",
    }
    for i, (table, message) in enumerate(bad.items()):
        with pytest.raises(ConfigError, match=message):
            _run(_config(tmp_path, bm25, table, reader=False), tmp_path / f"bad{i}")
        assert not (tmp_path / f"bad{i}").exists()


KILLED = """
import sys
sys.path.insert(0, {tests!r})
import counting_plugins
counting_plugins.install()
from ragsift.evaluation.run.runner import RunOptions, run_evaluation
run_evaluation(RunOptions(config={config!r}, out={out!r}, progress=False, echo=lambda _: None))
"""


@pytest.mark.slow
def test_the_score_cache_survives_a_killed_run(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    config = _config(tmp_path, _compressor("bm25", 1.0), f'cache = "{cache}"\n', limit=6, reader=False)
    log = tmp_path / "scored.log"
    env = {**os.environ, "COUNTING_SCORER_LOG": str(log), "COUNTING_SCORER_SLEEP": "0.5",
           "PYTHONPATH": str(TESTS.parent)}
    script = KILLED.format(tests=str(TESTS), config=str(config), out=str(tmp_path / "killed"))
    process = subprocess.Popen([sys.executable, "-c", script], env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not log.exists() or log.read_text().count("\n") < 3:
        assert time.monotonic() < deadline and process.poll() is None, process.stderr.read() if process.stderr else ""
        time.sleep(0.02)  # polling a file another process writes
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    stored = list((cache / "scores").glob("??/*.json"))
    assert 2 <= len(stored) <= 4  # the scores of the examples done before the kill
    for path in stored:
        assert json.loads(path.read_text())["key"] == path.stem  # complete entries only

    # a new run with the same cache: the stored scores are reused, the rest are computed
    _run(config, tmp_path / "rerun")
    assert len(cp.SCORED) == 6 - len(stored)
    assert len(list((cache / "scores").glob("??/*.json"))) == 6
    # and the results are those of a run without any cache
    fresh = _config(tmp_path, _compressor("bm25", 1.0), 'cache = "off"\n', limit=6, reader=False)
    _run(fresh, tmp_path / "fresh")
    rerun, clean = (read_records(prediction_path(tmp_path / d, "bm25")) for d in ("rerun", "fresh"))
    assert [{k: r[k] for k in SAME} for r in rerun] == [{k: r[k] for k in SAME} for r in clean]


def test_the_example_sweep_config_expands_and_stays_off_the_evaluation_file() -> None:
    from ragsift.config import load_config
    from ragsift.evaluation.run.settings import EvaluationSettings
    from ragsift.evaluation.run.sweep import expand_sweeps

    config = load_config(TESTS.parent / "configs" / "sweep.toml")
    settings = EvaluationSettings.from_table(config.evaluation, config.source)
    compressors, families = expand_sweeps(config.compressor_specs(), config.build_compressors(), settings.sweep,
                                          config.source)
    assert [label for label in compressors if label.startswith("bm25")] == [f"bm25@k={k}" for k in (1, 2, 3, 5, 8)]
    assert compressors["exit-offline@threshold=0.3"].config()["selector"] == {"name": "threshold", "threshold": 0.3}
    assert set(families.values()) == {"bm25", "exit-offline"}
    assert "dev-pool" in config.dataset["path"] and "sf100" not in config.dataset["path"]  # type: ignore[index]


def test_config_validate_reports_a_bad_sweep(tmp_path: Path) -> None:
    from ragsift.config import load_config
    from ragsift.evaluation.run.config_check import config_problems

    path = tmp_path / "bad.toml"
    path.write_text('[compressors.bm25]\nname = "bm25"\n[evaluation]\nlimits = {bm25 = 2, bm26 = 1}\n'
                    "[evaluation.sweep.bm25.selector]\nk = [1, 0]\n")
    problems = config_problems(load_config(path))
    assert any("point 'bm25@k=0'" in p for p in problems), problems
    path.write_text('[compressors.bm25]\nname = "bm25"\n[evaluation]\nlimits = {bm25 = 2, bm26 = 1}\n'
                    "[evaluation.sweep.bm25.selector]\nk = [1, 3]\n")
    problems = config_problems(load_config(path))
    assert len(problems) == 1 and "bm26 not compressor" in problems[0], problems  # a family's limit is fine


def test_a_sweep_over_a_stage_given_by_name(tmp_path: Path) -> None:
    """``selector = "top-k"`` (a plugin given by name) is {"name": "top-k"} before a point's values
    are laid over it (the one override rule); before, a sweep over it crashed with a TypeError."""
    from ragsift.config import load_config
    from ragsift.evaluation.run.settings import EvaluationSettings
    from ragsift.evaluation.run.sweep import expand_sweeps

    path = tmp_path / "named.toml"
    path.write_text('[compressors.bm25]\nname = "pipeline"\nsplitter = "sentencizer"\nscorer = "bm25"\n'
                    'selector = "top-k"\nassembler = "original-order"\n'
                    "[evaluation.sweep.bm25.selector]\nk = [1, 2]\n")
    config = load_config(path)
    settings = EvaluationSettings.from_table(config.evaluation, config.source)
    compressors, families = expand_sweeps(config.compressor_specs(), config.build_compressors(), settings.sweep,
                                          config.source)
    assert list(compressors) == ["bm25@k=1", "bm25@k=2"] and set(families.values()) == {"bm25"}
    assert [(c.config()["selector"]["name"], c.config()["selector"]["k"]) for c in compressors.values()] == [
        ("top-k", 1), ("top-k", 2)]
    (example,) = load_examples(HOTPOT, limit=1)
    assert [len(c.compress(example).kept) for c in compressors.values()] == [1, 2]

"""benchmarks/paired_difference.py: two compressors of one run compared on the examples both
finished, with hand-made predictions whose differences are known."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def script(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import paired_difference

    return paired_difference


def _write(run: Path, label: str, f1: dict[str, float]) -> None:
    from ragsift.evaluation.predictions import prediction_path

    path = prediction_path(run, label)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"id": i, "metrics": {"evidence_f1": v}}) + "\n" for i, v in f1.items()))


def test_pairs_by_id_on_shared_examples_and_reads_sweep_labels(script, tmp_path):
    _write(tmp_path, "judge", {"q1": 0.5, "q2": 0.5, "q3": 1.0, "only-a": 0.0})
    _write(tmp_path, "cut@k=8", {"q3": 0.5, "q2": 0.25, "q1": 0.25, "only-b": 1.0})
    n, comparisons = script.compare(tmp_path, "judge", "cut@k=8", ["evidence_f1"], patterns=200)
    c = comparisons["evidence_f1"]
    assert n == 3 and c.n == 3 and c.exact
    assert c.mean_difference == pytest.approx((0.25 + 0.25 + 0.5) / 3)
    assert c.p_value == pytest.approx(0.25)  # all three differences positive: 2 of 2^3 patterns as extreme


def test_a_missing_compressor_or_no_shared_example_is_a_clear_error(script, tmp_path):
    _write(tmp_path, "a", {"q1": 1.0})
    _write(tmp_path, "b", {"q2": 1.0})
    with pytest.raises(SystemExit, match="no predictions for compressor 'c'"):
        script.compare(tmp_path, "a", "c")
    with pytest.raises(SystemExit, match="share no finished example"):
        script.compare(tmp_path, "a", "b", ["evidence_f1"])


def _manifest(run: Path, sha: str, reader: dict) -> None:
    run.mkdir(parents=True, exist_ok=True)
    (run / "manifest.json").write_text(json.dumps({"input": {"path": "x.json", "sha256": sha}, "reader": reader}))


def test_b_from_another_run_of_the_same_input_and_reader(script, tmp_path):
    reader = {"config": {"model": "m", "max_new_tokens": 32}, "model": {"sha256": {"m.gguf": "abc"}}}
    new, reference = tmp_path / "new", tmp_path / "reference"
    _manifest(new, "s1", reader)
    _manifest(reference, "s1", reader)
    _write(new, "cascade", {"q1": 1.0, "q2": 1.0})
    _write(reference, "none", {"q1": 0.0, "q2": 1.0, "q3": 0.0})
    n, comparisons = script.compare(new, "cascade", "none", ["evidence_f1"], patterns=200, b_run=reference)
    assert n == 2 and comparisons["evidence_f1"].mean_difference == pytest.approx(0.5)
    with pytest.raises(SystemExit, match="no predictions for compressor 'none'"):
        script.compare(new, "cascade", "none", ["evidence_f1"])  # without --b-run, B is looked up in RUN_DIR


def test_b_from_a_run_of_another_input_or_reader_is_refused(script, tmp_path):
    reader = {"config": {"model": "m"}, "model": {"sha256": {"m.gguf": "abc"}}}
    _manifest(tmp_path / "a", "s1", reader)
    _manifest(tmp_path / "other-input", "s2", reader)
    _manifest(tmp_path / "other-reader", "s1", {**reader, "config": {"model": "m", "max_new_tokens": 8}})
    for run in ("a", "other-input", "other-reader"):
        _write(tmp_path / run, "x", {"q1": 1.0})
    with pytest.raises(SystemExit, match="different input files"):
        script.compare(tmp_path / "a", "x", "x", ["evidence_f1"], b_run=tmp_path / "other-input")
    with pytest.raises(SystemExit, match="different readers"):
        script.compare(tmp_path / "a", "x", "x", ["evidence_f1"], b_run=tmp_path / "other-reader")
    with pytest.raises(SystemExit, match="manifest.json: not found"):
        script.compare(tmp_path / "a", "x", "x", ["evidence_f1"], b_run=tmp_path / "missing")

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

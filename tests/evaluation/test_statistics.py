"""Bootstrap CIs and the paired test: sanity, determinism, known answers."""

from __future__ import annotations

import numpy as np
import pytest

from ragsift.evaluation.statistics import bootstrap_ci, paired_comparison


def test_ci_contains_the_mean_and_is_deterministic() -> None:
    values = np.random.default_rng(1).normal(50, 10, size=80)
    first = bootstrap_ci(values, samples=2000, seed=7)
    assert first.low < first.mean < first.high
    assert first.mean == pytest.approx(values.mean())
    assert bootstrap_ci(values, samples=2000, seed=7) == first
    assert bootstrap_ci(values, samples=2000, seed=8) != first
    # the width is close to the normal-theory 95% interval 2 * 1.96 * sd / sqrt(n)
    expected = 2 * 1.96 * values.std(ddof=1) / np.sqrt(len(values))
    assert first.high - first.low == pytest.approx(expected, rel=0.2)


def test_ci_edge_cases() -> None:
    assert bootstrap_ci([3.0]).to_dict() == {"mean": 3.0, "low": 3.0, "high": 3.0, "n": 1, "confidence": 0.95}
    constant = bootstrap_ci([1.0] * 10)
    assert constant.low == constant.high == 1.0
    with pytest.raises(ValueError):
        bootstrap_ci([])
    with pytest.raises(ValueError, match="finite"):
        bootstrap_ci([1.0, float("nan")])


def test_paired_test_detects_a_real_difference_and_not_noise() -> None:
    rng = np.random.default_rng(0)
    base = rng.normal(0, 1, size=100)
    better = base + 0.5 + rng.normal(0, 0.2, size=100)
    real = paired_comparison(better, base, samples=2000, seed=1)
    assert real.mean_difference == pytest.approx(float((better - base).mean()))
    assert real.p_value < 0.01 and real.low > 0
    noise = paired_comparison(base + rng.normal(0, 0.2, size=100), base, samples=2000, seed=1)
    assert noise.p_value > 0.05 and noise.low < 0 < noise.high
    assert paired_comparison(better, base, samples=2000, seed=1) == real


def test_paired_test_exact_cases() -> None:
    same = paired_comparison([1.0, 0.0, 1.0], [1.0, 0.0, 1.0])
    assert same.mean_difference == 0 and same.p_value == 1.0
    # the same shift on all 6 examples: only 2 of the 64 sign patterns are as extreme
    shift = paired_comparison([1.0] * 6, [0.0] * 6)
    assert shift.p_value == pytest.approx(2 / 64)
    with pytest.raises(ValueError, match="equally many"):
        paired_comparison([1.0], [1.0, 2.0])

"""The split-conformal threshold: its finite-sample rank against hand-computed cases, the edge cases
(too few questions, unreachable targets), and the promise itself in a seeded simulation of
exchangeable scores (numpy only)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragsift.calibration.conformal import conformal_rank, conformal_threshold, score_summary


def test_the_rank_is_floor_of_n_plus_one_times_alpha():
    assert conformal_rank(9, 0.1) == 1        # (9 + 1) * 0.1 = 1
    assert conformal_rank(8, 0.1) == 0        # 0.9 < 1: nothing guarantees coverage
    assert conformal_rank(99, 0.1) == 10
    assert conformal_rank(100, 0.1) == 10     # 10.1
    assert conformal_rank(18, 0.05) == 0      # 0.95
    assert conformal_rank(19, 0.05) == 1
    assert conformal_rank(205, 0.05) == 10    # 10.3


def test_the_rank_is_exact_where_floating_point_is_not():
    # 0.29 * 100 is 28.999999999999996 in floating point; the rank the formula means is 29
    assert math.floor(0.29 * 100) == 28
    assert conformal_rank(99, 0.29) == 29


def test_the_threshold_is_the_kth_smallest_score_by_hand():
    # n = 11, alpha = 0.2: k = floor(12 * 0.2) = floor(2.4) = 2; sorted: 1, 2, 3, ... -> 2
    scores = [5.0, 1.0, 4.0, 2.0, 3.0, 9.0, 8.0, 7.0, 6.0, 10.0, 11.0]
    found = conformal_threshold(scores, 0.2)
    assert (found.k, found.n, found.threshold) == (2, 11, 2.0)
    # n = 19, alpha = 0.1: k = floor(2.0) = 2 -> the second smallest, 0.15
    scores = [0.9, 0.15, 0.8, 0.05, 0.7, 0.6, 0.55, 0.5, 0.45, 0.4, 0.35, 0.3, 0.25, 0.2, 0.95, 0.85, 0.75, 0.65, 0.99]
    assert conformal_threshold(scores, 0.1).threshold == 0.15
    # ties: the k-th smallest is the tied value, and the tie is kept (>=)
    assert conformal_threshold([0.3, 0.3, 0.3, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9], 0.2).threshold == 0.3


def test_too_few_questions_keep_everything():
    found = conformal_threshold([0.4, 0.5, 0.6, 0.7, 0.8], 0.1)  # (5 + 1) * 0.1 < 1
    assert found.k == 0 and found.threshold == -math.inf and found.keeps_everything


def test_unreachable_targets_count_against_coverage_and_too_many_are_refused():
    # two of 20 questions cannot be covered at any threshold; alpha = 0.2 allows floor(21 * .2) - 1 = 3
    scores = [-math.inf, -math.inf] + [0.1 * i for i in range(1, 19)]
    found = conformal_threshold(scores, 0.2)
    assert (found.k, found.unreachable, found.threshold) == (4, 2, pytest.approx(0.2))
    with pytest.raises(ValueError, match="no threshold keeps"):
        conformal_threshold(scores, 0.1)  # k = 2: the second smallest is -inf


def test_nan_scores_and_bad_alpha_are_refused():
    with pytest.raises(ValueError, match="NaN"):
        conformal_threshold([0.1, float("nan")], 0.1)
    for alpha in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match="alpha"):
            conformal_threshold([0.1, 0.2], alpha)


def test_the_summary_counts_infinities_apart():
    summary = score_summary([math.inf, -math.inf, 0.2, 0.4, 0.6])
    assert (summary["n"], summary["finite"], summary["needs_nothing"], summary["unreachable"]) == (5, 3, 1, 1)
    assert (summary["min"], summary["median"], summary["max"]) == (0.2, 0.4, 0.6)


@pytest.mark.parametrize(("n", "alpha"), [(100, 0.1), (50, 0.05), (30, 0.2)])
def test_coverage_on_fresh_questions_is_at_least_one_minus_alpha(n, alpha):
    """1,000 calibrations on n exchangeable scores, each checked on 200 fresh questions from the
    same distribution: the mean coverage is at least 1 - alpha (within Monte Carlo error) and at
    most 1 - alpha + 1/(n + 1) (the correction is not needlessly conservative)."""
    rng = np.random.default_rng(20261206)
    runs, fresh = 1000, 200
    # scores with ties (a scorer's rounded outputs) and a skewed shape: the promise needs neither
    draw = lambda size: np.round(rng.beta(2.0, 5.0, size=size), 2)  # noqa: E731
    coverage = np.empty(runs)
    for r in range(runs):
        tau = conformal_threshold(draw(n), alpha).threshold
        coverage[r] = np.mean(draw(fresh) >= tau)
    se = coverage.std(ddof=1) / math.sqrt(runs)
    assert coverage.mean() >= 1 - alpha - 3 * se, (coverage.mean(), se)
    # continuous scores would give exactly 1 - k/(n + 1); ties only raise it (by well under 3%)
    assert coverage.mean() <= 1 - conformal_rank(n, alpha) / (n + 1) + 0.03 + 3 * se


def test_a_rank_one_too_high_would_be_caught():
    """The simulation above can fail: the (k + 1)-th smallest score, one rank too high, misses
    1 - alpha by several standard errors (continuous scores, n = 100, alpha = 0.1)."""
    rng = np.random.default_rng(7)
    n, alpha, runs = 100, 0.1, 1000
    k = conformal_rank(n, alpha)
    right, wrong = np.empty(runs), np.empty(runs)
    for r in range(runs):
        calibration = np.sort(rng.random(n))
        # coverage of a uniform score at threshold t is exactly 1 - t
        right[r], wrong[r] = 1 - calibration[k - 1], 1 - calibration[k]
    se = wrong.std(ddof=1) / math.sqrt(runs)
    assert right.mean() >= 1 - alpha - 3 * se
    assert wrong.mean() < 1 - alpha - 3 * se

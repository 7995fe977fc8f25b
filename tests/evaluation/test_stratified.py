"""Issue 47/48: stratified (pooled across datasets) bootstrap and paired tests, checked against a
case whose bootstrap distribution can be enumerated by hand, and one stratum against the
unstratified functions bit for bit."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ragsift.evaluation.report.statistics import bootstrap_ci, paired_comparison, stratum_positions


def test_stratified_resampling_draws_only_the_hand_enumerated_means() -> None:
    """Stratum A = [0] (size 1), stratum B = [3, 9] (size 2). A stratified resample keeps A's one
    value and draws 2 of B with replacement: {3,3}, {3,9}, {9,3}, {9,9}, each with probability 1/4,
    so the pooled mean (every value weighted once, over 3 values) is 6/3 = 2 (1/4), 12/3 = 4 (1/2)
    or 18/3 = 6 (1/4). Unstratified resampling of [0, 3, 9] reaches other means (0, 1, 3, ...)."""
    values, strata = [0.0, 3.0, 9.0], ["A", "B", "B"]
    from ragsift.evaluation.report import statistics

    means = statistics._bootstrap_means(np.array(values), 20_000, np.random.default_rng(1),
                                        stratum_positions(strata, 3))
    support, counts = np.unique(np.round(means, 12), return_counts=True)
    assert support.tolist() == [2.0, 4.0, 6.0]
    shares = counts / counts.sum()
    # 4 binomial standard errors of a share near 1/4 or 1/2 at 20,000 resamples: 0.0122, 0.0141
    assert shares == pytest.approx([0.25, 0.5, 0.25], abs=0.015)
    # the hand-enumerated distribution, exactly: every pair of draws from B
    enumerated = sorted((0 + a + b) / 3 for a, b in itertools.product([3.0, 9.0], repeat=2))
    assert enumerated == [2.0, 4.0, 4.0, 6.0]
    # the 95% percentile interval of that distribution is [2, 6], the mean the mean of all values
    ci = bootstrap_ci(values, 4000, 0.95, 7, strata)
    assert (ci.mean, ci.low, ci.high) == (4.0, 2.0, 6.0)
    # unstratified: a resample may draw 0 three times
    flat = statistics._bootstrap_means(np.array(values), 20_000, np.random.default_rng(1))
    assert 0.0 in np.round(flat, 12) and 1.0 in np.round(flat, 12)


def test_stratified_paired_comparison_resamples_within_strata() -> None:
    """Differences: stratum x = [+1] (1 pair), stratum y = [0, +3] (2 pairs): pooled resampled
    means are (1 + 0 + 0)/3, (1 + 0 + 3)/3 (twice) and (1 + 3 + 3)/3; the interval runs over them."""
    values, baseline, strata = [1.0, 0.0, 3.0], [0.0, 0.0, 0.0], ["x", "y", "y"]
    test = paired_comparison(values, baseline, 4000, 0.95, 3, strata=strata)
    assert test.mean_difference == pytest.approx(4 / 3)
    assert (test.low, test.high) == (pytest.approx(1 / 3), pytest.approx(7 / 3))
    # the exact sign-flip p-value is the unstratified one (flips within strata are all flips): the
    # share of the 8 sign patterns whose |sum| reaches the observed 4 (+-1 +-0 +3 and its mirror: 4 of 8)
    sums = [abs(a * 1 + b * 0 + c * 3) for a, b, c in itertools.product([1, -1], repeat=3)]
    assert test.p_value == sum(s >= 4 - 1e-9 for s in sums) / 8
    assert test.p_value == paired_comparison(values, baseline, 4000, 0.95, 3).p_value


@pytest.mark.parametrize("n", [5, 40])  # exact sign-flip test, and Monte Carlo
def test_one_stratum_is_the_unstratified_result_bit_for_bit(n: int) -> None:
    rng = np.random.default_rng(n)
    a, b = rng.integers(0, 2, n).astype(float), rng.integers(0, 2, n).astype(float)
    plain = paired_comparison(a, b, 500, 0.9, [4, 2])
    one = paired_comparison(a, b, 500, 0.9, [4, 2], strata=["hotpotqa"] * n)
    assert one == plain  # dataclass equality: every field, floats compared exactly
    assert bootstrap_ci(a, 500, 0.9, 3, ["only"] * n) == bootstrap_ci(a, 500, 0.9, 3)


def test_strata_need_one_label_per_value() -> None:
    with pytest.raises(ValueError, match="one label per value"):
        bootstrap_ci([1.0, 2.0, 3.0], strata=["a", "b"])

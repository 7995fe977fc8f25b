"""Known answers for every function in ragsift.evaluation.report.statistics.

Expected values come from scipy (``scipy.stats.bootstrap``, ``permutation_test``, ``binomtest``)
or from enumeration by hand, never from ragsift itself.

Monte Carlo error, stated: a bootstrap endpoint is the ``q``-quantile of B resampled means. Its
rank in another implementation's bootstrap distribution (B' resamples) has binomial standard
error ``sqrt(q (1 - q) (1/B + 1/B'))``; an endpoint must lie between that distribution's
quantiles at ``q -/+ 4`` such errors. A Monte Carlo p-value must lie within 4 binomial standard
errors ``sqrt(p (1 - p) (1/B + 1/B'))`` (+ 2/B' for scipy's doubled one-sided count) of
scipy's. With fixed seeds the tests are deterministic; 4 standard errors is the margin that a
correct implementation with other random draws would exceed less than once in 10,000 runs.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
from scipy import stats

from ragsift.evaluation.report.statistics import (
    EXACT_MAX_PAIRS,
    bootstrap_ci,
    derive_seed,
    discordant_pairs,
    holm_adjust,
    mcnemar_exact,
    paired_comparison,
)

B = 20_000  # resamples on both sides of every Monte Carlo comparison


def _mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis)


def _mean_difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x - y, axis=axis)


def _scipy_bootstrap(values: np.ndarray, level: float, seed: int = 12345) -> np.ndarray:
    res = stats.bootstrap((values,), _mean, n_resamples=B, confidence_level=level, method="percentile",
                          vectorized=True, rng=np.random.default_rng(seed))
    return np.asarray(res.bootstrap_distribution)


def _assert_endpoints_match(low: float, high: float, distribution: np.ndarray, level: float) -> None:
    alpha = (1 - level) / 2
    for q, value in ((alpha, low), (1 - alpha, high)):
        se = math.sqrt(q * (1 - q) * (1 / B + 1 / len(distribution)))
        lo, hi = np.quantile(distribution, [max(0.0, q - 4 * se), min(1.0, q + 4 * se)])
        assert lo <= value <= hi, f"{value} outside [{lo}, {hi}] (the {q:.3f} quantile +- 4 SE)"


def _scipy_sign_flip(x: np.ndarray, y: np.ndarray, alternative: str = "two-sided", resamples: float = np.inf,
                     seed: int = 999) -> float:
    """scipy's paired permutation test (swap x_i and y_i = flip the sign of x_i - y_i);
    ``resamples=np.inf``: all 2**n patterns, the exact test."""
    res = stats.permutation_test((x, y), _mean_difference, permutation_type="samples", alternative=alternative,
                                 n_resamples=resamples, vectorized=True, rng=np.random.default_rng(seed))
    return float(res.pvalue)


def _with_outlier(position: int, n: int = 20, outlier: float = 100.0) -> np.ndarray:
    values = (np.arange(n) % 3).astype(float)  # 0, 1, 2, 0, 1, 2, ...
    values[position] = outlier
    return values


# ---------------------------------------------------------------- bootstrap_ci


def test_bootstrap_tiny_sample_known_by_enumeration() -> None:
    # values [0, 3]: the 4 equally likely resamples have means 0, 1.5, 1.5, 3, so the bootstrap
    # distribution puts 1/4 on 0, 1/2 on 1.5 and 1/4 on 3. Its 30% and 70% quantiles are 1.5
    # (P(mean = 0) = 0.25 < 0.30; ~16 Monte Carlo standard errors away at B = 20,000), its 2.5%
    # and 97.5% quantiles are 0 and 3.
    assert bootstrap_ci([0.0, 3.0], samples=B, confidence=0.40, seed=1).to_dict() == {
        "mean": 1.5, "low": 1.5, "high": 1.5, "n": 2, "confidence": 0.40}
    wide = bootstrap_ci([0.0, 3.0], samples=B, confidence=0.95, seed=1)
    assert (wide.low, wide.high) == (0.0, 3.0)


@pytest.mark.parametrize("position", [0, 10, 19], ids=["outlier-first", "outlier-middle", "outlier-last"])
def test_bootstrap_matches_scipy_with_an_outlier(position: int) -> None:
    values = _with_outlier(position)
    ours = bootstrap_ci(values, samples=B, seed=position)
    assert ours.mean == pytest.approx(values.mean())
    _assert_endpoints_match(ours.low, ours.high, _scipy_bootstrap(values, 0.95), 0.95)


@pytest.mark.parametrize("level", [0.80, 0.90, 0.95, 0.99])
def test_bootstrap_matches_scipy_at_several_levels(level: float) -> None:
    values = np.random.default_rng(5).exponential(10.0, size=30)  # skewed: the percentile CI is not symmetric
    ours = bootstrap_ci(values, samples=B, confidence=level, seed=3)
    _assert_endpoints_match(ours.low, ours.high, _scipy_bootstrap(values, level), level)


def test_bootstrap_binary_values_match_scipy() -> None:
    values = np.array([1.0] * 7 + [0.0] * 13)  # EM-like: ties everywhere in the bootstrap distribution
    ours = bootstrap_ci(values, samples=B, seed=4)
    _assert_endpoints_match(ours.low, ours.high, _scipy_bootstrap(values, 0.95), 0.95)


def test_narrower_interval_at_lower_confidence_on_the_same_resamples() -> None:
    values = np.random.default_rng(6).normal(50, 10, size=40)
    at90 = bootstrap_ci(values, samples=B, confidence=0.90, seed=11)
    at95 = bootstrap_ci(values, samples=B, confidence=0.95, seed=11)
    assert at95.low < at90.low < at90.mean < at90.high < at95.high


def test_ci_is_deterministic_and_near_normal_theory() -> None:
    values = np.random.default_rng(1).normal(50, 10, size=80)
    first = bootstrap_ci(values, samples=2000, seed=7)
    assert first.low < first.mean < first.high
    assert bootstrap_ci(values, samples=2000, seed=7) == first
    assert bootstrap_ci(values, samples=2000, seed=8) != first
    expected = 2 * stats.norm.ppf(0.975) * values.std(ddof=0) / np.sqrt(len(values))
    assert first.high - first.low == pytest.approx(expected, rel=0.1)


def test_ci_edge_cases() -> None:
    assert bootstrap_ci([3.0]).to_dict() == {"mean": 3.0, "low": 3.0, "high": 3.0, "n": 1, "confidence": 0.95}
    constant = bootstrap_ci([1.0] * 10)
    assert constant.low == constant.high == 1.0
    with pytest.raises(ValueError, match="at least one"):
        bootstrap_ci([])
    with pytest.raises(ValueError, match="finite"):
        bootstrap_ci([1.0, float("nan")])
    with pytest.raises(ValueError, match="between 0 and 1"):
        bootstrap_ci([1.0, 2.0], confidence=95)
    with pytest.raises(ValueError, match="samples"):
        bootstrap_ci([1.0, 2.0], samples=0)


# ---------------------------------------------------------------- paired_comparison: the interval


@pytest.mark.parametrize("position", [0, 7, 14], ids=["outlier-first", "outlier-middle", "outlier-last"])
def test_paired_interval_matches_scipy_paired_bootstrap(position: int) -> None:
    rng = np.random.default_rng(position)
    base = rng.integers(0, 2, size=15).astype(float)
    other = base.copy()
    other[::4] = 1.0
    other[position] += 20.0  # one example with a large difference
    ours = paired_comparison(other, base, samples=B, seed=2)
    res = stats.bootstrap((other, base), _mean_difference, n_resamples=B, paired=True, method="percentile",
                          vectorized=True, rng=np.random.default_rng(8))
    assert ours.mean_difference == pytest.approx(float((other - base).mean()))
    _assert_endpoints_match(ours.low, ours.high, np.asarray(res.bootstrap_distribution), 0.95)


# ---------------------------------------------------------------- paired_comparison: the exact test


def test_exact_test_tiny_sample_by_hand() -> None:
    # differences 3, 1, -2 (sum 2). The 8 sign patterns give sums
    # +3+1-2=2, +3+1+2=6, +3-1-2=0, +3-1+2=4, -3+1-2=-4, -3+1+2=0, -3-1-2=-6, -3-1+2=-2;
    # |sum| >= 2 for 6 of them: p = 6/8
    result = paired_comparison([3.0, 1.0, 0.0], [0.0, 0.0, 2.0])
    assert result.exact and result.p_value == 0.75 and result.mean_difference == pytest.approx(2 / 3)
    assert _scipy_sign_flip(np.array([3.0, 1.0, 0.0]), np.array([0.0, 0.0, 2.0])) == pytest.approx(0.75)


@pytest.mark.parametrize("position", [0, 6, 11], ids=["outlier-first", "outlier-middle", "outlier-last"])
def test_exact_test_matches_scipy_with_an_outlier(position: int) -> None:
    rng = np.random.default_rng(20 + position)
    base = rng.normal(0, 1, size=12)
    other = base + rng.normal(0.4, 1, size=12)
    other[position] += 15.0
    ours = paired_comparison(other, base)
    assert ours.exact and ours.n == 12
    assert ours.p_value == pytest.approx(_scipy_sign_flip(other, base), abs=1e-12)


def test_exact_test_is_two_sided() -> None:
    base = np.array([5.0, 4.0, 6.0, 5.0, 7.0, 5.0, 6.0, 4.0, 5.0, 6.0])
    worse = base - np.array([3.0, 1.0, 2.0, 4.0, 1.0, 2.0, -1.0, 3.0, 0.5, 2.5])  # mean difference < 0
    down, up = paired_comparison(worse, base), paired_comparison(base, worse)
    expected = _scipy_sign_flip(worse, base)
    assert down.mean_difference < 0 and down.p_value == pytest.approx(expected, abs=1e-12)
    assert up.p_value == down.p_value  # the sign of a difference does not change its p-value
    # two-sided = twice the smaller one-sided p-value (the sign-flip null is symmetric)
    assert down.p_value == pytest.approx(2 * _scipy_sign_flip(worse, base, "less"), abs=1e-12)
    assert 0 < down.p_value < 0.05


def test_exact_test_smallest_p_value() -> None:
    # every difference positive and distinct: only the identity and the all-flipped pattern reach
    # |sum|, so p = 2 / 2**n, the smallest a finite exact test can give
    n = 10
    diffs = np.arange(1.0, n + 1)
    result = paired_comparison(diffs, np.zeros(n))
    assert result.exact and result.p_value == 2 / 2**n
    assert _scipy_sign_flip(diffs, np.zeros(n)) == pytest.approx(2 / 2**n)


def test_exact_test_handles_ties_in_the_null_distribution() -> None:
    # differences of 1 and -1 (EM-like): many sign patterns tie with the observed sum
    a = np.array([1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1], dtype=float)
    b = np.array([0, 0, 1, 1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1], dtype=float)
    result = paired_comparison(a * 100, b * 100)  # display units, as in the summary
    assert result.exact and result.p_value == pytest.approx(_scipy_sign_flip(a, b), abs=1e-12)
    # by hand: 7 differences of +1, 1 of -1 (sum 6) and 6 zeros, which no flip changes. With k of
    # the 8 non-zero differences negative the sum is 8 - 2k; |8 - 2k| >= 6 for k in {0, 1, 7, 8}:
    # C(8,0) + C(8,1) + C(8,7) + C(8,8) = 18 of the 2**8 patterns
    assert result.p_value == pytest.approx(18 / 256)


def test_identical_methods_give_p_one() -> None:
    same = paired_comparison([1.0, 0.0, 1.0, 0.5], [1.0, 0.0, 1.0, 0.5])
    assert same.to_dict() == {"mean_difference": 0.0, "low": 0.0, "high": 0.0, "p_value": 1.0, "n": 4,
                              "confidence": 0.95, "exact": True, "patterns": 0}
    assert _scipy_sign_flip(np.array([1.0, 0.0, 1.0]), np.array([1.0, 0.0, 1.0])) == 1.0


def test_constant_shift_closed_form() -> None:
    # the same shift on all 6 examples: 2 of the 64 sign patterns are as extreme
    shift = paired_comparison([1.0] * 6, [0.0] * 6)
    assert shift.p_value == pytest.approx(2 / 64) and shift.exact
    assert _scipy_sign_flip(np.ones(6), np.zeros(6)) == pytest.approx(2 / 64)


def test_exact_up_to_the_limit_then_monte_carlo() -> None:
    rng = np.random.default_rng(3)
    at_limit = rng.normal(0.3, 1, size=EXACT_MAX_PAIRS)
    result = paired_comparison(at_limit, np.zeros(EXACT_MAX_PAIRS))
    assert EXACT_MAX_PAIRS == 16 and result.exact
    assert result.p_value == pytest.approx(_scipy_sign_flip(at_limit, np.zeros(EXACT_MAX_PAIRS)), abs=1e-12)
    above = rng.normal(0.3, 1, size=EXACT_MAX_PAIRS + 1)
    assert not paired_comparison(above, np.zeros(EXACT_MAX_PAIRS + 1)).exact


def test_paired_input_errors() -> None:
    with pytest.raises(ValueError, match="equally many"):
        paired_comparison([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="at least one pair"):
        paired_comparison([], [])


# ---------------------------------------------------------------- paired_comparison: Monte Carlo


def _assert_p_matches(ours: float, theirs: float) -> None:
    p = (ours + theirs) / 2
    se = math.sqrt(max(p * (1 - p), 1 / B) * (2 / B))
    assert abs(ours - theirs) <= 4 * se + 2 / B, (ours, theirs)


@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["positive", "negative"])
def test_monte_carlo_test_matches_scipy(sign: float) -> None:
    rng = np.random.default_rng(21)
    base = rng.normal(0, 1, size=40)
    other = base + sign * rng.normal(0.35, 1, size=40)  # this seed: t-test p = 0.03
    ours = paired_comparison(other, base, samples=B, seed=5)
    assert not ours.exact
    theirs = _scipy_sign_flip(other, base, resamples=B)
    assert 0.005 < theirs < 0.2  # a p-value where the tails matter
    _assert_p_matches(ours.p_value, theirs)


def test_monte_carlo_smallest_p_value_keeps_the_plus_one() -> None:
    # 30 positive differences: a random sign pattern reaches the observed |sum| with probability
    # 2 / 2**30, so none of 1,000 does and p = (1 + 0) / (1 + 1000), never 0
    n, samples = 30, 1000
    diffs = np.arange(1.0, n + 1)
    result = paired_comparison(diffs, np.zeros(n), samples=samples)
    assert not result.exact and result.p_value == 1 / (samples + 1)
    # scipy's randomized test has the same +1 (Phipson & Smyth): one-sided 'greater' = 1 / 1001
    assert _scipy_sign_flip(diffs, np.zeros(n), "greater", resamples=samples) == pytest.approx(1 / (samples + 1))
    assert paired_comparison(-diffs, np.zeros(n), samples=samples).p_value == 1 / (samples + 1)


def test_a_poorly_resolved_monte_carlo_p_value_draws_more_patterns() -> None:
    n, samples = 30, 1000
    diffs = np.arange(1.0, n + 1)  # exact p = 2 / 2**30: no random pattern reaches it
    refined = paired_comparison(diffs, np.zeros(n), samples=samples, max_patterns=20_000)
    assert (refined.p_value, refined.patterns) == (1 / 20_001, 20_000)
    assert paired_comparison(diffs, np.zeros(n), samples=samples).patterns == samples  # no maximum: as before
    # a p-value of about 0.003: 1,000 patterns see a handful of extreme ones, so more are drawn
    # until RESOLVED_COUNT are, and the estimate agrees with scipy's at 200,000 resamples
    small = np.random.default_rng(0).normal(0.6, 1, size=30)  # this seed: t-test p = 0.0035
    theirs = _scipy_sign_flip(small, np.zeros(30), resamples=200_000)
    assert 0.0005 < theirs < 0.008
    ours = paired_comparison(small, np.zeros(30), samples=samples, seed=2, max_patterns=200_000)
    assert samples < ours.patterns < 200_000
    assert abs(ours.p_value - theirs) <= 4 * math.sqrt(theirs / ours.patterns) + 2 / ours.patterns
    # a well resolved p-value is the same with or without a maximum (the same first patterns)
    wide = np.random.default_rng(1).normal(0.2, 1, size=30)
    assert paired_comparison(wide, np.zeros(30), samples=samples, seed=3, max_patterns=200_000) == \
        paired_comparison(wide, np.zeros(30), samples=samples, seed=3)


def test_the_refined_monte_carlo_test_keeps_its_level_under_the_null() -> None:
    # symmetric differences (the null): P(p <= alpha) <= alpha, refinement included
    rng = np.random.default_rng(13)
    p = np.array([paired_comparison(rng.normal(0, 1, 20), np.zeros(20), samples=200, seed=i, max_patterns=4000).p_value
                  for i in range(400)])
    for alpha in (0.01, 0.05, 0.2):
        assert np.mean(p <= alpha) <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / len(p)), alpha
    assert np.mean(p <= 0.5) > 0.35  # and it is not a test that never rejects


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


# ---------------------------------------------------------------- holm_adjust


def test_holm_against_hand_computed_values() -> None:
    # sorted: 0.005 x 4 = 0.02; 0.01 x 3 = 0.03; 0.03 x 2 = 0.06; 0.04 x 1 = 0.04 -> max(0.06, 0.04)
    assert holm_adjust([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # 0.4 x 2 = 0.8; 0.5 x 1 = 0.5 -> 0.8 (adjusted values never decrease with rank)
    assert holm_adjust([0.5, 0.4]) == pytest.approx([0.8, 0.8])
    # capped at 1
    assert holm_adjust([0.6, 0.7]) == [1.0, 1.0]
    # ties: 0.02 x 3, x 2, x 1 -> 0.06 each
    assert holm_adjust([0.02, 0.02, 0.02]) == pytest.approx([0.06, 0.06, 0.06])
    # textbook example (m = 5): 0.01x5 = 0.05, 0.02x4 = 0.08, 0.03x3 = 0.09, 0.04x2 = 0.08 -> 0.09, 0.05x1 -> 0.09
    assert holm_adjust([0.05, 0.04, 0.03, 0.02, 0.01]) == pytest.approx([0.09, 0.09, 0.09, 0.08, 0.05])
    assert holm_adjust([0.3]) == [0.3]
    assert holm_adjust([]) == []


def test_holm_refuses_non_p_values() -> None:
    for bad in (1.5, -0.1, float("nan")):
        with pytest.raises(ValueError, match=r"\[0, 1\]"):
            holm_adjust([0.1, bad])


# ---------------------------------------------------------------- mcnemar_exact


def _outcomes(wins: int, losses: int, both: int = 3, neither: int = 2) -> tuple[list[int], list[int]]:
    a = [1] * wins + [0] * losses + [1] * both + [0] * neither
    b = [0] * wins + [1] * losses + [1] * both + [0] * neither
    return a, b


@pytest.mark.parametrize(("wins", "losses"), [(0, 0), (5, 0), (0, 5), (3, 1), (7, 2), (10, 10), (1, 12), (30, 12)])
def test_mcnemar_matches_the_binomial_distribution(wins: int, losses: int) -> None:
    a, b = _outcomes(wins, losses)
    assert discordant_pairs(a, b) == (wins, losses)
    expected = 1.0 if wins + losses == 0 else stats.binomtest(wins, wins + losses, 0.5).pvalue
    assert mcnemar_exact(a, b) == pytest.approx(expected, rel=1e-12)
    assert mcnemar_exact(b, a) == pytest.approx(expected, rel=1e-12)
    # and the hand enumeration it replaced (issue 26): 2 * P(X <= min(x, k - x)), X ~ Bin(k, 1/2)
    k = wins + losses
    by_hand = 1.0 if k == 0 else min(1.0, 2 * sum(math.comb(k, i) for i in range(min(wins, losses) + 1)) / 2**k)
    assert mcnemar_exact(a, b) == pytest.approx(by_hand, rel=1e-12)


def test_mcnemar_by_hand() -> None:
    # 5 discordant pairs, all won by one side: 2 * (1/2)**5
    assert mcnemar_exact(*_outcomes(5, 0)) == 2 / 32
    # 3 vs 1: 2 * P(X <= 1), X ~ Bin(4, 1/2) = 2 * 5/16
    assert mcnemar_exact(*_outcomes(3, 1)) == 10 / 16
    # concordant pairs carry no information
    assert mcnemar_exact(*_outcomes(5, 0, both=40, neither=40)) == 2 / 32


def test_mcnemar_refuses_non_binary_outcomes() -> None:
    with pytest.raises(ValueError, match=r"binary \(0/1\).*0.5"):
        mcnemar_exact([1, 0.5], [1, 0])
    with pytest.raises(ValueError, match="equally many"):
        mcnemar_exact([1, 0], [1])


# ---------------------------------------------------------------- derive_seed


def test_derive_seed_is_the_crc32_of_each_name() -> None:
    # 0xCBF43926 is the published CRC-32 check value of "123456789"
    assert derive_seed(7, "123456789") == [7, 0xCBF43926]
    assert derive_seed(0, "exit", "em") == [0, zlib.crc32(b"exit"), zlib.crc32(b"em")]
    assert derive_seed(0, "a", "b") != derive_seed(0, "b", "a")


@pytest.mark.parametrize(("wins", "losses"), [(5, 0), (3, 1), (7, 2), (4, 4), (1, 9)])
def test_exact_sign_flip_on_binary_outcomes_is_mcnemar(wins: int, losses: int) -> None:
    # with differences in {-1, 0, +1}, the sign-flipped sum is 2X - k for X ~ Bin(k, 1/2), k = wins + losses:
    # the exact sign-flip test and the exact McNemar test are the same test
    a, b = _outcomes(wins, losses)
    result = paired_comparison(a, b)
    assert result.exact and result.p_value == pytest.approx(mcnemar_exact(a, b), rel=1e-12)

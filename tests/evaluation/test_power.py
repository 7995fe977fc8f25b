"""Issue 48: power, sample size and the minimum detectable difference, against statsmodels, the
exact power of the exact McNemar test, and a seeded simulation of a planned design."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom
from statsmodels.stats.power import TTestPower

from ragsift.evaluation.report.power import (
    binary_mdd,
    binary_power,
    binary_sample_size,
    continuous_mdd,
    continuous_power,
    continuous_sample_size,
    detectable_difference,
    exact_binary_sample_size,
    exact_mcnemar_power,
    paired_sd,
    pooled_discordance,
    stratified_sd,
)


def test_connor_sample_sizes_and_mdd_by_hand() -> None:
    """Connor (1987): n = (1.95996 sqrt(psi) + 0.84162 sqrt(psi - d^2))^2 / d^2. At psi = 0.25:
    d = 0.03: (0.97998 + 0.84162 x 0.49910)^2 / 0.0009 = 2177.4 -> 2178 (the issue's "about 2,200");
    d = 0.05: 782.6 -> 783. MDD at n = 100: the root of 100.708 d^2 - 19.600 d + 0.78334 = 0,
    d = 0.1384 (13.8 EM points: the issue's "about 13-15")."""
    assert binary_sample_size(0.03, 0.25) == 2178
    assert binary_sample_size(0.05, 0.25) == 783
    assert binary_mdd(100, 0.25) == pytest.approx(0.1384, abs=2e-4)
    # the MDD inverts the sample size: at the n planned for d, the MDD is (just under) d
    assert binary_mdd(binary_sample_size(0.08, 0.3), 0.3) == pytest.approx(0.08, abs=5e-4)
    assert binary_power(783, 0.05, 0.25) == pytest.approx(0.8, abs=0.002)
    assert math.isinf(binary_mdd(3, 0.25))  # three questions can detect nothing at 80% power


def test_normal_approximation_against_the_exact_mcnemar_power() -> None:
    """The exact power of the exact test (summed over the binomial number of discordant pairs),
    checked first against a direct enumeration of a tiny case, then Connor's approximation
    within 0.035 of it (the exact test is conservative: below alpha, so below the approximation)."""
    # n = 6, p10 = 0.3, p01 = 0.1: enumerate (wins, losses, ties) multinomially by hand
    from scipy.stats import binomtest, multinomial

    total = 0.0
    for wins in range(7):
        for losses in range(7 - wins):
            if wins + losses and binomtest(wins, wins + losses).pvalue <= 0.05:
                total += multinomial.pmf([wins, losses, 6 - wins - losses], 6, [0.3, 0.1, 0.6])
    assert exact_mcnemar_power(6, 0.3, 0.1) == pytest.approx(total, abs=1e-12)
    for psi, d in ((0.25, 0.10), (0.2, 0.08), (0.3, 0.06)):
        n = binary_sample_size(d, psi)
        exact = exact_mcnemar_power(n, (psi + d) / 2, (psi - d) / 2)
        assert 0.765 < exact < 0.8 < binary_power(n, d, psi) + 1e-3
        planned = exact_binary_sample_size(d, psi)
        assert planned > n and exact_mcnemar_power(planned, (psi + d) / 2, (psi - d) / 2) >= 0.8
        assert exact_mcnemar_power(planned - 1, (psi + d) / 2, (psi - d) / 2) < 0.8 or planned - 1 == n


def test_a_planned_design_reaches_its_power_in_simulation() -> None:
    """Plan for +10 EM points at discordance 0.25 (p10 = 0.175, p01 = 0.075), 80% power, two-sided
    0.05, for the summary's test on 0/1 values (exact McNemar = exact sign-flip): 2,000 seeded runs
    of that many questions reject in 77-83% of them (4.2 binomial standard errors of 0.8 wide)."""
    n = exact_binary_sample_size(0.10, 0.25)
    rng = np.random.default_rng(2026)
    counts = rng.multinomial(n, [0.175, 0.075, 0.75], size=2000)
    wins, losses = counts[:, 0], counts[:, 1]
    k = wins + losses
    p_values = np.minimum(1.0, 2 * binom.cdf(np.minimum(wins, losses), k, 0.5))
    assert 0.77 <= float(np.mean(p_values <= 0.05)) <= 0.83


def test_non_inferiority_planning_by_hand_and_in_simulation() -> None:
    """Non-inferiority at margin 5 points, true difference 0, discordance 0.25, one-sided 0.05:
    n = (1.64485 + 0.84162)^2 x 0.25 / 0.05^2 = 618.3 -> 619; the paired-t test of
    mean + 0.05 > 0 at that n reaches 80% power in 2,000 seeded runs (77-83%)."""
    n = binary_sample_size(0.0, 0.25, margin=0.05)
    assert n == 619
    assert binary_mdd(n, 0.25, margin=0.05) == pytest.approx(0.0, abs=1e-3)
    rng = np.random.default_rng(7)
    counts = rng.multinomial(n, [0.125, 0.125, 0.75], size=2000)
    mean = (counts[:, 0] - counts[:, 1]) / n
    var = (counts[:, 0] + counts[:, 1]) / n - mean**2
    se = np.sqrt(var * n / (n - 1) / n)
    from scipy.stats import t

    lower = mean - t.ppf(0.95, n - 1) * se
    assert 0.77 <= float(np.mean(lower > -0.05)) <= 0.83


def test_continuous_functions_are_statsmodels_ttestpower() -> None:
    power = TTestPower()
    assert continuous_power(50, 3.0, 10.0) == pytest.approx(power.power(0.3, 50, 0.05))
    assert continuous_sample_size(3.0, 10.0) == math.ceil(power.solve_power(0.3, None, 0.05, 0.8))
    effect = power.solve_power(None, 80, 0.05, 0.8)
    assert continuous_mdd(80, 10.0) == pytest.approx(effect * 10.0)
    # non-inferiority: one-sided, effect (difference + margin) / sd
    assert continuous_power(60, 0.0, 10.0, margin=4.0) == pytest.approx(power.power(0.4, 60, 0.05, alternative="larger"))
    assert continuous_mdd(60, 10.0, margin=4.0) == pytest.approx(
        power.solve_power(None, 60, 0.05, 0.8, alternative="larger") * 10.0 - 4.0)


def test_stratified_variance_is_the_sum_over_strata() -> None:
    """Strata of 100 and 300 pairs with SDs 10 and 20: effective SD sqrt((100 x 100 + 300 x 400) /
    400) = sqrt(325); the pooled mean's variance sum_s (n_s/n)^2 sd_s^2 / n_s = 325 / 400."""
    assert stratified_sd([10.0, 20.0], [100, 300]) == pytest.approx(math.sqrt(325))
    pooled_variance = 0.25**2 * 10.0**2 / 100 + 0.75**2 * 20.0**2 / 300
    assert stratified_sd([10.0, 20.0], [100, 300]) ** 2 / 400 == pytest.approx(pooled_variance)
    assert pooled_discordance([0.2, 0.3], [100, 300]) == pytest.approx(0.275)
    # from data: within-stratum SDs, not the SD around the pooled mean (strata means 0 and 10)
    values = [0.0, 2.0, 10.0, 12.0]
    assert paired_sd(values, [0.0] * 4, ["a", "a", "b", "b"]) == pytest.approx(math.sqrt(2.0))
    assert paired_sd(values, [0.0] * 4) == pytest.approx(np.std(values, ddof=1))


def test_detectable_difference_of_binary_and_continuous_pairs() -> None:
    ours = [1, 0, 1, 1, 0, 1, 0, 0] * 25  # 200 pairs
    theirs = [1, 1, 0, 1, 0, 1, 0, 0] * 25  # disagree on 2 of 8: discordance 0.25
    found = detectable_difference(ours, theirs, binary=True, scale=100)
    assert found.discordance == 0.25 and found.mdd == pytest.approx(100 * binary_mdd(200, 0.25))
    assert detectable_difference([1, 0], [1, 0], binary=True).mdd is None
    cont = detectable_difference([0.5, 0.7, 0.2, 0.9], [0.4, 0.4, 0.4, 0.4], binary=False)
    assert cont.method == "paired t" and cont.mdd == pytest.approx(continuous_mdd(4, cont.sd or 0))

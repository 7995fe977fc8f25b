"""Power, sample size and the minimum detectable difference (MDD) of a paired comparison
(docs/statistics.md, "How small a difference could this run have seen?").

Two kinds of outcome, each in the units of its difference:

- **Binary** (EM, accuracy: 0/1 per question), the difference as a proportion (0.03 = 3 EM
  points). Only the discordant pairs (questions where the two sides disagree) carry information;
  with discordance psi (their share) and difference delta = p10 - p01, Connor (1987, Biometrics
  43:207-211), the normal approximation of McNemar's test:
  ``n = (z_{1-a/2} sqrt(psi) + z_{power} sqrt(psi - delta^2))^2 / delta^2``. The null variance psi is
  the one the sign-flip / McNemar test uses (it conditions on the discordant pairs). A
  non-inferiority margin M (one-sided at alpha, the paired-t / Wald test of
  :mod:`ragsift.evaluation.report.margins`, whose variance is estimated):
  ``n = (z_{1-a} + z_{power})^2 (psi - delta^2) / (delta + M)^2``.
- **Continuous** (F1, evidence recall), from the paired standard deviation sd of the per-question
  differences: statsmodels' :class:`~statsmodels.stats.power.TTestPower` (the paired / one-sample
  t test, noncentral t), on the effect size (delta + M) / sd.

The MDD at n is the difference (true mean of compressor - baseline) that the test detects with
the given power: a run with MDD 14 EM points "could only have seen differences of at least 14".

**Stratified** (a suite: questions pooled across datasets, tests stratified by dataset): the
variance of the pooled mean is the sum over strata, ``Var = sum_s (n_s/n)^2 sigma_s^2 / n_s``, so
the effective per-question variance is ``sum_s (n_s/n) sigma_s^2`` (:func:`stratified_sd`). For a
binary outcome with a common difference in every stratum, the pooled discordance is the
n-weighted mean of the strata's (:func:`pooled_discordance`), which is the overall share of
discordant pairs: stratifying does not change a binary MDD.

Written here rather than taken from a library for the binary case: statsmodels has no power
function for paired proportions (McNemar); the formula is Connor's, a few lines over
:mod:`scipy.stats`. The tests check it against the exact power of the exact McNemar test (a sum
over the binomial number of discordant pairs), and the continuous functions against statsmodels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

__all__ = [
    "POWER", "binary_power", "binary_sample_size", "binary_mdd", "continuous_power", "continuous_sample_size",
    "continuous_mdd", "pooled_discordance", "stratified_sd", "observed_discordance", "paired_sd",
    "DetectableDifference", "detectable_difference", "exact_mcnemar_power", "exact_binary_sample_size",
]

#: the power of the smallest detectable difference the summary reports
POWER = 0.8


def _z(p: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(p))


def _check(alpha: float, power: float | None = None, margin: float = 0.0) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie strictly between 0 and 1; got {alpha}")
    if power is not None and not 0 < power < 1:
        raise ValueError(f"power must lie strictly between 0 and 1; got {power}")
    if margin < 0 or not math.isfinite(margin):
        raise ValueError(f"a margin is a non-negative number (0: superiority); got {margin}")


def _check_discordance(discordance: float) -> None:
    if not 0 < discordance <= 1:
        raise ValueError(f"discordance (the share of pairs that disagree) must lie in (0, 1]; got {discordance}")


def _critical(alpha: float, margin: float) -> float:
    """z of the test: two-sided at alpha for superiority (margin 0), one-sided at alpha with a margin."""
    return _z(1 - alpha / 2) if margin == 0 else _z(1 - alpha)


# -- binary outcomes (McNemar / sign-flip on 0/1 values) --


def binary_power(n: float, difference: float, discordance: float, alpha: float = 0.05, margin: float = 0.0) -> float:
    """The power of the paired binary test at ``n`` pairs for a true ``difference`` (a proportion:
    p10 - p01, compressor minus baseline) given the ``discordance`` p10 + p01.

    ``margin`` 0: the two-sided superiority test at ``alpha`` (Connor 1987; the far tail, below
    1e-3 for any design with useful power, is left out as in Connor). ``margin`` M > 0: the
    one-sided non-inferiority test of "difference > -M" at ``alpha``."""
    _check(alpha, None, margin)
    _check_discordance(discordance)
    if abs(difference) > discordance:
        raise ValueError(f"|difference| {abs(difference)} cannot exceed the discordance {discordance}")
    from scipy.stats import norm

    alternative_sd = math.sqrt(discordance - difference**2)
    if margin == 0:
        shift = math.sqrt(n) * abs(difference) - _critical(alpha, 0) * math.sqrt(discordance)
    else:
        shift = math.sqrt(n) * (difference + margin) - _critical(alpha, margin) * alternative_sd
    if alternative_sd == 0:
        return 1.0 if shift > 0 else 0.0
    return float(norm.cdf(shift / alternative_sd))


def binary_sample_size(difference: float, discordance: float, alpha: float = 0.05, power: float = POWER,
                       margin: float = 0.0) -> int:
    """Pairs needed to detect ``difference`` (a proportion) with ``power``: Connor's formula for
    superiority (``margin`` 0, two-sided ``alpha``), the Wald formula for non-inferiority (one-sided
    ``alpha``, margin M > 0, difference > -M). Rounded up."""
    _check(alpha, power, margin)
    _check_discordance(discordance)
    if abs(difference) > discordance:
        raise ValueError(f"|difference| {abs(difference)} cannot exceed the discordance {discordance}")
    effect = abs(difference) if margin == 0 else difference + margin
    if effect <= 0:
        raise ValueError("non-inferiority needs a true difference above -margin; superiority a non-zero difference")
    z_a, z_b = _critical(alpha, margin), _z(power)
    alternative_sd = math.sqrt(discordance - difference**2)
    null_sd = math.sqrt(discordance) if margin == 0 else alternative_sd
    return math.ceil((z_a * null_sd + z_b * alternative_sd) ** 2 / effect**2 - 1e-9)


def binary_mdd(n: float, discordance: float, alpha: float = 0.05, power: float = POWER, margin: float = 0.0) -> float:
    """The smallest true difference (a proportion) detected with ``power`` at ``n`` pairs: the
    root in delta of :func:`binary_power` = ``power`` (for superiority, delta > 0; with a margin,
    the smallest delta > -M shown non-inferior). ``inf`` when no difference up to the discordance
    itself reaches the power at this n."""
    _check(alpha, power, margin)
    _check_discordance(discordance)
    if n < 1:
        raise ValueError(f"n must be at least 1; got {n}")
    from scipy.optimize import brentq

    low = 0.0 if margin == 0 else -min(margin, discordance)
    gap = lambda d: binary_power(n, d, discordance, alpha, margin) - power  # noqa: E731
    if gap(discordance) < 0:
        return math.inf
    if gap(low) >= 0:
        return low
    return float(brentq(gap, low, discordance, xtol=1e-10))


def exact_mcnemar_power(n: int, p10: float, p01: float, alpha: float = 0.05) -> float:
    """The exact power of the two-sided exact McNemar test (``scipy.stats.binomtest``'s p-value
    <= alpha; on 0/1 values also the exact sign-flip test of the summary) at ``n`` pairs: the sum
    over k discordant pairs ~ Binomial(n, p10 + p01) of the chance that the compressor's wins
    among them, ~ Binomial(k, p10 / (p10 + p01)), fall in the test's rejection region
    {wins <= c_k or wins >= k - c_k}, c_k the largest x with 2 P(Binomial(k, 1/2) <= x) <= alpha."""
    from scipy.stats import binom

    psi = p10 + p01
    if not 0 < psi <= 1 or p10 < 0 or p01 < 0:
        raise ValueError(f"p10 and p01 must be >= 0 with 0 < p10 + p01 <= 1; got {p10}, {p01}")
    k = np.arange(1, int(n) + 1)
    c = binom.ppf(alpha / 2, k, 0.5)  # the smallest x with P(X <= x) >= alpha/2
    c = np.where(2 * binom.cdf(c, k, 0.5) <= alpha * (1 + 1e-12), c, c - 1)  # the largest with 2 P <= alpha
    q = p10 / psi
    conditional = np.where(c >= 0, binom.cdf(c, k, q) + binom.sf(k - c - 1, k, q), 0.0)
    return float(np.sum(binom.pmf(k, int(n), psi) * conditional))


def exact_binary_sample_size(difference: float, discordance: float, alpha: float = 0.05, power: float = POWER,
                             limit: int = 200_000) -> int:
    """Pairs needed by the two-sided exact McNemar test (the summary's test on 0/1 values): from
    Connor's n (:func:`binary_sample_size`) upward, the first n whose exact power
    (:func:`exact_mcnemar_power`) reaches ``power``. The exact test is conservative (its level is
    below alpha), so this n is a few percent above Connor's: at discordance 0.25 and a difference of
    0.10, Connor's 194 pairs give an exact power of 0.773."""
    n = binary_sample_size(difference, discordance, alpha, power)
    p10, p01 = (discordance + difference) / 2, (discordance - difference) / 2
    step = max(1, n // 200)
    while exact_mcnemar_power(n, p10, p01, alpha) < power:  # coarse steps up, then back one by one
        n += step
        if n > limit:
            raise ValueError(f"more than {limit} pairs needed")
    while step > 1 and n - 1 >= 1 and exact_mcnemar_power(n - 1, p10, p01, alpha) >= power:
        n -= 1
    return n


# -- continuous outcomes (paired t) --


def _ttest_power() -> Any:
    from statsmodels.stats.power import TTestPower

    return TTestPower()


def _check_sd(sd: float) -> None:
    if not sd > 0 or not math.isfinite(sd):
        raise ValueError(f"the paired standard deviation must be positive; got {sd}")


def continuous_power(n: float, difference: float, sd: float, alpha: float = 0.05, margin: float = 0.0) -> float:
    """Power of the paired t test at ``n`` pairs for a true mean ``difference`` with paired SD
    ``sd``: two-sided at ``alpha`` (``margin`` 0) or one-sided non-inferiority at ``alpha``
    (difference > -margin). statsmodels' ``TTestPower().power``."""
    _check(alpha, None, margin)
    _check_sd(sd)
    alternative = "two-sided" if margin == 0 else "larger"
    return float(_ttest_power().power(effect_size=(difference + margin) / sd, nobs=n, alpha=alpha,
                                      alternative=alternative))


def continuous_sample_size(difference: float, sd: float, alpha: float = 0.05, power: float = POWER,
                           margin: float = 0.0) -> int:
    """Pairs needed by the paired t test (statsmodels' ``TTestPower().solve_power``), rounded up."""
    _check(alpha, power, margin)
    _check_sd(sd)
    effect = (abs(difference) if margin == 0 else difference + margin) / sd
    if effect <= 0:
        raise ValueError("non-inferiority needs a true difference above -margin; superiority a non-zero difference")
    alternative = "two-sided" if margin == 0 else "larger"
    n = _ttest_power().solve_power(effect_size=effect, nobs=None, alpha=alpha, power=power, alternative=alternative)
    return math.ceil(float(np.asarray(n).item()) - 1e-9)


def continuous_mdd(n: float, sd: float, alpha: float = 0.05, power: float = POWER, margin: float = 0.0) -> float:
    """The smallest true mean difference detected with ``power`` at ``n`` pairs (paired t,
    statsmodels' ``solve_power`` for the effect size); with a margin, the smallest difference
    shown non-inferior (may be negative, above -margin)."""
    _check(alpha, power, margin)
    _check_sd(sd)
    if n < 2:
        raise ValueError(f"the paired t test needs at least 2 pairs; got {n}")
    alternative = "two-sided" if margin == 0 else "larger"
    effect = _ttest_power().solve_power(effect_size=None, nobs=n, alpha=alpha, power=power, alternative=alternative)
    return float(np.asarray(effect).item()) * sd - margin


# -- from data, and pooled over strata --


def pooled_discordance(discordances: Sequence[float], sizes: Sequence[int]) -> float:
    """The pooled discordance of strata: sum_s n_s psi_s / n (the overall share of discordant pairs)."""
    n = sum(sizes)
    if n <= 0 or len(discordances) != len(sizes):
        raise ValueError("pooled_discordance needs one size per stratum and at least one pair")
    return float(sum(p * s for p, s in zip(discordances, sizes, strict=True)) / n)


def stratified_sd(sds: Sequence[float], sizes: Sequence[int]) -> float:
    """The effective per-pair SD of a stratified mean: sqrt(sum_s (n_s / n) sd_s^2), so that the
    variance of the pooled mean, sum_s (n_s/n)^2 sd_s^2 / n_s, is this squared over n."""
    n = sum(sizes)
    if n <= 0 or len(sds) != len(sizes):
        raise ValueError("stratified_sd needs one size per stratum and at least one pair")
    return math.sqrt(sum(s * sd**2 for sd, s in zip(sds, sizes, strict=True)) / n)


def observed_discordance(values: Sequence[float], baseline: Sequence[float]) -> float:
    """The share of pairs on which two paired binary outcomes differ."""
    a, b = np.asarray(values, dtype=float), np.asarray(baseline, dtype=float)
    if a.shape != b.shape or a.size == 0:
        raise ValueError("observed_discordance needs equally many values, at least one")
    return float(np.count_nonzero(a != b)) / a.size


def paired_sd(values: Sequence[float], baseline: Sequence[float], strata: Sequence[Any] | None = None) -> float:
    """The SD of the per-pair differences (ddof 1); with ``strata``, the within-stratum SD of
    :func:`stratified_sd` (the between-strata differences of the mean are no noise of a
    stratified test). A stratum of one pair has no SD of its own and contributes 0."""
    d = np.asarray(values, dtype=float) - np.asarray(baseline, dtype=float)
    if d.size < 2:
        raise ValueError("paired_sd needs at least 2 pairs")
    if strata is None:
        return float(d.std(ddof=1))
    from ragsift.evaluation.report.statistics import stratum_positions

    groups = stratum_positions(strata, d.size)
    sds = [float(d[g].std(ddof=1)) if len(g) > 1 else 0.0 for g in groups]
    return stratified_sd(sds, [len(g) for g in groups])


@dataclass(frozen=True)
class DetectableDifference:
    """The MDD of one paired comparison, in the units of the values given (the summary passes
    display units: EM points). ``method``: ``"binary (Connor 1987)"`` or ``"paired t"``;
    ``mdd`` None when there is no variation to base it on (``reason`` says why)."""

    mdd: float | None
    n: int
    alpha: float
    power: float
    method: str
    discordance: float | None = None
    sd: float | None = None
    strata: int = 1
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


def detectable_difference(values: Sequence[float], baseline: Sequence[float], *, binary: bool, scale: float = 1.0,
                          alpha: float = 0.05, power: float = POWER,
                          strata: Sequence[Any] | None = None) -> DetectableDifference:
    """The MDD of a paired comparison at its own n, two-sided ``alpha`` and ``power``.

    ``binary``: ``values`` and ``baseline`` are 0/1 and the MDD comes from the observed discordance
    (times ``scale``, e.g. 100 for EM points); else from the paired SD of the differences of the
    values as given (within strata when ``strata`` is given; ``scale`` is not applied)."""
    n = len(values)
    n_strata = len(set(map(str, strata))) if strata is not None else 1
    if binary:
        psi = observed_discordance(values, baseline)
        if psi == 0:
            return DetectableDifference(None, n, alpha, power, "binary (Connor 1987)", 0.0, strata=n_strata,
                                        reason="no discordant pair: the two sides agree on every question")
        mdd = binary_mdd(n, psi, alpha, power)
        return DetectableDifference(mdd * scale if math.isfinite(mdd) else None, n, alpha, power,
                                    "binary (Connor 1987)", psi, strata=n_strata,
                                    reason=None if math.isfinite(mdd) else "too few pairs for any difference")
    if n < 2:
        return DetectableDifference(None, n, alpha, power, "paired t", reason="fewer than 2 pairs")
    sd = paired_sd(values, baseline, strata)
    if sd == 0:
        return DetectableDifference(None, n, alpha, power, "paired t", sd=0.0, strata=n_strata,
                                    reason="the difference is the same on every question")
    return DetectableDifference(continuous_mdd(n, sd, alpha, power), n, alpha, power, "paired t", sd=sd,
                                strata=n_strata)

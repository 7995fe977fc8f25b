"""Statistics that say whether a difference is real (docs/statistics.md says what each one means).

- :func:`bootstrap_ci`: percentile bootstrap of the mean (resampling examples with replacement).
- :func:`paired_comparison`: the mean of per-example differences (compressor - baseline), a
  paired-bootstrap confidence interval of that mean, and a two-sided sign-flip permutation
  p-value (under the null hypothesis the sign of each paired difference is exchangeable).
  Up to :data:`EXACT_MAX_PAIRS` pairs the test is exact: all ``2**n`` sign patterns, p =
  ``#{|permuted sum| >= |observed sum|} / 2**n``. Above that it draws B random sign patterns
  and p = ``(1 + #{|permuted sum| >= |observed sum|}) / (1 + B)``, so a Monte Carlo p-value is
  never 0 (its smallest value is ``1 / (1 + B)``); B is ``samples``, extended up to
  ``max_patterns`` while fewer than :data:`RESOLVED_COUNT` patterns are extreme (the summary sets
  ``max_patterns`` so that Holm's correction over its whole family can go below 0.05).
- Both take ``strata`` (a stratum label per value or pair, e.g. the dataset of each question of
  a suite): the bootstrap then resamples within each stratum, keeping each stratum's size, and the
  pooled mean weights every value once (see :func:`stratified_indices`).
- :func:`holm_adjust`: Holm's step-down adjustment of a family of p-values.
- :func:`mcnemar_exact`: the exact McNemar test of two paired binary (0/1) outcomes.

Everything is seeded: the same inputs and seed give the same numbers. The exact McNemar test is
scipy's binomial test; the tests check every other function against scipy or hand enumeration.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

__all__ = [
    "EXACT_MAX_PAIRS", "RESOLVED_COUNT", "Interval", "PairedComparison", "bootstrap_ci", "paired_comparison", "derive_seed",
    "holm_adjust", "mcnemar_exact", "discordant_pairs", "stratum_positions",
]

#: the sign-flip test enumerates all 2**n sign patterns up to this many pairs (65,536 patterns)
EXACT_MAX_PAIRS = 16
_CHUNK = 2000  # resamples per block: bounds memory at n x 2000 indices
#: a Monte Carlo sign-flip p-value with fewer extreme patterns than this among its first samples
#: is refined with more patterns (up to the caller's max_patterns)
RESOLVED_COUNT = 10
#: permuted sums within this fraction of sum(|differences|) of the observed one count as ties
#: (the same sum reached by another order of additions differs in its last bits)
_TIE_TOLERANCE = 1e-9


def derive_seed(seed: int, *names: str) -> list[int]:
    """A seed sequence for one (seed, name, ...) combination, stable across runs and processes:
    ``[seed, crc32(name), ...]`` (CRC-32 of the UTF-8 name, as :func:`zlib.crc32`)."""
    return [seed, *(zlib.crc32(n.encode()) for n in names)]


@dataclass(frozen=True)
class Interval:
    """A mean and its confidence interval over ``n`` values."""

    mean: float
    low: float
    high: float
    n: int
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PairedComparison:
    """Mean difference (compressor - baseline) over ``n`` paired examples, its CI and p-value.

    ``exact`` is True when the p-value comes from all ``2**n`` sign patterns (or from the closed
    form of a constant difference, ``patterns`` 0), False when from ``patterns`` random ones."""

    mean_difference: float
    low: float
    high: float
    p_value: float
    n: int
    confidence: float
    exact: bool
    patterns: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _as_array(values: Sequence[float] | np.ndarray) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(array)):
        raise ValueError("statistics need finite values; got NaN or infinity")
    return array


def _check_settings(confidence: float, samples: int) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1; got {confidence}")
    if samples < 1:
        raise ValueError(f"samples must be at least 1; got {samples}")


def stratum_positions(strata: Sequence[Any] | None, n: int) -> list[np.ndarray]:
    """The positions of each stratum, strata in sorted order of their labels (one stratum of all n
    positions when ``strata`` is None). Labels are compared as given (str(label) sorts them)."""
    if strata is None:
        return [np.arange(n)]
    labels = [str(s) for s in strata]
    if len(labels) != n:
        raise ValueError(f"strata needs one label per value; got {len(labels)} labels for {n} values")
    array = np.asarray(labels, dtype=object)
    return [np.flatnonzero(array == name) for name in sorted(set(labels))]


def _bootstrap_means(values: np.ndarray, samples: int, rng: np.random.Generator,
                     strata: Sequence[np.ndarray] | None = None) -> np.ndarray:
    """Means of ``samples`` resamples of ``values``. Each resample draws, for every stratum in
    turn, as many positions of that stratum as it has (with replacement), and takes the mean of
    all n drawn values: the pooled mean of a stratified resample, every value weighted once.
    Without strata (or with one stratum of all positions in order) it draws n indices from
    0..n-1, the same draws and the same means bit for bit."""
    n = len(values)
    groups = list(strata) if strata is not None else [np.arange(n)]
    means = np.empty(samples)
    for start in range(0, samples, _CHUNK):
        size = min(_CHUNK, samples - start)
        # per stratum k with positions P_k: P_k[draws in 0..n_k-1]; the blocks side by side hold n
        # indices per resample (each stratum keeps its size)
        idx = np.concatenate([g[rng.integers(0, len(g), size=(size, len(g)))] for g in groups], axis=1)
        means[start : start + size] = values[idx].mean(axis=1)
    return means


def _percentile_interval(means: np.ndarray, confidence: float) -> tuple[float, float]:
    """The central ``confidence`` interval of the bootstrap distribution (linear interpolation
    between order statistics, as ``numpy.quantile``'s default and scipy's percentile method)."""
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return float(low), float(high)


def bootstrap_ci(
    values: Sequence[float] | np.ndarray, samples: int = 1000, confidence: float = 0.95, seed: int | Sequence[int] = 0,
    strata: Sequence[Any] | None = None,
) -> Interval:
    """The mean of ``values`` with a percentile-bootstrap confidence interval.

    ``strata``: a stratum label per value (e.g. each question's dataset). The mean is still the
    mean of all values (every value weighted once); the bootstrap resamples within each stratum,
    keeping its size, so the interval reflects only the variation within strata (the strata's
    sizes are fixed by design, not drawn). One stratum gives the unstratified result exactly.
    One value, or values that are all equal, give the point interval ``[mean, mean]``."""
    _check_settings(confidence, samples)
    array = _as_array(values)
    n = len(array)
    if n == 0:
        raise ValueError("bootstrap_ci needs at least one value")
    groups = stratum_positions(strata, n)
    mean = float(array.mean())
    if n == 1 or np.all(array == array[0]):
        return Interval(mean, mean, mean, n, confidence)
    low, high = _percentile_interval(_bootstrap_means(array, samples, np.random.default_rng(seed), groups), confidence)
    return Interval(mean, low, high, n, confidence)


def _exact_sign_flip(diff: np.ndarray, threshold: float) -> float:
    """Share of all 2**n sign patterns whose |sum| reaches ``threshold`` (the identity included)."""
    n = len(diff)
    patterns = np.arange(2**n, dtype=np.int64)[:, None]
    signs = 1.0 - 2.0 * ((patterns >> np.arange(n)) & 1)
    return float(np.count_nonzero(np.abs(signs @ diff) >= threshold)) / 2**n


def _sampled_sign_flip(diff: np.ndarray, threshold: float, samples: int, rng: np.random.Generator,
                       max_patterns: int) -> tuple[float, int]:
    """``(1 + #{|sum| >= threshold}) / (1 + B)`` over B random sign patterns: B = ``samples``, or,
    when fewer than :data:`RESOLVED_COUNT` of those reach ``threshold`` (a p-value below about
    ``RESOLVED_COUNT / samples``, poorly resolved), more patterns until that many do or B =
    ``max_patterns``. Returns the p-value and B."""
    n = len(diff)
    extreme = drawn = 0
    while drawn < samples or (extreme < RESOLVED_COUNT and drawn < max_patterns):
        size = min(_CHUNK, (samples if drawn < samples else max_patterns) - drawn)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(size, n))
        extreme += int(np.count_nonzero(np.abs(signs @ diff) >= threshold))
        drawn += size
    return (1 + extreme) / (1 + drawn), drawn


def paired_comparison(
    values: Sequence[float] | np.ndarray,
    baseline: Sequence[float] | np.ndarray,
    samples: int = 1000,
    confidence: float = 0.95,
    seed: int | Sequence[int] = 0,
    max_patterns: int = 0,
    strata: Sequence[Any] | None = None,
) -> PairedComparison:
    """Compare paired values (``values[i]`` and ``baseline[i]`` come from the same example):
    is the mean of ``values - baseline`` different from 0?

    The caller pairs the values (the summary pairs them by example id). The interval is the
    percentile bootstrap of the mean difference (``samples`` resamples of the pairs); the
    p-value is the two-sided sign-flip test (exact up to :data:`EXACT_MAX_PAIRS` pairs; above
    that from ``samples`` random sign patterns, or up to ``max_patterns`` when the p-value is
    too small for ``samples`` to resolve, see :func:`_sampled_sign_flip`).

    ``strata``: a stratum label per pair (e.g. the dataset of each question of a suite). The mean
    difference is the mean over all pairs (every question weighted once); the bootstrap resamples
    pairs within each stratum, keeping each stratum's size; the sign-flip test flips signs within
    strata. Flipping each pair's sign independently is the same whether the pairs are grouped or
    not (the group of sign patterns within strata is the group of all sign patterns), so the test
    and its exact p-value are the unstratified ones; only the random stream differs, since the
    stratified bootstrap draws first. One stratum gives the unstratified result bit for bit."""
    _check_settings(confidence, samples)
    a, b = _as_array(values), _as_array(baseline)
    if a.shape != b.shape:
        raise ValueError(f"paired_comparison needs equally many values; got {len(a)} and {len(b)}")
    if len(a) == 0:
        raise ValueError("paired_comparison needs at least one pair")
    diff = a - b
    n = len(diff)
    groups = stratum_positions(strata, n)
    observed = float(diff.mean())
    if np.all(diff == diff[0]):
        # no variation: the interval is the point; a constant non-zero shift reaches the observed
        # |sum| under exactly 2 of the 2**n sign patterns (all +, all -): p = 2 / 2**n, exactly
        p = 1.0 if observed == 0 else min(1.0, 2.0 ** (1 - n))
        return PairedComparison(observed, observed, observed, p, n, confidence, True, 0)
    rng = np.random.default_rng(seed)
    low, high = _percentile_interval(_bootstrap_means(diff, samples, rng, groups), confidence)
    threshold = abs(float(diff.sum())) - _TIE_TOLERANCE * float(np.abs(diff).sum())
    if n <= EXACT_MAX_PAIRS:
        return PairedComparison(observed, low, high, _exact_sign_flip(diff, threshold), n, confidence, True, 2**n)
    p_value, patterns = _sampled_sign_flip(diff, threshold, samples, rng, max_patterns)
    return PairedComparison(observed, low, high, p_value, n, confidence, False, patterns)


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given.

    With the p-values sorted ascending, ``p_(1) <= ... <= p_(m)``, the adjusted value of the
    i-th smallest is ``max_{j <= i} min(1, (m - j + 1) * p_(j))``. Rejecting where the adjusted
    value is below alpha controls the family-wise error rate at alpha under any dependence
    between the tests. Ties keep their given order (it does not change the result)."""
    ps = [float(p) for p in p_values]
    for p in ps:
        if not 0 <= p <= 1:  # also refuses NaN
            raise ValueError(f"holm_adjust needs p-values in [0, 1]; got {p}")
    m = len(ps)
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(sorted(range(m), key=lambda i: ps[i])):
        running = max(running, min(1.0, (m - rank) * ps[index]))
        adjusted[index] = running
    return adjusted


def _binary(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    array = _as_array(values)
    if not np.all((array == 0) | (array == 1)):
        bad = array[(array != 0) & (array != 1)][0]
        raise ValueError(f"mcnemar_exact needs binary (0/1) outcomes; {name} has {bad:g}")
    return array


def discordant_pairs(values: Sequence[float] | np.ndarray, baseline: Sequence[float] | np.ndarray) -> tuple[int, int]:
    """Paired binary outcomes: (#pairs where only ``values`` is 1, #pairs where only ``baseline`` is 1)."""
    a, b = _binary(values, "values"), _binary(baseline, "baseline")
    if a.shape != b.shape:
        raise ValueError(f"paired binary outcomes need equally many values; got {len(a)} and {len(b)}")
    return int(np.count_nonzero((a == 1) & (b == 0))), int(np.count_nonzero((a == 0) & (b == 1)))


def mcnemar_exact(values: Sequence[float] | np.ndarray, baseline: Sequence[float] | np.ndarray) -> float:
    """Two-sided exact McNemar test of paired binary (0/1) outcomes, e.g. EM per example.

    Only discordant pairs carry information: with ``k`` = pairs where only one side is 1 and
    ``x`` of them won by ``values``, under the null ``x ~ Binomial(k, 1/2)`` and
    p = ``min(1, 2 * P(X <= min(x, k - x)))`` (1 when there is no discordant pair):
    ``scipy.stats.binomtest(x, k, 0.5)``, two-sided."""
    from scipy.stats import binomtest  # imported here: only the run summary's McNemar needs scipy

    wins, losses = discordant_pairs(values, baseline)
    if wins + losses == 0:
        return 1.0
    return float(binomtest(wins, wins + losses, 0.5).pvalue)

"""Statistics that say whether a difference is real: bootstrap confidence intervals of a mean,
and a paired comparison of two compressors on the same examples.

- :func:`bootstrap_ci`: percentile bootstrap of the mean (resampling examples with replacement).
- :func:`paired_comparison`: the mean of per-example differences (compressor - baseline), a
  paired-bootstrap confidence interval of that mean, and a two-sided sign-flip permutation
  p-value (under the null hypothesis the sign of each paired difference is exchangeable). The
  p-value is ``(1 + #{|permuted mean| >= |observed mean|}) / (1 + samples)``, so it is never 0.

Everything is seeded: the same inputs and seed give the same numbers.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

__all__ = ["Interval", "PairedComparison", "bootstrap_ci", "paired_comparison", "derive_seed"]

_CHUNK = 2000  # resamples per block: bounds memory at n x 2000 indices


def derive_seed(seed: int, *names: str) -> list[int]:
    """A seed sequence for one (seed, name, ...) combination, stable across runs and processes."""
    return [seed, *(zlib.crc32(n.encode()) for n in names)]


@dataclass(frozen=True)
class Interval:
    """A mean and its confidence interval over ``n`` values."""

    mean: float
    low: float
    high: float
    n: int
    confidence: float

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass(frozen=True)
class PairedComparison:
    """Mean difference (compressor - baseline) over ``n`` paired examples, its CI and p-value."""

    mean_difference: float
    low: float
    high: float
    p_value: float
    n: int
    confidence: float

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def _as_array(values: Sequence[float] | np.ndarray) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(array)):
        raise ValueError("statistics need finite values; got NaN or infinity")
    return array


def _bootstrap_means(values: np.ndarray, samples: int, rng: np.random.Generator) -> np.ndarray:
    n = len(values)
    means = np.empty(samples)
    for start in range(0, samples, _CHUNK):
        size = min(_CHUNK, samples - start)
        idx = rng.integers(0, n, size=(size, n))
        means[start : start + size] = values[idx].mean(axis=1)
    return means


def bootstrap_ci(
    values: Sequence[float] | np.ndarray, samples: int = 1000, confidence: float = 0.95, seed: int | Sequence[int] = 0
) -> Interval:
    """The mean of ``values`` with a percentile-bootstrap confidence interval."""
    array = _as_array(values)
    n = len(array)
    if n == 0:
        raise ValueError("bootstrap_ci needs at least one value")
    mean = float(array.mean())
    if n == 1 or np.all(array == array[0]):
        return Interval(mean, mean, mean, n, confidence)
    means = _bootstrap_means(array, samples, np.random.default_rng(seed))
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    # the percentile interval of a mean brackets the mean up to resampling noise; clamp so that
    # a reported interval always contains its point estimate
    return Interval(mean, float(min(low, mean)), float(max(high, mean)), n, confidence)


def paired_comparison(
    values: Sequence[float] | np.ndarray,
    baseline: Sequence[float] | np.ndarray,
    samples: int = 1000,
    confidence: float = 0.95,
    seed: int | Sequence[int] = 0,
) -> PairedComparison:
    """Compare paired values (same examples, same order): is ``values`` - ``baseline`` != 0?"""
    a, b = _as_array(values), _as_array(baseline)
    if a.shape != b.shape:
        raise ValueError(f"paired_comparison needs equally many values; got {len(a)} and {len(b)}")
    if len(a) == 0:
        raise ValueError("paired_comparison needs at least one pair")
    diff = a - b
    n = len(diff)
    observed = float(diff.mean())
    if np.all(diff == diff[0]):
        # no variation: the interval is the point; a constant non-zero shift on every example is
        # still only as significant as n sign flips allow
        p = 1.0 if observed == 0 else min(1.0, 2.0 ** (1 - n))
        return PairedComparison(observed, observed, observed, p, n, confidence)
    rng = np.random.default_rng(seed)
    boot = _bootstrap_means(diff, samples, rng)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(boot, [alpha, 1 - alpha])
    extreme = 0
    for start in range(0, samples, _CHUNK):
        size = min(_CHUNK, samples - start)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(size, n))
        permuted = (signs * diff).mean(axis=1)
        extreme += int(np.sum(np.abs(permuted) >= abs(observed) - 1e-12))
    p_value = (1 + extreme) / (1 + samples)
    return PairedComparison(observed, float(min(low, observed)), float(max(high, observed)), p_value, n, confidence)

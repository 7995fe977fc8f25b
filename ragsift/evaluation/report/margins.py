"""The declared primary test and its verdict word: superiority, non-inferiority, equivalence
(TOST) and the fixed-sequence non-inferiority-then-superiority procedure (docs/statistics.md,
"The primary test's type, and its verdict").

Differences are compressor - baseline per question, in display units (EM points); the margin M
(> 0) is in the same units. The tests with a margin use the **paired t** on the differences:

- **non-inferiority**: one-sided at alpha, H0: delta <= -M. The lower bound
  ``mean - t_{1-alpha, df} se`` above -M: "non-inferior"; the one-sided upper bound
  ``mean + t_{1-alpha, df} se`` below -M: "inferior" (worse than the margin); else "inconclusive".
- **equivalence**: two one-sided tests (TOST, Schuirmann 1987) at alpha each, H0: |delta| >= M:
  the ``1 - 2 alpha`` interval inside (-M, M): "equivalent"; wholly above +M: "superior"; wholly
  below -M: "inferior"; else "inconclusive". Without strata this is statsmodels'
  ``ttost_paired`` (the tests check it).
- **superiority**: two-sided at alpha, H0: delta = 0. The paired t here; the run summary's
  default primary test keeps today's sign-flip test and bootstrap interval (:func:`verdict_from_test`).
- **non-inferiority-then-superiority**: the fixed sequence, both one-sided at alpha on the same
  lower bound: first "delta > -M", and only if shown, "delta > 0". The hypotheses are nested
  (delta > 0 implies delta > -M), so the closed-testing argument gives a family-wise error of
  alpha with no correction. Lower bound above 0: "superior"; above -M: "non-inferior".

``alpha`` is the level of each one-sided test (the regulatory convention for non-inferiority, a
two-sided 95% interval, is alpha = 0.025). With ``strata`` (a suite pooled across datasets) the
estimate is the mean over all questions, its variance the sum over strata
``sum_s (n_s/n)^2 s_s^2 / n_s`` and the degrees of freedom n - K (K strata), so that one stratum is
the ordinary paired t.

The paired t and TOST come from scipy / statsmodels; the stratified variance is written here
(neither library has a stratified paired t), a few lines over :mod:`scipy.stats.t`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

__all__ = [
    "TESTS", "VERDICTS", "PrimaryDesign", "PairedT", "Verdict", "paired_t", "non_inferiority", "equivalence",
    "superiority", "non_inferiority_then_superiority", "decide", "verdict_from_test",
]

TestType = Literal["superiority", "non-inferiority", "equivalence", "non-inferiority-then-superiority"]
#: the declared primary test's types
TESTS: tuple[str, ...] = ("superiority", "non-inferiority", "equivalence", "non-inferiority-then-superiority")
#: the verdict words, in the order of the README's table
VERDICTS: tuple[str, ...] = ("superior", "non-inferior", "equivalent", "inferior", "inconclusive")


@dataclass(frozen=True)
class PrimaryDesign:
    """The declared primary comparison (``[evaluation.primary]``): the compressor against the
    run's baseline on ``metric``, with its test type, margin (display units), alpha, and the
    sequential design (``looks``: fractions of ``max_n``; ``spending``; ``futility``)."""

    compressor: str
    metric: str = "em"
    test: str = "superiority"
    margin: float | None = None
    alpha: float = 0.05
    looks: tuple[float, ...] = ()
    spending: str = "obrien-fleming"
    max_n: int | None = None
    futility: bool = False

    def __post_init__(self) -> None:
        if self.test not in TESTS:
            raise ValueError(f"test must be one of {', '.join(TESTS)}; got {self.test!r}")
        if self.test != "superiority" and (self.margin is None or not self.margin > 0):
            raise ValueError(f"a {self.test} test needs a margin > 0 (in the metric's display units)")
        if not 0 < self.alpha < 0.5:
            raise ValueError(f"alpha must lie in (0, 0.5); got {self.alpha}")
        object.__setattr__(self, "looks", tuple(float(t) for t in self.looks))

    @classmethod
    def from_mapping(cls, value: str | Mapping[str, Any] | PrimaryDesign) -> PrimaryDesign:
        """A design from a label (superiority on EM, today's primary), a mapping of these fields
        (``[evaluation.primary]``, e.g. ``PrimarySettings.model_dump()``), or a design."""
        if isinstance(value, PrimaryDesign):
            return value
        if isinstance(value, str):
            return cls(compressor=value)
        known = {k: v for k, v in value.items() if k in cls.__dataclass_fields__ and v is not None}
        if "looks" in known:
            known["looks"] = tuple(known["looks"])
        return cls(**known)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["looks"] = list(self.looks)
        return out


@dataclass(frozen=True)
class PairedT:
    """The paired t summary of differences: mean, standard error, degrees of freedom, n, strata,
    and the sum of squared differences (for :meth:`z_null`)."""

    mean: float
    se: float
    df: int
    n: int
    strata: int = 1
    #: sum of the squared differences: the variance of their sum under the sign-flip null
    sum_squares: float | None = None

    def bound(self, alpha: float, side: Literal["lower", "upper"]) -> float:
        """The one-sided ``1 - alpha`` confidence bound."""
        from scipy.stats import t

        q = float(t.ppf(1 - alpha, self.df)) * self.se
        return self.mean - q if side == "lower" else self.mean + q

    def p_above(self, value: float) -> float:
        """One-sided p-value of H0: delta <= value (against delta > value)."""
        from scipy.stats import t

        if self.se == 0:
            return 0.0 if self.mean > value else 1.0
        return float(t.sf((self.mean - value) / self.se, self.df))

    def p_below(self, value: float) -> float:
        """One-sided p-value of H0: delta >= value (against delta < value)."""
        from scipy.stats import t

        if self.se == 0:
            return 0.0 if self.mean < value else 1.0
        return float(t.cdf((self.mean - value) / self.se, self.df))

    def z_null(self) -> float:
        """sum(d) / sqrt(sum(d^2)): the normal approximation of the sign-flip test of "no difference"
        (on 0/1 outcomes McNemar's (b - c) / sqrt(b + c)); its variance is the one under the null,
        so it keeps the level where (mean / se), whose variance is estimated around the observed
        mean, rejects slightly too often on 0/1 data. Sign flips within strata give the same."""
        if not self.sum_squares:
            return 0.0
        return self.mean * self.n / math.sqrt(self.sum_squares)

    def z(self, value: float = 0.0) -> float:
        """(mean - value) / se: the look statistic of a sequential test of delta > value."""
        if self.se == 0:
            return math.copysign(math.inf, self.mean - value) if self.mean != value else 0.0
        return (self.mean - value) / self.se


def paired_t(values: Sequence[float], baseline: Sequence[float] | None = None,
             strata: Sequence[Any] | None = None) -> PairedT:
    """The paired t summary of ``values - baseline`` (or of ``values`` as differences when
    ``baseline`` is None); with ``strata`` the stratified variance (sum over strata, each stratum
    at least 2 pairs) and n - K degrees of freedom."""
    d = np.asarray(values, dtype=float) - (0.0 if baseline is None else np.asarray(baseline, dtype=float))
    n = d.size
    if n < 2 or not np.all(np.isfinite(d)):
        raise ValueError("the paired t needs at least 2 finite differences")
    if strata is None:
        return PairedT(float(d.mean()), float(d.std(ddof=1)) / math.sqrt(n), n - 1, n, 1, float(d @ d))
    from ragsift.evaluation.report.statistics import stratum_positions

    groups = stratum_positions(strata, n)
    if any(len(g) < 2 for g in groups):
        raise ValueError("a stratified paired t needs at least 2 pairs in every stratum")
    variance = sum((len(g) / n) ** 2 * float(d[g].var(ddof=1)) / len(g) for g in groups)
    return PairedT(float(d.mean()), math.sqrt(variance), n - len(groups), n, len(groups), float(d @ d))


@dataclass(frozen=True)
class Verdict:
    """A declared test's decision: ``word`` (one of :data:`VERDICTS`), the ``test`` type, the
    estimate, the bound(s) it was decided on (``low``/``high``: the one-sided ``1 - alpha`` bounds,
    or the two-sided ``1 - alpha`` interval for superiority, the ``1 - 2 alpha`` one for TOST), the
    ``margin`` and ``alpha``, the decisive ``p_value``, n, ``method``, and ``steps`` of a fixed
    sequence (each step's hypothesis, p-value and whether it was rejected)."""

    word: str
    test: str
    estimate: float
    low: float
    high: float
    margin: float | None
    alpha: float
    p_value: float
    n: int
    method: str
    steps: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["steps"] = [dict(s) for s in self.steps]
        return out


def _method(t: PairedT) -> str:
    return "paired t" if t.strata == 1 else f"paired t stratified over {t.strata} strata"


def _margin(margin: float) -> float:
    if not margin > 0 or not math.isfinite(margin):
        raise ValueError(f"a margin must be a positive number (display units); got {margin}")
    return float(margin)


def non_inferiority(values: Sequence[float], baseline: Sequence[float], margin: float, alpha: float = 0.05,
                    strata: Sequence[Any] | None = None) -> Verdict:
    """One-sided non-inferiority at ``alpha``: "non-inferior" when the lower ``1 - alpha`` bound of
    compressor - baseline is above -margin, "inferior" when the upper one is below it."""
    m = _margin(margin)
    t = paired_t(values, baseline, strata)
    low, high = t.bound(alpha, "lower"), t.bound(alpha, "upper")
    word = "non-inferior" if low > -m else "inferior" if high < -m else "inconclusive"
    return Verdict(word, "non-inferiority", t.mean, low, high, m, alpha, t.p_above(-m), t.n, _method(t))


def equivalence(values: Sequence[float], baseline: Sequence[float], margin: float, alpha: float = 0.05,
                strata: Sequence[Any] | None = None) -> Verdict:
    """TOST at ``alpha``: "equivalent" when both one-sided tests reject (the ``1 - 2 alpha``
    interval lies inside (-margin, margin)); p = the larger of the two one-sided p-values
    (statsmodels' ``ttost_paired`` without strata)."""
    m = _margin(margin)
    t = paired_t(values, baseline, strata)
    low, high = t.bound(alpha, "lower"), t.bound(alpha, "upper")
    p = max(t.p_above(-m), t.p_below(m))
    word = ("equivalent" if low > -m and high < m else "superior" if low > m else "inferior" if high < -m
            else "inconclusive")
    return Verdict(word, "equivalence", t.mean, low, high, m, alpha, p, t.n, _method(t))


def superiority(values: Sequence[float], baseline: Sequence[float], alpha: float = 0.05,
                strata: Sequence[Any] | None = None) -> Verdict:
    """Two-sided paired t at ``alpha``: "superior" / "inferior" when the ``1 - alpha`` interval
    excludes 0 above / below, else "inconclusive"."""
    t = paired_t(values, baseline, strata)
    low, high = t.bound(alpha / 2, "lower"), t.bound(alpha / 2, "upper")
    word = "superior" if low > 0 else "inferior" if high < 0 else "inconclusive"
    p = min(1.0, 2 * min(t.p_above(0.0), t.p_below(0.0)))
    return Verdict(word, "superiority", t.mean, low, high, None, alpha, p, t.n, _method(t))


def non_inferiority_then_superiority(values: Sequence[float], baseline: Sequence[float], margin: float,
                                     alpha: float = 0.05, strata: Sequence[Any] | None = None) -> Verdict:
    """The fixed sequence: non-inferiority (delta > -margin), then, only if shown, superiority
    (delta > 0), both one-sided at ``alpha`` on the same lower bound (no correction: the second
    hypothesis is tested only after the first is rejected, and they are nested)."""
    m = _margin(margin)
    t = paired_t(values, baseline, strata)
    low, high = t.bound(alpha, "lower"), t.bound(alpha, "upper")
    p_ni, p_sup = t.p_above(-m), t.p_above(0.0)
    ni = p_ni < alpha
    sup = ni and p_sup < alpha
    steps = ({"hypothesis": f"difference > -{m:g}", "p_value": p_ni, "rejected_null": ni},
             {"hypothesis": "difference > 0", "p_value": p_sup if ni else None, "rejected_null": sup,
              "tested": ni})
    word = "superior" if sup else "non-inferior" if ni else "inferior" if high < -m else "inconclusive"
    return Verdict(word, "non-inferiority-then-superiority", t.mean, low, high, m, alpha, p_sup if sup else p_ni,
                   t.n, _method(t), steps)


def decide(design: PrimaryDesign, values: Sequence[float], baseline: Sequence[float],
           strata: Sequence[Any] | None = None) -> Verdict:
    """The verdict of ``design``'s test type on paired values (display units)."""
    if design.test == "superiority":
        return superiority(values, baseline, design.alpha, strata)
    margin = float(design.margin or 0)
    if design.test == "non-inferiority":
        return non_inferiority(values, baseline, margin, design.alpha, strata)
    if design.test == "equivalence":
        return equivalence(values, baseline, margin, design.alpha, strata)
    return non_inferiority_then_superiority(values, baseline, margin, design.alpha, strata)


def verdict_from_test(test: Mapping[str, Any], alpha: float = 0.05) -> Verdict:
    """The superiority verdict of a summary comparison (``PairedComparison.to_dict()``): the
    two-sided sign-flip p-value below ``alpha`` and the sign of the mean difference; the bounds
    are its bootstrap interval. Today's primary test, in a word."""
    significant = float(test["p_value"]) < alpha
    diff = float(test["mean_difference"])
    word = ("superior" if diff > 0 else "inferior") if significant and diff != 0 else "inconclusive"
    return Verdict(word, "superiority", diff, float(test["low"]), float(test["high"]), None, alpha,
                   float(test["p_value"]), int(test["n"]),
                   "sign-flip test (two-sided), percentile-bootstrap interval")

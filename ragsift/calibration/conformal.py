"""Split conformal calibration of a keep-threshold (docs/conformal.md).

Each calibration question ``i`` has a score ``s_i``: the largest threshold that still keeps its
target (:meth:`ragsift.calibration.targets.Units.calibration_score`); a new question is covered at
threshold ``t`` exactly when ``s_{n+1} >= t``. With ``n`` calibration questions and

    k = floor((n + 1) * alpha)

the threshold is ``t = s_(k)``, the k-th smallest of ``s_1 .. s_n``. When the ``n + 1`` scores are
exchangeable, the rank of ``s_{n+1}`` among them is uniform (ties only help), so

    P(s_{n+1} < s_(k)) <= k / (n + 1) <= alpha,   i.e.   P(covered) >= 1 - alpha.

This is the finite-sample corrected (1 - alpha) quantile of conformal prediction written for
scores where higher is better: with ``r_i = -s_i`` it is minus the ``ceil((n + 1)(1 - alpha))``-th
smallest ``r_i`` (``n + 1 - ceil((n + 1)(1 - alpha)) = floor((n + 1) alpha)``). When
``(n + 1) * alpha < 1`` (``k = 0``: fewer than ``1/alpha - 1`` questions) no score is low enough to
guarantee anything and the threshold is ``-inf``: keep everything.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

__all__ = ["conformal_rank", "conformal_threshold", "ConformalThreshold", "score_summary"]


def conformal_rank(n: int, alpha: float) -> int:
    """``k = floor((n + 1) * alpha)``, computed exactly (``alpha`` as the decimal it was written
    as, so that ``n = 99, alpha = 0.1`` gives 10, not 9 through a rounding error)."""
    if n < 1:
        raise ValueError(f"need at least one calibration score; got n = {n}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1); got {alpha}")
    return math.floor(Fraction(str(alpha)) * (n + 1))


@dataclass(frozen=True)
class ConformalThreshold:
    """The calibrated threshold, the rank it was read at, and how many scores were out of reach."""

    threshold: float
    #: ``floor((n + 1) * alpha)``; 0: too few questions, keep everything
    k: int
    n: int
    alpha: float
    #: calibration questions whose target no threshold keeps (score ``-inf``)
    unreachable: int

    @property
    def keeps_everything(self) -> bool:
        return self.k == 0


def conformal_threshold(scores: Sequence[float] | np.ndarray, alpha: float) -> ConformalThreshold:
    """The split-conformal threshold of the per-question ``scores`` (module docstring). A
    ValueError for NaN scores, and when the k-th smallest score is ``-inf`` (more than a share
    alpha of the questions have a target no threshold keeps: no threshold covers 1 - alpha)."""
    values = np.sort(np.asarray(scores, dtype=np.float64))
    if np.isnan(values).any():
        raise ValueError("a calibration score is NaN")
    n = len(values)
    k = conformal_rank(n, alpha)
    unreachable = int(np.isneginf(values).sum())
    if k == 0:
        return ConformalThreshold(-math.inf, 0, n, alpha, unreachable)
    threshold = float(values[k - 1])
    if threshold == -math.inf:
        raise ValueError(f"{unreachable} of {n} calibration questions have a target that no threshold keeps (e.g. the "
                         f"answer string is in no unit), more than alpha = {alpha} allows (at most {k - 1}); no "
                         "threshold keeps the target for 1 - alpha of the questions: choose another target or a "
                         "larger alpha.")
    return ConformalThreshold(threshold, k, n, alpha, unreachable)


def score_summary(scores: Sequence[float] | np.ndarray) -> dict[str, float | int]:
    """Count, infinities and quantiles (min, 5%, 10%, 25%, 50%, max of the finite ones) of the
    per-question calibration scores, for the frozen record."""
    values = np.asarray(scores, dtype=np.float64)
    finite = values[np.isfinite(values)]
    out: dict[str, float | int] = {"n": int(len(values)), "finite": int(len(finite)),
                                   "needs_nothing": int(np.isposinf(values).sum()),
                                   "unreachable": int(np.isneginf(values).sum())}
    if len(finite):
        for label, q in (("min", 0.0), ("q05", 0.05), ("q10", 0.10), ("q25", 0.25), ("median", 0.5), ("max", 1.0)):
            out[label] = float(np.quantile(finite, q))
    return out

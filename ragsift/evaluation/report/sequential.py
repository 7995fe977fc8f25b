"""Group-sequential looks with Lan-DeMets alpha spending (docs/statistics.md, "Sequential looks").

A long comparison looks at its primary test at a few information fractions t_1 < ... < t_K = 1
(fractions of the declared maximum number of questions) and stops when a boundary is crossed.
With Z_k the test statistic at look k (the estimate over its standard error), under the null the
Z_k are jointly normal with corr(Z_j, Z_k) = sqrt(t_j / t_k) (independent increments). The
boundaries b_k are chosen so that the chance of crossing at look k, having not crossed before, is
the alpha spent between t_{k-1} and t_k:

- **O'Brien-Fleming type** (Lan & DeMets 1983): alpha(t) = 2 - 2 Phi(Phi^{-1}(1 - alpha/2) / sqrt(t)),
- **Pocock type**: alpha(t) = alpha ln(1 + (e - 1) t),

with alpha the level of each side (gsDesign's ``sfLDOF`` / ``sfLDPocock``; a two-sided test at
level a spends a/2 on each side, as ``ldbounds`` does). Spending functions give boundaries for
looks at any fractions, decided as the run goes, not only the planned ones.

:func:`classical_boundaries` gives the original O'Brien & Fleming (1979) and Pocock (1977)
boundaries for K equally spaced looks (b_k = C / sqrt(t_k), resp. b_k = C), a reference.

The joint probabilities are computed by the recursive numerical integration of Armitage,
McPherson & Rowe (1969) (as in Jennison & Turnbull 2000, ch. 19): the density of the score
S_k = Z_k sqrt(t_k) on the continuation region, carried from look to look by convolution with the
normal density of the independent increment, integrated with Simpson's rule on a fine grid.
Written here because neither scipy nor statsmodels has group-sequential boundaries (the R
packages gsDesign / ldbounds do); the tests check it against their published values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

from ragsift.evaluation.report.margins import PairedT, PrimaryDesign

__all__ = [
    "SPENDING", "spending", "boundaries", "classical_boundaries", "crossing_probabilities", "Look",
    "SequentialDecision", "sequential_decision", "check_fractions", "primary_look_decision",
]

Spending = Literal["obrien-fleming", "pocock"]
#: the spending functions by name
SPENDING: tuple[str, ...] = ("obrien-fleming", "pocock")
_GRID = 401  # Simpson points per look (odd); boundaries agree with finer grids to 1e-4
_FAR = 10.0  # the continuation region of a one-sided test is cut at Z = -10 (probability < 1e-22)


def spending(t: float | Sequence[float] | np.ndarray, alpha: float, kind: str = "obrien-fleming") -> np.ndarray:
    """The alpha spent by information fraction ``t`` (one side, level ``alpha``)."""
    from scipy.stats import norm

    fractions = np.clip(np.asarray(t, dtype=float), 0.0, 1.0)
    if kind == "obrien-fleming":
        with np.errstate(divide="ignore"):
            out = 2 - 2 * norm.cdf(norm.ppf(1 - alpha / 2) / np.sqrt(fractions))
        return np.where(fractions > 0, out, 0.0)
    if kind == "pocock":
        return alpha * np.log1p((math.e - 1) * fractions)
    raise ValueError(f"spending must be one of {', '.join(SPENDING)}; got {kind!r}")


def check_fractions(fractions: Sequence[float], final: bool = False) -> list[float]:
    """Fractions in (0, 1], strictly increasing (and the last 1.0 when ``final``)."""
    out = [float(t) for t in fractions]
    if not out:
        raise ValueError("looks need at least one information fraction")
    if any(not 0 < t <= 1 for t in out) or any(b <= a for a, b in zip(out, out[1:], strict=False)):
        raise ValueError(f"information fractions must lie in (0, 1] and increase; got {out}")
    if final and out[-1] != 1.0:
        raise ValueError(f"the last look must be at fraction 1.0 (all the questions); got {out[-1]}")
    return out


def _simpson(a: float, b: float, points: int = _GRID) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights of Simpson's rule on [a, b]."""
    x = np.linspace(a, b, points)
    w = np.ones(points)
    w[1:-1:2], w[2:-1:2] = 4, 2
    return x, w * (b - a) / (points - 1) / 3


class _Recursion:
    """The density of S_k = Z_k sqrt(t_k) on the continuation region, look after look (drift
    ``theta`` per unit information: S_k ~ N(theta t_k, t_k))."""

    def __init__(self, theta: float = 0.0) -> None:
        self.theta = theta
        self.t = 0.0
        self.nodes: np.ndarray | None = None  # None: S_0 = 0, a point mass
        self.mass: np.ndarray | None = None  # density x Simpson weight at the nodes

    def _moved(self, t: float) -> tuple[np.ndarray, np.ndarray, float]:
        nodes = np.zeros(1) if self.nodes is None else self.nodes
        mass = np.ones(1) if self.mass is None else self.mass
        return nodes + self.theta * (t - self.t), mass, math.sqrt(t - self.t)

    def exit_above(self, t: float, b: float) -> float:
        """P(not stopped before, Z at ``t`` >= b)."""
        from scipy.stats import norm

        mean, mass, sd = self._moved(t)
        return float(mass @ norm.sf((b * math.sqrt(t) - mean) / sd))

    def exit_below(self, t: float, a: float) -> float:
        """P(not stopped before, Z at ``t`` <= a)."""
        from scipy.stats import norm

        mean, mass, sd = self._moved(t)
        return float(mass @ norm.cdf((a * math.sqrt(t) - mean) / sd))

    def step(self, t: float, lower: float, upper: float) -> None:
        """Carry the density to look ``t``, keeping lower < Z < upper (the run goes on)."""
        from scipy.stats import norm

        mean, mass, sd = self._moved(t)
        x, w = _simpson(lower * math.sqrt(t), upper * math.sqrt(t))
        density = norm.pdf((x[:, None] - mean[None, :]) / sd) / sd @ mass
        self.nodes, self.mass, self.t = x, density * w, t


def _solve(f: Any, target: float) -> float:
    """The b with f(b) = target, f decreasing in b (an exit probability above b)."""
    from scipy.optimize import brentq

    if target <= 0:
        return math.inf
    hi = 40.0
    lo = -_FAR
    if f(lo) < target:  # even the whole remaining mass is less than the target: cross at once
        return lo
    return float(brentq(lambda b: f(b) - target, lo, hi, xtol=1e-9))


def boundaries(fractions: Sequence[float], alpha: float = 0.05, kind: str = "obrien-fleming",
               sides: Literal[1, 2] = 2) -> list[float]:
    """Lan-DeMets efficacy boundaries on the Z scale at the given information fractions.

    ``sides`` 2: a two-sided test at total level ``alpha``, symmetric (cross when |Z_k| >= b_k;
    ``alpha / 2`` spent on each side). ``sides`` 1: one-sided at ``alpha`` (cross when Z_k >= b_k).
    The last fraction need not be 1 (a look before the end spends only what its fraction allows);
    at 1 the whole alpha is spent. K = 4 equal looks, two-sided 0.05, O'Brien-Fleming type:
    about 4.33, 2.96, 2.36, 2.01 (Reboussin et al.'s ld98 / R ``ldbounds``)."""
    ts = check_fractions(fractions)
    if sides not in (1, 2):
        raise ValueError(f"sides must be 1 or 2; got {sides}")
    side_alpha = alpha / sides
    spent = spending(ts, side_alpha, kind)
    out: list[float] = []
    recursion = _Recursion()
    previous = 0.0
    for t, cumulative in zip(ts, spent, strict=True):
        b = _solve(lambda b, t=t: recursion.exit_above(t, b), float(cumulative) - previous)
        out.append(b)
        previous = float(cumulative)
        recursion.step(t, -b if sides == 2 else -_FAR, b)
    return out


def crossing_probabilities(fractions: Sequence[float], upper: Sequence[float], lower: Sequence[float] | None = None,
                           drift: float = 0.0) -> list[float]:
    """P(first crossing at look k) for each k: above ``upper[k]``, or below ``lower[k]`` (none by
    default), when Z_k = S_k / sqrt(t_k) with S_k ~ N(drift t_k, t_k) (``drift`` 0: the null; the
    expected Z at t = 1 otherwise, for power)."""
    ts = check_fractions(fractions)
    lows = [-_FAR - 30] * len(ts) if lower is None else [float(a) for a in lower]
    recursion = _Recursion(drift)
    out = []
    for t, b, a in zip(ts, upper, lows, strict=True):
        out.append(recursion.exit_above(t, b) + (recursion.exit_below(t, a) if lower is not None else 0.0))
        recursion.step(t, max(a, -_FAR), b)
    return out


def classical_boundaries(looks: int, alpha: float = 0.05, kind: str = "obrien-fleming",
                         sides: Literal[1, 2] = 2) -> list[float]:
    """The original O'Brien-Fleming (b_k = C sqrt(K / k)) or Pocock (b_k = C) boundaries for
    ``looks`` equally spaced looks at total level ``alpha``: C solved so that the total crossing
    probability under the null is ``alpha``. K = 4, two-sided 0.05: O'Brien-Fleming C = 2.024
    (4.05, 2.86, 2.34, 2.02), Pocock C = 2.361 (Jennison & Turnbull 2000, Tables 2.1 and 2.3)."""
    from scipy.optimize import brentq

    ts = [k / looks for k in range(1, looks + 1)]
    shape = [1 / math.sqrt(t) for t in ts] if kind == "obrien-fleming" else [1.0] * looks
    if kind not in SPENDING:
        raise ValueError(f"kind must be one of {', '.join(SPENDING)}; got {kind!r}")

    def total(c: float) -> float:
        upper = [c * s for s in shape]
        return sum(crossing_probabilities(ts, upper, [-u for u in upper] if sides == 2 else None))

    c = brentq(lambda c: total(c) - alpha, 0.5, 10.0, xtol=1e-9)
    return [c * s for s in shape]


@dataclass(frozen=True)
class Look:
    """One look: its information ``fraction``, ``n`` questions, the statistic ``z``, the efficacy
    ``boundary`` (and ``futility`` boundary when declared), the cumulative ``alpha_spent`` (both
    sides), and ``crossed``: "efficacy", "futility" or None; from :func:`primary_look_decision`
    also the ``estimate`` (mean difference), its ``se``, the one-sided ``bound`` at the look's
    boundary (estimate - boundary x se) and ``z_superiority`` of a fixed sequence."""

    fraction: float
    n: int | None
    z: float
    boundary: float
    alpha_spent: float
    futility: float | None = None
    crossed: str | None = None
    estimate: float | None = None
    se: float | None = None
    bound: float | None = None
    z_superiority: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class SequentialDecision:
    """Where the looks so far leave the run: ``stop`` (read no more questions), ``reason``
    ("efficacy", "futility", "final look" or None: go on to the next look), every ``looks``
    entry with its boundary (what the manifest records), and from :func:`primary_look_decision`
    the verdict ``word`` so far (:data:`ragsift.evaluation.report.margins.VERDICTS`: "inconclusive"
    while the run goes on without a crossing; "non-inferior" once a fixed sequence has shown it)."""

    stop: bool
    reason: str | None
    looks: tuple[Look, ...] = field(default_factory=tuple)
    word: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"stop": self.stop, "reason": self.reason, "word": self.word,
                "looks": [look.to_dict() for look in self.looks]}


def sequential_decision(fractions: Sequence[float], z: Sequence[float], *, alpha: float = 0.05,
                        kind: str = "obrien-fleming", sides: Literal[1, 2] = 1, futility: bool = False,
                        n: Sequence[int] | None = None) -> SequentialDecision:
    """Whether the looks done so far cross a boundary.

    ``fractions``: the information fractions of the looks done (questions read / declared
    maximum; actual fractions, which may differ from the planned ones: the spending function
    adapts); ``z``: each look's statistic (for a one-sided test of delta > -M, ``(mean + M) / se``;
    see :meth:`ragsift.evaluation.report.margins.PairedT.z`). ``sides`` 1: cross when z >= b_k;
    2: when |z| >= b_k. ``futility`` (one-sided only; non-binding: the efficacy boundaries are
    computed as if the run never stopped for futility, so stopping or not keeps the level): stop
    when z <= -b_k, i.e. when the opposite one-sided test, at the same boundary, shows the
    compressor worse than the margin. The boundaries are recomputed from all looks' fractions, so
    a look's boundary depends only on the looks up to it. The run stops at the first look that
    crosses, or at fraction 1."""
    ts = check_fractions(fractions)
    if len(z) != len(ts):
        raise ValueError(f"one statistic per look; got {len(z)} for {len(ts)} looks")
    if futility and sides != 1:
        raise ValueError("a futility boundary is for a one-sided (non-inferiority) test")
    bounds = boundaries(ts, alpha, kind, sides)
    spent = spending(ts, alpha / sides, kind)
    looks = []
    for k, (t, stat, b) in enumerate(zip(ts, z, bounds, strict=True)):
        crossed = None
        if (abs(stat) if sides == 2 else stat) >= b:
            crossed = "efficacy"
        elif futility and stat <= -b:
            crossed = "futility"
        looks.append(Look(t, None if n is None else int(n[k]), float(stat), b, float(spent[k]) * sides,
                          -b if futility else None, crossed))
        if crossed:
            return SequentialDecision(True, crossed, tuple(looks))
    final = ts[-1] >= 1.0
    return SequentialDecision(final, "final look" if final else None, tuple(looks))


def primary_look_decision(design: PrimaryDesign, history: Sequence[tuple[float, PairedT]]) -> SequentialDecision:
    """The declared primary test's sequential decision after the looks in ``history``.

    ``history``: per look done so far, in order, its information fraction (questions read /
    ``design.max_n``) and the :class:`~ragsift.evaluation.report.margins.PairedT` of the primary
    comparison on those questions (``paired_t(values, baseline, strata)``). Boundaries follow
    ``design.spending`` at ``design.alpha``:

    - superiority: two-sided, |z| >= b_k with z = sum(d) / sqrt(sum(d^2)) (:meth:`PairedT.z_null`,
      the normal approximation of the summary's sign-flip test): "superior" or "inferior";
    - non-inferiority: one-sided, z = (mean + M) / se >= b_k: "non-inferior"; with ``futility``
      (non-binding) z <= -b_k: "inferior";
    - non-inferiority-then-superiority: the same one-sided boundaries for both (nested
      hypotheses, fixed sequence): the run stops when z_null >= b_k ("superior"); a look whose
      (mean + M) / se >= b_k shows non-inferiority, kept to the end ("non-inferior" unless
      superiority follows); futility as for non-inferiority;
    - equivalence: one-sided boundaries for both TOST statistics, min((mean + M) / se,
      (M - mean) / se) >= b_k: "equivalent".

    At fraction 1 without a crossing the word is the final one: "non-inferior" for a fixed
    sequence that showed it earlier; "inferior" for a non-inferiority test whose last look puts
    the upper bound (estimate + boundary x se) below -margin (the mirror of the efficacy test at
    the same boundary: all questions read, so no early stop is implied); else "inconclusive"."""
    if not history:
        raise ValueError("primary_look_decision needs at least one look")
    ts = check_fractions([t for t, _ in history])
    stats = [s for _, s in history]
    m = float(design.margin or 0.0)
    sides: Literal[1, 2] = 2 if design.test == "superiority" else 1
    bounds = boundaries(ts, design.alpha, design.spending, sides)
    spent = spending(ts, design.alpha / sides, design.spending)
    looks: list[Look] = []
    shown_ni = False
    for k, (t, st) in enumerate(zip(ts, stats, strict=True)):
        b = bounds[k]
        z_sup = None
        if design.test == "superiority":
            z = st.z_null()
        elif design.test == "equivalence":
            z = min(st.z(-m), -st.z(m))
        else:
            z = st.z(-m)
        if design.test == "non-inferiority-then-superiority":
            z_sup = st.z_null()
        crossed, word = None, None
        if design.test == "superiority" and abs(z) >= b:
            crossed, word = "efficacy", "superior" if z > 0 else "inferior"
        elif design.test == "non-inferiority-then-superiority" and z_sup is not None and z_sup >= b:
            crossed, word = "efficacy", "superior"
        elif design.test in ("non-inferiority", "equivalence") and z >= b:
            crossed, word = "efficacy", "non-inferior" if design.test == "non-inferiority" else "equivalent"
        elif design.futility and design.test.startswith("non-inferiority") and z <= -b:
            crossed, word = "futility", "inferior"
        if design.test == "non-inferiority-then-superiority" and z >= b:
            shown_ni = True
        look = Look(t, st.n, float(z), b, float(spent[k]) * sides, -b if design.futility and sides == 1 else None,
                    crossed, st.mean, st.se, st.mean - b * st.se, z_sup)
        looks.append(look)
        if crossed:
            if crossed == "futility" and shown_ni:
                word = "non-inferior"  # shown at an earlier look: a later trend does not undo it
            return SequentialDecision(True, crossed, tuple(looks), word)
    final = ts[-1] >= 1.0
    word = "non-inferior" if shown_ni else "inconclusive"
    if final and not shown_ni and design.test.startswith("non-inferiority") and looks[-1].z <= -looks[-1].boundary:
        word = "inferior"  # all questions read, and the upper bound at the last boundary is below -margin
    return SequentialDecision(final, "final look" if final else None, tuple(looks), word)

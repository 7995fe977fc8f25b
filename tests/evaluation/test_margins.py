"""Issue 48: the declared primary test's margin tests and verdict words; TOST against
statsmodels' ttost_paired, the one-sided bounds against scipy's t distribution."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import t as student_t
from statsmodels.stats.weightstats import ttost_paired

from ragsift.evaluation.report.margins import (
    PrimaryDesign,
    decide,
    equivalence,
    non_inferiority,
    non_inferiority_then_superiority,
    paired_t,
    superiority,
    verdict_from_test,
)


def _pairs(mean: float, n: int = 120, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """EM-like 0/100 pairs: the compressor's values and the baseline's, difference about ``mean``."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 2, n) * 100.0
    flip = rng.random(n) < 0.25
    ours = np.where(flip, 100.0 - base, base)
    target = int(round(mean / 100 * n))  # set the number of net wins
    diff = ours - base
    while int(diff.sum() / 100) < target:
        i = int(np.flatnonzero(diff <= 0)[0])
        ours[i], base[i] = 100.0, 0.0
        diff = ours - base
    return ours, base


@pytest.mark.parametrize("mean", [0.0, 2.5, -4.0, 9.0])
def test_tost_is_statsmodels_ttost_paired(mean: float) -> None:
    ours, base = _pairs(mean, seed=int(mean * 10) % 7)
    verdict = equivalence(ours, base, margin=10.0, alpha=0.05)
    p, lower, upper = ttost_paired(ours, base, -10.0, 10.0)
    assert verdict.p_value == pytest.approx(p, rel=1e-9)
    assert verdict.word == ("equivalent" if p < 0.05 else verdict.word)
    assert (verdict.word == "equivalent") == (p < 0.05)
    # the 90% interval is inside (-10, 10) exactly when both one-sided tests reject
    assert (verdict.low > -10 and verdict.high < 10) == (lower[1] < 0.05 and upper[1] < 0.05)


def test_non_inferiority_bound_by_hand() -> None:
    """d = 100 x (wins - losses); lower bound = mean - t_{0.95, n-1} sd / sqrt(n)."""
    ours, base = _pairs(3.0, n=200, seed=1)
    d = ours - base
    lower = d.mean() - student_t.ppf(0.95, 199) * d.std(ddof=1) / np.sqrt(200)
    verdict = non_inferiority(ours, base, margin=3.0, alpha=0.05)
    assert verdict.low == pytest.approx(lower) and verdict.margin == 3.0 and verdict.test == "non-inferiority"
    assert verdict.word == ("non-inferior" if lower > -3 else "inconclusive")
    assert verdict.p_value == pytest.approx(student_t.sf((d.mean() + 3) / (d.std(ddof=1) / np.sqrt(200)), 199))


def test_verdict_words() -> None:
    same = np.zeros(50)
    constant = lambda v, n=50: np.r_[np.full(n - 1, v), v + 1.0]  # noqa: E731
    # clearly better than the baseline
    assert superiority(constant(10.0), same).word == "superior"
    assert non_inferiority_then_superiority(constant(10.0), same, 3.0).word == "superior"
    # a little worse, well within the margin: non-inferior, not superior
    assert non_inferiority_then_superiority(constant(-0.5), same, 3.0).word == "non-inferior"
    assert non_inferiority(constant(-0.5), same, 3.0).word == "non-inferior"
    assert equivalence(constant(-0.5), same, 3.0).word == "equivalent"
    # far worse than the margin
    assert non_inferiority(constant(-8.0), same, 3.0).word == "inferior"
    assert superiority(constant(-8.0), same).word == "inferior"
    assert equivalence(constant(8.0), same, 3.0).word == "superior"
    # noise: no decision
    rng = np.random.default_rng(3)
    noisy = rng.normal(0.0, 40.0, 30)
    assert non_inferiority(noisy, np.zeros(30), 3.0).word == "inconclusive"
    steps = non_inferiority_then_superiority(constant(-0.5), same, 3.0).steps
    assert steps[0]["rejected_null"] and not steps[1]["rejected_null"]


def test_stratified_paired_t() -> None:
    """Two strata (n 4 and 6); variance sum_s (n_s/n)^2 s_s^2 / n_s, df n - 2; one stratum is
    the ordinary paired t."""
    d = np.array([1.0, 2.0, 3.0, 4.0, 10.0, 12.0, 9.0, 11.0, 13.0, 8.0])
    strata = ["a"] * 4 + ["b"] * 6
    st = paired_t(d, strata=strata)
    var = (0.4**2) * d[:4].var(ddof=1) / 4 + (0.6**2) * d[4:].var(ddof=1) / 6
    assert st.se == pytest.approx(np.sqrt(var)) and st.df == 8 and st.mean == pytest.approx(d.mean())
    assert paired_t(d, strata=["x"] * 10) == paired_t(d)
    with pytest.raises(ValueError, match="at least 2 pairs in every stratum"):
        paired_t(d, strata=["a"] * 9 + ["b"])


def test_design_and_superiority_from_a_summary_test() -> None:
    design = PrimaryDesign.from_mapping({"compressor": "c", "test": "non-inferiority", "margin": 3.0,
                                         "looks": [0.5, 1.0], "max_n": None})
    assert design.looks == (0.5, 1.0) and design.max_n is None
    assert decide(design, np.full(20, 1.0) + np.r_[0.0, np.ones(19) * 0.1], np.zeros(20)).word == "non-inferior"
    assert PrimaryDesign.from_mapping("c") == PrimaryDesign("c")
    with pytest.raises(ValueError, match="needs a margin"):
        PrimaryDesign("c", test="equivalence")
    word = verdict_from_test({"mean_difference": 3.0, "low": -6.0, "high": 13.0, "p_value": 0.70, "n": 100})
    assert word.word == "inconclusive" and word.low == -6.0
    assert verdict_from_test({"mean_difference": -3.0, "low": -5.0, "high": -1.0, "p_value": 0.01, "n": 100}).word \
        == "inferior"

"""Issue 48: group-sequential boundaries with Lan-DeMets alpha spending, against published
values, and a seeded simulation of the type I error of a 4-look paired-binary design."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragsift.evaluation.report.margins import PrimaryDesign, paired_t
from ragsift.evaluation.report.sequential import (
    boundaries,
    classical_boundaries,
    crossing_probabilities,
    primary_look_decision,
    sequential_decision,
    spending,
)

EQUAL4 = [0.25, 0.5, 0.75, 1.0]


def test_classical_obrien_fleming_and_pocock_for_four_equal_looks() -> None:
    """Jennison & Turnbull (2000), Table 2.3: C_B(4, 0.05) = 2.024, so b_k = 2.024 sqrt(4/k) =
    4.05, 2.86, 2.34, 2.02; Table 2.1: Pocock C_P(4, 0.05) = 2.361 at every look."""
    assert classical_boundaries(4, 0.05, "obrien-fleming") == pytest.approx([4.048, 2.862, 2.337, 2.024], abs=0.01)
    assert classical_boundaries(4, 0.05, "pocock") == pytest.approx([2.361] * 4, abs=0.01)


def test_lan_demets_spending_boundaries_against_published_tables() -> None:
    """O'Brien-Fleming-type spending, two-sided 0.05 (0.025 per side), K = 4 equal looks: 4.333,
    2.963, 2.359, 2.014 (Reboussin, DeMets, Kim & Lan's ld98, R package ldbounds; gsDesign
    sfLDOF). Unequal looks t = 0.10, 0.33, 1: 6.9913, 3.7308, 1.9605 (ldbounds::bounds(c(0.10,
    0.33, 1), iuse = c(1, 1), alpha = c(0.025, 0.025)), as printed in its summary, R-help,
    March 2020). One-sided 0.05, K = 4 equal: 3.7496, 2.5399, 2.0160, 1.7201 (SeqBounds.jl README)."""
    assert boundaries(EQUAL4, 0.05, "obrien-fleming", 2) == pytest.approx([4.333, 2.963, 2.359, 2.014], abs=0.005)
    assert boundaries([0.10, 0.33, 1.0], 0.05, "obrien-fleming", 2) == pytest.approx([6.9913, 3.7308, 1.9605],
                                                                                     abs=0.002)
    assert boundaries(EQUAL4, 0.05, "obrien-fleming", 1) == pytest.approx([3.7496, 2.5399, 2.0160, 1.7201], abs=0.005)


def test_spending_functions_and_total_level() -> None:
    t = np.array(EQUAL4)
    # OBF-type at t = 1 spends alpha; Pocock-type alpha ln(1 + (e - 1) t)
    assert spending(1.0, 0.025).item() == pytest.approx(0.025)
    assert spending(t, 0.05, "pocock") == pytest.approx(0.05 * np.log(1 + (math.e - 1) * t))
    for kind in ("obrien-fleming", "pocock"):
        upper = boundaries(EQUAL4, 0.05, kind, 2)
        crossed = crossing_probabilities(EQUAL4, upper, [-b for b in upper])
        assert sum(crossed) == pytest.approx(0.05, abs=1e-5)  # the whole alpha, spent as declared
        assert np.cumsum(crossed) == pytest.approx(2 * spending(t, 0.025, kind), abs=1e-5)
    # Pocock-type boundaries are nearly flat, lower than O'Brien-Fleming's early, higher late
    pocock = boundaries(EQUAL4, 0.05, "pocock", 2)
    assert max(pocock) - min(pocock) < 0.05 and pocock[0] < 2.5 and pocock[-1] > 2.3


def test_null_simulation_of_a_four_look_paired_binary_design_keeps_the_level() -> None:
    """2,000 seeded runs of 400 paired 0/1 outcomes with no true difference (discordance 0.25),
    looked at after 100, 200, 300 and 400 questions with the two-sided O'Brien-Fleming-type
    boundaries: at most 5.5% of them ever cross (the design's level is 5%)."""
    rng = np.random.default_rng(48)
    runs, n, fractions = 2000, 400, EQUAL4
    upper = boundaries(fractions, 0.05, "obrien-fleming", 2)
    # per question: +1 (only the compressor right), -1 (only the baseline), 0 (agree)
    d = rng.choice(np.array([1.0, -1.0, 0.0]), size=(runs, n), p=[0.125, 0.125, 0.75])
    rejected = np.zeros(runs, dtype=bool)
    for t, b in zip(fractions, upper, strict=True):
        m = int(t * n)
        part = d[:, :m]
        # the statistic primary_look_decision uses for superiority (PairedT.z_null): sum / sqrt(sum of squares)
        root = np.sqrt((part**2).sum(axis=1))
        z = np.divide(part.sum(axis=1), root, out=np.zeros(runs), where=root > 0)
        rejected |= np.abs(z) >= b
    assert rejected.mean() <= 0.055
    assert rejected.mean() >= 0.03  # and the boundaries are not absurdly strict either


def test_sequential_decision_stops_at_the_first_crossing() -> None:
    b = boundaries(EQUAL4, 0.05, "obrien-fleming", 1)
    going = sequential_decision([0.25], [3.0], alpha=0.05, sides=1)
    assert not going.stop and going.reason is None and going.looks[0].boundary == pytest.approx(b[0])
    stopped = sequential_decision([0.25, 0.5], [3.0, 2.6], alpha=0.05, sides=1, n=[131, 262])
    assert stopped.stop and stopped.reason == "efficacy" and stopped.looks[-1].crossed == "efficacy"
    assert stopped.looks[-1].n == 262
    futile = sequential_decision([0.25, 0.5], [0.0, -2.6], alpha=0.05, sides=1, futility=True)
    assert futile.stop and futile.reason == "futility" and futile.looks[-1].futility == pytest.approx(-b[1])
    final = sequential_decision(EQUAL4, [0.5, 0.7, 1.0, 1.5], alpha=0.05, sides=1)
    assert final.stop and final.reason == "final look"
    with pytest.raises(ValueError, match="one-sided"):
        sequential_decision([0.5], [1.0], sides=2, futility=True)


def _differences(mean: float, n: int, seed: int) -> np.ndarray:
    """n differences with exactly this mean and SD 6 (se = 6 / sqrt(n))."""
    x = np.random.default_rng(seed).normal(size=n)
    return mean + 6.0 * (x - x.mean()) / x.std(ddof=1)


def test_primary_look_decision_of_a_fixed_sequence() -> None:
    """Non-inferiority (margin 3) then superiority, one-sided 0.05, O'Brien-Fleming type
    (boundaries 3.75, 2.54, 2.02, 1.72): at 100 questions, mean +1, se 0.6: (1 + 3) / 0.6 = 6.67
    crosses (non-inferior); superiority's sum / sqrt(sum of squares) = 100 / sqrt(99 x 36 + 100)
    = 1.652 does not: go on; at 200, mean +2.5: 500 / sqrt(199 x 36 + 200 x 6.25) = 5.45 crosses
    for superiority: stop, "superior"."""
    design = PrimaryDesign("c", test="non-inferiority-then-superiority", margin=3.0, looks=tuple(EQUAL4), max_n=400)
    first = paired_t(_differences(1.0, 100, 0))
    decision = primary_look_decision(design, [(0.25, first)])
    assert not decision.stop and decision.reason is None and decision.word == "non-inferior"  # so far
    assert decision.looks[0].z == pytest.approx(4 / 0.6) and decision.looks[0].z_superiority == pytest.approx(100 / np.sqrt(3664))
    assert decision.looks[0].bound == pytest.approx(1.0 - 3.7496 * 0.6, abs=0.01)
    second = paired_t(_differences(2.5, 200, 1))
    decision = primary_look_decision(design, [(0.25, first), (0.5, second)])
    assert decision.stop and decision.reason == "efficacy" and decision.word == "superior"
    assert decision.looks[1].z_superiority == pytest.approx(500 / np.sqrt(8414))
    # never superior, non-inferior from the first look: "non-inferior" at the final look
    flat = [(t, paired_t(_differences(0.0 if t > 0.25 else 1.0, int(400 * t), 2))) for t in EQUAL4]
    ended = primary_look_decision(design, flat)
    assert ended.stop and ended.reason == "final look" and ended.word == "non-inferior"
    # futility (non-binding), plain non-inferiority: mean -9 at se 0.6: (−9 + 3) / 0.6 = −10 <= −3.75
    futile = PrimaryDesign("c", test="non-inferiority", margin=3.0, looks=tuple(EQUAL4), max_n=400, futility=True)
    stopped = primary_look_decision(futile, [(0.25, paired_t(_differences(-9.0, 100, 3)))])
    assert stopped.stop and stopped.reason == "futility" and stopped.word == "inferior"


def test_the_final_look_of_a_non_inferiority_test_says_inferior_only_below_the_margin_at_its_boundary() -> None:
    """Without futility, no look stops for a loss; at the last look (boundary 1.72 for four equal
    O'Brien-Fleming looks at one-sided 0.05) a mean of -6 at se 0.3 ((-6 + 3) / 0.3 = -10) is
    "inferior"; a mean of -3.2 (z = -0.67: the upper bound -3.2 + 1.72 x 0.3 = -2.7 is above -3)
    stays "inconclusive"; before the last look nothing is called inferior."""
    design = PrimaryDesign("c", test="non-inferiority-then-superiority", margin=3.0, looks=tuple(EQUAL4), max_n=400)

    def looks(mean: float, upto: int) -> list[tuple[float, object]]:
        return [(t, paired_t(_differences(mean, int(400 * t), k))) for k, t in enumerate(EQUAL4[:upto])]

    worse = primary_look_decision(design, looks(-6.0, 4))
    assert worse.stop and worse.reason == "final look" and worse.word == "inferior"
    assert worse.looks[-1].z <= -worse.looks[-1].boundary
    assert primary_look_decision(design, looks(-6.0, 3)).word == "inconclusive"  # not yet: no futility declared
    near = primary_look_decision(design, looks(-3.2, 4))
    assert near.word == "inconclusive" and -near.looks[-1].boundary < near.looks[-1].z < near.looks[-1].boundary

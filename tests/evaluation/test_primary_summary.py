"""Issue 48 in the run summary: the MDD of every tested comparison, the declared primary test's
verdict (shown first), and issue 47's stratified (pooled across datasets) summary."""

from __future__ import annotations

import math

import pytest
from scipy.stats import t as student_t

from ragsift.evaluation.report.formatting import format_markdown, format_table, primary_lines, primary_verdict_line
from ragsift.evaluation.report.margins import PrimaryDesign
from ragsift.evaluation.report.power import binary_mdd
from ragsift.evaluation.report.summary import build_summary
from ragsift.metrics.answer import ExactMatchMetric, TokenF1Metric

OUTPUTS = {**ExactMatchMetric.outputs, **TokenF1Metric.outputs}


def _main_job() -> dict[str, list[dict]]:  # type: ignore[type-arg]
    """The main job's declared primary run (benchmarks/results/main-primary/summary-2026-12-03.md):
    100 questions, none EM 35, bridge-ranked EM 38; 14 questions only bridge-ranked gets right, 11
    only none: 24 both, 51 neither. F1 here is EM plus a small per-question shift (a continuous metric)."""
    pattern = [(1, 0)] * 14 + [(0, 1)] * 11 + [(1, 1)] * 24 + [(0, 0)] * 51
    records: dict[str, list[dict]] = {"none": [], "bridge-ranked": []}  # type: ignore[type-arg]
    for i, (ours, theirs) in enumerate(pattern):
        for label, em in (("bridge-ranked", ours), ("none", theirs)):
            f1 = min(1.0, em * 0.8 + (i % 7) / 20 + (0.05 if label == "bridge-ranked" else 0.0))
            records[label].append({"id": f"q{i:03d}", "compressor": label, "metrics": {"em": float(em), "f1": f1},
                                   "timings": {}})
    return records


def test_every_tested_comparison_has_its_mdd() -> None:
    summary = build_summary(_main_job(), OUTPUTS, baseline="none", samples=300)
    em = summary["comparisons"]["bridge-ranked"]["em"]
    assert em["mean_difference"] == pytest.approx(3.0)
    # discordance 25 / 100 = 0.25 at n = 100, two-sided 0.05, 80% power: 13.8 EM points
    assert em["detectable"]["discordance"] == 0.25 and em["detectable"]["method"] == "binary (Connor 1987)"
    assert em["mdd"] == pytest.approx(100 * binary_mdd(100, 0.25)) and em["mdd"] == pytest.approx(13.84, abs=0.01)
    f1 = summary["comparisons"]["bridge-ranked"]["f1"]
    assert f1["detectable"]["method"] == "paired t" and f1["mdd"] > 0
    table, markdown = format_table(summary), format_markdown(summary)
    assert "+3.0 p=" in table and "MDD 13.8" in table
    assert "| EM MDD |" in markdown and "| 13.8 |" in markdown and "minimum detectable difference" in markdown


def test_a_label_primary_keeps_its_fields_and_adds_the_verdict() -> None:
    summary = build_summary(_main_job(), OUTPUTS, baseline="none", samples=300, primary="bridge-ranked")
    primary = summary["primary"]
    for key in ("compressor", "baseline", "metric", "mean_difference", "low", "high", "p_value", "n", "exact",
                "patterns", "significant", "chosen", "level"):
        assert key in primary
    assert primary["verdict"] == "inconclusive" and primary["test"] == "superiority" and primary["margin"] is None
    assert primary["mdd"] == pytest.approx(13.84, abs=0.01) and primary["bound"] == primary["low"]
    lines = primary_lines(summary)
    assert lines[0].startswith("verdict: INCONCLUSIVE: bridge-ranked vs none on EM")
    assert "this run could only have seen differences of at least 13.8 EM points" in lines[2]
    table = format_table(summary)
    assert table.index("verdict: INCONCLUSIVE") < table.index("primary comparison (declared") < \
        table.index("difference vs 'none'")
    assert format_markdown(summary).index("INCONCLUSIVE") < format_markdown(summary).index("| compressor | n |")


def test_a_declared_non_inferiority_test_by_hand() -> None:
    """d: +100 on 14 questions, -100 on 11, 0 on 75: mean 3, sd sqrt(249100 / 99) = 50.16, se
    5.016; lower one-sided 95% bound 3 - 1.6604 x 5.016 = -5.33: not above -3, and the upper bound
    +11.3 is not below -3: inconclusive. At margin 6 the bound is above -6: non-inferior."""
    se = math.sqrt(249100 / 99) / 10
    lower = 3 - student_t.ppf(0.95, 99) * se
    for margin, word in ((3.0, "inconclusive"), (6.0, "non-inferior")):
        design = PrimaryDesign("bridge-ranked", test="non-inferiority", margin=margin)
        summary = build_summary(_main_job(), OUTPUTS, baseline="none", samples=300, primary=design)
        primary = summary["primary"]
        assert primary["verdict"] == word and primary["bound"] == pytest.approx(lower)
        assert primary["margin"] == margin and primary["alpha"] == 0.05 and primary["test"] == "non-inferiority"
        assert primary["decision"]["method"] == "paired t" and primary["mdd_non_inferiority"] is not None
    line = primary_verdict_line(summary)
    assert line is not None and line.startswith("NON-INFERIOR: bridge-ranked vs none on EM, lower 95% bound -5.3 > -6")
    # a mapping (the [evaluation.primary] table) works as the design
    mapped = build_summary(_main_job(), OUTPUTS, baseline="none", samples=300,
                           primary={"compressor": "bridge-ranked", "test": "equivalence", "margin": 15.0})
    assert mapped["primary"]["verdict"] == "equivalent"
    assert "(-15, +15)" in (primary_verdict_line(mapped) or "")


def test_sequential_record_sets_the_verdict_and_shows_the_looks() -> None:
    design = PrimaryDesign("bridge-ranked", test="non-inferiority", margin=3.0, looks=(0.5, 1.0), max_n=200)
    record = {"stop": False, "reason": None, "word": "inconclusive",
              "looks": [{"fraction": 0.5, "n": 100, "z": 1.2, "boundary": 2.54, "alpha_spent": 0.0056,
                         "crossed": None}]}
    summary = build_summary(_main_job(), OUTPUTS, baseline="none", samples=300, primary=design,
                            primary_sequential=record)
    assert summary["primary"]["sequential"] == record and summary["primary"]["verdict"] == "inconclusive"
    assert "look at 50%: n = 100, z = 1.20, boundary 2.54" in "\n".join(primary_lines(summary))


def test_a_look_states_its_boundary_not_the_fixed_n_bound() -> None:
    """At look 2 of 4 the verdict's 2026-12-06 run had estimate +7.2, se 2.94: the fixed-n bound
    (+2.4 > 0) reads like superiority, but superiority z 2.43 is below the look's boundary 2.53; the
    line states the look's statistics and its bound at the boundary (7.2 - 2.53 x 2.94 = -0.2)."""
    design = PrimaryDesign("bridge-ranked", test="non-inferiority-then-superiority", margin=3.0,
                           looks=(0.25, 0.5, 0.75, 1.0), max_n=524)
    look = {"fraction": 0.5, "n": 263, "z": 3.48, "boundary": 2.53, "alpha_spent": 0.0057, "crossed": None,
            "estimate": 7.2, "se": 2.94, "bound": 7.2 - 2.53 * 2.94, "z_superiority": 2.43}
    record = {"stop": False, "reason": None, "word": "non-inferior", "looks": [look]}
    summary = build_summary(_main_job(), OUTPUTS, baseline="none", samples=300, primary=design,
                            primary_sequential=record)
    line = primary_verdict_line(summary) or ""
    assert line.startswith("NON-INFERIOR: bridge-ranked vs none on EM, non-inferiority z = 3.48 >= boundary 2.53 "
                           "(lower bound at the boundary -0.2 > -3), superiority z = 2.43 < 2.53")
    assert "95% bound" not in line and "look 1 at 50% of max n, going on" in line
    assert "look at 50%: n = 263, z = 3.48 (non-inferiority), superiority z = 2.43, boundary 2.53" in \
        "\n".join(primary_lines(summary))


def test_stratified_summary_pools_every_question_once() -> None:
    records = _main_job()
    one = build_summary(records, OUTPUTS, baseline="none", samples=300, seed=4,
                        strata={f"q{i:03d}": "hotpotqa" for i in range(100)})
    plain = build_summary(records, OUTPUTS, baseline="none", samples=300, seed=4)
    assert one.pop("strata")["sizes"] == {"hotpotqa": 100}
    assert one == plain  # pooling one dataset is the single-dataset summary, number for number
    two = build_summary(records, OUTPUTS, baseline="none", samples=300, seed=4, primary="bridge-ranked",
                        strata={f"q{i:03d}": "2wiki" if i % 2 else "hotpotqa" for i in range(100)})
    assert two["strata"]["sizes"] == {"2wiki": 50, "hotpotqa": 50}
    em = two["comparisons"]["bridge-ranked"]["em"]
    assert em["mean_difference"] == pytest.approx(3.0) and em["n"] == 100
    # the same discordance pooled (25 of 100): a binary MDD does not change with strata
    assert em["detectable"]["strata"] == 2 and em["mdd"] == pytest.approx(plain["comparisons"]["bridge-ranked"]["em"]["mdd"])
    assert two["primary"]["verdict"] == "inconclusive"
    assert two["compressors"]["none"]["values"]["em"]["mean"] == pytest.approx(35.0)
    with pytest.raises(ValueError, match="have no stratum"):
        build_summary(records, OUTPUTS, baseline="none", samples=300, strata={"q000": "hotpotqa"})

"""Summaries: display units, absent values, paired tests on shared ids, tables."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ragsift.evaluation.report import build_summary, format_markdown, format_table
from ragsift.metrics.answer import ExactMatchMetric, TokenF1Metric
from ragsift.metrics.evidence import EvidenceMetric


def _records(label: str, em: list[float], recall: list[float | None]) -> list[dict]:  # type: ignore[type-arg]
    out = []
    for i, (e, r) in enumerate(zip(em, recall, strict=True)):
        metrics = {"em": e} | ({} if r is None else {"evidence_recall": r})
        out.append({"id": f"q{i}", "compressor": label, "metrics": metrics,
                    "timings": {"score": 0.010, "compress": 0.020, "read": 0.5}})
    return out


def test_summary_values_latency_and_comparisons() -> None:
    outputs = {**ExactMatchMetric.outputs, **EvidenceMetric.outputs}
    records = {
        "none": _records("none", [0, 0, 1, 0], [1.0, 1.0, None, 1.0]),
        "exit": _records("exit", [1, 1, 1, 0], [0.5, 1.0, None, 0.0]),
    }
    summary = build_summary(records, outputs, baseline="none", samples=500, seed=3)
    exit_values = summary["compressors"]["exit"]["values"]
    assert exit_values["em"]["mean"] == pytest.approx(75.0)  # x100
    assert exit_values["evidence_recall"]["n"] == 3  # absent on one example: not counted as 0
    assert exit_values["evidence_recall"]["mean"] == pytest.approx(50.0)
    latency = summary["compressors"]["exit"]["latency_ms"]
    assert latency["score"]["mean"] == pytest.approx(10.0) and latency["total"]["mean"] == pytest.approx(520.0)
    em_test = summary["comparisons"]["exit"]["em"]
    assert em_test["mean_difference"] == pytest.approx(50.0) and em_test["n"] == 4 and 0 < em_test["p_value"] <= 1
    assert summary["comparisons"]["exit"]["evidence_recall"]["n"] == 3
    assert "none" not in summary["comparisons"]
    assert build_summary(records, outputs, baseline="none", samples=500, seed=3) == summary

    table = format_table(summary)
    assert "EM (%)" in table and "75.0±" in table and "difference vs 'none'" in table and "+50.0 p=" in table
    markdown = format_markdown(summary)
    assert "| exit | 4 | " in markdown and "## Latency per example (ms)" in markdown and "| total |" in markdown


def test_no_baseline_no_comparisons() -> None:
    records = {"bm25": _records("bm25", [1, 0], [1.0, 0.0])}
    summary = build_summary(records, {}, baseline=None, samples=200)
    assert summary["comparisons"] == {}
    assert summary["metrics"]["em"]["label"] == "em"  # undescribed metric: its key, scale 1
    assert "difference vs" not in format_table(summary)


def _em_records(label: str, em: dict[str, float]) -> list[dict]:  # type: ignore[type-arg]
    return [{"id": i, "compressor": label, "metrics": {"em": v}, "timings": {}} for i, v in em.items()]


def test_pairs_by_example_id_not_by_position() -> None:
    # the baseline in id order; the compressor in reverse order and without q3
    base = {f"q{i}": 10.0 * i for i in range(6)}
    delta = {"q5": 6.0, "q4": 1.0, "q2": 4.0, "q1": -1.0, "q0": 3.0}
    other = {i: base[i] + d for i, d in delta.items()}
    records = {"none": _em_records("none", base), "exit": _em_records("exit", other)}
    test = build_summary(records, {}, baseline="none", samples=200)["comparisons"]["exit"]["em"]
    assert test["n"] == 5 and test["unpaired"] == 1 and test["exact"]
    # by id the differences are 3, -1, 4, 1, 6 (sum 13). Flipping a subset with sum x gives
    # 13 - 2x; |13 - 2x| >= 13 for x <= 0 ({}, {-1}, {-1, 1}) or x >= 13 (their complements):
    # 6 of 32 patterns. (Position pairing would give 55-0, 45-10, ...: mean 6.6, p = 0.75.)
    assert test["mean_difference"] == pytest.approx(2.6)
    assert test["p_value"] == pytest.approx(6 / 32)
    by_scipy = stats.permutation_test((np.array(list(delta.values())),), np.mean, permutation_type="samples",
                                      n_resamples=np.inf).pvalue
    assert test["p_value"] == pytest.approx(by_scipy)


def test_pairs_binary_outcomes_by_id_for_mcnemar() -> None:
    # the same ids on both sides, in opposite orders: by id the compressor wins q0, q1, q4 and
    # loses q2, q3 (position pairing would see 2 wins and 1 loss)
    base = {"q0": 0.0, "q1": 0.0, "q2": 1.0, "q3": 1.0, "q4": 0.0}
    other = {"q4": 1.0, "q3": 0.0, "q2": 0.0, "q1": 1.0, "q0": 1.0}
    records = {"none": _em_records("none", base), "exit": _em_records("exit", other)}
    test = build_summary(records, ExactMatchMetric.outputs, baseline="none", samples=200)["comparisons"]["exit"]["em"]
    assert test["mean_difference"] == pytest.approx(20.0) and test["unpaired"] == 0
    # 3 wins, 2 losses: 2 * P(X <= 2), X ~ Bin(5, 1/2) = 2 * 16/32 = 1
    assert test["mcnemar"] == {"p_value": 1.0, "compressor_only": 3, "baseline_only": 2}
    # sign flips of +1 x 3, -1 x 2 (sum 1): every pattern has |sum| >= 1 (it is odd): p = 1
    assert test["p_value"] == 1.0


def test_summary_does_not_depend_on_record_order() -> None:
    base = {f"q{i}": float(i % 2) for i in range(12)}
    other = {f"q{i}": float(i % 3 != 0) for i in range(12)}
    forward = {"none": _em_records("none", base), "exit": _em_records("exit", other)}
    backward = {"none": _em_records("none", base), "exit": list(reversed(_em_records("exit", other)))}
    assert build_summary(forward, {}, baseline="none", seed=4) == build_summary(backward, {}, baseline="none", seed=4)


def test_a_repeated_example_id_is_refused() -> None:
    records = {"none": _em_records("none", {"q0": 0.0, "q1": 1.0}),
               "exit": _em_records("exit", {"q0": 1.0, "q1": 1.0}) + _em_records("exit", {"q1": 0.0})}
    with pytest.raises(ValueError, match="compressor 'exit' has example id 'q1' more than once"):
        build_summary(records, {}, baseline="none")


def test_holm_over_every_comparison_of_the_table() -> None:
    outputs = {**ExactMatchMetric.outputs, **TokenF1Metric.outputs}
    ids = [f"q{i}" for i in range(6)]
    def recs(label: str, em: float) -> list[dict]:  # type: ignore[type-arg]
        return [{"id": i, "metrics": {"em": em, "f1": 0.5}, "timings": {}} for i in ids]
    records = {"none": recs("none", 0.0), "exit": recs("exit", 1.0), "bm25": recs("bm25", 1.0)}
    summary = build_summary(records, outputs, baseline="none", samples=200)
    # EM: +100 on all 6 examples -> p = 2/64 for exit and for bm25; F1: identical -> p = 1.
    # Holm over the 4 comparisons: 0.03125 x 4 = 0.125, 0.03125 x 3 -> 0.125, 1, 1
    assert summary["p_adjustment"] == {"method": "holm", "comparisons": 4}
    for label in ("exit", "bm25"):
        em, f1 = summary["comparisons"][label]["em"], summary["comparisons"][label]["f1"]
        assert em["p_value"] == pytest.approx(2 / 64) and em["p_holm"] == pytest.approx(0.125)
        assert f1["p_value"] == 1.0 and f1["p_holm"] == 1.0
        assert em["mcnemar"] == {"p_value": pytest.approx(2 / 64), "compressor_only": 6, "baseline_only": 0}
        assert "mcnemar" not in f1  # F1 is not binary
    table = format_table(summary)
    assert "+100.0 p=0.125" in table and "*" not in table.split("difference vs")[1].split("\n", 2)[2]
    assert "exact two-sided sign-flip test" in table and "Holm-adjusted over the 4 comparisons" in table
    markdown = format_markdown(summary)
    assert "+100.0 [+100.0, +100.0] p=0.031, Holm 0.125 |" in markdown
    assert "## Binary metrics: exact McNemar test" in markdown and "| exit | EM | 6 | 0 | p=0.031 |" in markdown


def test_a_clear_difference_survives_holm_over_a_wide_table() -> None:
    # 100 examples, 12 compressors x 2 metrics: 24 comparisons. 1,000 sign patterns alone floor
    # each Monte Carlo p at 1/1001, so Holm at 24/1001 = 0.024 at best and at 0.06 with 60; the
    # summary draws more patterns for the poorly resolved ones, enough for Holm to reach 0.001
    outputs = {**ExactMatchMetric.outputs, **TokenF1Metric.outputs}
    rng = np.random.default_rng(4)
    def recs(em: np.ndarray, f1: np.ndarray) -> list[dict]:  # type: ignore[type-arg]
        return [{"id": f"q{i}", "metrics": {"em": float(e), "f1": float(f)}, "timings": {}}
                for i, (e, f) in enumerate(zip(em, f1, strict=True))]
    records = {"none": recs(rng.random(100) < 0.3, rng.random(100) * 0.5)}
    records["oracle"] = recs(rng.random(100) < 0.9, 0.5 + rng.random(100) * 0.5)
    for k in range(11):
        records[f"noise{k}"] = recs(rng.random(100) < 0.3, rng.random(100) * 0.5)
    summary = build_summary(records, outputs, baseline="none", samples=1000)
    assert summary["p_adjustment"]["comparisons"] == 24
    for key in ("em", "f1"):
        test = summary["comparisons"]["oracle"][key]
        assert test["patterns"] == 24_000 and test["p_holm"] == pytest.approx(24 / 24_001) and test["p_holm"] < 0.05
    assert all(summary["comparisons"][f"noise{k}"]["em"]["p_holm"] > 0.05 for k in range(11))


def test_missing_examples_are_named_in_the_tables() -> None:
    records = {"none": _em_records("none", {f"q{i}": float(i % 2) for i in range(8)}),
               "exit": _em_records("exit", {f"q{i}": 1.0 for i in range(6)})}
    summary = build_summary(records, ExactMatchMetric.outputs, baseline="none", samples=200)
    assert summary["comparisons"]["exit"]["em"]["n"] == 6 and summary["comparisons"]["exit"]["em"]["unpaired"] == 2
    assert "left out of the paired tests (exit: 2)" in format_table(summary)
    assert "left out of the paired tests (exit: 2)" in format_markdown(summary)


def test_one_example_gives_no_paired_test() -> None:
    records = {"none": _em_records("none", {"q0": 0.0}), "exit": _em_records("exit", {"q0": 1.0})}
    summary = build_summary(records, ExactMatchMetric.outputs, baseline="none", samples=200)
    assert summary["comparisons"] == {"exit": {}} and summary["p_adjustment"]["comparisons"] == 0
    assert "no comparison has 2 pairs" in format_table(summary) and "| exit | - |" in format_markdown(summary)


def test_summary_markdown_escapes_what_the_html_report_escapes() -> None:
    """Issue 24, case 8: a label is text from the config; in summary.md it can neither inject HTML
    nor break the tables (a bar) nor turn into emphasis, code or a link."""
    hostile = "<script>alert(1)</script>|*x*`[y](z)"
    records = {"none": _records("none", [0, 1, 0, 1], [None] * 4), hostile: _records(hostile, [1, 1, 0, 1], [None] * 4)}
    summary = build_summary(records, ExactMatchMetric.outputs, baseline="none", samples=200, seed=1)
    markdown = format_markdown(summary, title="ragsift evaluation: <b>evil</b>.toml")
    assert "<script>" not in markdown and "<b>" not in markdown
    assert "&lt;script&gt;alert(1)&lt;/script&gt;\\|\\*x\\*\\`\\[y\\](z)" in markdown
    label_rows = [line for line in markdown.splitlines() if "alert" in line]
    assert label_rows and all(line.count("|") - line.count("\\|") == line.count(" | ") + 2 for line in label_rows)

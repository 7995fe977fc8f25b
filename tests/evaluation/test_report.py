"""Summaries: display units, absent values, paired tests on shared ids, tables."""

from __future__ import annotations

import pytest

from ragsift.evaluation.report import build_summary, format_markdown, format_table
from ragsift.metrics.answer import ExactMatchMetric
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

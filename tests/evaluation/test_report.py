"""Summaries: display units, absent values, paired tests on shared ids, tables."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ragsift.evaluation.report.formatting import format_markdown, format_table
from ragsift.evaluation.report.summary import build_summary
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
    assert "EM (%)" in table and "75.0±" in table and "difference vs 'none'" in table
    # EM is the first metric column; 4 pairs cannot reach the level (2/16 = 0.125): one line says so
    assert table.splitlines()[0].split()[:3] == ["compressor", "n", "EM"]
    assert "Too few questions to reach the level" in table and "0.520±" in table  # end-to-end seconds
    markdown = format_markdown(summary)
    assert "| exit | 4 | " in markdown and "## Latency per example (s)" in markdown and "| total |" in markdown


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


def test_holm_within_each_metric_family_matches_hand_computed_values() -> None:
    """Issue 27: one Holm family per tested metric (every compressor against the baseline), not
    one over the whole table. Eight questions, exact sign-flip p-values known by hand."""
    outputs = {**ExactMatchMetric.outputs, **TokenF1Metric.outputs}
    ids = [f"q{i}" for i in range(8)]
    def recs(em: list[float], f1: list[float]) -> list[dict]:  # type: ignore[type-arg]
        return [{"id": i, "metrics": {"em": e, "f1": f}, "timings": {}} for i, e, f in zip(ids, em, f1, strict=True)]
    records = {"none": recs([0.0] * 8, [0.5] * 8),
               "a": recs([1.0] * 8, [0.75] * 8),        # EM +100 everywhere; F1 +25 everywhere
               "b": recs([1.0] * 7 + [0.0], [0.5] * 8),  # EM +100 on 7 of 8; F1 the same
               "c": recs([0.0] * 8, [0.5] * 8)}          # identical to the baseline
    summary = build_summary(records, outputs, baseline="none", samples=200)
    comp = summary["comparisons"]
    # p by hand: a constant shift on 8 pairs reaches its sum under 2 of 256 patterns; 7 shifts and a
    # zero under 2 x 2 of 256 (the zero's sign does not matter); identical values p = 1
    assert comp["a"]["em"]["p_value"] == pytest.approx(2 / 256) and comp["b"]["em"]["p_value"] == pytest.approx(4 / 256)
    assert comp["c"]["em"]["p_value"] == 1.0 and comp["a"]["f1"]["p_value"] == pytest.approx(2 / 256)
    # EM family (m = 3): 3 x 2/256 = 0.0234375, max(that, 2 x 4/256) = 0.03125, 1
    assert [comp[k]["em"]["p_holm"] for k in "abc"] == pytest.approx([0.0234375, 0.03125, 1.0])
    # F1 family (m = 3): 3 x 2/256, then 1, 1 (over the whole table of 6 it would be 6 x 2/256 = 0.047)
    assert [comp[k]["f1"]["p_holm"] for k in "abc"] == pytest.approx([0.0234375, 1.0, 1.0])
    assert {t["family"] for tests in comp.values() for t in tests.values()} == {"em", "f1"}
    families = summary["p_adjustment"]["families"]
    assert families["em"]["comparisons"] == families["f1"]["comparisons"] == 3 and summary["p_adjustment"]["comparisons"] == 6
    assert families["em"]["reachable"] and families["em"]["smallest_adjusted"] == pytest.approx(3 * 2 / 256)
    table = format_table(summary)
    assert "+100.0 p=0.023*" in table and "+87.5 p=0.031*" in table and "Too few questions" not in table
    markdown = format_markdown(summary)
    assert "+100.0 [+100.0, +100.0] p=0.008, Holm 0.023* |" in markdown
    # McNemar: EM only (F1 is not binary), and c (no discordant question) left out with a count
    assert "| a | EM | 8 | 0 | p=0.008 |" in markdown and "| c | EM |" not in markdown
    assert "1 comparison(s) with no discordant example" in markdown
    assert "mcnemar" not in comp["a"]["f1"]


def test_descriptive_metrics_get_an_interval_and_no_test() -> None:
    """Tokens / kept / empty are shown with the difference's interval, outside every Holm family."""
    from ragsift.metrics.compression import EmptyCompressionMetric, TokenCountMetric
    outputs = {**ExactMatchMetric.outputs, **TokenCountMetric.outputs, **EmptyCompressionMetric.outputs}
    ids = [f"q{i}" for i in range(8)]
    def recs(em: float, tokens: float) -> list[dict]:  # type: ignore[type-arg]
        return [{"id": i, "metrics": {"em": em, "compressed_tokens": tokens + k, "empty": 0.0}, "timings": {}}
                for k, i in enumerate(ids)]
    summary = build_summary({"none": recs(0.0, 1400), "bm25": recs(1.0, 200)}, outputs, baseline="none", samples=200)
    tokens = summary["comparisons"]["bm25"]["compressed_tokens"]
    assert tokens["descriptive"] and tokens["mean_difference"] == pytest.approx(-1200) and "p_value" not in tokens
    assert "p_holm" not in summary["comparisons"]["bm25"]["empty"] and "mcnemar" not in summary["comparisons"]["bm25"]["empty"]
    assert set(summary["p_adjustment"]["families"]) == {"em"} and summary["p_adjustment"]["comparisons"] == 1
    assert "Tokens (no test)" in format_table(summary) and "-1200 [-1200, -1200] |" in format_markdown(summary)


def test_too_few_questions_to_reach_the_level_is_one_line() -> None:
    """n = 6: the smallest exact p is 2/64; with two compressors in the family Holm's first step
    gives 0.0625 at best, so no star is possible; the tables say so instead of a column of 1.000."""
    ids = [f"q{i}" for i in range(6)]
    def recs(em: float) -> list[dict]:  # type: ignore[type-arg]
        return [{"id": i, "metrics": {"em": em}, "timings": {}} for i in ids]
    records = {"none": recs(0.0), "exit": recs(1.0), "bm25": recs(1.0)}
    summary = build_summary(records, ExactMatchMetric.outputs, baseline="none", samples=200)
    assert summary["p_adjustment"]["families"]["em"]["reachable"] is False
    assert summary["p_adjustment"]["families"]["em"]["smallest_adjusted"] == pytest.approx(0.0625)
    for text in (format_table(summary), format_markdown(summary)):
        line = next(line for line in text.splitlines() if line.startswith("Too few questions to reach the level"))
        assert "n = 6 pairs" in line and "0.0312" in line and "0.0625" in line
        assert "1.000" not in text and "Holm 0.062" not in text
    assert "+100.0 [+100.0, +100.0] p=0.031 (unadjusted)" in format_markdown(summary)
    # one more question (n = 7: 2 x 2/128 = 0.03125 < 0.05) and the line goes away
    ids.append("q6")
    assert "Too few" not in format_table(build_summary({k: recs(v) for k, v in (("none", 0.0), ("exit", 1.0),
                                                                                 ("bm25", 1.0))},
                                                       ExactMatchMetric.outputs, baseline="none", samples=200))


def test_the_primary_comparison_is_reported_alone_and_first() -> None:
    """Issue 23 item 3: the declared compressor against the baseline on EM, unadjusted, above the
    Holm-corrected table, with the record of how it was chosen."""
    ids = [f"q{i}" for i in range(8)]
    def recs(em: list[float]) -> list[dict]:  # type: ignore[type-arg]
        return [{"id": i, "metrics": {"em": e}, "timings": {}} for i, e in zip(ids, em, strict=True)]
    records = {"none": recs([0.0] * 8), "tuned": recs([1.0] * 7 + [0.0]), "other": recs([1.0] * 8),
               "third": recs([1.0] * 8)}
    chosen = {"by": "ragsift tune", "rule": "highest EM", "development": {"path": "dev.json", "sha256": "ab" * 32,
                                                                         "questions": 205}}
    summary = build_summary(records, ExactMatchMetric.outputs, baseline="none", samples=200, primary="tuned",
                            primary_chosen=chosen)
    primary = summary["primary"]
    # 7 shifts and a zero: p = 4/256 unadjusted; in the EM family of 3 Holm gives it
    # max(3 x 2/256, 2 x 2/256, 1 x 4/256) = 0.0234: the primary test keeps its own p
    assert primary["p_value"] == pytest.approx(4 / 256) and primary["significant"]
    holm = summary["comparisons"]["tuned"]["em"]["p_holm"]
    assert holm == pytest.approx(3 * 2 / 256) and holm > primary["p_value"]
    assert primary["mean_difference"] == pytest.approx(87.5) and primary["compressor"] == "tuned"
    assert primary["chosen"] == chosen and primary["baseline"] == "none"
    table = format_table(summary)
    assert table.index("primary comparison") < table.index("difference vs 'none'")
    assert "p=0.016 (exact sign-flip, n = 8, no family correction): below 0.05" in table
    assert "205 development questions of dev.json (sha256 abababababab)" in table
    markdown = format_markdown(summary)
    assert markdown.index("## Primary comparison") < markdown.index("| compressor | n |")
    # no EM (a run without reader): the primary test says why it is missing
    no_em = build_summary({k: [{"id": "q0", "metrics": {}, "timings": {}}] for k in ("none", "tuned")}, {},
                          baseline="none", primary="tuned")
    assert no_em["primary"]["error"] == "no primary test: the run has no EM (no reader)"


def test_a_clear_difference_survives_holm_over_a_wide_table() -> None:
    # 100 examples, 12 compressors x 2 metrics: two families of 12. 1,000 sign patterns alone floor
    # each Monte Carlo p at 1/1001, so Holm at 12/1001 = 0.012 at best and at 0.06 with 60; the
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
    assert summary["p_adjustment"]["comparisons"] == 24 and summary["p_adjustment"]["families"]["em"]["comparisons"] == 12
    for key in ("em", "f1"):
        test = summary["comparisons"]["oracle"][key]
        # each metric's family: the 12 compressors (Holm can reach 0.001 within it)
        assert test["patterns"] == 12_000 and test["p_holm"] == pytest.approx(12 / 12_001) and test["p_holm"] < 0.05
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


def test_primary_must_name_a_compressor_other_than_the_baseline() -> None:
    from ragsift.errors import ConfigError
    from ragsift.evaluation.run.settings import EvaluationSettings

    labels = ["none", "bm25", "exit-t0.5"]
    assert EvaluationSettings(primary="bm25").check_labels(labels, "run.toml") == "none"
    with pytest.raises(ConfigError, match=r"run.toml \[evaluation\]: primary 'bm52' is not a compressor label \(none, bm25"):
        EvaluationSettings(primary="bm52").check_labels(labels, "run.toml")
    with pytest.raises(ConfigError, match="primary 'none' is the baseline"):
        EvaluationSettings(primary="none").check_labels(labels, "run.toml")
    with pytest.raises(ConfigError, match="primary 'exit' is a sweep family; name one of its points"):
        EvaluationSettings(primary="exit").check_labels(labels, "run.toml", families=["exit"])


def test_the_primary_record_comes_from_the_tuned_table_that_chose_it() -> None:
    from types import SimpleNamespace

    from ragsift.evaluation.run.run_summary import primary_record
    from ragsift.evaluation.run.settings import EvaluationSettings

    tuned = {"created_at": "2026-11-30T10:00:00+00:00", "rule": {"metric": "em", "text": "highest em, ties to fewer prompt tokens"},
             "development": {"path": "data/training/dev.json", "sha256": "cd" * 32, "questions": 205, "ids": ["a"]},
             "sweep": {"config": "sweep.toml", "sha256": "ef" * 32, "run_dir": "runs/tune"},
             "chosen": {"bm25": "bm25@k=3"}, "tuning_config": "tune.toml"}
    plan = SimpleNamespace(settings=EvaluationSettings(primary="bm25", primary_chosen_on="frozen before the evaluation"),
                           config=SimpleNamespace(tuned=tuned))
    record = primary_record(plan)  # type: ignore[arg-type]
    assert record["by"] == "ragsift tune" and record["point"] == "bm25@k=3" and record["rule"] == tuned["rule"]["text"]
    assert record["development"] == {"path": "data/training/dev.json", "sha256": "cd" * 32, "questions": 205}
    assert record["created_at"] == tuned["created_at"] and record["note"] == "frozen before the evaluation"
    # a primary the tune did not choose: only the note
    plan.settings = EvaluationSettings(primary="none-of-them")
    assert primary_record(plan) == {}  # type: ignore[arg-type]

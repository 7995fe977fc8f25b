"""What every table's paired tests and intervals rest on: the comparisons are against the
configured baseline (whatever its place in the run), and the record order of a predictions file
changes no interval, mean or p-value."""

from __future__ import annotations

import numpy as np
import pytest

from ragsift.evaluation.report.statistics import bootstrap_ci, derive_seed
from ragsift.evaluation.report.summary import build_summary
from ragsift.metrics.answer import ExactMatchMetric
from ragsift.metrics.evidence import EvidenceMetric

OUTPUTS = {**ExactMatchMetric.outputs, **EvidenceMetric.outputs}


def _records(label: str, values: dict[str, tuple[float, float]]) -> list[dict]:  # type: ignore[type-arg]
    """id -> (em, evidence_recall) as predictions records, in the order given."""
    return [{"id": i, "compressor": label, "metrics": {"em": em, "evidence_recall": recall}, "timings": {}}
            for i, (em, recall) in values.items()]


def _values(seed: int, n: int = 12) -> dict[str, tuple[float, float]]:
    rng = np.random.default_rng(seed)
    return {f"q{i:02d}": (float(rng.integers(0, 2)), float(rng.random())) for i in range(n)}


def test_paired_tests_are_against_the_configured_baseline_not_the_first_compressor() -> None:
    """Planted version that this catches: ``_compare`` tests every compressor against the *first*
    compressor of the run (``next(iter(per_label))``) instead of ``baseline``."""
    first, base, third = _values(1), _values(2), _values(3)
    records = {"first": _records("first", first), "base": _records("base", base), "third": _records("third", third)}
    summary = build_summary(records, OUTPUTS, baseline="base", samples=300, seed=5)
    assert summary["baseline"] == "base"
    assert set(summary["comparisons"]) == {"first", "third"}  # every other compressor, the baseline itself not
    for label, values in (("first", first), ("third", third)):
        for key, column, scale in (("em", 0, 100.0), ("evidence_recall", 1, 100.0)):
            test = summary["comparisons"][label][key]
            expected = scale * np.mean([values[i][column] - base[i][column] for i in base])
            assert test["mean_difference"] == pytest.approx(expected), (label, key)
            assert test["n"] == len(base)
    # and the same records with the baseline moved to the front give the same comparisons
    moved = build_summary({"base": records["base"], "first": records["first"], "third": records["third"]},
                          OUTPUTS, baseline="base", samples=300, seed=5)
    assert moved["comparisons"] == summary["comparisons"]


def test_record_order_changes_no_interval_mean_or_p_value() -> None:
    """Planted version that this catches: ``build_summary`` resamples the per-example values in
    record order (``list(vals.values())``) rather than in example-id order, so the same records
    written in another order (an engine that finishes examples out of order, a merge) give other
    bootstrap intervals."""
    none, bm25 = _values(11), _values(12)
    permutation = list(np.random.default_rng(0).permutation(sorted(none)))
    shuffled = {label: {i: values[i] for i in permutation} for label, values in (("none", none), ("bm25", bm25))}
    in_order = build_summary({"none": _records("none", none), "bm25": _records("bm25", bm25)}, OUTPUTS,
                             baseline="none", samples=300, seed=7)
    reordered = build_summary({"none": _records("none", shuffled["none"]), "bm25": _records("bm25", shuffled["bm25"])},
                              OUTPUTS, baseline="none", samples=300, seed=7)
    assert reordered == in_order

    # the fixture can tell the orders apart: resampling in record order gives another interval
    recall = [100.0 * v[1] for v in none.values()]
    by_record = [100.0 * shuffled["none"][i][1] for i in shuffled["none"]]
    seed = derive_seed(7, "none", "evidence_recall")
    assert bootstrap_ci(by_record, 300, 0.95, seed).to_dict() != bootstrap_ci(recall, 300, 0.95, seed).to_dict()
    assert in_order["compressors"]["none"]["values"]["evidence_recall"] == bootstrap_ci(recall, 300, 0.95, seed).to_dict()

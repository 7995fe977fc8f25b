"""The summary of a run's records, written into its run directory (summary.json, summary.md and,
when asked, Parquet): shared by every engine and by ``ragsift merge``, so that all of them
summarise alike (:mod:`ragsift.evaluation.report.summary` computes it)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragsift.evaluation.predictions import prediction_paths, read_records
from ragsift.evaluation.report.pooling import suite_markdown
from ragsift.evaluation.report.summary import build_summary
from ragsift.evaluation.run.plan import RunPlan
from ragsift.metrics.base import Metric, MetricOutput
from ragsift.types import Example

__all__ = ["summarise", "collect_records", "primary_record", "metric_outputs"]


def metric_outputs(metrics: Sequence[Metric]) -> dict[str, MetricOutput]:
    """Metric key -> how it is reported, over every metric of a run."""
    return {key: output for metric in metrics for key, output in type(metric).outputs.items()}


def collect_records(path: Path, examples: Sequence[Example]) -> list[dict[str, Any]]:
    """The records of ``path`` for ``examples``, each id once, in the order of ``examples``
    (whatever order they were written in: an engine may finish them out of order)."""
    wanted = {ex.id for ex in examples}
    by_id: dict[str, dict[str, Any]] = {}
    for r in read_records(path, repair=False):
        if r["id"] in wanted and r["id"] not in by_id:
            by_id[r["id"]] = r
    return [by_id[ex.id] for ex in examples if ex.id in by_id]


def primary_record(plan: RunPlan) -> dict[str, Any]:
    """When and on what the primary compressor was chosen: ``[evaluation] primary_chosen_on``
    (free text) and, when the config is a frozen ``ragsift tune`` config that chose it, its
    ``[tuned]`` record (rule, development file and hash, the sweep, the chosen point)."""
    out: dict[str, Any] = {}
    label = plan.settings.primary
    tuned = plan.config.tuned or {}
    if label is not None and label in (tuned.get("chosen") or {}):
        dev = tuned.get("development") or {}
        out = {"by": "ragsift tune", "created_at": tuned.get("created_at"),
               "rule": (tuned.get("rule") or {}).get("text"), "tuning_config": tuned.get("tuning_config"),
               "development": {k: dev.get(k) for k in ("path", "sha256", "questions")},
               "sweep": tuned.get("sweep"), "point": tuned["chosen"][label]}
    if plan.settings.primary_chosen_on:
        out["note"] = plan.settings.primary_chosen_on
    return {k: v for k, v in out.items() if v is not None}


def _of_dataset(records: Mapping[str, Sequence[Mapping[str, Any]]], name: str) -> dict[str, list[Mapping[str, Any]]]:
    return {label: [r for r in recs if r.get("dataset") == name] for label, recs in records.items()}


def _summary(plan: RunPlan, records: Mapping[str, Sequence[Mapping[str, Any]]],
             strata: Mapping[str, str] | None, sequential: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The means, intervals and paired tests of ``records``; with ``strata`` (example id -> dataset),
    pooled over the datasets with stratified tests; ``sequential``: the looks of the primary test."""
    settings = plan.settings
    test = settings.primary_test()
    summary = build_summary(records, metric_outputs(plan.metrics), baseline=plan.baseline,
                            samples=settings.bootstrap_samples, confidence=settings.confidence, seed=settings.seed,
                            primary=None if test is None else test.design(),
                            primary_chosen=primary_record(plan) if test else None, strata=strata,
                            primary_sequential=sequential)
    for label, family in plan.families.items():  # a sweep's points: one line per family in the report
        summary["compressors"][label]["family"] = family
    return summary


def _add_coverage(plan: RunPlan, records: Mapping[str, Sequence[Mapping[str, Any]]], summary: dict[str, Any]) -> None:
    """A conformal selector's promise checked (docs/conformal.md): the observed coverage of its target
    with its interval against 1 - alpha, and what it kept, per dataset (the guarantee is for one
    dataset: a suite's pooled table gets none), under ``compressors.<label>.coverage``."""
    from ragsift.calibration.coverage import conformal_coverage

    targets = [(sub, name) for name, sub in (summary.get("datasets") or {}).items()] if plan.parts else \
        [(summary, plan.format or Path(plan.data).stem)]
    for label, compressor in plan.compressors.items():
        selector = compressor.config().get("selector")
        if not isinstance(selector, Mapping):
            continue
        for sub, name in targets:
            recs = [r for r in records[label] if not plan.parts or r.get("dataset") == name]
            examples = [ex for ex in plan.examples if not plan.parts or ex.metadata.get("dataset") == name]
            check = conformal_coverage(examples, recs, selector, name, plan.settings.confidence) if recs else None
            if check is not None:
                sub["compressors"][label]["coverage"] = {**check.to_dict(), "line": check.describe()}


def summarise(plan: RunPlan, run_dir: Path, records: Mapping[str, Sequence[Mapping[str, Any]]],
              sequential: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The summary of ``records`` (label -> records, in example order), written as summary.json
    and summary.md (and the predictions as Parquet with ``--parquet`` or ``[evaluation] parquet``)."""
    settings = plan.settings
    strata = plan.strata
    summary = {"run_dir": str(run_dir), "config": str(plan.config.source), "examples": plan.run_examples(),
               **_summary(plan, records, strata, sequential)}
    if strata is not None:  # a suite: the pooled tables above (stratified tests), one summary per dataset
        sizes = {part.name: sum(1 for name in strata.values() if name == part.name) for part in plan.parts}
        summary["pooling"] = {"by": "dataset", "means": "every question weighs once",
                              "tests": "stratified by dataset (resampling and sign flips within each dataset)",
                              "datasets": sizes}
        summary["datasets"] = {name: {"examples": size, **_summary(plan, _of_dataset(records, name), None)}
                               for name, size in sizes.items()}
        for sub in summary["datasets"].values():  # the declared test is the pooled one; each dataset's is descriptive
            if sub.get("primary"):
                sub["primary"]["scope"] = "dataset"
    _add_coverage(plan, records, summary)
    if settings.anchors:  # published figures the report's plots overlay ([[evaluation.anchors]])
        summary["anchors"] = [a.model_dump(exclude_none=True) for a in settings.anchors]
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    title = f"ragsift evaluation: {Path(plan.config.source).name}"
    (run_dir / "summary.md").write_text(suite_markdown(summary, title), encoding="utf-8")
    if plan.options.parquet or settings.parquet:
        from ragsift.evaluation.columnar import write_parquet

        paths = prediction_paths(run_dir, plan.labels)
        for label, recs in records.items():
            write_parquet(paths[label], recs)
    return summary

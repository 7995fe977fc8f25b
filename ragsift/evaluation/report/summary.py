"""The summary of a run: means with bootstrap CIs per compressor, paired tests against a
baseline, as a dict (``summary.json``); :mod:`~ragsift.evaluation.report.formatting` writes it as
a Markdown file (``summary.md``) and a terminal table.

Paired tests pair each compressor's values with the baseline's **by example id** (never by
position). The p-values are Holm-adjusted **per metric family**: one family per tested metric
(EM, F1, ...; every metric whose higher value is better) across the compressors; descriptive
metrics (tokens, kept fraction, empty) get a mean difference with its interval and no test. A
declared **primary comparison** (``[evaluation] primary``: one compressor against the baseline on
EM, or ``[evaluation.primary]`` with its declared test: superiority, non-inferiority, equivalence or
non-inferiority-then-superiority, :mod:`~ragsift.evaluation.report.margins`) is reported on its
own, unadjusted, above the families, its verdict word first. Binary tested metrics also get an
exact McNemar test. Every tested comparison carries its minimum detectable difference (``mdd``: the
difference this run detects with 80% power, :mod:`~ragsift.evaluation.report.power`). With
``strata`` (example id -> dataset) the means, intervals, tests and MDDs are pooled over every
question and stratified by dataset. ``docs/statistics.md`` says what each number means.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ragsift.evaluation.report.margins import PrimaryDesign, Verdict, decide, verdict_from_test
from ragsift.evaluation.report.power import POWER, binary_mdd, continuous_mdd, detectable_difference, paired_sd
from ragsift.evaluation.report.statistics import (
    EXACT_MAX_PAIRS,
    bootstrap_ci,
    derive_seed,
    discordant_pairs,
    holm_adjust,
    mcnemar_exact,
    paired_comparison,
)
from ragsift.metrics.base import MetricOutput

__all__ = ["build_summary", "pair_by_id", "LATENCY_STAGES", "COLUMN_ORDER", "SECONDARY", "SIGNIFICANCE",
           "OUTCOME_METRICS", "PRIMARY_METRIC", "PROMPT_TOKENS", "NOT_IN_TABLE", "is_tested", "prompt_token_stats",
           "strata_of"]

#: stages reported, in pipeline order; ``total`` = compress + read (EXIT's latency)
LATENCY_STAGES = ("split", "score", "select", "assemble", "compress", "read", "total")
#: the reader's accuracy: these lead every table
OUTCOME_METRICS = ("em", "f1", "accuracy")
#: the metric of the primary comparison (issue 23: the chosen compressor against the baseline on EM)
PRIMARY_METRIC = "em"
#: preferred order of metric columns: outcome, efficiency, evidence, then descriptive; others
#: follow in name order
COLUMN_ORDER = (
    *OUTCOME_METRICS, "compressed_tokens", "evidence_precision", "evidence_recall", "evidence_f1", "answer_retention",
    "retained_fraction", "empty",
)
#: secondary columns of the HTML tables (collapsed by default; the terminal and summary.md show all)
SECONDARY = ("compressed_tokens", "retained_fraction", "empty", "latency_ms:compress", "latency_ms:read",
             "gold_document_precision", "gold_document_recall")
#: a difference is starred when its Holm-adjusted p-value is below this
SIGNIFICANCE = 0.05
#: Monte Carlo p-values are resolved finely enough for Holm-adjusted values this small
HOLM_RESOLUTION = 0.001
#: the reader's prompt tokens per question (``compressors[label].prompt_tokens``)
PROMPT_TOKENS = "reader_prompt_tokens"
NOT_IN_TABLE = {"original_tokens"}  # the same for every compressor; in summary.json only


def _describe(key: str, outputs: Mapping[str, MetricOutput]) -> MetricOutput:
    return outputs.get(key) or MetricOutput(key)


def is_tested(meta: Mapping[str, Any]) -> bool:
    """Whether a metric gets a test (and a Holm family): one whose higher value is better. Tokens,
    kept fraction and empty are descriptive: a difference with its interval, no p-value."""
    return meta.get("higher_is_better", True) is True


def pair_by_id(
    values: Mapping[str, float], baseline: Mapping[str, float]
) -> tuple[list[str], list[float], list[float], int]:
    """Pair two id -> value mappings by example id.

    Returns the shared ids (sorted, so that the result does not depend on record order), the
    values and baseline values in that order, and how many ids only one side has (left out)."""
    shared = sorted(set(values) & set(baseline))
    unpaired = len(set(values) ^ set(baseline))
    return shared, [values[i] for i in shared], [baseline[i] for i in shared], unpaired


def _values_by_id(label: str, recs: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> dict[str, dict[str, float]]:
    """metric -> example id -> value (in the metric's own units), refusing a repeated id."""
    seen: set[str] = set()
    out: dict[str, dict[str, float]] = {}
    for r in recs:
        example_id = str(r["id"])
        if example_id in seen:
            raise ValueError(f"summary: compressor '{label}' has example id '{example_id}' more than once; "
                             "paired tests pair examples by id, so each id must appear once per compressor")
        seen.add(example_id)
        for key in keys:
            if key in r.get("metrics", {}):
                out.setdefault(key, {})[example_id] = float(r["metrics"][key])
    return out


def prompt_token_stats(label: str, recs: Sequence[Mapping[str, Any]], samples: int, confidence: float,
                       seed: int) -> dict[str, Any] | None:
    """Mean reader prompt tokens of one compressor with its bootstrap interval, when every read
    example reports them (None otherwise); values in example-id order, as every mean."""
    by_id = {str(r["id"]): (r.get("reader") or {}).get("prompt_tokens") for r in recs if r.get("prediction") is not None}
    if not by_id or any(v is None for v in by_id.values()):
        return None
    values = [float(by_id[i] or 0) for i in sorted(by_id)]
    return bootstrap_ci(values, samples, confidence, derive_seed(seed, label, PROMPT_TOKENS)).to_dict()


def build_summary(
    records: Mapping[str, Sequence[Mapping[str, Any]]],
    outputs: Mapping[str, MetricOutput],
    *,
    baseline: str | None,
    samples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    primary: str | PrimaryDesign | Mapping[str, Any] | None = None,
    primary_chosen: Mapping[str, Any] | None = None,
    strata: Mapping[str, str] | None = None,
    primary_sequential: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Summarise per-example records (label -> records) into means, CIs and paired tests.

    Values are reported in display units (percentages x100, tokens, milliseconds). A metric
    absent from an example (undefined there) is left out of that metric's mean. Each comparison
    holds :class:`~ragsift.evaluation.report.statistics.PairedComparison`'s fields, ``unpaired`` (ids
    only one side has, left out) and, for a tested metric, ``family`` and ``p_holm`` (adjusted
    within the metric's family), for a binary tested metric ``mcnemar`` (``p_value``,
    ``compressor_only``, ``baseline_only``); a descriptive metric's holds the difference and its
    interval only (``descriptive``: true). Every tested comparison also holds ``mdd`` (the minimum
    detectable difference at its n, two-sided level 1 - confidence and 80% power, display units;
    None when the two sides never differ) and ``detectable`` (how: the discordance of a binary
    metric or the paired SD of a continuous one, :func:`~ragsift.evaluation.report.power.detectable_difference`).

    ``primary``: the declared primary comparison (unadjusted: ``summary["primary"]``): a label
    (superiority on EM, today's test) or a :class:`~ragsift.evaluation.report.margins.PrimaryDesign`
    (or a mapping of its fields: ``[evaluation.primary]``), with ``primary_chosen`` the record of how
    it was chosen; its entry adds the verdict (``verdict``: superior / non-inferior / equivalent /
    inferior / inconclusive, ``test``, ``bound``, ``margin``, ``alpha``, ``decision``: the
    :class:`~ragsift.evaluation.report.margins.Verdict`). ``primary_sequential``: the
    :meth:`SequentialDecision.to_dict() <ragsift.evaluation.report.sequential.SequentialDecision.to_dict>`
    of a run with looks (the runner's record); its word is then the verdict.

    ``strata``: example id -> stratum (the dataset of each question of a suite). Means weight every
    question once; intervals resample within strata; the paired tests, the primary test and the MDD
    are stratified (``summary["strata"]``: the stratum sizes). Every example id of the records must
    have a stratum.
    """
    keys = sorted({k for recs in records.values() for r in recs for k in r.get("metrics", {})})
    summary: dict[str, Any] = {
        "confidence": confidence,
        "bootstrap_samples": samples,
        "seed": seed,
        "baseline": baseline,
        "pairing": "example id",
        "exact_test_max_pairs": EXACT_MAX_PAIRS,
        "metrics": {k: {f: getattr(_describe(k, outputs), f) for f in ("label", "unit", "scale", "binary", "higher_is_better")}
                    for k in keys},
        "compressors": {},
        "comparisons": {},
        "p_adjustment": {"method": "holm", "comparisons": 0, "level": SIGNIFICANCE, "families": {}},
    }
    per_label: dict[str, dict[str, dict[str, float]]] = {}
    if strata is not None:
        missing = sorted({str(r["id"]) for recs in records.values() for r in recs} - set(map(str, strata)))
        if missing:
            raise ValueError(f"summary: {len(missing)} example id(s) have no stratum (e.g. '{missing[0]}'); a "
                             "stratified summary needs the stratum (dataset) of every example")
        sizes: dict[str, int] = {}
        for example_id in {str(r["id"]) for recs in records.values() for r in recs}:
            sizes[str(strata[example_id])] = sizes.get(str(strata[example_id]), 0) + 1
        summary["strata"] = {"sizes": dict(sorted(sizes.items())),
                             "pooling": "every question weighted once; resampling and sign flips within strata"}
    for label, recs in records.items():
        by_id = _values_by_id(label, recs, keys)
        values: dict[str, Any] = {}
        for key, vals in by_id.items():
            scale = _describe(key, outputs).scale
            ids = sorted(vals)
            ordered = [vals[i] * scale for i in ids]
            values[key] = bootstrap_ci(ordered, samples, confidence, derive_seed(seed, label, key),
                                       strata_of(ids, strata)).to_dict()
        latency: dict[str, Any] = {}
        for stage in LATENCY_STAGES:
            ms = [_stage_seconds(r.get("timings", {}), stage) * 1000 for r in recs]
            ms = [m for m in ms if m == m]  # drop NaN: stage absent
            if ms:
                latency[stage] = bootstrap_ci(ms, samples, confidence, derive_seed(seed, label, "latency", stage)).to_dict()
        entry: dict[str, Any] = {"n": len(recs), "values": {k: values[k] for k in keys if k in values},
                                 "latency_ms": latency}
        prompt = prompt_token_stats(label, recs, samples, confidence, seed)
        if prompt is not None:
            entry["prompt_tokens"] = prompt
        summary["compressors"][label] = entry
        per_label[label] = by_id
    if baseline is not None and baseline in per_label:
        _compare(summary, per_label, baseline, outputs, samples, confidence, seed, strata)
    if primary is not None:
        design = PrimaryDesign.from_mapping(primary)
        summary["primary"] = _primary(summary, design, primary_chosen, per_label, outputs, strata, primary_sequential)
    return summary


def strata_of(ids: Sequence[str], strata: Mapping[str, str] | None) -> list[str] | None:
    """The stratum of each id, in order (None without strata)."""
    return None if strata is None else [str(strata[i]) for i in ids]


def _compare(summary: dict[str, Any], per_label: Mapping[str, Mapping[str, Mapping[str, float]]], baseline: str,
             outputs: Mapping[str, MetricOutput], samples: int, confidence: float, seed: int,
             strata: Mapping[str, str] | None = None) -> None:
    """Paired tests of every compressor against ``baseline``, then Holm within each tested
    metric's family (that metric, every compressor). Monte Carlo p-values too small for
    ``samples`` sign patterns to resolve draw more, up to enough that the family's Holm-adjusted
    p-values can reach :data:`HOLM_RESOLUTION`."""
    base = per_label[baseline]
    pairs: dict[str, list[tuple[str, list[float], list[float], int, list[str] | None]]] = {}
    for label, by_id in per_label.items():
        if label == baseline:
            continue
        summary["comparisons"][label] = {}
        for key in summary["metrics"]:
            if key not in by_id or key not in base or key in NOT_IN_TABLE:
                continue
            ids, ours, theirs, unpaired = pair_by_id(by_id[key], base[key])
            if len(ours) >= 2:
                pairs.setdefault(key, []).append((label, ours, theirs, unpaired, strata_of(ids, strata)))
    families = summary["p_adjustment"]["families"]
    for key, members in pairs.items():
        meta = _describe(key, outputs)
        tested = is_tested(summary["metrics"][key])
        max_patterns = math.ceil(len(members) / HOLM_RESOLUTION) if tested else 0
        family = []
        for label, ours, theirs, unpaired, groups in members:
            test = paired_comparison([v * meta.scale for v in ours], [v * meta.scale for v in theirs], samples,
                                     confidence, derive_seed(seed, label, baseline, key), max_patterns,
                                     groups).to_dict()
            test["unpaired"] = unpaired
            if not tested:
                summary["comparisons"][label][key] = {k: test[k] for k in ("mean_difference", "low", "high", "n",
                                                                           "confidence", "unpaired")} | {"descriptive": True}
                continue
            test["family"] = key
            test.update(_detectable(ours, theirs, meta, confidence, groups))
            if meta.binary:
                only_ours, only_theirs = discordant_pairs(ours, theirs)
                test["mcnemar"] = {"p_value": mcnemar_exact(ours, theirs), "compressor_only": only_ours,
                                   "baseline_only": only_theirs}
            summary["comparisons"][label][key] = test
            family.append(test)
        if not family:
            continue
        for test, adjusted in zip(family, holm_adjust([t["p_value"] for t in family]), strict=True):
            test["p_holm"] = adjusted
        smallest = min(_smallest_p(t) for t in family)
        families[key] = {"comparisons": len(family), "smallest_p": smallest,
                         "smallest_adjusted": min(1.0, len(family) * smallest),
                         "reachable": len(family) * smallest < SIGNIFICANCE,
                         "n": max(int(t["n"]) for t in family)}
    summary["p_adjustment"]["comparisons"] = sum(f["comparisons"] for f in families.values())


def _smallest_p(test: Mapping[str, Any]) -> float:
    """The smallest p-value the test could have given on its number of pairs: 2 / 2**n for the
    exact sign-flip test (all differences of one sign), 1 / (B + 1) for B random patterns."""
    if test["exact"]:
        return min(1.0, 2.0 ** (1 - int(test["n"])))
    return 1.0 / (int(test["patterns"]) + 1)


def _detectable(ours: Sequence[float], theirs: Sequence[float], meta: MetricOutput, confidence: float,
                groups: Sequence[str] | None) -> dict[str, Any]:
    """``mdd`` and ``detectable`` of one tested comparison (display units): from the discordance of
    0/1 values, else from the paired SD of the scaled values (within strata when given)."""
    binary = meta.binary and all(v in (0, 1) for v in (*ours, *theirs))
    if binary:
        found = detectable_difference(ours, theirs, binary=True, scale=meta.scale, alpha=1 - confidence, power=POWER,
                                      strata=groups)
    else:
        found = detectable_difference([v * meta.scale for v in ours], [v * meta.scale for v in theirs], binary=False,
                                      alpha=1 - confidence, power=POWER, strata=groups)
    return {"mdd": found.mdd, "detectable": found.to_dict()}


def _primary(summary: Mapping[str, Any], design: PrimaryDesign, chosen: Mapping[str, Any] | None,
             per_label: Mapping[str, Mapping[str, Mapping[str, float]]], outputs: Mapping[str, MetricOutput],
             strata: Mapping[str, str] | None, sequential: Mapping[str, Any] | None) -> dict[str, Any]:
    """The declared primary comparison: ``design.compressor`` against the baseline on
    ``design.metric``, on its own (unadjusted; the same paired bootstrap interval and sign-flip
    p-value as the metric family's entry, whose Holm value is the family's, not this test's), with
    the declared test's verdict: superiority from that sign-flip test (today's primary test);
    non-inferiority, equivalence and the fixed sequence from the paired t
    (:func:`~ragsift.evaluation.report.margins.decide`), stratified when ``strata`` is given."""
    label, metric = design.compressor, design.metric
    metric_label = summary["metrics"].get(metric, {}).get("label", metric.upper() if metric == "em" else metric)
    out: dict[str, Any] = {"compressor": label, "baseline": summary["baseline"], "metric": metric,
                           "metric_label": metric_label, "level": design.alpha,
                           "adjustment": "none (declared before the evaluation)", "chosen": dict(chosen or {}),
                           "test": design.test, "margin": design.margin, "alpha": design.alpha,
                           "design": design.to_dict()}
    test = summary["comparisons"].get(label, {}).get(metric)
    if test is None or test.get("descriptive"):
        why = (f"the run has no {metric_label}" + (" (no reader)" if metric == PRIMARY_METRIC else "")
               if metric not in summary["metrics"] else
               f"{metric_label} is descriptive (no test)" if test is not None else
               f"'{label}' has fewer than 2 examples paired with '{summary['baseline']}'")
        return out | {"error": f"no primary test: {why}"}
    fields = ("mean_difference", "low", "high", "p_value", "n", "confidence", "exact", "patterns", "unpaired", "mdd",
              "detectable")
    out |= {k: test[k] for k in fields if k in test} | {"significant": test["p_value"] < design.alpha}
    scale = _describe(metric, outputs).scale
    ids, ours, theirs, _ = pair_by_id(per_label[label][metric], per_label[summary["baseline"]][metric])
    ours, theirs = [v * scale for v in ours], [v * scale for v in theirs]
    groups = strata_of(ids, strata)
    verdict: Verdict
    if design.test == "superiority":
        verdict = verdict_from_test(test, design.alpha)
    else:
        try:
            verdict = decide(design, ours, theirs, groups)
        except ValueError as exc:  # e.g. a stratum of one question: no stratified t
            return out | {"error": f"no primary test: {exc}"}
        margin = float(design.margin or 0)
        try:
            sd = paired_sd(ours, theirs, groups)
            binary = _describe(metric, outputs).binary and all(v in (0, scale) for v in (*ours, *theirs))
            if binary:
                psi = sum(a != b for a, b in zip(ours, theirs, strict=True)) / len(ours)
                ni = binary_mdd(len(ours), psi, design.alpha, POWER, margin / scale) * scale if psi > 0 else None
            else:
                ni = continuous_mdd(len(ours), sd, design.alpha, POWER, margin) if sd > 0 else None
            out["mdd_non_inferiority"] = ni if ni is None or math.isfinite(ni) else None
        except ValueError:
            out["mdd_non_inferiority"] = None
    out |= {"verdict": verdict.word, "bound": _decisive_bound(verdict), "decision": verdict.to_dict()}
    if sequential:
        out["sequential"] = dict(sequential)
        if sequential.get("word"):
            out["verdict"] = sequential["word"]
    return out


def _decisive_bound(verdict: Verdict) -> float:
    """The bound the verdict reads: the upper one for "inferior" (it is below -margin or 0), the
    lower one otherwise (above -margin or 0 for a positive verdict; the one that fell short for
    "inconclusive")."""
    return verdict.high if verdict.word == "inferior" else verdict.low


def _stage_seconds(timings: Mapping[str, float], stage: str) -> float:
    if stage == "total":
        return float(timings["compress"]) + float(timings["read"]) if {"compress", "read"} <= set(timings) else float("nan")
    return float(timings[stage]) if stage in timings else float("nan")

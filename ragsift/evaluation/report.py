"""The summary of a run: means with bootstrap CIs per compressor, paired tests against a
baseline, as a dict (``summary.json``), a Markdown file (``summary.md``) and a terminal table.

Paired tests pair each compressor's values with the baseline's **by example id** (never by
position); the p-values of all comparisons in the table are Holm-adjusted together, and binary
metrics also get an exact McNemar test. ``docs/statistics.md`` says what each number means.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ragsift.evaluation.statistics import (
    EXACT_MAX_PAIRS,
    bootstrap_ci,
    derive_seed,
    discordant_pairs,
    holm_adjust,
    mcnemar_exact,
    paired_comparison,
)
from ragsift.metrics.base import MetricOutput

__all__ = ["build_summary", "format_table", "format_markdown", "pair_by_id", "LATENCY_STAGES", "COLUMN_ORDER",
           "SIGNIFICANCE", "summary_rows", "metric_columns", "test_method", "unpaired_note", "format_cell", "format_p"]

#: stages reported in milliseconds, in pipeline order; ``total`` = compress + read (EXIT's latency)
LATENCY_STAGES = ("split", "score", "select", "assemble", "compress", "read", "total")
#: preferred order of metric columns; other metrics follow in name order
COLUMN_ORDER = (
    "evidence_precision", "evidence_recall", "evidence_f1", "answer_retention", "compressed_tokens",
    "retained_fraction", "empty", "em", "f1", "accuracy",
)
#: a difference is starred when its Holm-adjusted p-value is below this
SIGNIFICANCE = 0.05
#: Monte Carlo p-values are resolved finely enough for Holm-adjusted values this small
HOLM_RESOLUTION = 0.001
_NOT_IN_TABLE = {"original_tokens"}  # the same for every compressor; in summary.json only


def _describe(key: str, outputs: Mapping[str, MetricOutput]) -> MetricOutput:
    return outputs.get(key) or MetricOutput(key)


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


def build_summary(
    records: Mapping[str, Sequence[Mapping[str, Any]]],
    outputs: Mapping[str, MetricOutput],
    *,
    baseline: str | None,
    samples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """Summarise per-example records (label -> records) into means, CIs and paired tests.

    Values are reported in display units (percentages x100, tokens, milliseconds). A metric
    absent from an example (undefined there) is left out of that metric's mean. Each comparison
    holds :class:`~ragsift.evaluation.statistics.PairedComparison`'s fields, ``p_holm`` (adjusted
    over every comparison of the summary), ``unpaired`` (ids only one side has, left out) and,
    for binary metrics, ``mcnemar`` (``p_value``, ``compressor_only``, ``baseline_only``).
    """
    keys = sorted({k for recs in records.values() for r in recs for k in r.get("metrics", {})})
    summary: dict[str, Any] = {
        "confidence": confidence,
        "bootstrap_samples": samples,
        "seed": seed,
        "baseline": baseline,
        "pairing": "example id",
        "exact_test_max_pairs": EXACT_MAX_PAIRS,
        "metrics": {k: {"label": _describe(k, outputs).label, "unit": _describe(k, outputs).unit,
                        "scale": _describe(k, outputs).scale, "binary": _describe(k, outputs).binary} for k in keys},
        "compressors": {},
        "comparisons": {},
        "p_adjustment": {"method": "holm", "comparisons": 0},
    }
    per_label: dict[str, dict[str, dict[str, float]]] = {}
    for label, recs in records.items():
        by_id = _values_by_id(label, recs, keys)
        values: dict[str, Any] = {}
        for key, vals in by_id.items():
            scale = _describe(key, outputs).scale
            ordered = [vals[i] * scale for i in sorted(vals)]
            values[key] = bootstrap_ci(ordered, samples, confidence, derive_seed(seed, label, key)).to_dict()
        latency: dict[str, Any] = {}
        for stage in LATENCY_STAGES:
            ms = [_stage_seconds(r.get("timings", {}), stage) * 1000 for r in recs]
            ms = [m for m in ms if m == m]  # drop NaN: stage absent
            if ms:
                latency[stage] = bootstrap_ci(ms, samples, confidence, derive_seed(seed, label, "latency", stage)).to_dict()
        summary["compressors"][label] = {"n": len(recs), "values": {k: values[k] for k in keys if k in values},
                                         "latency_ms": latency}
        per_label[label] = by_id
    if baseline is not None and baseline in per_label:
        _compare(summary, per_label, baseline, outputs, samples, confidence, seed)
    return summary


def _compare(summary: dict[str, Any], per_label: Mapping[str, Mapping[str, Mapping[str, float]]], baseline: str,
             outputs: Mapping[str, MetricOutput], samples: int, confidence: float, seed: int) -> None:
    """Paired tests of every compressor against ``baseline``, then Holm over all of them. Monte
    Carlo p-values too small for ``samples`` sign patterns to resolve draw more, up to enough that
    the family's Holm-adjusted p-values can reach :data:`HOLM_RESOLUTION`."""
    base = per_label[baseline]
    pairs: list[tuple[str, str, list[float], list[float], int]] = []
    for label, by_id in per_label.items():
        if label == baseline:
            continue
        summary["comparisons"][label] = {}
        for key in summary["metrics"]:
            if key not in by_id or key not in base or key in _NOT_IN_TABLE:
                continue
            _, ours, theirs, unpaired = pair_by_id(by_id[key], base[key])
            if len(ours) >= 2:
                pairs.append((label, key, ours, theirs, unpaired))
    max_patterns = math.ceil(len(pairs) / HOLM_RESOLUTION)
    family = []
    for label, key, ours, theirs, unpaired in pairs:
        scale = _describe(key, outputs).scale
        test = paired_comparison([v * scale for v in ours], [v * scale for v in theirs], samples, confidence,
                                 derive_seed(seed, label, baseline, key), max_patterns).to_dict()
        test["unpaired"] = unpaired
        if _describe(key, outputs).binary:
            only_ours, only_theirs = discordant_pairs(ours, theirs)
            test["mcnemar"] = {"p_value": mcnemar_exact(ours, theirs), "compressor_only": only_ours,
                               "baseline_only": only_theirs}
        summary["comparisons"][label][key] = test
        family.append(test)
    for test, adjusted in zip(family, holm_adjust([t["p_value"] for t in family]), strict=True):
        test["p_holm"] = adjusted
    summary["p_adjustment"]["comparisons"] = len(family)


def _stage_seconds(timings: Mapping[str, float], stage: str) -> float:
    if stage == "total":
        return float(timings["compress"]) + float(timings["read"]) if {"compress", "read"} <= set(timings) else float("nan")
    return float(timings[stage]) if stage in timings else float("nan")


def _columns(summary: Mapping[str, Any]) -> list[str]:
    present = [k for k in summary["metrics"] if k not in _NOT_IN_TABLE]
    ordered = [k for k in COLUMN_ORDER if k in present]
    return ordered + sorted(k for k in present if k not in ordered)


def _digits(unit: str) -> int:
    return 0 if unit == "tokens" else 1


def _cell(stat: Mapping[str, float] | None, unit: str, brackets: bool) -> str:
    if not stat:
        return "-"
    d = _digits(unit)
    if brackets:
        return f"{stat['mean']:.{d}f} [{stat['low']:.{d}f}, {stat['high']:.{d}f}]"
    half = (stat["high"] - stat["low"]) / 2
    return f"{stat['mean']:.{d}f}±{half:.{d}f}"


def _p(p: float) -> str:
    return "p<0.001" if p < 0.001 else f"p={p:.3f}"


def _diff_cell(test: Mapping[str, Any] | None, unit: str, brackets: bool, mark_exact: bool) -> str:
    """Mean difference [CI] and p-values; ``*`` when the Holm-adjusted p is below SIGNIFICANCE."""
    if not test:
        return "-"
    d = _digits(unit)
    star = "*" if test["p_holm"] < SIGNIFICANCE else ""
    exact = " (exact)" if mark_exact and test["exact"] else ""
    if brackets:
        holm = "<0.001" if test["p_holm"] < 0.001 else f"{test['p_holm']:.3f}"
        return (f"{test['mean_difference']:+.{d}f} [{test['low']:+.{d}f}, {test['high']:+.{d}f}] "
                f"{_p(test['p_value'])}, Holm {holm}{star}{exact}")
    return f"{test['mean_difference']:+.{d}f} {_p(test['p_holm'])}{star}{exact}"


def _tests(summary: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [t for tests in summary["comparisons"].values() for t in tests.values()]


def _test_method(summary: Mapping[str, Any]) -> tuple[str, bool]:
    """How the table's p-values were computed, and whether cells must say which are exact."""
    exact = {bool(t["exact"]) for t in _tests(summary)}
    limit = summary.get("exact_test_max_pairs", 16)
    sampled = f"{summary['bootstrap_samples']} random sign patterns"
    if not exact:
        return "two-sided sign-flip test (no comparison has 2 pairs)", False
    if exact == {True}:
        return "exact two-sided sign-flip test (all 2^n sign patterns)", False
    if exact == {False}:
        return f"two-sided sign-flip test, {sampled}", False
    return f"two-sided sign-flip test, exact (all 2^n sign patterns) where n <= {limit} pairs, " \
           f"marked (exact); else {sampled}", True


def _unpaired_note(summary: Mapping[str, Any]) -> str | None:
    left_out = {label: max(t.get("unpaired", 0) for t in tests.values())
                for label, tests in summary["comparisons"].items() if tests}
    left_out = {label: k for label, k in left_out.items() if k}
    if not left_out:
        return None
    parts = ", ".join(f"{label}: {k}" for label, k in left_out.items())
    return (f"Pairs are matched by example id; examples that only one side has are left out of the paired "
            f"tests ({parts}).")


def _heading(meta: Mapping[str, Any]) -> str:
    unit = meta["unit"]
    return meta["label"] if not unit or unit.lower() == meta["label"].lower() else f"{meta['label']} ({unit})"


def _rows(summary: Mapping[str, Any], brackets: bool) -> tuple[list[str], list[list[str]], list[str], list[list[str]]]:
    cols = _columns(summary)
    meta = summary["metrics"]
    header = ["compressor", "n"] + [_heading(meta[k]) for k in cols]
    stages = [s for s in ("compress", "read") if any(s in c["latency_ms"] for c in summary["compressors"].values())]
    header += [f"{s} (ms)" for s in stages]
    rows = []
    for label, comp in summary["compressors"].items():
        row = [label, str(comp["n"])] + [_cell(comp["values"].get(k), meta[k]["unit"], brackets) for k in cols]
        row += [_cell(comp["latency_ms"].get(s), "ms", brackets) for s in stages]
        rows.append(row)
    diff_header = ["compressor"] + [meta[k]["label"] for k in cols]
    mark_exact = _test_method(summary)[1]
    diff_rows = [[label] + [_diff_cell(tests.get(k), meta[k]["unit"], brackets, mark_exact) for k in cols]
                 for label, tests in summary["comparisons"].items()]
    return header, rows, diff_header, diff_rows


def _fixed(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))  # noqa: E731
    return "\n".join([line(header), "  ".join("-" * w for w in widths), *map(line, rows)])


def format_table(summary: Mapping[str, Any]) -> str:
    """The terminal table: mean ± half the CI width, then differences against the baseline."""
    header, rows, diff_header, diff_rows = _rows(summary, brackets=False)
    conf = int(round(summary["confidence"] * 100))
    out = [_fixed(header, rows), f"(mean ± half-width of the {conf}% bootstrap CI; percentages x100)"]
    if diff_rows:
        method, _ = _test_method(summary)
        family = summary["p_adjustment"]["comparisons"]
        out += ["", f"difference vs '{summary['baseline']}' (paired by example id; * Holm-adjusted p < {SIGNIFICANCE})",
                f"(p: {method}; Holm-adjusted over the {family} comparisons below)", _fixed(diff_header, diff_rows)]
        note = _unpaired_note(summary)
        if note:
            out.append(note)
    return "\n".join(out)


_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def _md(text: object) -> str:
    """Text from the run (labels, metric names, the config's name) for summary.md: what report.html
    escapes is escaped here too (``<``, ``>``, ``&``, quotes as HTML entities, which Markdown
    renders as text), and so are Markdown's own marks (table bars, emphasis, code, links); a
    line break becomes a space."""
    escaped = html.escape(" ".join(str(text).splitlines()), quote=True)
    return _MD_SPECIAL.sub(r"\\\1", escaped)


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table; the header and the first column (labels) are escaped (:func:`_md`), the
    other cells are ragsift's own formatted numbers."""
    lines = ["| " + " | ".join(map(_md, header)) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join([_md(r[0]), *r[1:]]) + " |" for r in rows]
    return "\n".join(lines)


def format_markdown(summary: Mapping[str, Any], title: str = "ragsift evaluation") -> str:
    """``summary.md``: the results table with CIs, paired tests and per-stage latency."""
    header, rows, diff_header, diff_rows = _rows(summary, brackets=True)
    conf = int(round(summary["confidence"] * 100))
    parts = [f"# {_md(title)}", "", f"Means with {conf}% percentile-bootstrap confidence intervals "
             f"({summary['bootstrap_samples']} resamples, seed {summary['seed']}); percentages x100.", "",
             _md_table(header, rows)]
    if diff_rows:
        method, _ = _test_method(summary)
        family = summary["p_adjustment"]["comparisons"]
        parts += ["", f"## Difference vs {_md(summary['baseline'])}", "",
                  f"Paired by example id: mean difference, paired-bootstrap {conf}% CI, p-value of the {method}, "
                  f"and the p-value after Holm's correction over all {family} comparisons in this table; "
                  f"`*`: Holm-adjusted p < {SIGNIFICANCE}. See docs/statistics.md.", "",
                  _md_table(diff_header, diff_rows)]
        note = _unpaired_note(summary)
        if note:
            parts += ["", _md(note)]
        parts += _mcnemar_section(summary)
    stages = [s for s in LATENCY_STAGES if any(s in c["latency_ms"] for c in summary["compressors"].values())]
    if stages:
        lat_rows = [[label] + [_cell(c["latency_ms"].get(s), "ms", True) for s in stages]
                    for label, c in summary["compressors"].items()]
        parts += ["", "## Latency per example (ms)", "",
                  "Stage timings from each compression; compress = the whole compress() call; read = the "
                  "reader's time (with a reading batch of N examples, each example's share of the batch); "
                  "total = compress + read.", "", _md_table(["compressor", *stages], lat_rows)]
    return "\n".join(parts) + "\n"


def _mcnemar_section(summary: Mapping[str, Any]) -> list[str]:
    """Binary metrics: the discordant pairs and the exact McNemar p-value (a second opinion)."""
    meta = summary["metrics"]
    rows = [[label, _md(meta[key]["label"]), str(t["mcnemar"]["compressor_only"]), str(t["mcnemar"]["baseline_only"]),
             _p(t["mcnemar"]["p_value"])]
            for label, tests in summary["comparisons"].items() for key, t in tests.items() if "mcnemar" in t]
    if not rows:
        return []
    return ["", "## Binary metrics: exact McNemar test", "",
            f"Examples where only the compressor (only {_md(summary['baseline'])}) scores 1, and the two-sided "
            "exact McNemar p-value (binomial test on those discordant examples; not Holm-adjusted).", "",
            _md_table(["compressor", "metric", "compressor only", "baseline only", "McNemar p"], rows)]


# The same cells for other renderings (the HTML report): one formatting of every number.
summary_rows = _rows
metric_columns = _columns
test_method = _test_method
unpaired_note = _unpaired_note
format_cell = _cell
format_p = _p

"""The summary of a run: means with bootstrap CIs per compressor, paired tests against a
baseline, as a dict (``summary.json``), a Markdown file (``summary.md``) and a terminal table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragsift.evaluation.statistics import bootstrap_ci, derive_seed, paired_comparison
from ragsift.metrics.base import MetricOutput

__all__ = ["build_summary", "format_table", "format_markdown", "LATENCY_STAGES", "COLUMN_ORDER"]

#: stages reported in milliseconds, in pipeline order; ``total`` = compress + read (EXIT's latency)
LATENCY_STAGES = ("split", "score", "select", "assemble", "compress", "read", "total")
#: preferred order of metric columns; other metrics follow in name order
COLUMN_ORDER = (
    "evidence_precision", "evidence_recall", "evidence_f1", "answer_retention", "compressed_tokens",
    "retained_fraction", "empty", "em", "f1", "accuracy",
)
_NOT_IN_TABLE = {"original_tokens"}  # the same for every compressor; in summary.json only


def _describe(key: str, outputs: Mapping[str, MetricOutput]) -> MetricOutput:
    return outputs.get(key) or MetricOutput(key)


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
    absent from an example (undefined there) is left out of that metric's mean.
    """
    keys = sorted({k for recs in records.values() for r in recs for k in r.get("metrics", {})})
    summary: dict[str, Any] = {
        "confidence": confidence,
        "bootstrap_samples": samples,
        "seed": seed,
        "baseline": baseline,
        "metrics": {k: {"label": _describe(k, outputs).label, "unit": _describe(k, outputs).unit,
                        "scale": _describe(k, outputs).scale} for k in keys},
        "compressors": {},
        "comparisons": {},
    }
    per_label: dict[str, dict[str, dict[str, float]]] = {}
    for label, recs in records.items():
        values: dict[str, Any] = {}
        by_id: dict[str, dict[str, float]] = {}
        for key in keys:
            scale = _describe(key, outputs).scale
            pairs = [(r["id"], float(r["metrics"][key]) * scale) for r in recs if key in r.get("metrics", {})]
            if not pairs:
                continue
            by_id[key] = dict(pairs)
            ci = bootstrap_ci([v for _, v in pairs], samples, confidence, derive_seed(seed, label, key))
            values[key] = ci.to_dict()
        latency: dict[str, Any] = {}
        for stage in LATENCY_STAGES:
            ms = [_stage_seconds(r.get("timings", {}), stage) * 1000 for r in recs]
            ms = [m for m in ms if m == m]  # drop NaN: stage absent
            if ms:
                latency[stage] = bootstrap_ci(ms, samples, confidence, derive_seed(seed, label, "latency", stage)).to_dict()
        summary["compressors"][label] = {"n": len(recs), "values": values, "latency_ms": latency}
        per_label[label] = by_id
    if baseline is not None and baseline in per_label:
        base = per_label[baseline]
        for label, by_id in per_label.items():
            if label == baseline:
                continue
            tests = {}
            for key, vals in by_id.items():
                if key not in base or key in _NOT_IN_TABLE:
                    continue
                ids = [i for i in vals if i in base[key]]
                if len(ids) < 2:
                    continue
                test = paired_comparison([vals[i] for i in ids], [base[key][i] for i in ids], samples, confidence,
                                         derive_seed(seed, label, baseline, key))
                tests[key] = test.to_dict()
            summary["comparisons"][label] = tests
    return summary


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


def _diff_cell(test: Mapping[str, float] | None, unit: str, brackets: bool) -> str:
    if not test:
        return "-"
    d = _digits(unit)
    star = "*" if test["p_value"] < 0.05 else ""
    p = test["p_value"]
    shown = "p<0.001" if p < 0.001 else f"p={p:.3f}"
    if brackets:
        return f"{test['mean_difference']:+.{d}f} [{test['low']:+.{d}f}, {test['high']:+.{d}f}] {shown}{star}"
    return f"{test['mean_difference']:+.{d}f} {shown}{star}"


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
    diff_rows = [[label] + [_diff_cell(tests.get(k), meta[k]["unit"], brackets) for k in cols]
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
        out += ["", f"difference vs '{summary['baseline']}' (paired; p: sign-flip permutation test, * p < 0.05)",
                _fixed(diff_header, diff_rows)]
    return "\n".join(out)


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def format_markdown(summary: Mapping[str, Any], title: str = "ragsift evaluation") -> str:
    """``summary.md``: the results table with CIs, paired tests and per-stage latency."""
    header, rows, diff_header, diff_rows = _rows(summary, brackets=True)
    conf = int(round(summary["confidence"] * 100))
    parts = [f"# {title}", "", f"Means with {conf}% percentile-bootstrap confidence intervals "
             f"({summary['bootstrap_samples']} resamples, seed {summary['seed']}); percentages x100.", "",
             _md_table(header, rows)]
    if diff_rows:
        parts += ["", f"## Difference vs `{summary['baseline']}`", "",
                  "Paired over the same examples: mean difference, paired-bootstrap CI, two-sided sign-flip "
                  "permutation p-value (* p < 0.05).", "", _md_table(diff_header, diff_rows)]
    stages = [s for s in LATENCY_STAGES if any(s in c["latency_ms"] for c in summary["compressors"].values())]
    if stages:
        lat_rows = [[label] + [_cell(c["latency_ms"].get(s), "ms", True) for s in stages]
                    for label, c in summary["compressors"].items()]
        parts += ["", "## Latency per example (ms)", "",
                  "Stage timings from each compression; compress = the whole compress() call; read = the "
                  "reader's time (with a reading batch of N examples, each example's share of the batch); "
                  "total = compress + read.", "", _md_table(["compressor", *stages], lat_rows)]
    return "\n".join(parts) + "\n"

"""Paired difference of two compressors of one finished run, whatever the run's baseline was.

``ragsift evaluate`` compares every compressor with the config's one ``baseline``; this reads a run
directory's predictions and compares compressor A with compressor B on the examples both finished:
mean difference A - B with its paired-bootstrap 95% CI and the two-sided sign-flip p-value
(:func:`ragsift.evaluation.report.statistics.paired_comparison`, unadjusted), per metric.

    python benchmarks/paired_difference.py runs/ecorag-judge-eval ecorag-trained-judge ecorag-fixed-k@k=8

``--b-run DIR`` takes B from another run (a compressor added later, compared with a reference run's
records): both runs must have read the same input file with the same reader (their manifests say so),
or the comparison is refused.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ragsift.evaluation.predictions import prediction_path, read_predictions
from ragsift.evaluation.report.statistics import PairedComparison, paired_comparison
from ragsift.evaluation.report.summary import pair_by_id
from ragsift.evaluation.run.manifest import MANIFEST_NAME, read_manifest

METRICS = ("evidence_precision", "evidence_recall", "evidence_f1", "answer_retention", "compressed_tokens")


def _records(run_dir: Path, label: str) -> list[dict]:
    records = read_predictions(prediction_path(run_dir, label))  # JSONL, or the Parquet copy
    if not records:
        raise SystemExit(f"{prediction_path(run_dir, label)}: no predictions for compressor '{label}' in {run_dir}.")
    return records


def _manifest(run_dir: Path) -> dict:
    manifest = read_manifest(run_dir)  # an unreadable one names its file
    if manifest is None:
        raise SystemExit(f"{run_dir / MANIFEST_NAME}: not found; --b-run needs both runs' manifests to check they "
                         "read the same input.")
    return manifest


def _reader(manifest: dict) -> tuple:
    reader = manifest.get("reader") or {}
    return reader.get("config"), reader.get("model", {}).get("sha256")


def check_same_setting(run_a: Path, run_b: Path) -> None:
    """Two runs compared across directories must share the input file (sha256) and the reader."""
    ma, mb = _manifest(run_a), _manifest(run_b)
    input_a, input_b = ma.get("input", {}), mb.get("input", {})
    if input_a.get("sha256") != input_b.get("sha256"):
        raise SystemExit(f"{run_a} and {run_b} read different input files ({input_a.get('path')} vs "
                         f"{input_b.get('path')}).")
    if _reader(ma) != _reader(mb):
        raise SystemExit(f"{run_a} and {run_b} used different readers (their manifests' [reader] differ).")


def compare(run_dir: Path, a: str, b: str, metrics: tuple[str, ...] | list[str] = METRICS,
            patterns: int = 10_000, b_run: Path | None = None) -> tuple[int, dict[str, PairedComparison]]:
    """(paired examples, {metric: comparison of a - b}), paired by example id as the summary pairs;
    B from ``b_run`` when given (checked to share the input and the reader)."""
    if b_run is not None:
        check_same_setting(run_dir, b_run)
    ra, rb = _records(run_dir, a), _records(b_run or run_dir, b)
    out = {}
    for metric in metrics:
        ids, ours, theirs, _ = pair_by_id({r["id"]: r["metrics"][metric] for r in ra},
                                          {r["id"]: r["metrics"][metric] for r in rb})
        if not ids:
            raise SystemExit(f"{run_dir}: '{a}' and '{b}' share no finished example.")
        out[metric] = paired_comparison(ours, theirs, samples=patterns, seed=0)
    return len(ids), out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run_dir", type=Path)
    p.add_argument("a", help="compressor label (the minuend)")
    p.add_argument("b", help="compressor label (the baseline)")
    p.add_argument("--metrics", nargs="+", default=list(METRICS))
    p.add_argument("--patterns", type=int, default=10_000, help="bootstrap resamples and random sign patterns")
    p.add_argument("--b-run", type=Path, help="the run directory of B (default: RUN_DIR)")
    args = p.parse_args()
    n, comparisons = compare(args.run_dir, args.a, args.b, args.metrics, args.patterns, args.b_run)
    where = f"{args.run_dir}" + (f"; {args.b} from {args.b_run}" if args.b_run else "")
    print(f"{args.a} - {args.b}, {n} paired examples ({where})")
    for metric, c in comparisons.items():
        print(f"  {metric}: {c.mean_difference:+.4f} [{c.low:+.4f}, {c.high:+.4f}] p={c.p_value:.4f}"
              + (" (exact)" if c.exact else ""))


if __name__ == "__main__":
    main()

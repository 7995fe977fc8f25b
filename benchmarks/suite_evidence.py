"""The evaluation suite's evidence table (issues 47 and 50) from a finished run of
configs/suite-evidence.toml: per dataset and pooled, every compressor's answer kept in the context,
gold documents kept (all, and recall), sentence evidence recall / precision where the labels are
sentences, context tokens and compression seconds; the conformal selectors' coverage against their
promise. Prints the Markdown, and with --write replaces BENCHMARKS.md's section.

  ragsift evaluate -c configs/suite-evidence.toml --no-reader --out runs/suite-evidence
  python benchmarks/suite_evidence.py runs/suite-evidence --write
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from markdown_section import run_dir_main

SECTION = "## Evaluation suite: evidence of every compressor on 524 questions (no reader)"
#: (summary key, column heading, digits)
COLUMNS = (("answer_retention", "answer kept", 1), ("all_gold_documents", "all gold docs", 1),
           ("gold_document_recall", "gold doc R", 1), ("evidence_recall", "Ev-R", 1),
           ("evidence_precision", "Ev-P", 1), ("compressed_tokens", "tokens", 0))


def _cell(stat: Mapping[str, float] | None, digits: int) -> str:
    if stat is None:
        return "-"
    half = (stat["high"] - stat["low"]) / 2
    return f"{stat['mean']:.{digits}f} ±{half:.{digits}f}"


def table(summary: Mapping[str, Any]) -> str:
    """One Markdown table of a (pooled or per-dataset) summary."""
    header = ["compressor", "n", *(c[1] for c in COLUMNS), "compress s"]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    for label, comp in summary["compressors"].items():
        values = comp.get("values", {})
        seconds = (comp.get("latency_ms", {}).get("compress") or {}).get("mean")
        cells = [_cell(values.get(key), digits) for key, _, digits in COLUMNS]
        lines.append(f"| {label} | {comp['n']} | " + " | ".join(cells)
                     + f" | {'-' if seconds is None else f'{seconds / 1000:.2f}'} |")
    return "\n".join(lines)


def coverage(summary: Mapping[str, Any]) -> list[str]:
    return [f"- {name}, {label}: {comp['coverage']['line']}" for name, sub in (summary.get("datasets") or {}).items()
            for label, comp in sub["compressors"].items() if comp.get("coverage")]


def section(run_dir: Path) -> str:
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    sizes = ", ".join(f"{name} {n}" for name, n in summary["pooling"]["datasets"].items())
    parts = [
        f"`ragsift evaluate -c configs/suite-evidence.toml --no-reader --out {run_dir}` "
        f"(ragsift {manifest.get('ragsift_version')}, git {str((manifest.get('git') or {}).get('commit'))[:8]}, "
        f"{manifest.get('created_at', '')[:16]} to {manifest.get('updated_at', '')[:16]} UTC, one 2-core machine "
        f"shared with other work: compression seconds are indicative), then `python benchmarks/suite_evidence.py "
        f"{run_dir} --write`. Datasets: {sizes} (`ragsift datasets`). Means with 95% bootstrap half-widths (%, "
        "tokens of the 1.5B reader's tokenizer); pooled rows weigh every question once. Gold documents: those "
        "holding a supporting fact (HotpotQA, 2Wiki) or the supporting paragraphs (MuSiQue, whose labels are "
        "paragraphs: no sentence Ev-R / Ev-P). EXIT, Selective-Context, LongLLMLingua and ECoRAG run on the "
        "first 10 of each dataset (their n says so): indicative rows. Nothing was chosen from this run.",
        "", "### Pooled", "", table(summary)]
    for name, sub in summary["datasets"].items():
        parts += ["", f"### {name} ({sub['examples']} questions)", "", table(sub)]
    lines = coverage(summary)
    if lines:
        parts += ["", "### Conformal selectors: coverage against the promise", "",
                  "Each `bridge-conformal-X` is the two-hop ranker with the threshold calibrated at alpha = 0.1 on X's "
                  "development questions (target: every gold document), applied to every dataset; its promise (>= 90% "
                  "of questions keep every gold document) holds only on the dataset it was calibrated on.", "", *lines]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    return run_dir_main(argv, __doc__, SECTION, section)


if __name__ == "__main__":
    raise SystemExit(main())

"""Issue 51: in the trade-off plots' dense clusters no label sits beside another compressor's
marker. The main job's 14 compressors (BENCHMARKS.md "Main job": EM and F1 against prompt tokens
and against end-to-end latency) and the evidence suite's 17 (its committed summary: evidence recall
against context tokens and compression latency) are drawn with the Agg backend and every label
measured from the rendered figure (plot_label_measure): no two label boxes overlap, no box covers
a marker not its own, each label's nearest marker (or its leader line's end) is its own. A point
left without a label is named by the legend, by its own entry."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from plot_label_measure import drawn, owners, problems

from ragsift.evaluation.report import plots as pl
from ragsift.evaluation.report.plots import TradeoffPoint

ROOT = Path(__file__).resolve().parents[2]

#: BENCHMARKS.md "Main job" (2026-12-03): label -> (EM mean, low, high), (F1 mean, low, high), prompt
#: tokens, end-to-end seconds
MAIN_JOB: dict[str, tuple[tuple[float, float, float], tuple[float, float, float], float, float]] = {
    "none": ((35.0, 26.0, 44.0), (41.8, 32.6, 50.8), 1459, 13.77),
    "oracle": ((57.0, 47.0, 66.0), (63.8, 54.5, 73.1), 146, 1.66),
    "bm25@k=2": ((18.0, 11.0, 26.0), (24.4, 17.0, 32.9), 127, 1.45),
    "bm25@k=3": ((27.0, 19.0, 35.0), (34.5, 25.9, 43.4), 163, 1.70),
    "bm25@k=5": ((28.0, 19.0, 37.0), (37.4, 28.9, 46.3), 235, 2.44),
    "random": ((17.0, 10.0, 25.0), (23.1, 15.8, 31.0), 216, 2.34),
    "embedding": ((16.0, 9.0, 23.0), (24.7, 17.4, 32.4), 225, 2.92),
    "fusion-trained": ((26.0, 18.0, 34.0), (33.7, 25.0, 43.0), 137, 1.54),
    "exit-trained": ((25.0, 17.0, 34.0), (32.0, 24.0, 40.8), 339, 13.41),
    "ecorag-trained": ((36.0, 27.0, 45.0), (43.8, 34.6, 52.7), 446, 7.58),
    "recomp-extractive": ((36.0, 26.0, 45.0), (44.5, 35.4, 53.2), 935, 9.95),
    "selective-context": ((32.0, 23.0, 41.0), (39.6, 30.6, 48.7), 962, 14.91),
    "longllmlingua": ((41.0, 31.0, 51.0), (48.5, 38.9, 58.0), 812, 12.91),
    "bridge-ranked": ((38.0, 28.0, 47.0), (46.5, 37.6, 55.8), 451, 4.35),
}


def _main_job(cost: int, quality: int) -> list[TradeoffPoint]:
    """The main job's points: ``cost`` 2 prompt tokens, 3 seconds; ``quality`` 0 EM, 1 F1."""
    out = []
    for label, row in MAIN_JOB.items():
        x, (y, low, high) = float(row[cost]), row[quality]  # type: ignore[misc]
        out.append(TradeoffPoint(label, x, x, x, y, low, high, family="bm25" if label.startswith("bm25") else None,
                                 reference=label == "oracle"))
    return out


def _suite(x: str) -> list[TradeoffPoint]:
    with gzip.open(ROOT / "benchmarks/results/suite-evidence/summary-2026-12-06.json.gz", "rt", encoding="utf-8") as f:
        summary = json.load(f)
    return pl.tradeoff_points(summary, "evidence_recall", x, references=("oracle",), seconds=True)


CASES = {
    "main job, tokens": ([("EM (%)", _main_job(2, 0)), ("F1 (%)", _main_job(2, 1))],
                         "reader input tokens per question (prompt, mean)"),
    "main job, latency": ([("EM (%)", _main_job(3, 0)), ("F1 (%)", _main_job(3, 1))],
                          "end-to-end latency per question (s): compression + reading"),
    "suite, tokens": ([("Ev-R (%)", _suite("compressed_tokens"))], "context tokens per question (mean)"),
    "suite, latency": ([("Ev-R (%)", _suite("latency_ms:compress"))], "compression latency per question (s); no reader"),
}


def check(seen: dict[str, Any], points: list[TradeoffPoint]) -> None:
    """No ambiguous label; every point is labelled or named by the legend (its own entry, or its
    sweep's, which lists the sweep's points in order); most are labelled."""
    assert not problems(seen), problems(seen)
    named = set().union(*(owners(text) for text in seen["labels"]))
    for p in points:
        if p.label in named:
            continue
        if p.family:
            entry = next(e for e in seen["legend"] if e.startswith(f"sweep: {p.family} ("))
            assert p.label.removeprefix(f"{p.family}@") in entry.split("(", 1)[1].split(", "), (p.label, entry)
        else:
            assert any(e == p.label or e.startswith(f"{p.label} (") for e in seen["legend"]), p.label
    assert len(named) >= 3 * len(points) // 4, sorted(named)


@pytest.mark.parametrize("case", sorted(CASES))
def test_dense_cluster_labels_name_their_own_markers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, case: str) -> None:
    panels, xlabel = CASES[case]
    assert len(panels[0][1]) >= 14  # the premise: a dense plot (12+ compressors)
    seen = drawn(monkeypatch, pl, panels, tmp_path / "plot.png", xlabel=xlabel)
    assert len(seen) == len(panels)
    for axes, (_, points) in zip(seen, panels, strict=True):
        check(axes, points)

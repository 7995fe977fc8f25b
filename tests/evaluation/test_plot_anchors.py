"""Issue 27: published figures declared in a run's config ([[evaluation.anchors]]) travel through
summary.json into the report, where a trade-off plot overlays each one whose x is the plot's axis,
labelled "published: ..." with its source in the caption; one drawn nowhere is named in a note."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from report_runs import COMPRESSORS, run

from ragsift.evaluation.report import plots as pl

ANCHORS = """
[[evaluation.anchors]]
label = "paper A"
source = "Table 2 of a paper (made-up figure for the test)"
metric = "evidence_recall"
value = 80.0
compress_seconds = 0.5
context_tokens = 300

[[evaluation.anchors]]
label = "paper B"
source = "its abstract"
metric = "em"
value = 37.9
total_seconds = 0.8
"""


@pytest.mark.slow  # a real evaluate run (no reader)
def test_config_anchors_reach_the_plots(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    drawn: dict[str, list[pl.Anchor]] = {}
    plot = pl.plot_tradeoff

    def recording(panels: Any, xlabel: str, title: str, path: Path, log_x: Any = None,
                  anchors: Any = ()) -> Path:
        drawn[path.stem] = list(anchors)
        return plot(panels, xlabel, title, path, log_x, anchors)

    monkeypatch.setattr(pl, "plot_tradeoff", recording)
    out, _ = run(tmp_path, COMPRESSORS, no_reader=True, evaluation=ANCHORS)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["anchors"] == [
        {"label": "paper A", "source": "Table 2 of a paper (made-up figure for the test)", "metric": "evidence_recall",
         "value": 80.0, "context_tokens": 300.0, "compress_seconds": 0.5},
        {"label": "paper B", "source": "its abstract", "metric": "em", "value": 37.9, "total_seconds": 0.8}]
    # without a reader: evidence recall against context tokens and compression seconds; paper B (EM,
    # end-to-end seconds) fits neither plot and is never moved onto another axis
    panel = f"{summary['metrics']['evidence_recall']['label']} ({summary['metrics']['evidence_recall']['unit']})"
    assert drawn["tradeoff_tokens"] == [pl.Anchor("paper A", 300.0, 80.0, panel)]
    assert drawn["tradeoff_latency"] == [pl.Anchor("paper A", 0.5, 80.0, panel)]
    page = (out / "report.html").read_text(encoding="utf-8")
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))
    assert text.count("grey crosses: published figures (other readers, retrievers, data and hardware: a reference, "
                      "not a result of this run): paper A (Table 2 of a paper (made-up figure for the test))") == 2
    assert ("The published figure &#39;paper B&#39; is not drawn: this run&#39;s plots take evidence_recall or "
            "answer_retention against context_tokens or compress_seconds; it gives em against total_seconds") in text


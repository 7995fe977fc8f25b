"""Issue 27, then 51: the trade-off plots' point labels never overlap each other nor another
point's marker and never sit nearer another point's marker than their own, even when many points
sit within a few pixels (the quickstart's cheap compressors on the latency plot); published anchors
are labelled too. The figure is drawn with the Agg backend and the labels' real text boxes measured
from its renderer (plot_label_measure)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from plot_label_measure import drawn, owners, problems

from ragsift.evaluation.report import plots as pl
from ragsift.evaluation.report.plots import Anchor, TradeoffPoint


def _point(label: str, x: float, y: float, reference: bool = False) -> TradeoffPoint:
    return TradeoffPoint(label, x, x, x, y, y, y, reference=reference)


def _crowd() -> list[TradeoffPoint]:
    """8 cheap compressors a few pixels apart (none within the 3 px that merges a tie), plus
    distant ones: the quickstart's latency plot in miniature."""
    names = ["none", "random", "bm25@k=2", "bm25@k=3", "bm25@k=5", "embedding", "recomp-extractive", "fusion-trained"]
    crowd = [_point(name, 0.050 + 0.0012 * i, 31.0 + 0.35 * (i % 4)) for i, name in enumerate(names)]
    return [*crowd, _point("exit-trained", 3.2, 36.0), _point("ecorag-trained", 11.0, 38.0),
            _point("longllmlingua", 6.0, 24.0), _point("oracle", 0.052, 44.0, reference=True)]


def test_crowded_labels_name_their_own_markers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    points = _crowd()
    (seen,) = drawn(monkeypatch, pl, [("EM (%)", points)], tmp_path / "crowd.png")
    # the premise: the crowd is within a few pixels and no two of it are merged as a tie
    crowd = [seen["markers"][p.label] for p in points[:8]]
    gaps = [max(abs(a[0] - b[0]), abs(a[1] - b[1])) for a, b in itertools.combinations(crowd, 2)]
    assert min(gaps) > 3 and max(gaps) < 40, gaps
    assert not problems(seen), problems(seen)
    named = set().union(*(owners(text) for text in seen["labels"]))
    assert {"exit-trained", "ecorag-trained", "longllmlingua", "oracle"} <= named  # the points in the open
    for label in {p.label for p in points} - named:  # a crowded point left unlabelled: the legend names it
        assert label in seen["legend"], label
    # every label stays inside its axes (none is pushed onto the legend or off the picture)
    for text, (box, _) in seen["labels"].items():
        axes = seen["axes"].expanded(1.001, 1.001)  # a rounding's worth of slack at the frame
        assert axes.x0 <= box.x0 and box.x1 <= axes.x1 and axes.y0 <= box.y0 and box.y1 <= axes.y1, text


def test_labels_of_two_panels_and_published_anchors_do_not_overlap(monkeypatch: pytest.MonkeyPatch,
                                                                    tmp_path: Path) -> None:
    points = _crowd()
    f1 = [_point(p.label, p.x, p.y + 8, p.reference) for p in points]
    anchors = [Anchor("EXIT (methods.md headline)", 0.8, 37.9, "EM (%)"), Anchor("near the crowd", 0.055, 32.0, "EM (%)")]
    em, f1_seen = drawn(monkeypatch, pl, [("EM (%)", points), ("F1 (%)", f1)], tmp_path / "two.png", anchors)
    assert "published: EXIT (methods.md headline)" in em["labels"]
    assert not any(t.startswith("published") for t in f1_seen["labels"])  # anchors only on their panel
    assert not problems(em), problems(em)
    assert not problems(f1_seen), problems(f1_seen)


def test_a_tie_still_gets_one_label(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    points = [_point("a", 1.0, 30.0), _point("b", 1.0, 30.0), _point("c", 5.0, 40.0)]
    (seen,) = drawn(monkeypatch, pl, [("EM (%)", points)], tmp_path / "tie.png")
    assert set(seen["labels"]) == {"a = b", "c"}
    assert not problems(seen), problems(seen)


def test_a_sweep_names_its_points_in_order_in_the_legend(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    points = [TradeoffPoint(f"bm25@k={k}", x, x, x, y, y, y, family="bm25") for k, x, y in ((5, 3.0, 33.0),
                                                                                            (2, 1.0, 20.0), (3, 2.0, 30.0))]
    (seen,) = drawn(monkeypatch, pl, [("EM (%)", points)], tmp_path / "sweep.png")
    assert "sweep: bm25 (k=2, k=3, k=5, left to right)" in seen["legend"]

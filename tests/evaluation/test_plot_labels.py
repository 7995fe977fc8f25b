"""Issue 27: the trade-off plots' point labels never overlap each other nor another point's
marker, even when many points sit within a few pixels (the quickstart's cheap compressors on the
latency plot), and published anchors are labelled too. The figure is drawn with the Agg backend
and the labels' real text boxes measured from its renderer."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from ragsift.evaluation.report import plots as pl
from ragsift.evaluation.report.plots import Anchor, TradeoffPoint, plot_tradeoff


def _point(label: str, x: float, y: float, reference: bool = False) -> TradeoffPoint:
    return TradeoffPoint(label, x, x, x, y, y, y, reference=reference)


def _drawn(monkeypatch: pytest.MonkeyPatch, panels: list[tuple[str, list[TradeoffPoint]]], path: Path,
           anchors: list[Anchor] | None = None) -> list[dict[str, Any]]:
    """Plot ``panels`` and, at the moment the figure is saved, measure every axes' labels (text
    boxes, without leader lines) and the pixel position of every point, per axes."""
    from matplotlib.text import Text

    seen: list[dict[str, Any]] = []
    save = pl._save

    def measuring_save(fig: Any, out: Path, tight: bool = False) -> Path:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        for ax, (_, points) in zip(fig.axes, panels, strict=False):
            seen.append({
                "boxes": {t.get_text(): Text.get_window_extent(t, renderer) for t in ax.texts},
                "points": {p.label: tuple(ax.transData.transform((p.x, p.y))) for p in points},
                "axes": ax.get_window_extent(renderer), "dpi": fig.dpi})
        return save(fig, out, tight)

    monkeypatch.setattr(pl, "_save", measuring_save)
    plot_tradeoff(panels, "end-to-end latency per question (s)", "EM against latency", path, anchors=anchors or ())
    return seen


def _crowd() -> list[TradeoffPoint]:
    """8 cheap compressors a few pixels apart (none within the 3 px that merges a tie), plus
    distant ones: the quickstart's latency plot in miniature."""
    names = ["none", "random", "bm25@k=2", "bm25@k=3", "bm25@k=5", "embedding", "recomp-extractive", "fusion-trained"]
    crowd = [_point(name, 0.050 + 0.0012 * i, 31.0 + 0.35 * (i % 4)) for i, name in enumerate(names)]
    return [*crowd, _point("exit-trained", 3.2, 36.0), _point("ecorag-trained", 11.0, 38.0),
            _point("longllmlingua", 6.0, 24.0), _point("oracle", 0.052, 44.0, reference=True)]


def _overlaps(a: Any, b: Any) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def _check(seen: dict[str, Any], marker_radius_pt: float = 3.5) -> None:
    boxes, points = seen["boxes"], seen["points"]
    assert boxes, "no labels drawn"
    for (ta, a), (tb, b) in itertools.combinations(boxes.items(), 2):
        assert not _overlaps(a, b), f"labels {ta!r} and {tb!r} overlap: {a} / {b}"
    r = marker_radius_pt * seen["dpi"] / 72
    for text, box in boxes.items():
        names = set(text.removeprefix("published: ").split(" = "))
        for label, (px, py) in points.items():
            if label in names:
                continue
            marker = type(box).from_extents(px - r, py - r, px + r, py + r)
            assert not _overlaps(box, marker), f"label {text!r} covers the marker of {label!r}"


def test_crowded_labels_do_not_overlap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    points = _crowd()
    (seen,) = _drawn(monkeypatch, [("EM (%)", points)], tmp_path / "crowd.png")
    # the premise: the crowd is within a few pixels and no two of it are merged as a tie
    crowd = [seen["points"][p.label] for p in points[:8]]
    gaps = [max(abs(a[0] - b[0]), abs(a[1] - b[1])) for a, b in itertools.combinations(crowd, 2)]
    assert min(gaps) > 3 and max(gaps) < 40, gaps
    assert len(seen["boxes"]) == len(points)  # one label each: nothing merged, nothing dropped
    _check(seen)
    # every label stays inside its axes (none is pushed onto the legend or off the picture)
    for text, box in seen["boxes"].items():
        axes = seen["axes"]
        assert axes.x0 <= box.x0 and box.x1 <= axes.x1 and axes.y0 <= box.y0 and box.y1 <= axes.y1, text


def test_labels_of_two_panels_and_published_anchors_do_not_overlap(monkeypatch: pytest.MonkeyPatch,
                                                                    tmp_path: Path) -> None:
    points = _crowd()
    f1 = [_point(p.label, p.x, p.y + 8, p.reference) for p in points]
    anchors = [Anchor("EXIT (methods.md headline)", 0.8, 37.9, "EM (%)"), Anchor("near the crowd", 0.055, 32.0, "EM (%)")]
    em, f1_seen = _drawn(monkeypatch, [("EM (%)", points), ("F1 (%)", f1)], tmp_path / "two.png", anchors)
    assert "published: EXIT (methods.md headline)" in em["boxes"] and "published: near the crowd" in em["boxes"]
    assert not any(t.startswith("published") for t in f1_seen["boxes"])  # anchors only on their panel
    _check(em)
    _check(f1_seen)


def test_a_tie_still_gets_one_label(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    points = [_point("a", 1.0, 30.0), _point("b", 1.0, 30.0), _point("c", 5.0, 40.0)]
    (seen,) = _drawn(monkeypatch, [("EM (%)", points)], tmp_path / "tie.png")
    assert set(seen["boxes"]) == {"a = b", "c"}
    _check(seen)

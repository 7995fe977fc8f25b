"""A suite's trade-off plots (issue 49: "EM against end-to-end latency, per dataset markers"): each
compressor's pooled point has its datasets' means beside it, small hollow markers of one shape per
dataset in the compressor's colour, named in the legend; a run of one dataset draws none, nor does a
panel of more than plots.PARTS_UP_TO points (the evidence suite's 17: tests/evaluation/test_plot_dense_labels.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.collections import PathCollection

from ragsift.evaluation.report import plots as pl


def _comp(em: float, seconds: float) -> dict[str, Any]:
    return {"values": {"em": {"mean": em, "low": em - 5, "high": em + 5}},
            "latency_ms": {"total": {"mean": seconds * 1000, "low": seconds * 900, "high": seconds * 1100}}}


SUITE = {
    "compressors": {"none": _comp(30, 20), "ranker": _comp(36, 9)},
    "datasets": {"hotpot": {"compressors": {"none": _comp(35, 18), "ranker": _comp(44, 9.5)}},
                 "musique": {"compressors": {"none": _comp(12, 37), "ranker": _comp(18, 8.5)}}},
}


def test_a_suite_point_carries_each_dataset_mean() -> None:
    points = {p.label: p for p in pl.tradeoff_points(SUITE, "em", "latency_ms:total", seconds=True)}
    assert points["ranker"].parts == (("hotpot", 9.5, 44.0), ("musique", 8.5, 18.0))
    assert points["none"].parts == (("hotpot", 18.0, 35.0), ("musique", 37.0, 12.0))
    one = {"compressors": SUITE["compressors"]}
    assert all(p.parts == () for p in pl.tradeoff_points(one, "em", "latency_ms:total", seconds=True))


def test_the_plot_draws_them_hollow_in_the_compressor_colour_and_names_the_datasets(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    save = pl._save

    def keep(fig: Any, path: Path, tight: bool = False) -> Path:
        ax = fig.axes[0]
        seen["legend"] = [t.get_text() for t in fig.legends[0].get_texts()]
        seen["hollow"] = [(tuple(np.round(c.get_offsets()[0], 3)), tuple(np.round(c.get_edgecolor()[0][:3], 3)))
                          for c in ax.collections if isinstance(c, PathCollection) and len(c.get_offsets()) == 1
                          and len(c.get_facecolor()) == 0 and list(c.get_sizes()) == [22]]
        return save(fig, path, tight)

    monkeypatch.setattr(pl, "_save", keep)
    points = pl.tradeoff_points(SUITE, "em", "latency_ms:total", seconds=True)
    pl.plot_tradeoff([("EM (%)", points)], "seconds", "EM against latency", tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 0
    assert [t for t in seen["legend"] if t.startswith("on ")] == ["on hotpot alone (hollow)", "on musique alone (hollow)"]
    colours = pl.style_of(["none", "ranker"])
    rgb = {label: tuple(round(int(colours[label][0][i:i + 2], 16) / 255, 3) for i in (1, 3, 5)) for label in colours}
    assert sorted(seen["hollow"]) == sorted([((18.0, 35.0), rgb["none"]), ((37.0, 12.0), rgb["none"]),
                                             ((9.5, 44.0), rgb["ranker"]), ((8.5, 18.0), rgb["ranker"])])


def test_a_crowded_panel_draws_no_dataset_markers() -> None:
    many = {"compressors": {f"c{i}": _comp(30 + i, 5 + i) for i in range(pl.PARTS_UP_TO + 1)},
            "datasets": {"hotpot": {"compressors": {f"c{i}": _comp(20 + i, 4 + i) for i in range(pl.PARTS_UP_TO + 1)}}}}
    points = pl.tradeoff_points(many, "em", "latency_ms:total", seconds=True)
    assert all(p.parts for p in points) and not pl.draws_parts(points)
    assert pl.draws_parts(points[: pl.PARTS_UP_TO])

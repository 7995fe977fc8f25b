"""Measure a rendered trade-off plot's labels (issue 51): shared by the label tests.

:func:`drawn` renders ``plot_tradeoff`` (Agg) and, at the moment the figure is saved, records every
axes' label boxes (text only, from the figure's renderer), each label's leader line end (when it has
one) and every marker's display position; :func:`problems` lists what makes a label ambiguous:
two label boxes overlapping, a box over a marker not its own, a label whose nearest marker (or the
end of its leader line) is not its own, a leader line crossing another marker.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

#: the radius (points) of a plain marker as drawn (markersize 7): a label box must keep off it
MARKER_RADIUS_PT = 3.5


def drawn(monkeypatch: pytest.MonkeyPatch, plots: ModuleType, panels: list[tuple[str, list[Any]]], path: Path,
          anchors: list[Any] | None = None, xlabel: str = "end-to-end latency per question (s)") -> list[dict[str, Any]]:
    """Plot ``panels`` with ``plots.plot_tradeoff``; per axes: ``labels`` (text -> (box, leader end
    or None)), ``markers`` (name -> display position; anchors as ``published: <label>``), ``axes``,
    ``dpi`` and the legend's texts."""
    from matplotlib.text import Text

    seen: list[dict[str, Any]] = []
    save = plots._save

    def measuring_save(fig: Any, out: Path, tight: bool = False) -> Path:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        legend = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
        for ax, (ylabel, points) in zip(fig.axes, panels, strict=False):
            here = [a for a in anchors or () if ylabel.startswith(a.panel)]
            labels = {}
            for t in ax.texts:
                end = tuple(ax.transData.transform(t.xy)) if getattr(t, "arrow_patch", None) is not None else None
                labels[t.get_text()] = (Text.get_window_extent(t, renderer), end)
            markers = {p.label: tuple(ax.transData.transform((p.x, p.y))) for p in points}
            markers.update({f"published: {a.label}": tuple(ax.transData.transform((a.x, a.y))) for a in here})
            seen.append({"labels": labels, "markers": markers, "axes": ax.get_window_extent(renderer), "dpi": fig.dpi,
                         "legend": legend})
        return save(fig, out, tight)

    monkeypatch.setattr(plots, "_save", measuring_save)
    plots.plot_tradeoff(panels, xlabel, "EM against latency", path, anchors=anchors or ())
    return seen


def _overlaps(a: Any, b: Any) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def _gap(box: Any, x: float, y: float) -> float:
    return math.hypot(max(box.x0 - x, 0.0, x - box.x1), max(box.y0 - y, 0.0, y - box.y1))


def _segment_gap(x: float, y: float, a: tuple[float, float], b: tuple[float, float]) -> float:
    dx, dy = b[0] - a[0], b[1] - a[1]
    length = dx * dx + dy * dy
    t = 0.0 if length == 0 else max(0.0, min(1.0, ((x - a[0]) * dx + (y - a[1]) * dy) / length))
    return math.hypot(x - a[0] - t * dx, y - a[1] - t * dy)


def owners(text: str) -> set[str]:
    """The markers a label names: ``published: X`` one anchor; ``a = b`` a merged tie."""
    return {text} if text.startswith("published: ") else set(text.split(" = "))


def problems(seen: dict[str, Any]) -> list[str]:
    """Every way a label of one axes can be read as another marker's (empty: none)."""
    labels, markers = seen["labels"], seen["markers"]
    r = MARKER_RADIUS_PT * seen["dpi"] / 72
    found = []
    for (ta, (a, _)), (tb, (b, _)) in itertools.combinations(labels.items(), 2):
        if _overlaps(a, b):
            found.append(f"labels {ta!r} and {tb!r} overlap")
    for text, (box, end) in labels.items():
        own = owners(text)
        assert own <= set(markers), f"label {text!r} names no marker"
        for name, (x, y) in markers.items():
            if name not in own and _overlaps(box, type(box).from_extents(x - r, y - r, x + r, y + r)):
                found.append(f"label {text!r} covers the marker of {name!r}")
        if end is None:
            nearest = min(markers, key=lambda name: _gap(box, *markers[name]))
            if nearest not in own:
                found.append(f"label {text!r} is nearest to the marker of {nearest!r}")
            continue
        nearest = min(markers, key=lambda name: math.dist(end, markers[name]))
        if nearest not in own:
            found.append(f"the leader line of {text!r} ends at the marker of {nearest!r}")
        middle = ((box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2)
        crossed = [name for name, (x, y) in markers.items() if name not in own and _segment_gap(x, y, middle, end) < r]
        if crossed:
            found.append(f"the leader line of {text!r} crosses the marker(s) of {crossed}")
    return found

"""Point labels of the trade-off plots, placed by adjustText and kept only where they are unambiguous.

adjustText (a maintained library: https://github.com/Phlya/adjustText) moves the labels apart and
off the markers. Its result is then measured on the figure's renderer and each label kept only when
a reader cannot mistake its point: its text box overlaps no label kept before it and no marker but
its own, and either its own marker is the one nearest to the box (no leader line), or it has a leader
line to its own marker that passes no other marker. A label that fails is not drawn; its point is
named by the figure's legend (every compressor has its own colour and marker shape there). In a
dense cluster of markers some points are therefore named by the legend only, never by a label
beside another point's marker.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Label", "Marker", "place_labels"]

#: adjustText iterations: a fixed count (not its default one-second time limit) so that the
#: placement is the same on a fast and on a busy machine
_ITERATIONS = 300
#: adjustText's forces: pulled back towards the marker harder than its default, so that a label stays beside it
_FORCES: dict[str, Any] = {"expand": (1.1, 1.3), "force_pull": (0.2, 0.2), "force_text": (0.1, 0.2),
                           "force_static": (0.1, 0.2), "force_explode": (0.1, 0.5)}
#: placement rounds: each places the labels left out so far around the ones kept
_ROUNDS = 3
#: a label box at most this far (points) outside its marker's clear radius is beside it (no leader
#: line), and then every other marker must be :data:`_NEARER` times as far from the box
_BESIDE = 4.0
_NEARER = 1.5
#: a label farther from its marker gets a leader line, up to this gap (points); a farther one is left out
_LEADER_UP_TO = 60.0
#: air (points) kept between a label and a marker that is not its own, and between two labels
_AIR = 1.0


@dataclass(frozen=True)
class Marker:
    """A drawn marker: data coordinates and the radius (points) kept clear around it."""

    x: float
    y: float
    radius: float


@dataclass(frozen=True)
class Label:
    """A text naming the markers ``own`` (indices into the markers; several for merged ties)."""

    text: str
    own: tuple[int, ...]
    fontsize: float = 8
    colour: str = "black"


_Box = tuple[float, float, float, float]


def _gap(box: _Box, px: float, py: float) -> float:
    """Pixels from the point to the nearest point of the box (0 inside it)."""
    return math.hypot(max(box[0] - px, 0.0, px - box[2]), max(box[1] - py, 0.0, py - box[3]))


def _overlap(a: _Box, b: _Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _segment_gap(px: float, py: float, a: tuple[float, float], b: tuple[float, float]) -> float:
    """Pixels from the point to the segment a-b."""
    dx, dy = b[0] - a[0], b[1] - a[1]
    length = dx * dx + dy * dy
    t = 0.0 if length == 0 else max(0.0, min(1.0, ((px - a[0]) * dx + (py - a[1]) * dy) / length))
    return math.hypot(px - a[0] - t * dx, py - a[1] - t * dy)


def _clear(box: _Box, label: Label, centres: list[tuple[float, float]], radii: list[float], kept: list[_Box],
           scale: float) -> tuple[bool, bool]:
    """(unambiguous, needs a leader line) for a label whose text box is ``box``; pixels, ``scale``
    pixels a point."""
    air = _AIR * scale
    if any(_overlap(box, (k[0] - air, k[1] - air, k[2] + air, k[3] + air)) for k in kept):
        return False, False
    gaps = [_gap(box, px, py) for px, py in centres]
    if any(gaps[i] < radii[i] + air for i in range(len(centres)) if i not in label.own):
        return False, False
    own = min(label.own, key=lambda i: gaps[i])
    others = [gaps[i] for i in range(len(centres)) if i not in label.own]
    if gaps[own] <= radii[own] + _BESIDE * scale:  # beside its marker: clearly nearer to it than to any other
        return all(gap >= _NEARER * gaps[own] + air for gap in others), False
    if gaps[own] > _LEADER_UP_TO * scale:
        return False, True
    middle = ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
    crossed = any(_segment_gap(px, py, middle, centres[own]) < radii[i] for i, (px, py) in enumerate(centres)
                  if i not in label.own)
    return not crossed, True


def place_labels(fig: Any, ax: Any, markers: Sequence[Marker], labels: Sequence[Label]) -> list[str]:
    """Draw ``labels`` beside their ``markers`` on ``ax`` (the figure's layout must be final); return
    the texts left out as ambiguous (their points are named by the legend only). Labels are kept
    in the order given: put the ones that matter most (e.g. the frontier's) first. adjustText runs
    up to :data:`_ROUNDS` times: each later round places only the labels left out so far, around
    the ones kept."""
    from adjustText import adjust_text
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox

    renderer = fig.canvas.get_renderer()
    scale = fig.dpi / 72  # points -> pixels
    centres = [tuple(ax.transData.transform((m.x, m.y))) for m in markers]
    radii = [m.radius * scale for m in markers]
    to_data = ax.transData.inverted()

    def in_data(box: _Box) -> Any:  # adjustText takes obstacles as boxes in data coordinates
        return Bbox(to_data.transform([(box[0], box[1]), (box[2], box[3])]))

    obstacles = [in_data((x - r, y - r, x + r, y + r)) for (x, y), r in zip(centres, radii, strict=True)]
    kept: list[_Box] = []
    pending = list(range(len(labels)))
    for _ in range(_ROUNDS):
        if not pending:
            break
        texts = {j: ax.text(markers[min(labels[j].own)].x, markers[min(labels[j].own)].y, labels[j].text,
                            fontsize=labels[j].fontsize, ha="center", va="center") for j in pending}
        adjust_text(list(texts.values()), objects=[*obstacles, *map(in_data, kept)], avoid_self=False, ax=ax,
                    iter_lim=_ITERATIONS, ensure_inside_axes=True, **_FORCES)
        left: list[int] = []
        for j in pending:
            label, text = labels[j], texts[j]
            extent = Text.get_window_extent(text, renderer)
            box = (extent.x0, extent.y0, extent.x1, extent.y1)
            unambiguous, leader = _clear(box, label, centres, radii, kept, scale)
            if unambiguous:
                kept.append(box)
                _draw(ax, label, markers[min(label.own)], text.get_position(), leader)
            else:
                left.append(j)
        for text in texts.values():
            text.remove()
        pending = left
    left = []
    for j in pending:  # adjustText left it ambiguous: the first clear spot right beside its marker, if any
        if not _beside(ax, renderer, labels[j], markers, centres, radii, kept, scale):
            left.append(j)
    pending = left
    return [labels[j].text for j in pending]


#: spots tried right beside a marker when adjustText's spot is ambiguous: (dx, dy), the side of the
#: marker the label's box starts at (right, left, above, below, then the corners)
_SIDES = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, 1), (1, -1), (-1, -1))


def _beside(ax: Any, renderer: Any, label: Label, markers: Sequence[Marker], centres: list[tuple[float, float]],
            radii: list[float], kept: list[_Box], scale: float) -> bool:
    """Draw ``label`` at the first of :data:`_SIDES` of its marker where it is unambiguous; False
    when there is none."""
    from matplotlib.text import Text

    i = min(label.own)
    probe = ax.text(markers[i].x, markers[i].y, label.text, fontsize=label.fontsize)
    extent = Text.get_window_extent(probe, renderer)
    probe.remove()
    (px, py), gap = centres[i], radii[i] + _AIR * scale
    frame = ax.get_window_extent(renderer)
    for dx, dy in _SIDES:
        cx = px + dx * (gap + extent.width / 2)
        cy = py + dy * (gap + extent.height / 2)
        box = (cx - extent.width / 2, cy - extent.height / 2, cx + extent.width / 2, cy + extent.height / 2)
        inside = frame.x0 <= box[0] and box[2] <= frame.x1 and frame.y0 <= box[1] and box[3] <= frame.y1
        unambiguous, leader = _clear(box, label, centres, radii, kept, scale)
        if inside and unambiguous and not leader:
            kept.append(box)
            _draw(ax, label, markers[i], tuple(ax.transData.inverted().transform((cx, cy))), False)
            return True
    return False


def _draw(ax: Any, label: Label, marker: Marker, position: tuple[float, float], leader: bool) -> None:
    """The label at ``position`` (data coordinates, its centre), with a thin leader line to its
    marker when it is not beside it."""
    ax.annotate(label.text, (marker.x, marker.y), xytext=position, textcoords="data", fontsize=label.fontsize,
                color=label.colour, ha="center", va="center", annotation_clip=False,
                arrowprops={"arrowstyle": "-", "color": "0.3", "linewidth": 0.8, "shrinkA": 1, "shrinkB": 2}
                if leader else None)

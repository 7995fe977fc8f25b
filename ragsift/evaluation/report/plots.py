"""The report's plots (PNG, matplotlib's Agg backend): quality against cost, evidence, latency.

The trade-off plots take :class:`TradeoffPoint` values: one point per compressor with the
interval of each axis, and an optional ``family`` (e.g. the points of one threshold sweep), so
that a sweep can feed the same plot: the points of a family share a colour and are joined by a
line. The Pareto frontier (no other point is at most as costly and at least as good, one of them
strictly) is marked; it runs over real compressors only: a ``reference`` point (the oracle, or any
compressor that reads the gold labels) is drawn as a labelled star and a dotted line, an upper
bound, not a frontier point. Colours are distinct hues for up to 20 compressors, each also with
its own marker shape; latency axes are in seconds. Published figures (``Anchor``: EXIT's,
LongRefiner's, where a config reproduces their setting) can be overlaid, labelled as such.
Every number drawn comes from ``summary.json`` (means and bootstrap
intervals computed by :mod:`ragsift.evaluation.report.summary`); nothing is recomputed here.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from ragsift.evaluation.report.plot_labels import Label, Marker, place_labels

__all__ = [
    "TradeoffPoint", "Plot", "Anchor", "PALETTE", "MARKERS", "style_of", "draws_parts",
    "pareto_front", "tradeoff_points", "plot_tradeoff", "plot_evidence",
    "plot_latency_stages", "COMPRESSION_STAGES",
]

#: the compressor's stages, in pipeline order, as the runner records them
COMPRESSION_STAGES = ("split", "score", "select", "assemble")
_DPI = 110


@dataclass(frozen=True)
class TradeoffPoint:
    """One compressor (or one setting of a sweep): cost ``x`` and quality ``y`` with intervals."""

    label: str
    x: float
    x_low: float
    x_high: float
    y: float
    y_low: float
    y_high: float
    family: str | None = None
    #: reads gold labels (an upper bound such as the oracle): drawn as a reference, not on the frontier
    reference: bool = False
    #: a suite's run: the same compressor on each dataset, ``(dataset, x, y)``, drawn as small hollow markers
    parts: tuple[tuple[str, float, float], ...] = ()


@dataclass(frozen=True)
class Anchor:
    """A published figure drawn for comparison: ``label`` (e.g. "EXIT, Fig. 1"), cost ``x`` in the
    plot's units, quality ``y``, on the panel whose y axis label starts with ``panel``."""

    label: str
    x: float
    y: float
    panel: str


#: 20 hand-picked distinct hues (dark and light variants of a hue are far apart in the order)
PALETTE = ("#1f5fbf", "#e8730c", "#2e9e44", "#d62728", "#8c4fc4", "#8c5a3c", "#e377c2", "#6b6b6b", "#b8b817",
           "#17becf", "#0b2f6b", "#f4c20d", "#7a0f3d", "#62d26f", "#ff9da7", "#3d3d00", "#00796b", "#a6761d",
           "#5e35b1", "#c2185b")
#: marker shapes, cycled with a different period from the colours: no two of 20 compressors share both
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "p")
#: a suite's datasets: small hollow markers of these shapes, in the compressor's colour
DATASET_MARKERS = ("^", "s", "D", "v", "P", "X", "h")
#: the most points a panel may have for its datasets' markers to be drawn (beyond, they crowd out the
#: labels: the evidence suite's 17 compressors x 3 datasets; the per-dataset tables carry them)
PARTS_UP_TO = 6


def draws_parts(points: Sequence[TradeoffPoint]) -> bool:
    """Whether :func:`plot_tradeoff` draws these points' per-dataset markers."""
    return any(p.parts for p in points) and len(points) <= PARTS_UP_TO


@dataclass(frozen=True)
class Plot:
    """A written PNG and what it shows (the report's caption)."""

    name: str
    path: Path
    caption: str


def pareto_front(points: Sequence[TradeoffPoint]) -> list[TradeoffPoint]:
    """The real points no other real point dominates (lower or equal cost and higher or equal
    quality, one of them strictly), by increasing cost. Reference points (gold-reading
    compressors) are neither on it nor shape it."""
    front: list[TradeoffPoint] = []
    best = -math.inf
    for p in sorted((p for p in points if not p.reference), key=lambda p: (p.x, -p.y)):
        if p.y > best:
            front.append(p)
            best = p.y
    return front


def _stat(values: Mapping[str, Any] | None) -> tuple[float, float, float] | None:
    if not values:
        return None
    return float(values["mean"]), float(values["low"]), float(values["high"])


_Stat = tuple[float, float, float]  # mean, low, high


def _xy(comp: Mapping[str, Any], y_key: str, x: str, seconds: bool) -> tuple[_Stat, _Stat] | None:
    """(x stat, y stat) of one compressor's summary entry, or None when it lacks either."""
    if x.startswith("latency_ms:"):
        xs = _stat(comp.get("latency_ms", {}).get(x.split(":", 1)[1]))
        if xs is not None and seconds:
            xs = (xs[0] / 1000, xs[1] / 1000, xs[2] / 1000)
    elif x == "prompt_tokens":
        xs = _stat(comp.get("prompt_tokens"))
    else:
        xs = _stat(comp.get("values", {}).get(x))
    ys = _stat(comp.get("values", {}).get(y_key))
    return None if xs is None or ys is None else (xs, ys)


def tradeoff_points(summary: Mapping[str, Any], y_key: str, x: str, references: Sequence[str] = (),
                    seconds: bool = False) -> list[TradeoffPoint]:
    """Points of every compressor that has both values: ``y_key`` a metric of the summary;
    ``x`` a metric (``values``), ``prompt_tokens`` or ``latency_ms:<stage>`` (in seconds when
    ``seconds``). A compressor entry's optional ``family`` key groups points (a sweep); labels in
    ``references`` are reference points (they read gold labels). A suite's summary (``datasets``)
    gives each point its ``parts``: the same two means on each dataset that has them."""
    points = []
    datasets = summary.get("datasets") or {}
    for label, comp in summary["compressors"].items():
        xy = _xy(comp, y_key, x, seconds)
        if xy is None:
            continue
        parts = [(name, sub_xy[0][0], sub_xy[1][0]) for name, sub in datasets.items()
                 if (sub_xy := _xy(sub["compressors"].get(label) or {}, y_key, x, seconds)) is not None]
        points.append(TradeoffPoint(label, *xy[0], *xy[1], family=comp.get("family"), reference=label in references,
                                    parts=tuple(parts)))
    return points


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)  # files only: no display, no GUI toolkit
    import matplotlib.pyplot as plt

    return plt


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _plain_text(plot: Callable[_P, _R]) -> Callable[_P, _R]:
    """Draw every text of ``plot`` as it reads: labels come from configs and run folders, and a
    ``$`` pair in one (``cost$1$``) would otherwise be parsed as mathtext, which raises on most
    such text or silently renders it as math. Set for the figure's texts only (``rc_context``):
    a library leaves the host process's matplotlib settings as it found them."""
    @functools.wraps(plot)
    def drawn(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        import matplotlib

        with matplotlib.rc_context({"text.parse_math": False, "text.usetex": False}):
            return plot(*args, **kwargs)

    return drawn


def _plain_number(value: float, _position: Any = None) -> str:
    """A tick label as plain text (``100``, ``2000``, ``0.5``)."""
    return f"{value:g}"


def _plain_minor(value: float, _position: Any = None) -> str:
    """A log axis' minor tick label: 2 and 5 of each decade, as plain text (the others unlabelled)."""
    if value <= 0:
        return ""
    leading = round(value / 10 ** math.floor(math.log10(value)), 6)
    return f"{value:g}" if leading in (2.0, 5.0) else ""


def style_of(keys: Sequence[str]) -> dict[str, tuple[str, str]]:
    """key -> (colour, marker): distinct hues for up to 20 keys, each with its own shape too."""
    return {key: (PALETTE[i % len(PALETTE)], MARKERS[i % len(MARKERS)]) for i, key in enumerate(keys)}


def _save(fig: Any, path: Path, tight: bool = False) -> Path:
    """Write the PNG; ``tight`` crops to what is drawn (a second drawing pass: only for figures
    with a legend outside the axes)."""
    plt = _pyplot()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=_DPI, bbox_inches="tight" if tight else None, metadata={"Software": None})
    plt.close(fig)
    return path


@_plain_text
def plot_tradeoff(panels: Sequence[tuple[str, Sequence[TradeoffPoint]]], xlabel: str, title: str, path: Path,
                  log_x: bool | None = None, anchors: Sequence[Anchor] = ()) -> Path:
    """One panel per quality metric (``(y axis label, points)``), cost on the x axis: error bars
    are the intervals, families are joined by lines, a suite's points have their datasets' means
    beside them (small hollow markers, a shape per dataset; up to :data:`PARTS_UP_TO` points), the
    Pareto frontier over real compressors is
    a dashed step line with its points ringed, reference points are stars with a dotted line at
    their quality, ``anchors`` grey crosses labelled "published: ..." (on the panel whose y axis
    label starts with the anchor's ``panel``). A legend keyed by colour and marker names every
    compressor; each point is also labelled beside its marker where a label cannot be mistaken for
    another marker's (:func:`_label_points`), else named by the legend only.
    ``log_x`` None: logarithmic when the costs span more than 20x."""
    plt = _pyplot()
    from matplotlib.lines import Line2D

    keys = list(dict.fromkeys((p.family or p.label) for _, pts in panels for p in pts))
    styles = style_of(keys)
    fig, axes = plt.subplots(1, len(panels), figsize=(5.6 * len(panels) + 2.2, 4.6), squeeze=False, dpi=_DPI)
    handles: dict[str, Any] = {}
    to_label: list[tuple[Any, Sequence[TradeoffPoint], list[Anchor], list[TradeoffPoint]]] = []
    for ax, (ylabel, points) in zip(axes[0], panels, strict=True):
        xs = [p.x for p in points if p.x > 0]
        use_log = log_x if log_x is not None else bool(xs) and min(xs) > 0 and max(xs) / min(xs) > 20
        families: dict[str, list[TradeoffPoint]] = {}
        for p in points:
            if p.family:
                families.setdefault(p.family, []).append(p)
        for family, members in families.items():
            members = sorted(members, key=lambda p: p.x)
            ax.plot([p.x for p in members], [p.y for p in members], "-", color=styles[family][0], alpha=0.6,
                    linewidth=1.2)
        for p in points:
            colour, marker = styles[p.family or p.label]
            key = p.family or p.label
            if p.reference:
                ax.axhline(p.y, color=colour, linestyle=":", linewidth=1.2, alpha=0.8)
                marker = "*"
            artist = ax.errorbar(p.x, p.y, xerr=[[p.x - p.x_low], [p.x_high - p.x]],
                                 yerr=[[p.y - p.y_low], [p.y_high - p.y]], fmt=marker, color=colour, ecolor=colour,
                                 elinewidth=1, capsize=3, markersize=12 if p.reference else 7, alpha=0.9)
            handles.setdefault(f"{key} (reads gold: upper bound)" if p.reference else
                               (_sweep_entry(key, families[key]) if p.family else key), artist)
        if not draws_parts(points):
            points = [dataclasses.replace(p, parts=()) for p in points]
        shapes = {name: DATASET_MARKERS[i % len(DATASET_MARKERS)]
                  for i, name in enumerate(dict.fromkeys(name for p in points for name, _, _ in p.parts))}
        for p in points:  # a suite: where each dataset puts the compressor (the pooled point weighs every question once)
            for name, x, y in p.parts:
                ax.scatter([x], [y], marker=shapes[name], s=22, facecolors="none",
                           edgecolors=styles[p.family or p.label][0], linewidths=1.0, alpha=0.85, zorder=2)
        for name, shape in shapes.items():
            if f"on {name} alone (hollow)" not in handles:
                handles[f"on {name} alone (hollow)"] = Line2D([], [], marker=shape, linestyle="none", markersize=5,
                                                              markerfacecolor="none", markeredgecolor="0.3")
        front = pareto_front(points)
        if front:
            line = ax.plot([p.x for p in front], [p.y for p in front], "--", drawstyle="steps-post", color="0.25",
                           linewidth=1)[0]
            handles.setdefault("Pareto frontier (real compressors)", line)
            ax.scatter([p.x for p in front], [p.y for p in front], s=170, facecolors="none", edgecolors="0.1",
                       linewidths=1.2, zorder=3)
        here = [a for a in anchors if ylabel.startswith(a.panel)]
        for anchor in here:
            cross = ax.scatter([anchor.x], [anchor.y], marker="x", s=60, color="0.35", zorder=4)
            handles.setdefault("published figure (another reader and data: a reference only)", cross)
        if use_log:
            ax.set_xscale("log")
            # log ticks are mathtext by default ($10^{3}$), which the plain-text drawing would show raw
            ax.xaxis.set_major_formatter(_plain_number)
            ax.xaxis.set_minor_formatter(_plain_minor)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        to_label.append((ax, points, here, front))
    fig.legend(list(handles.values()), list(handles), fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5),
               frameon=False)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    for ax, points, here, front in to_label:  # after the layout: the pixel positions are final
        _label_points(fig, ax, points, here, front)
    return _save(fig, path, tight=True)


#: radius (points) kept clear around a marker: plain, reference star, ringed frontier point, anchor cross
_MARKER_R, _STAR_R, _RING_R, _CROSS_R, _PART_R = 4.5, 7.0, 7.5, 5.0, 3.0


def _label_points(fig: Any, ax: Any, points: Sequence[TradeoffPoint], anchors: Sequence[Anchor] = (),
                  front: Sequence[TradeoffPoint] = ()) -> list[str]:
    """Name each point (ties merged, :func:`_merge_ties`) and each anchor beside it, placed by
    :func:`ragsift.evaluation.report.plot_labels.place_labels` (adjustText, then only labels that
    cannot be read as another marker's are kept): the frontier's first, then the references, the
    rest, the anchors. Returns the texts left to the legend. The figure's layout must be final."""
    ringed = {id(p) for p in front}
    markers = [Marker(p.x, p.y, _STAR_R if p.reference else _RING_R if id(p) in ringed else _MARKER_R) for p in points]
    markers += [Marker(a.x, a.y, _CROSS_R) for a in anchors]
    markers += [Marker(x, y, _PART_R) for p in points for _, x, y in p.parts]  # no label of their own: kept clear
    index = {id(p): i for i, p in enumerate(points)}
    labels = [Label(text, tuple(index[id(q)] for q in group)) for group, text in _merge_ties(ax, points)]
    labels.sort(key=lambda label: (not any(id(points[i]) in ringed for i in label.own),
                                   not any(points[i].reference for i in label.own)))
    labels += [Label(f"published: {a.label}", (len(points) + j,), 7, "0.35") for j, a in enumerate(anchors)]
    return place_labels(fig, ax, markers, labels)


def _sweep_entry(family: str, members: Sequence[TradeoffPoint]) -> str:
    """A sweep's legend entry, naming its points in the order its line joins them (their markers
    are alike, and a point whose label is left out is found by that order): ``sweep: bm25 (k=2,
    k=3, k=5, left to right)``."""
    names = [p.label.removeprefix(f"{family}@") for p in sorted(members, key=lambda p: p.x)]
    return f"sweep: {family} ({', '.join(names)}, left to right)"


def _merge_ties(ax: Any, points: Sequence[TradeoffPoint]) -> list[tuple[list[TradeoffPoint], str]]:
    """Points drawn within 3 pixels of each other get one label, ``a = b``, instead of two labels
    on top of each other; by position."""
    groups: list[tuple[list[TradeoffPoint], tuple[float, float]]] = []
    for p in sorted(points, key=lambda p: (p.x, p.y)):
        px, py = ax.transData.transform((p.x, p.y))
        for members, (gx, gy) in groups:
            if abs(px - gx) <= 3 and abs(py - gy) <= 3:
                members.append(p)
                break
        else:
            groups.append(([p], (px, py)))
    return [(members, " = ".join(p.label for p in members)) for members, _ in groups]


@_plain_text
def plot_evidence(summary: Mapping[str, Any], path: Path) -> Path | None:
    """Evidence precision and recall per compressor (bars, with the intervals); None when the
    run has no evidence metrics (a dataset without gold evidence)."""
    keys = [k for k in ("evidence_precision", "evidence_recall") if k in summary["metrics"]]
    labels = [label for label, c in summary["compressors"].items() if any(k in c["values"] for k in keys)]
    if not keys or not labels:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * len(labels) + 2), 4.0))
    width = 0.8 / len(keys)
    for j, key in enumerate(keys):
        stats = [_stat(summary["compressors"][label]["values"].get(key)) for label in labels]
        xs = [i + (j - (len(keys) - 1) / 2) * width for i in range(len(labels))]
        means = [s[0] if s else 0.0 for s in stats]
        err = [[s[0] - s[1] if s else 0.0 for s in stats], [s[2] - s[0] if s else 0.0 for s in stats]]
        ax.bar(xs, means, width, yerr=err, capsize=3, label=summary["metrics"][key]["label"],
               color=("#4c72b0", "#dd8452")[j])
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=30, ha="right")
    ax.set_ylabel("%")
    ax.set_ylim(0, 105)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("Evidence precision and recall (mean, 95% CI)" if summary.get("confidence") == 0.95
                 else f"Evidence precision and recall (mean, {summary.get('confidence', 0.95):.0%} CI)", fontsize=11)
    fig.tight_layout()
    return _save(fig, path)


def stage_means(comp: Mapping[str, Any]) -> dict[str, float]:
    """Mean milliseconds per stage of one compressor: the compressor's stages, ``other`` (the
    rest of the ``compress()`` call) and ``read``."""
    latency = comp.get("latency_ms", {})
    out = {s: float(latency[s]["mean"]) for s in COMPRESSION_STAGES if s in latency}
    if "compress" in latency:
        out["other"] = max(0.0, float(latency["compress"]["mean"]) - sum(out.values()))
    if "read" in latency:
        out["read"] = float(latency["read"]["mean"])
    return out


@_plain_text
def plot_latency_stages(summary: Mapping[str, Any], path: Path) -> Path | None:
    """A horizontal stacked bar per compressor: mean ms of split / score / select / assemble /
    other (rest of compress) / read, with the total written at the end of each bar."""
    labels = [label for label, c in summary["compressors"].items() if c.get("latency_ms")]
    if not labels:
        return None
    means = {label: {k: v / 1000 for k, v in stage_means(summary["compressors"][label]).items()} for label in labels}
    stages = [s for s in (*COMPRESSION_STAGES, "other", "read") if any(s in m for m in means.values())]
    plt = _pyplot()
    colours = dict(zip(("split", "score", "select", "assemble", "other", "read"),
                       ("#8172b3", "#4c72b0", "#55a868", "#ccb974", "#bbbbbb", "#c44e52"), strict=True))
    fig, ax = plt.subplots(figsize=(8.0, 0.45 * len(labels) + 1.6))
    for stage in stages:
        lefts = [sum(means[label].get(s, 0.0) for s in stages[: stages.index(stage)]) for label in labels]
        ax.barh(labels, [means[label].get(stage, 0.0) for label in labels], left=lefts, color=colours[stage],
                label=stage)
    totals = [sum(means[label].values()) for label in labels]
    for y, total in enumerate(totals):
        ax.annotate(f"{total:.3g} s", (total, y), textcoords="offset points", xytext=(4, -3), fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, max(totals) * 1.18 if max(totals) > 0 else 1)
    ax.set_xlabel("mean latency per question (s)")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8, ncol=len(stages), loc="upper center", bbox_to_anchor=(0.5, -0.22 if len(labels) < 4 else -0.12))
    ax.set_title("Latency per stage (retrieval excluded)", fontsize=11)
    fig.tight_layout()
    return _save(fig, path, tight=True)

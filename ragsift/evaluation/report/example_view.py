"""The report's per-example view: every compressor's kept and dropped sentences, their scores and
ranks, gold evidence, the reader's answer and the gold answers, as the data the report's
template draws (``templates/example.html.j2``; the template engine escapes every text: it is
untrusted input).

Each document is written once per example. Its text is cut at every sentence boundary of every
compressor and at every gold span boundary; each piece carries the classes of the compressors
that kept it (``k0``, ``k3``, ...), its score level per compressor (``s0-4``: top quarter of that
compressor's scores on the example), and ``gold`` when it lies in a gold span; its tooltip gives
every compressor's rank and score. A radio button per
compressor (pure CSS, no script) chooses whose decisions are highlighted, so ten compressors cost
a few classes per piece instead of ten copies of the documents. Examples where the compressors
disagree (different EM, else different F1, else different kept text) come first.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ExampleView", "build_views", "order_views", "view_context", "view_css", "DocumentText", "Piece",
           "document_pieces", "score_ranks", "score_level", "kept_masks", "SCORE_SHADES"]


@dataclass(frozen=True)
class DocumentText:
    """A document's title and text; ``gold``: gold evidence spans ``(start, end)`` in ``text``."""

    title: str
    text: str
    gold: tuple[tuple[int, int], ...] = ()


@dataclass
class ExampleView:
    """One example across compressors (label -> record), with its documents."""

    id: str
    position: int
    question: str
    answers: list[str]
    records: dict[str, Mapping[str, Any]]
    documents: list[DocumentText]
    has_gold: bool
    em_differs: bool = False
    f1_spread: float = 0.0
    kept_differs: bool = False
    kept_distance: float = 0.0  # mean pairwise Jaccard distance of the compressors' kept characters


def _documents_from_records(records: Mapping[str, Mapping[str, Any]]) -> list[DocumentText]:
    """Rebuild document texts from the recorded sentences (when the dataset cannot be read):
    each sentence's text at its span, gaps as spaces."""
    chars: dict[int, dict[int, str]] = {}
    for record in records.values():
        for s in record.get("sentences", []):
            doc = chars.setdefault(int(s["doc"]), {})
            for offset, ch in enumerate(s["text"]):
                doc.setdefault(int(s["start"]) + offset, ch)
    docs = []
    for index in range(max(chars, default=-1) + 1):
        doc = chars.get(index, {})
        length = max(doc, default=-1) + 1
        docs.append(DocumentText(f"document {index + 1}", "".join(doc.get(i, " ") for i in range(length))))
    return docs


def _consistent(documents: Sequence[DocumentText], records: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether every recorded sentence is the document text at its span."""
    return all(int(s["doc"]) < len(documents) and documents[int(s["doc"])].text[int(s["start"]):int(s["end"])] == s["text"]
               for record in records.values() for s in record.get("sentences", []))


def build_views(records: Mapping[str, Sequence[Mapping[str, Any]]],
                documents: Mapping[str, tuple[list[DocumentText], bool]]) -> list[ExampleView]:
    """One view per example id, in first-seen order. ``documents``: id -> (documents, whether
    gold evidence is known) from the dataset; ids without it (or whose sentences do not match
    it) are rebuilt from the records, without gold evidence."""
    by_id: dict[str, dict[str, Mapping[str, Any]]] = {}
    for label, recs in records.items():
        for r in recs:
            by_id.setdefault(str(r["id"]), {})[label] = r
    views = []
    for position, (example_id, per_label) in enumerate(by_id.items()):
        first = next(iter(per_label.values()))
        docs, has_gold = documents.get(example_id, ([], False))
        if not docs or not _consistent(docs, per_label):
            docs, has_gold = _documents_from_records(per_label), False
        view = ExampleView(example_id, position, str(first.get("question", "")),
                           [str(a) for a in first.get("answers", [])], per_label, docs, has_gold)
        _measure_disagreement(view)
        views.append(view)
    return views


def kept_masks(view: ExampleView, labels: Sequence[str]) -> dict[str, list[np.ndarray]]:
    """label -> one boolean array per document: the characters its kept sentences cover
    (a few kilobytes per example, built when needed and not kept)."""
    out = {}
    for label in labels:
        record = view.records.get(label)
        if record is None:
            continue
        masks = [np.zeros(len(doc.text), dtype=bool) for doc in view.documents]
        for s in record.get("sentences", []):
            doc = int(s["doc"])
            if s.get("kept") and doc < len(masks):
                masks[doc][int(s["start"]):int(s["end"])] = True
        out[label] = masks
    return out


def _measure_disagreement(view: ExampleView) -> None:
    em = {r["metrics"]["em"] for r in view.records.values() if "em" in r.get("metrics", {})}
    f1 = [r["metrics"]["f1"] for r in view.records.values() if "f1" in r.get("metrics", {})]
    view.em_differs = len(em) > 1
    view.f1_spread = max(f1) - min(f1) if f1 else 0.0
    masks = [np.concatenate(m) if m else np.zeros(0, dtype=bool) for m in kept_masks(view, list(view.records)).values()]
    pairs = list(itertools.combinations(masks, 2))
    view.kept_differs = any(not np.array_equal(a, b) for a, b in pairs)
    distances = []
    for a, b in pairs:  # Jaccard distance of the kept characters
        union = int(np.count_nonzero(a | b))
        distances.append(1 - int(np.count_nonzero(a & b)) / union if union else 0.0)
    view.kept_distance = sum(distances) / len(distances) if distances else 0.0


def order_views(views: Sequence[ExampleView]) -> list[ExampleView]:
    """Disagreements first: different EM, then the larger F1 spread, then different kept text
    (larger mean Jaccard distance first); ties keep the dataset order."""
    return sorted(views, key=lambda v: (not v.em_differs, -v.f1_spread, not v.kept_differs, -v.kept_distance,
                                        v.position))


def _pieces(length: int, cuts: set[int]) -> list[tuple[int, int]]:
    points = sorted({0, length, *(c for c in cuts if 0 < c < length)})
    return list(itertools.pairwise(points))


#: score shading levels: a sentence in the top quarter of its compressor's scores (on that example)
#: gets level 4, the bottom quarter level 1 (unscored sentences: none)
SCORE_LEVELS = 4
#: background of a dropped sentence per level (light to dark blue); kept sentences stay green
SCORE_SHADES = ("#eef3fb", "#dbe6f7", "#c3d5f2", "#a9c3ec")


def score_ranks(record: Mapping[str, Any]) -> dict[int, tuple[float, int, int]]:
    """sentence index -> (score, rank, count) among the record's scored sentences (rank 1: the
    highest score; ties by position)."""
    scored = [(i, float(s["score"])) for i, s in enumerate(record.get("sentences", [])) if s.get("score") is not None]
    order = sorted(scored, key=lambda t: (-t[1], t[0]))
    return {i: (score, rank, len(order)) for rank, (i, score) in enumerate(order, start=1)}


def score_level(rank: int, count: int) -> int:
    """The shading level (1-4) of the ``rank``-th of ``count`` scored sentences (4: top quarter)."""
    return SCORE_LEVELS - min(SCORE_LEVELS - 1, (rank - 1) * SCORE_LEVELS // max(count, 1))


@dataclass(frozen=True)
class Piece:
    """A run of document text with no sentence or gold boundary inside: its CSS classes (who kept
    it, score levels, gold) and its tooltip (each compressor's rank among its scored sentences,
    then the score: ``bm25 #3/40 (1.93)``)."""

    text: str
    classes: str
    title: str


def _document_spans(view: ExampleView, labels: Sequence[str]) -> dict[int, dict[str, list[tuple[int, int, Any]]]]:
    """document index -> label -> the record's sentences in that document, in record order:
    ``(start, end, (score, rank, count) or None when unscored)``. One pass over each record (not
    one per document)."""
    out: dict[int, dict[str, list[tuple[int, int, Any]]]] = {}
    for label in labels:
        record = view.records.get(label)
        if record is None:
            continue
        ranks = score_ranks(record)
        for i, s in enumerate(record.get("sentences", [])):
            out.setdefault(int(s["doc"]), {}).setdefault(label, []).append((int(s["start"]), int(s["end"]), ranks.get(i)))
    return out


def _first_cover(count: int, spans: Sequence[tuple[int, int]]) -> list[int]:
    """piece index -> the index in ``spans`` of the first span covering it (-1: none), for spans
    given as piece index ranges ``[a, b)``. Each piece is assigned once: a pointer to the next
    unassigned piece (path-compressed) skips the assigned ones, so overlapping spans stay linear."""
    owner = [-1] * count
    following = list(range(count + 1))  # following[i]: the first unassigned piece at or after i

    def find(i: int) -> int:
        root = i
        while following[root] != root:
            root = following[root]
        while following[i] != root:
            following[i], i = root, following[i]
        return root

    for n, (a, b) in enumerate(spans):
        i = find(a)
        while i < b:
            owner[i] = n
            following[i] = i + 1
            i = find(i + 1)
    return owner


def document_pieces(index: int, doc: DocumentText, view: ExampleView, labels: Sequence[str],
                    masks: Mapping[str, list[np.ndarray]],
                    spans: Mapping[str, list[tuple[int, int, Any]]] | None = None) -> list[Piece]:
    """The pieces of document ``index``: ``k{i}`` kept by compressor i, ``s{i}-{level}`` its score
    level for compressor i, ``gold`` inside a gold span. ``spans``: this document's entry of
    :func:`_document_spans` (computed here when not given).

    Linear in the document's sentences: a document of 20,000 sentences took minutes when each
    piece scanned every sentence (issue 53 row 6). Every sentence and gold boundary is a cut, so a
    sentence or gold span covers a run of whole pieces, found by its boundaries' piece indices."""
    if spans is None:
        spans = _document_spans(view, labels).get(index, {})
    cuts: set[int] = {int(start) for start, _ in doc.gold} | {int(end) for _, end in doc.gold}
    for sentences in spans.values():
        for start, end, _ in sentences:
            cuts.update((start, end))
    pieces = _pieces(len(doc.text), cuts)
    at = {start: n for n, (start, _) in enumerate(pieces)} | {len(doc.text): len(pieces)}

    def piece_range(start: int, end: int) -> tuple[int, int]:  # the pieces inside [start, end), clipped to the text
        start, end = max(0, min(start, len(doc.text))), max(0, min(end, len(doc.text)))
        return at[start], at[end] if start < end else at[start]

    # per compressor: which of its scored sentences (the first in record order) covers each piece
    covering: list[tuple[int, str, list[tuple[float, int, int]], list[int]]] = []
    for i, label in enumerate(labels):
        scored = [(start, end, rank) for start, end, rank in spans.get(label, []) if rank is not None]
        covering.append((i, label, [rank for _, _, rank in scored],
                         _first_cover(len(pieces), [piece_range(start, end) for start, end, _ in scored])))
    in_gold = [g >= 0 for g in _first_cover(len(pieces), [piece_range(start, end) for start, end in doc.gold])]
    out = []
    for n, (start, end) in enumerate(pieces):  # no boundary inside a piece: its first character decides
        classes = [f"k{i}" for i, label in enumerate(labels) if label in masks and masks[label][index][start]]
        tips = []
        for i, label, ranks, owner in covering:
            if owner[n] >= 0:
                score, rank, count = ranks[owner[n]]
                classes.append(f"s{i}-{score_level(rank, count)}")
                tips.append(f"{label} #{rank}/{count} ({score:.3g})")
        if in_gold[n]:
            classes.append("gold")
        out.append(Piece(doc.text[start:end], " ".join(classes), "; ".join(tips)))
    return out


def _metric(record: Mapping[str, Any], key: str, scale: float = 100.0) -> str:
    value = record.get("metrics", {}).get(key)
    return "–" if value is None else f"{value * scale:.0f}"


def view_rows(view: ExampleView, labels: Sequence[str]) -> list[dict[str, Any]]:
    """One row per compressor of the example's table (``record`` None: not run on it)."""
    rows = []
    for i, label in enumerate(labels):
        record = view.records.get(label)
        if record is None:
            rows.append({"index": i, "label": label, "record": None})
            continue
        em = record.get("metrics", {}).get("em")
        rows.append({"index": i, "label": label, "record": record,
                     "kept": f"{sum(1 for s in record.get('sentences', []) if s.get('kept'))}/"
                             f"{len(record.get('sentences', []))}",
                     "tokens": _metric(record, "compressed_tokens", 1.0),
                     "ev_p": _metric(record, "evidence_precision"), "ev_r": _metric(record, "evidence_recall"),
                     "prediction": record.get("prediction"), "em_class": "" if em is None else
                     ("right" if em == 1 else "wrong"), "em": _metric(record, "em"), "f1": _metric(record, "f1")})
    return rows


def view_context(view: ExampleView, labels: Sequence[str], default: str, open_: bool = False,
                 kept_badge: bool = True) -> dict[str, Any]:
    """What the example template (``templates/example.html.j2``) draws: the question, badges, a
    row per compressor, a radio button per compressor choosing whose kept sentences and scores
    are highlighted, the documents as pieces. ``kept_badge``: mark an example whose kept text
    differs between compressors (pointless when every example's does)."""
    present = [(i, label) for i, label in enumerate(labels) if label in view.records]
    chosen = default if default in view.records else present[0][1]
    masks = kept_masks(view, labels)
    spans = _document_spans(view, labels)
    return {"view": view, "key": f"x{view.position}", "open": open_, "kept_badge": kept_badge and view.kept_differs,
            "rows": view_rows(view, labels), "present": present, "chosen": chosen,
            "documents": [(doc, document_pieces(d, doc, view, labels, masks, spans.get(d, {}))) for d, doc in enumerate(view.documents)]}


def view_css(labels: Sequence[str]) -> str:
    """The rules that highlight a piece kept by the compressor whose radio button is checked, and
    shade the others by that compressor's score."""
    rules = []
    for i in range(len(labels)):
        rules += [f".r{i}:checked~.docs .s{i}-{level}{{background:{SCORE_SHADES[level - 1]};color:#333}}"
                  for level in range(1, SCORE_LEVELS + 1)]
        rules.append(f".r{i}:checked~.docs .k{i}{{background:#bfe8c4;color:#111;text-decoration:none}}")
        rules.append(f".r{i}:checked~.pick .l{i}{{background:#2e7d32;color:#fff;border-color:#2e7d32}}")
    return "\n".join(rules)

"""The report's per-example view: every compressor's kept and dropped sentences, gold evidence,
the reader's answer and the gold answers, as HTML (all text escaped: it is untrusted input).

Each document is written once per example. Its text is cut at every sentence boundary of every
compressor and at every gold span boundary; each piece carries the classes of the compressors
that kept it (``k0``, ``k3``, ...) and ``gold`` when it lies in a gold span. A radio button per
compressor (pure CSS, no script) chooses whose decisions are highlighted, so ten compressors cost
a few classes per piece instead of ten copies of the documents. Examples where the compressors
disagree (different EM, else different F1, else different kept text) come first.
"""

from __future__ import annotations

import html
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ExampleView", "build_views", "order_views", "render_view", "view_css", "DocumentText"]


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
    for record in records.values():
        for s in record.get("sentences", []):
            doc = int(s["doc"])
            if doc >= len(documents) or documents[doc].text[int(s["start"]):int(s["end"])] != s["text"]:
                return False
    return True


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


def _document_html(index: int, doc: DocumentText, view: ExampleView, labels: Sequence[str],
                   masks: Mapping[str, list[np.ndarray]]) -> str:
    cuts: set[int] = set()
    for label in labels:
        for s in (view.records[label].get("sentences", []) if label in view.records else []):
            if int(s["doc"]) == index:
                cuts.update((int(s["start"]), int(s["end"])))
    for start, end in doc.gold:
        cuts.update((start, end))
    out = []
    for start, end in _pieces(len(doc.text), cuts):  # no boundary inside a piece: its first character decides
        classes = [f"k{i}" for i, label in enumerate(labels) if label in masks and masks[label][index][start]]
        if any(s <= start and end <= e for s, e in doc.gold):
            classes.append("gold")
        text = html.escape(doc.text[start:end])
        out.append(f'<span class="{" ".join(classes)}">{text}</span>' if classes else text)
    return (f'<div class="doc"><div class="title">{html.escape(doc.title)}</div>'
            f'<p>{"".join(out)}</p></div>')


def _metric(record: Mapping[str, Any], key: str, scale: float = 100.0) -> str:
    value = record.get("metrics", {}).get(key)
    return "–" if value is None else f"{value * scale:.0f}"


def _row(i: int, label: str, record: Mapping[str, Any] | None, with_reader: bool) -> str:
    if record is None:
        return f'<tr><td class="c{i}">{html.escape(label)}</td><td colspan="7" class="muted">not run on this example</td></tr>'
    kept = sum(1 for s in record.get("sentences", []) if s.get("kept"))
    total = len(record.get("sentences", []))
    tokens = record.get("metrics", {}).get("compressed_tokens")
    cells = [f"{kept}/{total}", "–" if tokens is None else f"{tokens:.0f}", _metric(record, "evidence_precision"),
             _metric(record, "evidence_recall")]
    if with_reader:
        prediction = record.get("prediction")
        answer = '<span class="muted">not read</span>' if prediction is None else html.escape(str(prediction))
        em = record.get("metrics", {}).get("em")
        mark = "" if em is None else (' class="right"' if em == 1 else ' class="wrong"')
        cells += [f"<span{mark}>{answer}</span>", _metric(record, "em"), _metric(record, "f1")]
    return f'<tr><td class="c{i}">{html.escape(label)}</td>' + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def render_view(view: ExampleView, labels: Sequence[str], with_reader: bool, default: str, open_: bool = False,
                kept_badge: bool = True) -> str:
    """One collapsible example: the question, badges, a table per compressor, then the documents
    with a radio button per compressor choosing whose kept sentences are highlighted.
    ``kept_badge``: mark an example whose kept text differs between compressors (pointless when
    every example's does)."""
    key = f"x{view.position}"
    badges = []
    if view.em_differs:
        badges.append('<span class="badge em">EM differs</span>')
    elif view.f1_spread > 0:
        badges.append('<span class="badge f1">F1 differs</span>')
    if view.kept_differs and kept_badge:
        badges.append('<span class="badge kept">kept text differs</span>')
    head = ["compressor", "kept", "tokens", "Ev-P", "Ev-R"] + (["answer", "EM", "F1"] if with_reader else [])
    rows = "".join(_row(i, label, view.records.get(label), with_reader) for i, label in enumerate(labels))
    present = [(i, label) for i, label in enumerate(labels) if label in view.records]
    chosen = default if default in view.records else present[0][1]
    radios = "".join(f'<input type="radio" name="{key}" id="{key}-{i}" class="r{i}"{" checked" if label == chosen else ""}>'
                     for i, label in present)
    buttons = "".join(f'<label for="{key}-{i}" class="l{i}">{html.escape(label)}</label>' for i, label in present)
    masks = kept_masks(view, labels)
    docs = "".join(_document_html(d, doc, view, labels, masks) for d, doc in enumerate(view.documents))
    gold_note = "" if view.has_gold else '<p class="muted">Gold evidence unknown for this example (not shown).</p>'
    answers = ", ".join(f"<b>{html.escape(a)}</b>" for a in view.answers) or '<span class="muted">none</span>'
    return (f'<details class="ex" id="ex-{html.escape(view.id, quote=True)}"{" open" if open_ else ""}>'
            f'<summary><span class="q">{html.escape(view.question)}</span> {"".join(badges)}'
            f'<span class="muted"> · {html.escape(view.id)}</span></summary>'
            f'<div class="body"><p>Gold answer: {answers}</p>'
            f'<table class="per-ex"><tr>{"".join(f"<th>{h}</th>" for h in head)}</tr>{rows}</table>'
            f'{radios}<div class="pick">Highlight the sentences kept by: {buttons}</div>{gold_note}'
            f'<div class="docs">{docs}</div></div></details>')


def view_css(labels: Sequence[str]) -> str:
    """The rules that highlight a piece kept by the compressor whose radio button is checked."""
    rules = []
    for i in range(len(labels)):
        rules.append(f".r{i}:checked~.docs .k{i}{{background:#bfe8c4;color:#111;text-decoration:none}}")
        rules.append(f".r{i}:checked~.pick .l{i}{{background:#2e7d32;color:#fff;border-color:#2e7d32}}")
    return "\n".join(rules)

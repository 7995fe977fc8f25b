"""The report's compare view: two compressors side by side on every question, each side's kept
sentences in rank order with their scores and gold marks, the reader's answer and prompt; the
questions where the two differ in EM first. Linear in the sentences (issue 53 row 6)."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ragsift.evaluation.report.example_view import ExampleView, score_level, score_ranks
from ragsift.evaluation.report.run_data import RunData

__all__ = ["compare_pair"]


class _GoldIndex:
    """Whether a sentence overlaps a gold span of its document, in log time: the compare view asks
    it of every kept sentence, and a scan of every gold span each time made a long document's
    report quadratic (issue 53 row 6). Same answer as ``any(start < end_s and start_s < end for
    start, end in gold)``."""

    def __init__(self, view: ExampleView) -> None:
        self.has_gold = view.has_gold
        self.gold = [doc.gold for doc in view.documents]
        #: per document: the proper spans merged where they overlap (sorted, disjoint), and the
        #: empty or reversed spans, which merging cannot represent (rare: checked one by one)
        self.merged: list[tuple[list[int], list[int]]] = []
        self.odd: list[list[tuple[int, int]]] = []
        for gold in self.gold:
            starts: list[int] = []
            ends: list[int] = []
            for start, end in sorted((int(s), int(e)) for s, e in gold if int(s) < int(e)):
                if ends and start < ends[-1]:  # strictly overlapping only: touching spans stay apart
                    ends[-1] = max(ends[-1], end)
                else:
                    starts.append(start)
                    ends.append(end)
            self.merged.append((starts, ends))
            self.odd.append([(int(s), int(e)) for s, e in gold if int(s) >= int(e)])

    def overlaps(self, s: Mapping[str, Any]) -> bool:
        doc, start, end = int(s["doc"]), int(s["start"]), int(s["end"])
        if not self.has_gold or doc >= len(self.gold):
            return False
        if start > end:  # a reversed sentence span (a hand-made record): the plain scan
            return any(g_start < end and start < g_end for g_start, g_end in self.gold[doc])
        starts, ends = self.merged[doc]
        # the first merged span ending after the sentence starts has the smallest start of those that do
        i = bisect.bisect_right(ends, start)
        return (i < len(ends) and starts[i] < end) or any(g_start < end and start < g_end for g_start, g_end in self.odd[doc])


def _side(view: ExampleView, label: str, row: Mapping[str, Any] | None, template: Mapping[str, str] | None,
          gold: _GoldIndex | None = None) -> dict[str, Any] | None:
    """One compressor on one question for the compare view: answer, EM/F1, its kept sentences in
    rank order with score level, rank and gold, the reader prompt. ``gold``: the view's
    :class:`_GoldIndex` (made here when not given)."""
    record = view.records.get(label)
    if record is None or row is None:
        return None
    gold = gold if gold is not None else _GoldIndex(view)
    sentences = record.get("sentences", [])
    ranks = score_ranks(record)
    kept = [(i, s) for i, s in enumerate(sentences) if s.get("kept")]
    kept.sort(key=lambda t: (t[1].get("rank") is None, t[1].get("rank") or 0, t[0]))
    items = []
    for i, s in kept:
        score, rank, count = ranks.get(i, (None, None, None))
        level = 0 if rank is None or count is None else score_level(rank, count)
        title = "" if rank is None else f"rank {rank}/{count}, score {score:.3g}"
        items.append({"text": s["text"], "level": level, "title": title, "gold": gold.overlaps(s), "index": i})
    em, f1 = row.get("em"), row.get("f1")
    all_kept = bool(sentences) and len(kept) == len(sentences)
    # a compressor that keeps everything gave the reader the full documents (shown below, once)
    context = None if all_kept else record.get("compressed_text")
    shown = f"[the full documents: all {len(sentences)} sentences]" if all_kept else context
    return {"label": label, "prediction": row.get("prediction"), "em_raw": em, "f1_raw": f1,
            "em": None if em is None else f"{em * 100:.0f}", "f1": None if f1 is None else f"{f1 * 100:.0f}",
            "em_class": "" if em is None else ("right" if em == 1 else "wrong"),
            "all_kept": all_kept, "sentences": len(sentences), "kept": [] if all_kept else items,
            "context": context, "prompt": _prompt(template, view.question, shown)}


def _prompt(template: Mapping[str, str] | None, question: str, context: str | None) -> str | None:
    """The reader's prompt as one text (system, newline, user), the templates' placeholders filled
    as the page's script fills them."""
    if not template or context is None:
        return None
    def fill(text: str) -> str:
        return context.join(question.join(q.replace("{{", "{").replace("}}", "}") for q in part.split("{query}"))
                            for part in text.split("{context}"))

    return "\n".join(fill(t) for t in (template.get("system") or "", template["user"]) if t)


def _reader_template(data: RunData) -> dict[str, str] | None:
    config = (data.manifest.get("reader") or {}).get("config") or {}
    if not isinstance(config.get("user_template"), str):
        return None
    return {"system": str(config.get("system_template") or ""), "user": config["user_template"]}


#: misses after which a walk through the context in one order gives up (the context is in the other order)
_WALK_MISSES = 8


def _offsets(kept: Sequence[Mapping[str, Any]], context: str) -> list[int]:
    """Where each kept sentence's text is in ``context`` (-1: not there). An assembler writes the
    kept sentences in document or in rank order (``kept`` is in rank order; ``index``: the
    sentence's place in its record), so each order is walked with a cursor that only moves on:
    linear, where a search from the start for every sentence made a long document's report
    quadratic (issue 53 row 6); a repeated text finds its own occurrence. What neither walk
    finds is searched for from the start."""
    found: dict[int, int] = {}
    by_document = sorted(range(len(kept)), key=lambda n: int(kept[n].get("index", n)))
    for order in (by_document, range(len(kept))):
        cursor, misses = 0, 0
        for n in order:
            if n in found:
                continue
            at = context.find(kept[n]["text"], cursor)
            if at < 0:
                misses += 1
                if misses > _WALK_MISSES:
                    break
                continue
            found[n] = at
            cursor = at + len(kept[n]["text"])
    return [found[n] if n in found else context.find(kept[n]["text"]) for n in range(len(kept))]


def _utf16_units(context: str) -> Callable[[int], int]:
    """offset in ``context`` -> the UTF-16 units before it (JavaScript strings count UTF-16 units;
    a character beyond the Basic Multilingual Plane is two), from one pass over the text."""
    if context.isascii():
        return lambda at: at
    astral = np.cumsum(np.frombuffer(context.encode("utf-32-le"), dtype="<u4") > 0xFFFF)
    return lambda at: at + (int(astral[at - 1]) if at > 0 else 0)


def _kept_entries(kept: Sequence[Mapping[str, Any]], context: str | None) -> list[list[Any]]:
    """The kept sentences for the page's script: ``[text, level, title, gold]`` each, the text as its
    offset in the compressor's context when it is there (the context is in the data anyway: the
    reader prompt), then ``[offset, level, title, gold, length]`` (offset and length in UTF-16 units)."""
    if context is None:
        return [[k["text"], k["level"], k["title"], k["gold"]] for k in kept]
    units = _utf16_units(context)
    out: list[list[Any]] = []
    for k, at in zip(kept, _offsets(kept, context), strict=True):
        if at < 0:
            out.append([k["text"], k["level"], k["title"], k["gold"]])
        else:
            out.append([units(at), k["level"], k["title"], k["gold"], units(at + len(k["text"])) - units(at)])
    return out


def compare_pair(data: RunData, views: Sequence[ExampleView], rows: Sequence[Mapping[str, Any]], a: str,
                 b: str) -> dict[str, Any]:
    """The compare view: the rows for ``a`` against ``b`` (EM differs first: a right, then b
    right; then the larger F1 difference; then the page's order) and the data the page's script
    draws any other pair from (the same sides)."""
    template = _reader_template(data)
    by_key = {(r["id"], r["compressor"]): r for r in rows}
    questions: list[dict[str, Any]] = []
    for view in views:
        gold = _GoldIndex(view)
        sides = {label: _side(view, label, by_key.get((view.id, label)), template, gold)
                 for label in data.summary["compressors"]}
        questions.append({"view": view, "sides": sides})

    def kind(q: Mapping[str, Any]) -> str:
        x, y = q["sides"].get(a), q["sides"].get(b)
        if not x or not y or x["em_raw"] is None or y["em_raw"] is None or x["em_raw"] == y["em_raw"]:
            return "same"
        return "a-right" if x["em_raw"] > y["em_raw"] else "b-right"

    def f1_gap(q: Mapping[str, Any]) -> float:
        x, y = q["sides"].get(a), q["sides"].get(b)
        return abs(x["f1_raw"] - y["f1_raw"]) if x and y and x["f1_raw"] is not None and y["f1_raw"] is not None else 0.0

    order = {"a-right": 0, "b-right": 1, "same": 2}
    ranked = sorted(questions, key=lambda q: (order[kind(q)], -f1_gap(q), q["view"].position))
    texts = {"a-right": "A right, B wrong", "b-right": "B right, A wrong", "same": ""}
    empty: dict[str, Any] = {"label": "", "prediction": None, "em": None, "f1": None, "em_class": "", "all_kept": False, "sentences": 0,
             "kept": [], "prompt": None}
    out_rows = [{"id": q["view"].id, "question": q["view"].question, "kind": kind(q), "kind_text": texts[kind(q)],
                 "a": q["sides"].get(a) or empty | {"label": a}, "b": q["sides"].get(b) or empty | {"label": b}}
                for q in ranked]
    script_data = {"labels": list(data.summary["compressors"]), "template": template, "questions": [
        {"id": q["view"].id, "q": q["view"].question, "pos": q["view"].position, "sides": {
            label: None if s is None else {"prediction": s["prediction"], "em": s["em_raw"], "f1": s["f1_raw"],
                                           "all_kept": s["all_kept"], "sentences": s["sentences"], "context": s["context"],
                                           "kept": _kept_entries(s["kept"], s["context"])}
            for label, s in q["sides"].items()}} for q in questions]}
    return {"a": a, "b": b, "rows": out_rows, "data": script_data}

"""Matching sentences against gold evidence spans, shared by the oracle and the evidence metrics.

A sentence counts as evidence when at least ``min_overlap`` of its characters lie inside gold
spans of its own document; a gold span counts as covered when at least ``min_overlap`` of its
characters lie inside the given sentences. Characters are counted once where spans (or
sentences) overlap. With dataset-provided sentences (``presplit`` on HotpotQA) both rules are
exact matches.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ragsift.types import EvidenceSpan, Sentence

__all__ = ["overlap", "is_evidence", "evidence_mask", "covered_spans"]


def overlap(a_start: int, a_end: int, b_start: int, b_end: int) -> int:
    """Characters shared by ``[a_start, a_end)`` and ``[b_start, b_end)``."""
    return max(0, min(a_end, b_end) - max(a_start, b_start))


def _inside(start: int, end: int, spans: Iterable[tuple[int, int]]) -> int:
    """Characters of ``[start, end)`` inside the union of ``spans`` (overlaps counted once)."""
    inside, reached = 0, start
    for s_start, s_end in sorted(spans):
        lo, hi = max(s_start, reached), min(s_end, end)
        if hi > lo:
            inside += hi - lo
            reached = hi
    return inside


def is_evidence(sentence: Sentence, evidence: Iterable[EvidenceSpan], min_overlap: float = 0.5) -> bool:
    length = sentence.end - sentence.start
    if length <= 0:
        return False
    spans = [(e.start, e.end) for e in evidence if e.doc_index == sentence.doc_index]
    return _inside(sentence.start, sentence.end, spans) >= min_overlap * length


def evidence_mask(sentences: Sequence[Sentence], evidence: Sequence[EvidenceSpan], min_overlap: float = 0.5) -> list[bool]:
    """For each sentence, whether it is gold evidence."""
    return [is_evidence(s, evidence, min_overlap) for s in sentences]


def covered_spans(evidence: Sequence[EvidenceSpan], sentences: Sequence[Sentence], min_overlap: float = 0.5) -> list[bool]:
    """For each gold span, whether the given sentences cover it."""
    out = []
    for e in evidence:
        length = e.end - e.start
        spans = [(s.start, s.end) for s in sentences if s.doc_index == e.doc_index]
        out.append(length > 0 and _inside(e.start, e.end, spans) >= min_overlap * length)
    return out

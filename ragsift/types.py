"""The data model: documents, sentences, examples and compression results.

Plain frozen dataclasses inside the pipeline (fast, hashable); pydantic only validates at the
boundaries (configs, input files).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Document", "Sentence", "EvidenceSpan", "Example", "Selection", "CompressionResult",
    "sentence_spans_from_list"
]


@dataclass(frozen=True, slots=True)
class Document:
    """A retrieved document.

    ``sentence_spans`` holds sentence boundaries that a dataset already provides (HotpotQA's
    sentence arrays) as ``(start, end)`` character offsets into ``text``; the ``presplit``
    splitter uses them.
    """

    title: str
    text: str
    id: str = ""
    score: float | None = None
    sentence_spans: tuple[tuple[int, int], ...] | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Sentence:
    """A sentence of a document: ``text == documents[doc_index].text[start:end]``."""

    doc_index: int
    index: int
    start: int
    end: int
    text: str

    @property
    def id(self) -> str:
        """Stable id within an example: ``"<doc_index>:<index>"``."""
        return f"{self.doc_index}:{self.index}"


@dataclass(frozen=True, slots=True)
class EvidenceSpan:
    """A gold evidence span: characters ``[start, end)`` of document ``doc_index``."""

    doc_index: int
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Example:
    """A question with its retrieved documents, gold answers and (optionally) gold evidence.

    ``evidence`` is ``None`` when the dataset has no evidence labels, and an empty tuple when it
    has labels and the question has no evidence (SQuAD 2.0 unanswerable questions).
    """

    id: str
    question: str
    answers: tuple[str, ...]
    documents: tuple[Document, ...]
    evidence: tuple[EvidenceSpan, ...] | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Selection:
    """What a selector keeps: indices into the sentence list, in the selector's priority order
    (rank order for ranking selectors), plus anything worth recording (e.g. judge calls)."""

    kept: list[int]
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class CompressionResult:
    """The outcome of compressing one example.

    ``kept`` lists indices into ``sentences`` in the order the selector ranked them;
    ``text`` is the assembled context; ``timings`` are seconds per stage.
    """

    example_id: str
    sentences: list[Sentence]
    scores: list[float]
    kept: list[int]
    text: str
    timings: dict[str, float] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def is_empty(self) -> bool:
        """True when nothing was kept: a valid outcome, reported as such."""
        return not self.kept

    @property
    def kept_ids(self) -> list[str]:
        return [self.sentences[i].id for i in self.kept]

    def to_record(self) -> dict[str, Any]:
        """A JSON-serialisable record with one entry per sentence (score and decision)."""
        kept = set(self.kept)
        rank = {idx: r for r, idx in enumerate(self.kept)}
        sentences = []
        for i, s in enumerate(self.sentences):
            score = self.scores[i] if i < len(self.scores) else math.nan
            sentences.append(
                {
                    "id": s.id,
                    "doc": s.doc_index,
                    "start": s.start,
                    "end": s.end,
                    "text": s.text,
                    "score": None if score is None or math.isnan(score) else float(score),
                    "kept": i in kept,
                    "rank": rank.get(i),
                }
            )
        return {
            "id": self.example_id,
            "kept": self.kept_ids,
            "empty": self.is_empty,
            "compressed_text": self.text,
            "sentences": sentences,
            "timings": dict(self.timings),
            "info": dict(self.info),
        }


def sentence_spans_from_list(sentences: Sequence[str]) -> tuple[str, tuple[tuple[int, int], ...]]:
    """Join a sentence array into a text and return the span of each sentence.

    Sentences are concatenated as given (HotpotQA sentences carry their own leading space); a
    single space is inserted only where neither neighbour has whitespace at the joint. Spans
    exclude surrounding whitespace, so ``text[start:end] == sentence.strip()``.
    """
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    offset = 0
    for sentence in sentences:
        if parts and sentence and not sentence[0].isspace() and parts[-1] and not parts[-1][-1].isspace():
            parts.append(" ")
            offset += 1
        lead = len(sentence) - len(sentence.lstrip())
        stripped = sentence.strip()
        start = offset + lead
        spans.append((start, start + len(stripped)))
        parts.append(sentence)
        offset += len(sentence)
    return "".join(parts), tuple(spans)

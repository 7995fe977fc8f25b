"""The data model: documents, sentences, examples and compression results.

Plain frozen dataclasses inside the pipeline (fast, hashable); pydantic only validates at the
boundaries (configs, input files).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Real
from typing import Any

from ragsift.errors import UsageError

__all__ = [
    "Document", "Sentence", "EvidenceSpan", "Example", "Selection", "CompressionResult",
    "sentence_spans_from_list", "DocumentValue", "make_example",
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


#: a document as plain values: its text, a ``(title, text)`` pair, a mapping with ``text`` (and
#: optional ``title``, ``id``, ``score``, ``sentence_spans``, ``metadata``) or a built Document
DocumentValue = str | tuple[str, str] | Mapping[str, Any] | Document


def make_example(question: str, documents: Iterable[DocumentValue], answers: str | Iterable[str] = (),
                 id: str = "example", *, evidence: Iterable[EvidenceSpan] | None = None,
                 metadata: Mapping[str, Any] | None = None, owner: str = "make_example") -> Example:
    """An example from plain values, the one builder of every entry point (the Python API, the
    service, the framework adapters, the datasets): documents as :data:`DocumentValue` (a
    document without an id is named by its position), ``answers`` as one string or several.
    Bad values raise :class:`~ragsift.errors.UsageError` naming ``owner`` and the document."""
    if not isinstance(question, str):
        raise UsageError(f"{owner}: 'question' must be a string; got {type(question).__name__}.")
    if isinstance(documents, (str, bytes)) or not isinstance(documents, Iterable):
        raise UsageError(f"{owner}: 'documents' must be a list of documents (texts, (title, text) pairs or "
                         f"mappings); got {type(documents).__name__}. For one document write [text].")
    if isinstance(answers, str):
        answers = (answers,)
    elif not isinstance(answers, Iterable):
        raise UsageError(f"{owner}: 'answers' must be a string or a list of strings; got {type(answers).__name__}.")
    answers = tuple(answers)
    if any(not isinstance(a, str) for a in answers):
        raise UsageError(f"{owner}: every answer must be a string; got {answers!r}.")
    return Example(id=str(id), question=question, answers=answers,
                   documents=tuple(_document(doc, i, owner) for i, doc in enumerate(documents)),
                   evidence=None if evidence is None else tuple(evidence), metadata={} if metadata is None else metadata)


def _document(doc: DocumentValue, i: int, owner: str) -> Document:
    if isinstance(doc, Document):
        return doc
    if isinstance(doc, str):
        return Document(title="", text=doc, id=str(i))
    if isinstance(doc, tuple) and len(doc) == 2 and all(isinstance(part, str) for part in doc):
        return Document(title=doc[0], text=doc[1], id=str(i))
    if not (isinstance(doc, Mapping) and isinstance(doc.get("text"), str)):
        raise UsageError(f"{owner}: document {i} must be a text, a (title, text) pair of strings or a mapping "
                         f"with a 'text' string; got {type(doc).__name__} {doc!r:.60}.")
    text, score, spans = doc["text"], doc.get("score"), doc.get("sentence_spans")
    if score is not None and (isinstance(score, bool) or not isinstance(score, Real)):
        raise UsageError(f"{owner}: document {i}: 'score' must be a number; got {type(score).__name__} {score!r:.40}.")
    return Document(title=str(doc.get("title") or ""), text=text, id=str(doc["id"]) if doc.get("id") is not None else str(i),
                    score=None if score is None else float(score),
                    sentence_spans=None if spans is None else _spans(spans, len(text), i, owner),
                    metadata=dict(doc.get("metadata") or {}))


def _spans(spans: Any, length: int, i: int, owner: str) -> tuple[tuple[int, int], ...]:
    """``sentence_spans`` as ``(start, end)`` pairs inside a text of ``length`` characters."""
    out = []
    for span in spans if isinstance(spans, Iterable) and not isinstance(spans, (str, bytes)) else [spans]:
        pair = tuple(span) if isinstance(span, Iterable) and not isinstance(span, (str, bytes)) else (span,)
        if len(pair) != 2 or not all(isinstance(x, int) and not isinstance(x, bool) for x in pair):
            raise UsageError(f"{owner}: document {i}: each sentence span must be a [start, end) pair of integers; "
                             f"got {span!r:.40}.")
        start, end = pair
        if not 0 <= start <= end <= length:
            raise UsageError(f"{owner}: document {i}: sentence span [{start}, {end}) is not inside the text "
                             f"({length} characters).")
        out.append((start, end))
    return tuple(out)

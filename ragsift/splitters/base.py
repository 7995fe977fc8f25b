"""The splitter stage: a document -> its sentences, each mapped to an exact character span."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Sequence
from typing import ClassVar

from ragsift.plugin import Plugin
from ragsift.types import Document, Sentence

__all__ = ["Splitter", "sentences_from_spans", "trim_span"]


def trim_span(text: str, start: int, end: int) -> tuple[int, int]:
    """``[start, end)`` without the whitespace at either end (empty when only whitespace)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def sentences_from_spans(document: Document, doc_index: int, spans: Iterable[tuple[int, int]]) -> list[Sentence]:
    """Sentences of ``document`` from character spans, trimmed of surrounding whitespace;
    empty spans are dropped."""
    text = document.text
    out: list[Sentence] = []
    for span in spans:
        start, end = trim_span(text, *span)
        if end > start:
            out.append(Sentence(doc_index, len(out), start, end, text[start:end]))
    return out


class Splitter(Plugin):
    """Splits documents into sentences."""

    stage: ClassVar[str] = "splitter"

    @abstractmethod
    def spans(self, text: str) -> list[tuple[int, int]]:
        """Character spans of the sentences of ``text`` (whitespace may be included)."""

    def split(self, document: Document, doc_index: int = 0) -> list[Sentence]:
        if not document.text.strip():
            return []
        return sentences_from_spans(document, doc_index, self.spans(document.text))

    def split_all(self, documents: Sequence[Document]) -> list[Sentence]:
        """Sentences of all documents, in document order then sentence order."""
        return [s for i, doc in enumerate(documents) for s in self.split(doc, i)]

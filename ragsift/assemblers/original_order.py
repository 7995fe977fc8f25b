"""EXIT's reassembly: kept sentences in original document and sentence order (documents in
rank order with ``document_order = "rank"``: LongLLMLingua's document reordering; best last, nearest
a question that follows the context, with ``"reverse-rank"``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from ragsift.assemblers.base import Assembler
from ragsift.plugin import Params
from ragsift.types import Document, Sentence

__all__ = ["OriginalOrderAssembler"]


class OriginalOrderParams(Params):
    #: put each document's title on a line above its sentences
    title: bool = False
    sentence_separator: str = " "
    document_separator: str = "\n\n"
    #: documents in their retrieved order, or by the rank of their best kept sentence (best first, or
    #: best last with "reverse-rank")
    document_order: Literal["original", "rank", "reverse-rank"] = "original"


class OriginalOrderAssembler(Assembler):
    """Sentences of one document joined by a space; documents separated by a blank line."""

    Params = OriginalOrderParams

    def assemble(self, documents: Sequence[Document], sentences: Sequence[Sentence], kept: Sequence[int]) -> str:
        by_doc: dict[int, list[Sentence]] = {}
        if self.params.document_order != "original":  # each document where its first kept sentence ranks
            for i in kept:
                by_doc.setdefault(sentences[i].doc_index, [])
        for i in sorted(kept, key=lambda j: (sentences[j].doc_index, sentences[j].index)):
            by_doc.setdefault(sentences[i].doc_index, []).append(sentences[i])
        blocks = []
        for doc_index, doc_sentences in by_doc.items():
            body = self.params.sentence_separator.join(s.text for s in doc_sentences)
            blocks.append(f"{documents[doc_index].title}\n{body}" if self.params.title else body)
        if self.params.document_order == "reverse-rank":
            blocks.reverse()
        return self.params.document_separator.join(blocks)

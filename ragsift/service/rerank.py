"""``POST /rerank`` of ``ragsift serve``: the request and answer shapes that rerank clients already send.

Two shapes, told apart by the key that holds the documents:

- **Cohere / Jina** (``documents``): ``{"query", "documents": [str or {"text", "title"?}], "top_n"?,
  "return_documents"?, "model"?}`` (Cohere's ``max_chunks_per_doc`` / ``max_tokens_per_doc`` are
  taken and change nothing: ragsift scores every sentence, it neither chunks nor truncates) ->
  ``{"id", "model", "results": [{"index", "relevance_score", "document": {"text"}}]}``, best first.
  ``return_documents`` defaults to true (Jina's default; Cohere's is false): the pruned text is
  what ragsift adds to a reranker's scores, and a client that does not read ``document`` ignores it.
- **TEI** (``texts``): ``{"query", "texts": [str], "return_text"?, "raw_scores"?, "truncate"?,
  "truncation_direction"?}`` -> ``[{"index", "score", "text"?}]``, best first (TEI answers a bare
  list). ``raw_scores``, ``truncate`` and ``truncation_direction`` are taken and change nothing:
  the scores are always the scorer's own (no sigmoid is applied or undone), and nothing is truncated.

The request is one example (the query and its documents) compressed by the served compressor.
A document's score is the **maximum** of its sentences' scores: a document is as relevant as
its best evidence sentence, and a mean would rank a long document with one answering sentence
below a short one with none. It is on the scorer's scale (BM25's is unbounded; EXIT's and the
learned scorers' are in [0, 1]). A document none of whose sentences has a score (an empty text,
or one a cascade's earlier stage set aside) ranks after every scored one, with the lowest score of
the answer (0 when no document has one). Its returned text is **pruned** to the sentences the
compressor's selector kept in it, in document order, joined by a space (as the ``original-order``
assembler joins them); a document with none kept comes back with an empty text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from ragsift.types import CompressionResult

__all__ = ["RerankDocumentIn", "RerankRequest", "RerankResultOut", "RerankResponse", "TeiRankOut", "RankedDocument",
           "rank_documents"]


class RerankDocumentIn(BaseModel):
    """A document as an object (Cohere's and Jina's clients send ``{"text": ...}``)."""

    model_config = ConfigDict(extra="forbid")
    text: str = Field(description="the document's text")
    title: str = Field("", description="its title (scorers that use titles read it)")


def _text_is_a_document(value: Any) -> Any:
    return {"text": value} if isinstance(value, str) else value


RerankDocumentField = Annotated[RerankDocumentIn, BeforeValidator(_text_is_a_document, json_schema_input_type=str | RerankDocumentIn)]

#: fields of one shape that the other does not take: named in the 422, with the field to use instead
_TEI_ONLY = {"return_text": "return_documents", "raw_scores": None, "truncate": None, "truncation_direction": None}
_COHERE_ONLY = {"return_documents": "return_text", "top_n": None, "max_chunks_per_doc": None, "max_tokens_per_doc": None}


class RerankRequest(BaseModel):
    """A query and its documents: Cohere's and Jina's shape (``documents``) or TEI's (``texts``)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"model": "rerank-v3.5", "query": "Who wrote Hamlet?", "top_n": 2, "return_documents": True,
         "documents": ["Hamlet is a tragedy. William Shakespeare wrote it.", "Cats purr. They sleep a lot."]},
        {"query": "Who wrote Hamlet?", "texts": ["Hamlet is a tragedy. William Shakespeare wrote it.", "Cats purr."],
         "return_text": True},
    ]})

    query: str = Field(min_length=1, description="the question the documents were retrieved for")
    documents: list[RerankDocumentField] | None = Field(
        None, description="Cohere / Jina: the documents, each a string or {\"text\", \"title\"?}; answered "
        "{\"results\": [{\"index\", \"relevance_score\", \"document\"}]}")
    texts: list[str] | None = Field(None, description="TEI: the documents' texts; answered [{\"index\", \"score\", \"text\"}]")
    top_n: int | None = Field(None, ge=1, description="Cohere / Jina: answer only the best N (default: all)")
    return_documents: bool | None = Field(None, description="Cohere / Jina: include each document's pruned text "
                                          "(default true)")
    model: str | None = Field(None, description="Cohere / Jina: the model the client names; ignored (the service "
                              "serves one compressor, named in the answer's 'model')")
    max_chunks_per_doc: int | None = Field(None, ge=1, description="Cohere v1: taken, changes nothing (no chunking)")
    max_tokens_per_doc: int | None = Field(None, ge=1, description="Cohere v2: taken, changes nothing (no truncation)")
    return_text: bool | None = Field(None, description="TEI: include each text, pruned (default false)")
    raw_scores: bool | None = Field(None, description="TEI: taken, changes nothing (the scores are the scorer's own)")
    truncate: bool | None = Field(None, description="TEI: taken, changes nothing (no truncation)")
    truncation_direction: str | None = Field(None, description="TEI: taken, changes nothing")

    @model_validator(mode="after")
    def _one_shape(self) -> RerankRequest:
        if (self.documents is None) == (self.texts is None):
            raise ValueError("give the documents as 'documents' (Cohere, Jina: strings or {\"text\": ...}) or as "
                             "'texts' (TEI: strings), " + ("not both" if self.documents is not None else "one of them"))
        other = _TEI_ONLY if self.documents is not None else _COHERE_ONLY
        for name, instead in other.items():
            if getattr(self, name) is not None:
                shape = "TEI's (with 'texts')" if self.documents is not None else "Cohere's and Jina's (with 'documents')"
                raise ValueError(f"'{name}' belongs to {shape} request" + (f"; use '{instead}'" if instead else ""))
        return self

    @property
    def tei(self) -> bool:
        return self.texts is not None

    def document_values(self) -> list[dict[str, str]]:
        if self.texts is not None:
            return [{"text": text} for text in self.texts]
        assert self.documents is not None
        return [doc.model_dump() for doc in self.documents]

    @property
    def wants_text(self) -> bool:
        if self.tei:
            return bool(self.return_text)
        return self.return_documents is not False


class RerankDocumentOut(BaseModel):
    text: str = Field(description="the document pruned to the sentences the compressor kept, in document order")


class RerankResultOut(BaseModel):
    index: int = Field(description="the document's position in the request")
    relevance_score: float = Field(description="the maximum of its sentences' scores (the scorer's scale)")
    document: RerankDocumentOut | None = Field(None, description="with return_documents (default): its pruned text")


class RerankResponse(BaseModel):
    """Cohere's and Jina's answer: the documents best first."""

    id: str = Field(description="this answer's id")
    model: str = Field(description="the label of the served compressor")
    results: list[RerankResultOut]


class TeiRankOut(BaseModel):
    """One entry of TEI's answer (a bare list, best first)."""

    index: int
    score: float
    text: str | None = Field(None, description="with return_text: the text, pruned")


@dataclass(frozen=True)
class RankedDocument:
    index: int
    score: float
    text: str


def rank_documents(result: CompressionResult, n_documents: int) -> list[RankedDocument]:
    """The documents of one compressed example, best first (ties in request order): each scored
    by the maximum of its sentences' finite scores and pruned to its kept sentences."""
    best: list[float | None] = [None] * n_documents
    kept: list[list[tuple[int, str]]] = [[] for _ in range(n_documents)]
    chosen = set(result.kept)
    for i, sentence in enumerate(result.sentences):
        score = result.scores[i] if i < len(result.scores) else None
        if score is not None and math.isfinite(score):
            current = best[sentence.doc_index]
            best[sentence.doc_index] = score if current is None else max(current, score)
        if i in chosen:
            kept[sentence.doc_index].append((sentence.start, sentence.text))
    scored = [s for s in best if s is not None]
    floor = min(scored) if scored else 0.0
    order = sorted(range(n_documents), key=lambda d: (best[d] is None, -(best[d] or 0.0), d))
    return [RankedDocument(d, float(score if (score := best[d]) is not None else floor),
                           " ".join(text for _, text in sorted(kept[d]))) for d in order]

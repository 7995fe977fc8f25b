"""ragsift as a Haystack component (``pip install 'ragsift[haystack]'``).

    from haystack import Pipeline
    from ragsift.integrations.haystack import RagsiftCompressor

    pipe = Pipeline()
    pipe.add_component("retriever", InMemoryBM25Retriever(document_store=store))
    pipe.add_component("compressor", RagsiftCompressor("bm25"))
    pipe.connect("retriever.documents", "compressor.documents")
    pipe.run({"retriever": {"query": q}, "compressor": {"query": q}})["compressor"]["documents"]

Each input document that keeps at least one sentence comes back once, in the input order, with
its kept sentences as ``content`` and everything else of the document kept (id, score, meta,
embedding), plus ``meta["ragsift"]`` (:mod:`ragsift.integrations.sifting`). A document's title is
read from ``meta[title_key]``. ``to_dict`` writes the compressor as a full spec table, so a
serialised pipeline rebuilds the same compressor without the config file.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from ragsift.integrations.sifting import METADATA_KEY, CompressorSpec, SiftingAdapter, missing_framework

try:
    from haystack import Document, component, default_from_dict, default_to_dict
except ImportError as exc:
    raise missing_framework(__name__, "Haystack (haystack-ai)", "haystack", exc) from exc

__all__ = ["RagsiftCompressor"]


@component
class RagsiftCompressor(SiftingAdapter):
    """Keeps the sentences a ragsift compressor selects for the query, per document (``compressor``:
    a :data:`~ragsift.integrations.sifting.CompressorSpec`; its models load at ``warm_up()``, which
    a Pipeline calls, or on the first run). Documents without text content are refused.
    """

    def __init__(self, compressor: CompressorSpec = "bm25", title_key: str = "title", sentence_separator: str = " ") -> None:
        self.title_key = title_key
        self.sentence_separator = sentence_separator
        self._start_sifter(compressor)

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, compressor=self._sifter.spec(), title_key=self.title_key,
                               sentence_separator=self.sentence_separator)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RagsiftCompressor:
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, query: str, documents: list[Document]) -> dict[str, list[Document]]:
        """The documents that keep at least one sentence for ``query``, compressed, in input order."""
        docs = []
        for i, doc in enumerate(documents):
            if not isinstance(doc.content, str):
                raise ValueError(f"{type(self).__name__}: document {i} ({doc.id}) has no text content; only text can be compressed.")
            docs.append(self.titled(doc.meta, doc.content))
        out = [
            dataclasses.replace(documents[sifted.index], content=sifted.text,
                                meta={**documents[sifted.index].meta, METADATA_KEY: sifted.metadata})
            for sifted in self._sifter.sift(query, docs)
        ]
        return {"documents": out}

    @component.output_types(documents=list[Document])
    async def run_async(self, query: str, documents: list[Document]) -> dict[str, list[Document]]:
        """:meth:`run` in a worker thread (runs share one compressor, one at a time)."""
        return await asyncio.to_thread(self.run, query, documents)

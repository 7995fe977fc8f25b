"""ragsift as a LangChain document compressor (``pip install 'ragsift[langchain]'``).

    from langchain_classic.retrievers import ContextualCompressionRetriever
    from ragsift.integrations.langchain import RagsiftDocumentCompressor

    retriever = ContextualCompressionRetriever(base_compressor=RagsiftDocumentCompressor("bm25"),
                                               base_retriever=my_retriever)

Each input document that keeps at least one sentence comes back once, in the input order, with
its kept sentences as ``page_content``, its id and metadata, plus ``metadata["ragsift"]``
(:mod:`ragsift.integrations.sifting`). A document's title is read from ``metadata[title_key]``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from ragsift.integrations.sifting import METADATA_KEY, DocumentSifter, SiftingAdapter, missing_framework

try:
    from langchain_core.callbacks import Callbacks
    from langchain_core.documents import BaseDocumentCompressor
    from langchain_core.documents import Document as LangChainDocument
    from pydantic import ConfigDict, PrivateAttr
except ImportError as exc:
    raise missing_framework(__name__, "LangChain (langchain-core)", "langchain", exc) from exc

__all__ = ["RagsiftDocumentCompressor"]


class RagsiftDocumentCompressor(SiftingAdapter, BaseDocumentCompressor):
    """Keeps the sentences a ragsift compressor selects for the query, per document
    (``compressor``: a :data:`~ragsift.integrations.sifting.CompressorSpec`)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    compressor: Any = "bm25"
    #: the metadata key that holds a document's title (ragsift's scorers and assemblers may use it)
    title_key: str = "title"
    #: how the kept sentences of one document are joined
    sentence_separator: str = " "
    _sifter: DocumentSifter = PrivateAttr()

    def compress_documents(self, documents: Sequence[LangChainDocument], query: str,
                           callbacks: Callbacks | None = None) -> Sequence[LangChainDocument]:
        documents = list(documents)
        pairs = [self.titled(doc.metadata, doc.page_content) for doc in documents]
        return [
            LangChainDocument(page_content=sifted.text, id=documents[sifted.index].id,
                              metadata={**documents[sifted.index].metadata, METADATA_KEY: sifted.metadata})
            for sifted in self._sifter.sift(query, pairs)
        ]

    async def acompress_documents(self, documents: Sequence[LangChainDocument], query: str,
                                  callbacks: Callbacks | None = None) -> Sequence[LangChainDocument]:
        """:meth:`compress_documents` in a worker thread (calls share one compressor, one at a time)."""
        return await asyncio.to_thread(self.compress_documents, documents, query, callbacks)

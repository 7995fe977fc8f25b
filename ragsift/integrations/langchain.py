"""ragsift as a LangChain document compressor (``pip install 'ragsift[langchain]'``).

    from langchain_classic.retrievers import ContextualCompressionRetriever
    from ragsift.integrations.langchain import RagsiftDocumentCompressor

    retriever = ContextualCompressionRetriever(base_compressor=RagsiftDocumentCompressor("bm25"),
                                               base_retriever=my_retriever)

Each input document that keeps at least one sentence comes back once, in the input order, as a copy
of itself (``model_copy``: its id, its type and anything a previous compressor kept on it, such as
the ``state`` of LangChain's embeddings filters) with its kept sentences as ``page_content``, its
metadata plus ``metadata["ragsift"]`` (:mod:`ragsift.integrations.sifting`) and, as rerankers do,
``metadata["relevance_score"]``: the highest score among its kept sentences (the scorer's units).
A document's title is read from ``metadata[title_key]``. Each call is a child run ("ragsift") of the
callbacks it is given (LangSmith, tracers). The adapter pickles (its compressor as a spec, rebuilt
unloaded), and ``model_copy(update={"compressor": ...})`` builds the new compressor.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, Self

from ragsift.compressors.base import Compressor
from ragsift.integrations.sifting import METADATA_KEY, DocumentSifter, SiftingAdapter, missing_framework

try:
    from langchain_core.callbacks import AsyncCallbackManager, CallbackManager, Callbacks
    from langchain_core.documents import BaseDocumentCompressor
    from langchain_core.documents import Document as LangChainDocument
    from pydantic import ConfigDict, PrivateAttr
except ImportError as exc:
    raise missing_framework(__name__, "LangChain (langchain-core)", "langchain", exc) from exc

__all__ = ["RagsiftDocumentCompressor", "RUN_NAME"]

#: the name of the child run each call makes under the caller's callbacks
RUN_NAME = "ragsift"


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

    def __getstate__(self) -> dict[Any, Any]:
        """Pickled with a built compressor given as its spec (no loaded models in the pickle)."""
        state = super().__getstate__()
        if isinstance(state["__dict__"].get("compressor"), Compressor):
            state["__dict__"] = {**state["__dict__"], "compressor": self._sifter.spec()}
        return state

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy; one that changes ``compressor`` or ``sentence_separator`` builds its own compressor."""
        copy = super().model_copy(update=update, deep=deep)
        if update and ({"compressor", "sentence_separator"} & set(update)):
            copy._start_sifter(copy.compressor)
        return copy

    def compress_documents(self, documents: Sequence[LangChainDocument], query: str,
                           callbacks: Callbacks | None = None) -> Sequence[LangChainDocument]:
        manager = CallbackManager.configure(inheritable_callbacks=callbacks)
        run = manager.on_chain_start(*self._run_start(query, documents))
        try:
            out = self._compress(list(documents), query)
        except BaseException as exc:
            run.on_chain_error(exc)
            raise
        run.on_chain_end(_run_outputs(out))
        return out

    def _run_start(self, query: str, documents: Sequence[LangChainDocument]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The serialized component and the inputs of the child run (``on_chain_start``)."""
        return {"name": RUN_NAME, "compressor": self.compressor_name}, {"query": query, "documents": len(documents)}

    def _compress(self, documents: list[LangChainDocument], query: str) -> list[LangChainDocument]:
        docs = [self.titled(doc.metadata, doc.page_content) for doc in documents]
        out = []
        for sifted in self._sifter.sift(query, docs):
            doc = documents[sifted.index]
            metadata = {**doc.metadata, METADATA_KEY: sifted.metadata}
            if sifted.metadata["score"] is not None:
                metadata["relevance_score"] = sifted.metadata["score"]
            out.append(doc.model_copy(update={"page_content": sifted.text, "metadata": metadata}))
        return out

    async def acompress_documents(self, documents: Sequence[LangChainDocument], query: str,
                                  callbacks: Callbacks | None = None) -> Sequence[LangChainDocument]:
        """:meth:`compress_documents` in a worker thread (calls share one compressor, one at a time)."""
        manager = AsyncCallbackManager.configure(inheritable_callbacks=callbacks)
        run = await manager.on_chain_start(*self._run_start(query, documents))
        try:
            out = await asyncio.to_thread(self._compress, list(documents), query)
        except BaseException as exc:
            await run.on_chain_error(exc)
            raise
        await run.on_chain_end(_run_outputs(out))
        return out


def _run_outputs(documents: Sequence[LangChainDocument]) -> dict[str, Any]:
    """The outputs of the child run (``on_chain_end``): how much was kept."""
    return {"documents": len(documents), "sentences": sum(len(d.metadata[METADATA_KEY]["sentences"]) for d in documents)}

"""The LangChain adapter inside LangChain's ContextualCompressionRetriever, over the bundled
sample, checked against ``ragsift compress``."""

from __future__ import annotations

import asyncio

import pytest
from adapter_checks import check_against_cli, original_metadata
from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import Field

import ragsift
from ragsift.errors import ConfigError, UsageError
from ragsift.integrations.langchain import RUN_NAME, RagsiftDocumentCompressor
from ragsift.types import Example


class SampleRetriever(BaseRetriever):
    """An in-memory retriever: each question's documents, in the sample's order."""

    documents: dict[str, list[Document]]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return list(self.documents.get(query, []))


def to_documents(example: Example) -> list[Document]:
    return [Document(page_content=d.text, metadata=original_metadata(example, i), id=f"{example.id}/{i}")
            for i, d in enumerate(example.documents)]


def as_output(example: Example, documents: list[Document]) -> list[tuple[int, str, dict]]:
    out = []
    for doc in documents:
        assert doc.id is not None and doc.id.startswith(f"{example.id}/")  # the input document's id survives
        out.append((int(doc.id.rsplit("/", 1)[1]), doc.page_content, doc.metadata))
    return out


@pytest.mark.parametrize("name", ["bm25", pytest.param("embedding", marks=pytest.mark.slow)])
def test_contextual_compression_retriever_keeps_what_ragsift_compress_keeps(name, sample_examples, cli_records, compressor_for):
    compressor = RagsiftDocumentCompressor(compressor_for(name))
    retriever = ContextualCompressionRetriever(
        base_compressor=compressor,
        base_retriever=SampleRetriever(documents={ex.question: to_documents(ex) for ex in sample_examples}),
    )
    for example, record in zip(sample_examples, cli_records(name), strict=True):
        check_against_cli(as_output(example, retriever.invoke(example.question)), example, record)
    # the async path gives the same documents
    example, record = sample_examples[0], cli_records(name)[0]
    check_against_cli(as_output(example, asyncio.run(retriever.ainvoke(example.question))), example, record)


def test_acompress_documents_runs_concurrent_calls_safely(sample_examples):
    compressor = RagsiftDocumentCompressor("bm25")
    expected = [compressor.compress_documents(to_documents(ex), ex.question) for ex in sample_examples]

    async def all_at_once():
        return await asyncio.gather(*(compressor.acompress_documents(to_documents(ex), ex.question)
                                      for ex in sample_examples * 4))

    assert list(asyncio.run(all_at_once())) == expected * 4


def test_documents_that_keep_nothing_are_dropped_and_titles_and_metadata_survive():
    documents = [
        Document(page_content="Paris is the capital of France. It is large.", metadata={"title": "Paris", "url": "u1"}, id="p"),
        Document(page_content="", metadata={"title": "Empty"}, id="e"),
        Document(page_content="Marie Curie was a physicist. She was born in Warsaw.", metadata={"title": "Marie Curie", "n": 2}, id="m"),
    ]
    compressor = RagsiftDocumentCompressor({"name": "bm25", "selector": {"k": 1}})
    (kept,) = compressor.compress_documents(documents, "Which city was she born in?")
    assert kept.page_content == "She was born in Warsaw."
    assert kept.id == "m"
    assert kept.metadata["title"] == "Marie Curie" and kept.metadata["n"] == 2
    (sentence,) = kept.metadata["ragsift"]["sentences"]
    assert sentence["score"] > 0 and {k: v for k, v in sentence.items() if k != "score"} == {"index": 1, "start": 29, "end": 52, "rank": 0}
    assert kept.metadata["ragsift"]["compressor"] == compressor.compressor_name == "bm25"
    assert documents[2].page_content.startswith("Marie Curie was")  # the input is not modified
    assert "ragsift" not in documents[2].metadata


def test_the_title_reaches_ragsift(monkeypatch):
    seen = []
    compressor = ragsift.load_compressor("bm25")
    real = compressor.compress
    monkeypatch.setattr(compressor, "compress", lambda example: seen.append(example) or real(example))
    RagsiftDocumentCompressor(compressor, title_key="name").compress_documents(
        [Document(page_content="A b.", metadata={"name": "Title A"}), Document(page_content="C d.", metadata={"name": 3})], "b")
    assert [d.title for d in seen[0].documents] == ["Title A", ""]  # a title that is not a string is left out


def test_an_empty_document_list(sample_examples):
    compressor = RagsiftDocumentCompressor("bm25")
    assert compressor.compress_documents([], "anything") == []
    assert asyncio.run(compressor.acompress_documents([], "anything")) == []
    retriever = ContextualCompressionRetriever(base_compressor=compressor, base_retriever=SampleRetriever(documents={}))
    assert retriever.invoke("a question nobody asked") == []


def test_bad_compressor_and_bad_query_are_clear_errors():
    with pytest.raises(ConfigError, match="neither a registered compressor"):
        RagsiftDocumentCompressor("no-such-config")
    with pytest.raises(UsageError, match="'compressor' must be a config name"):
        RagsiftDocumentCompressor(42)
    with pytest.raises(UsageError, match="the query must be a string"):
        RagsiftDocumentCompressor("bm25").compress_documents([Document(page_content="A b.")], None)  # type: ignore[arg-type]


class DocumentWithState(Document):
    """A document as LangChain's embeddings filters pass it on (langchain_community's
    ``_DocumentWithState``): what they computed rides on ``state``."""

    state: dict = Field(default_factory=dict)


def test_a_previous_compressors_state_and_type_survive_and_a_document_score_is_set():
    documents = [DocumentWithState(page_content="Paris is the capital of France. It is large.", id="p",
                                   state={"query_similarity_score": 0.7}),
                 DocumentWithState(page_content="Marie Curie was born in Warsaw.", id="m", state={"embedded_doc": [1.0]})]
    kept = RagsiftDocumentCompressor({"name": "bm25", "selector": {"k": 1}}).compress_documents(documents, "capital of France")
    (doc,) = kept
    assert type(doc) is DocumentWithState and doc.state == {"query_similarity_score": 0.7} and doc.id == "p"
    assert doc.page_content == "Paris is the capital of France."
    (sentence,) = doc.metadata["ragsift"]["sentences"]
    assert doc.metadata["relevance_score"] == doc.metadata["ragsift"]["score"] == sentence["score"] > 0


def test_model_copy_with_a_new_compressor_builds_it():
    docs = [Document(page_content="Paris is the capital of France. It is large. Lyon is in France too.")]
    one = RagsiftDocumentCompressor({"name": "bm25", "selector": {"k": 1}})
    two = one.model_copy(update={"compressor": {"name": "bm25", "selector": {"k": 2}}})
    assert len(two.compress_documents(docs, "France")[0].metadata["ragsift"]["sentences"]) == 2
    assert len(one.compress_documents(docs, "France")[0].metadata["ragsift"]["sentences"]) == 1  # the original is unchanged
    joined = one.model_copy(update={"sentence_separator": " | "})
    assert joined._sifter.sentence_separator == " | "
    assert one.model_copy()._sifter is one._sifter  # a plain copy shares the built compressor


def test_the_compressor_pickles_without_its_lock_or_models():
    import pickle

    compressor = ragsift.load_compressor("bm25", selector={"k": 1})
    adapter = RagsiftDocumentCompressor(compressor)
    adapter.warm_up()
    docs = [Document(page_content="Paris is the capital of France. It is large.", id="p")]
    again = pickle.loads(pickle.dumps(adapter))
    assert again._sifter.compressor is not compressor and not again._sifter._warm  # rebuilt from its spec, not loaded
    assert again.compressor == adapter._sifter.spec()  # the built compressor given is pickled as its spec
    assert again._sifter._lock is not adapter._sifter._lock
    assert again.compress_documents(docs, "capital") == adapter.compress_documents(docs, "capital")


class RecordingHandler(BaseCallbackHandler):
    """Records (event, name, run id, parent run id) of the runs LangChain reports."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str | None, object, object]] = []

    def on_retriever_start(self, serialized, query, *, run_id, parent_run_id=None, **kwargs):  # type: ignore[no-untyped-def]
        self.events.append(("retriever_start", kwargs.get("name"), run_id, parent_run_id))

    def on_chain_start(self, serialized, inputs, *, run_id, parent_run_id=None, **kwargs):  # type: ignore[no-untyped-def]
        self.events.append(("chain_start", (serialized or {}).get("name"), run_id, parent_run_id))
        self.inputs = inputs

    def on_chain_end(self, outputs, *, run_id, parent_run_id=None, **kwargs):  # type: ignore[no-untyped-def]
        self.events.append(("chain_end", None, run_id, parent_run_id))
        self.outputs = outputs

    def on_chain_error(self, error, *, run_id, parent_run_id=None, **kwargs):  # type: ignore[no-untyped-def]
        self.events.append(("chain_error", type(error).__name__, run_id, parent_run_id))


def test_each_call_is_a_child_run_of_the_callers_callbacks(sample_examples):
    example = sample_examples[0]
    retriever = ContextualCompressionRetriever(
        base_compressor=RagsiftDocumentCompressor("bm25"),
        base_retriever=SampleRetriever(documents={example.question: to_documents(example)}))
    for invoke in (lambda config: retriever.invoke(example.question, config=config),
                   lambda config: asyncio.run(retriever.ainvoke(example.question, config=config))):
        handler = RecordingHandler()
        kept = invoke({"callbacks": [handler]})
        retriever_runs = [run for event, _, run, _ in handler.events if event == "retriever_start"]
        (start,) = [e for e in handler.events if e[0] == "chain_start"]
        assert start[1] == RUN_NAME and start[3] == retriever_runs[0]  # a child of the retriever's run
        assert ("chain_end", None, start[2], start[3]) in handler.events
        assert handler.inputs == {"query": example.question, "documents": len(example.documents)}
        assert handler.outputs["documents"] == len(kept) > 0


def test_a_failed_call_ends_its_child_run_with_the_error():
    handler = RecordingHandler()
    with pytest.raises(UsageError):
        RagsiftDocumentCompressor("bm25").compress_documents([Document(page_content="A b.")], None,  # type: ignore[arg-type]
                                                             callbacks=[handler])
    assert [e[0] for e in handler.events] == ["chain_start", "chain_error"] and handler.events[1][1] == "UsageError"


def test_a_documents_sentence_spans_in_its_metadata_split_it():
    compressor = RagsiftDocumentCompressor(compressor={"name": "bm25", "splitter": "presplit", "selector": {"k": 1}})
    doc = Document(page_content="Marie Curie physicist born in Warsaw", metadata={"sentence_spans": [[0, 21], [22, 36]]})
    (out,) = compressor.compress_documents([doc], "Where was she born?")
    assert out.metadata["ragsift"]["sentences_total"] == 2 and out.metadata["sentence_spans"] == [[0, 21], [22, 36]]

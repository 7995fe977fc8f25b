"""The Haystack adapter as a component of real Haystack pipelines, over the bundled sample,
checked against ``ragsift compress``."""

from __future__ import annotations

import asyncio

import pytest
from adapter_checks import check_against_cli, original_metadata
from haystack import Document, Pipeline
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.document_stores.in_memory import InMemoryDocumentStore

import ragsift
from ragsift.integrations.haystack import RagsiftCompressor
from ragsift.types import Example

TRUSTED = ["ragsift.integrations.haystack"]  # Haystack deserialises only modules it is told to trust


def to_documents(example: Example) -> list[Document]:
    return [Document(id=f"{example.id}/{i}", content=d.text, meta=original_metadata(example, i), score=1.0 - i / 10)
            for i, d in enumerate(example.documents)]


def as_output(example: Example, documents: list[Document]) -> list[tuple[int, str, dict]]:
    out = []
    for doc in documents:
        i = int(doc.id.rsplit("/", 1)[1])
        assert doc.id == f"{example.id}/{i}" and doc.score == pytest.approx(1.0 - i / 10)  # id and score are kept
        out.append((i, doc.content, doc.meta))
    return out


def compress_pipeline(component: RagsiftCompressor) -> Pipeline:
    pipe = Pipeline()
    pipe.add_component("compressor", component)
    return pipe


@pytest.mark.parametrize("name", ["bm25", pytest.param("embedding", marks=pytest.mark.slow)])
def test_pipeline_keeps_what_ragsift_compress_keeps_and_survives_serialisation(name, sample_examples, cli_records, compressor_for):
    pipe = compress_pipeline(RagsiftCompressor(compressor_for(name)))
    again = Pipeline.loads(pipe.dumps(), allowed_modules=TRUSTED)  # YAML round trip: the compressor is rebuilt from its spec
    assert again.get_component("compressor")._sifter.compressor is not pipe.get_component("compressor")._sifter.compressor
    for example, record in zip(sample_examples, cli_records(name), strict=True):
        for p in (pipe, again):
            result = p.run({"compressor": {"query": example.question, "documents": to_documents(example)}})
            check_against_cli(as_output(example, result["compressor"]["documents"]), example, record)
    # an async run (the component's run_async) gives the same documents
    example, record = sample_examples[0], cli_records(name)[0]
    result = asyncio.run(pipe.run_async({"compressor": {"query": example.question, "documents": to_documents(example)}}))
    check_against_cli(as_output(example, result["compressor"]["documents"]), example, record)


def test_behind_a_haystack_retriever_it_compresses_what_the_retriever_returns(sample_examples):
    example = sample_examples[0]
    store = InMemoryDocumentStore()
    store.write_documents([d for ex in sample_examples for d in to_documents(ex)])
    pipe = Pipeline()
    pipe.add_component("retriever", InMemoryBM25Retriever(document_store=store, top_k=6))
    pipe.add_component("compressor", RagsiftCompressor("bm25"))
    pipe.connect("retriever.documents", "compressor.documents")
    result = pipe.run({"retriever": {"query": example.question}, "compressor": {"query": example.question}},
                      include_outputs_from={"retriever"})
    retrieved = result["retriever"]["documents"]
    assert len(retrieved) == 6
    # the same documents in the retriever's order, compressed by the library directly
    same_documents = ragsift.make_example(example.question, [(d.meta["title"], d.content) for d in retrieved])
    direct = ragsift.load_compressor("bm25").compress(same_documents)
    kept_docs = sorted({direct.sentences[i].doc_index for i in direct.kept})
    out = result["compressor"]["documents"]
    assert [d.id for d in out] == [retrieved[i].id for i in kept_docs]
    for doc, i in zip(out, kept_docs, strict=True):
        sentences = sorted((s for j, s in enumerate(direct.sentences) if j in direct.kept and s.doc_index == i), key=lambda s: s.index)
        assert doc.content == " ".join(s.text for s in sentences)
        assert doc.score == retrieved[i].score and doc.meta["title"] == retrieved[i].meta["title"]


def test_warm_up_loads_the_compressor_once_through_the_pipeline(monkeypatch):
    compressor = ragsift.load_compressor("bm25")
    calls = []
    real = compressor.warm_up
    monkeypatch.setattr(compressor, "warm_up", lambda: calls.append(1) or real())
    pipe = compress_pipeline(RagsiftCompressor(compressor))
    pipe.warm_up()
    assert calls == [1]
    pipe.run({"compressor": {"query": "q", "documents": [Document(content="A q b. C d.")]}})
    assert calls == [1]


def test_documents_that_keep_nothing_are_dropped_and_an_empty_list_works():
    documents = [
        Document(content="Paris is the capital of France. It is large.", meta={"title": "Paris"}),
        Document(content="", meta={"title": "Empty"}),
        Document(content="Marie Curie was a physicist. She was born in Warsaw.", meta={"title": "Marie Curie", "n": 2}),
    ]
    component = RagsiftCompressor({"name": "bm25", "selector": {"k": 1}})
    (kept,) = component.run("Which city was she born in?", documents)["documents"]
    assert kept.content == "She was born in Warsaw." and kept.id == documents[2].id
    assert kept.meta["title"] == "Marie Curie" and kept.meta["n"] == 2
    assert [s["start"] for s in kept.meta["ragsift"]["sentences"]] == [29]
    assert documents[2].content.startswith("Marie Curie was") and "ragsift" not in documents[2].meta
    assert component.run("anything", []) == {"documents": []}
    assert compress_pipeline(component).run({"compressor": {"query": "anything", "documents": []}}) == {"compressor": {"documents": []}}


def test_to_dict_writes_the_full_compressor_spec():
    data = RagsiftCompressor("bm25", title_key="name", sentence_separator="\n").to_dict()
    assert data["type"] == "ragsift.integrations.haystack.RagsiftCompressor"
    params = data["init_parameters"]
    assert params["title_key"] == "name" and params["sentence_separator"] == "\n"
    assert params["compressor"]["name"] == "bm25" and params["compressor"]["selector"] == {"name": "top-k", "k": 5, "per_document": False}
    rebuilt = RagsiftCompressor.from_dict(data)
    assert rebuilt.to_dict() == data


def test_a_document_without_text_is_refused():
    with pytest.raises(ValueError, match="has no text content"):
        RagsiftCompressor("bm25").run("q", [Document(content=None)])

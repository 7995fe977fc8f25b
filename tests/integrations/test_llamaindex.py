"""The LlamaIndex adapter as a node postprocessor of a LlamaIndex query engine, over the bundled
sample, checked against ``ragsift compress``."""

from __future__ import annotations

import asyncio

import pytest
from adapter_checks import check_against_cli, original_metadata
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import (
    MediaResource,
    MetadataMode,
    Node,
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)

from ragsift.integrations.llamaindex import RagsiftNodePostprocessor
from ragsift.types import Example


def to_nodes(example: Example) -> list[NodeWithScore]:
    nodes = []
    for i, d in enumerate(example.documents):
        node = TextNode(text=d.text, metadata=original_metadata(example, i), id_=f"{example.id}/{i}", start_char_idx=0,
                        end_char_idx=len(d.text),
                        relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=f"source-{d.title}")})
        nodes.append(NodeWithScore(node=node, score=1.0 - i / 10))
    return nodes


class SampleRetriever(BaseRetriever):
    """An in-memory retriever: each question's nodes, in the sample's order."""

    def __init__(self, nodes: dict[str, list[NodeWithScore]]) -> None:
        super().__init__()
        self.nodes = nodes

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return list(self.nodes.get(query_bundle.query_str, []))


def as_output(example: Example, nodes: list[NodeWithScore]) -> list[tuple[int, str, dict]]:
    out = []
    for scored in nodes:
        node = scored.node
        i = int(node.node_id.rsplit("/", 1)[1])
        assert node.node_id == f"{example.id}/{i}"
        assert scored.score == pytest.approx(1.0 - i / 10)  # the retriever's score is kept
        assert node.relationships[NodeRelationship.SOURCE].node_id == f"source-{example.documents[i].title}"
        assert (node.start_char_idx, node.end_char_idx) == (None, None)  # they described the original text
        assert node.excluded_llm_metadata_keys == ["ragsift"] and node.excluded_embed_metadata_keys == ["ragsift"]
        out.append((i, node.get_content(metadata_mode=MetadataMode.NONE), node.metadata))
    return out


@pytest.mark.parametrize("name", ["bm25", pytest.param("embedding", marks=pytest.mark.slow)])
def test_query_engine_postprocessor_keeps_what_ragsift_compress_keeps(name, sample_examples, cli_records, compressor_for):
    postprocessor = RagsiftNodePostprocessor(compressor_for(name))
    engine = RetrieverQueryEngine.from_args(SampleRetriever({ex.question: to_nodes(ex) for ex in sample_examples}),
                                            llm=MockLLM(), node_postprocessors=[postprocessor])
    for example, record in zip(sample_examples, cli_records(name), strict=True):
        response = engine.query(example.question)
        check_against_cli(as_output(example, response.source_nodes), example, record)
        # MockLLM answers with its prompt: the reader saw the kept sentences and titles, not ragsift's record
        prompt = str(response)
        assert all(scored.node.get_content(metadata_mode=MetadataMode.NONE) in prompt for scored in response.source_nodes)
        assert f"title: {example.documents[as_output(example, response.source_nodes)[0][0]].title}" in prompt
        assert "sentences_total" not in prompt
    # the async path gives the same nodes
    example, record = sample_examples[0], cli_records(name)[0]
    response = asyncio.run(engine.aquery(example.question))
    check_against_cli(as_output(example, response.source_nodes), example, record)


def test_nodes_that_keep_nothing_are_dropped_and_metadata_survives():
    nodes = [
        NodeWithScore(node=TextNode(text="Paris is the capital of France. It is large.", metadata={"title": "Paris"}, id_="p"), score=0.9),
        NodeWithScore(node=TextNode(text="", metadata={"title": "Empty"}, id_="e"), score=0.8),
        NodeWithScore(node=TextNode(text="Marie Curie was a physicist. She was born in Warsaw.", metadata={"title": "Marie Curie", "n": 2},
                                    id_="m", excluded_llm_metadata_keys=["n"]), score=None),
    ]
    postprocessor = RagsiftNodePostprocessor({"name": "bm25", "selector": {"k": 1}})
    (kept,) = postprocessor.postprocess_nodes(nodes, query_bundle=QueryBundle("Which city was she born in?"))
    assert kept.node.get_content(metadata_mode=MetadataMode.NONE) == "She was born in Warsaw."
    assert kept.node.node_id == "m" and kept.score is None
    assert kept.node.metadata["title"] == "Marie Curie" and kept.node.metadata["n"] == 2
    assert kept.node.excluded_llm_metadata_keys == ["n", "ragsift"]
    assert [s["start"] for s in kept.node.metadata["ragsift"]["sentences"]] == [29]
    assert nodes[2].node.get_content(metadata_mode=MetadataMode.NONE).startswith("Marie Curie was")  # the input is not modified
    assert "ragsift" not in nodes[2].node.metadata and nodes[2].node.excluded_llm_metadata_keys == ["n"]


def test_an_empty_node_list_and_a_missing_query():
    postprocessor = RagsiftNodePostprocessor("bm25")
    assert postprocessor.postprocess_nodes([], query_str="anything") == []
    assert asyncio.run(postprocessor.apostprocess_nodes([], query_str="anything")) == []
    with pytest.raises(ValueError, match="needs the query"):
        postprocessor.postprocess_nodes([NodeWithScore(node=TextNode(text="A b."))])


def test_a_node_without_text_is_refused():
    with pytest.raises(TypeError, match="not a TextNode"):
        not_text = NodeWithScore(node=Node(text_resource=MediaResource(text="A b.")))
        RagsiftNodePostprocessor("bm25").postprocess_nodes([not_text], query_str="q")

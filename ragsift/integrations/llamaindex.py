"""ragsift as a LlamaIndex node postprocessor (``pip install 'ragsift[llama-index]'``).

    from ragsift.integrations.llamaindex import RagsiftNodePostprocessor

    query_engine = index.as_query_engine(node_postprocessors=[RagsiftNodePostprocessor("bm25")])

Each input node that keeps at least one sentence comes back once, in the input order, with its
kept sentences as text and everything else of the node kept: id, score, metadata, relationships,
templates. ``metadata["ragsift"]`` (:mod:`ragsift.integrations.sifting`) is added and left out of
the text that LLMs and embedders see. ``start_char_idx`` / ``end_char_idx`` are cleared: they
described the original text (its kept spans are in ``metadata["ragsift"]``). A node's title is
read from ``metadata[title_key]``.
"""

from __future__ import annotations

from typing import Any

from ragsift.integrations.sifting import METADATA_KEY, DocumentSifter, SiftingAdapter, missing_framework

try:
    from llama_index.core.bridge.pydantic import PrivateAttr
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode
except ImportError as exc:
    raise missing_framework(__name__, "LlamaIndex (llama-index-core)", "llama-index", exc) from exc

__all__ = ["RagsiftNodePostprocessor"]


class RagsiftNodePostprocessor(SiftingAdapter, BaseNodePostprocessor):
    """Keeps the sentences a ragsift compressor selects for the query, per node (``compressor``:
    a :data:`~ragsift.integrations.sifting.CompressorSpec`). Nodes that are not text nodes cannot
    be compressed and are refused."""

    compressor: Any = "bm25"
    #: the metadata key that holds a node's title (ragsift's scorers and assemblers may use it)
    title_key: str = "title"
    #: how the kept sentences of one node are joined
    sentence_separator: str = " "
    _sifter: DocumentSifter = PrivateAttr()

    @classmethod
    def class_name(cls) -> str:
        return "RagsiftNodePostprocessor"

    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        if query_bundle is None:
            raise ValueError(f"{type(self).__name__} needs the query: pass query_str or query_bundle to postprocess_nodes().")
        docs = []
        for i, scored in enumerate(nodes):
            if not isinstance(scored.node, TextNode):
                raise TypeError(f"{type(self).__name__}: node {i} ({scored.node.node_id}) is a {type(scored.node).__name__}, "
                                "not a TextNode; only text can be compressed.")
            docs.append(self.titled(scored.node.metadata, scored.node.get_content(metadata_mode=MetadataMode.NONE)))
        out = []
        for sifted in self._sifter.sift(query_bundle.query_str, docs):
            original = nodes[sifted.index]
            node = original.node
            assert isinstance(node, TextNode)
            update = {
                "text": sifted.text,
                "metadata": {**node.metadata, METADATA_KEY: sifted.metadata},
                "excluded_llm_metadata_keys": _with(node.excluded_llm_metadata_keys, METADATA_KEY),
                "excluded_embed_metadata_keys": _with(node.excluded_embed_metadata_keys, METADATA_KEY),
                "relationships": dict(node.relationships),  # the copy's own dict (model_copy is shallow)
                "start_char_idx": None,
                "end_char_idx": None,
            }
            out.append(NodeWithScore(node=node.model_copy(update=update), score=original.score))
        return out


def _with(keys: list[str], key: str) -> list[str]:
    return list(keys) if key in keys else [*keys, key]

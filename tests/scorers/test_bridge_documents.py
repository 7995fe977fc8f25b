"""The two-hop document ranker (``bridge-documents``): its scorer contract, the second hop that
finds a bridge document through the kept one, titles blanked, and its place as a cascade's
coarse stage."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from ragsift.errors import ConfigError
from ragsift.metrics.normalize import content_words
from ragsift.registry import build_plugin
from ragsift.scorers.bridge_documents import BridgeDocumentModel, decreasing
from ragsift.scorers.bridge_features import SECOND_HOP_FEATURES, BridgeFeatures, leading_entity
from ragsift.selectors.documents import document_scores
from ragsift.splitters.presplit import PresplitSplitter
from ragsift.testing import presplit_sentences, sample_example
from ragsift.types import Document, Example

MODEL = "models/bridge-documents"
SPLITTER = PresplitSplitter(fallback="sentencizer")
QUESTION = "Where was the school that Arthur Quill founded?"
BRIDGE = 3
DOCS = [
    ("Arthur Penn", "Arthur Penn was an American film director."),
    ("Arthur Quill", "Arthur Quill was a teacher. In 1901 he founded Northvale Academy."),
    ("Leeds Grammar", "Leeds Grammar was a school in Yorkshire."),
    ("Northvale Academy", "Northvale Academy is a boarding institution in Brambleton, Ontario."),  # the bridge
    ("Quillan", "Quillan is a commune in southern France."),
    ("Brambleton", "Brambleton is a town in Ontario with a population of 4,000."),
]


def _example(docs: list[tuple[str, str]] = DOCS) -> Example:
    return Example("bridge", QUESTION, ("Brambleton",), tuple(Document(t, x) for t, x in docs))


def _no_titles(example: Example) -> Example:
    return replace(example, documents=tuple(replace(d, title="") for d in example.documents))


@pytest.fixture(scope="module")
def model() -> BridgeDocumentModel:
    loaded = BridgeDocumentModel.load(MODEL)
    loaded.features.warm_up()
    return loaded


def _first_hop_order(model: BridgeDocumentModel, example: Example) -> list[int]:
    ctx = model.features.context(example, SPLITTER.split_all(example.documents))
    p = model.ensemble.probability(model.features.rows(ctx, range(len(example.documents)), None))
    return [int(j) for j in np.argsort(-p, kind="stable")]


def test_the_fixture_bridge_shares_no_word_with_the_question_but_one_with_the_first_document():
    bridge = content_words(" ".join(DOCS[BRIDGE]))
    assert not bridge & content_words(QUESTION)
    assert bridge & content_words(DOCS[1][1])


@pytest.mark.parametrize("titles", [True, False], ids=["titles", "titles-blanked"])
def test_the_second_hop_ranks_the_bridge_up_through_the_kept_document(model, titles):
    example = _example() if titles else _no_titles(_example())
    order, _ = model.rank(example, SPLITTER.split_all(example.documents))
    assert order[0] == 1  # the document the question names
    assert order[1] == BRIDGE  # the bridge, given it
    assert _first_hop_order(model, example).index(BRIDGE) > 1  # the question alone does not find it
    # the kept document is what lifts it: without the name they share, the bridge is not second
    unlinked = list(DOCS)
    unlinked[1] = ("Arthur Quill", "Arthur Quill was a teacher. In 1901 he founded a college.")
    other = _example(unlinked) if titles else _no_titles(_example(unlinked))
    assert model.rank(other, SPLITTER.split_all(other.documents))[0].index(BRIDGE) > 1


def test_scores_follow_the_greedy_order_and_top_documents_keeps_its_prefix(model):
    example = _example()
    sentences = SPLITTER.split_all(example.documents)
    scorer = build_plugin("scorer", {"name": "bridge-documents", "model": MODEL})
    scores = np.asarray(scorer.score(example, sentences))
    assert scores.shape == (len(sentences),) and np.all((scores > 0) & (scores < 1))
    for s, x in zip(sentences, scores, strict=True):  # a sentence carries its document's score
        assert x == scores[[i for i, t in enumerate(sentences) if t.doc_index == s.doc_index][0]]
    order, _ = model.rank(example, sentences)
    docs = document_scores(sentences, scores, "max")
    assert [docs.docs[j] for j in docs.ranked()] == order
    assert list(np.diff(docs.scores[[docs.docs.index(d) for d in order]]) < 0) == [True] * (len(order) - 1)
    assert scorer.score(example, []).shape == (0,)
    selector = build_plugin("selector", {"name": "top-documents", "k": 2})
    kept = selector.select(example, sentences, scores)
    assert [d["doc"] for d in kept.info["documents"]] == order[:2]


def test_decreasing_keeps_the_order_strictly():
    out = decreasing(np.array([0.5, 0.9, 0.5, 0.1]))
    assert out[0] == 0.5 and np.all(np.diff(out) < 0) and out[3] == 0.1


def test_it_ranks_any_number_of_documents_with_or_without_titles(model):
    example = sample_example()
    many = replace(example, documents=example.documents + example.documents[:7])  # 17 documents
    for ex in (example, _no_titles(example), many, _no_titles(many), replace(example, documents=example.documents[:1])):
        sentences = presplit_sentences(ex)
        order, p = model.rank(ex, sentences)
        assert sorted(order) == sorted({s.doc_index for s in sentences}) and np.all(np.isfinite(p))


def test_second_hop_features_are_zero_before_anything_is_kept_and_for_the_kept_document(model):
    example = _example()
    ctx = model.features.context(example, SPLITTER.split_all(example.documents))
    first = BridgeFeatures.rows(ctx, range(6), None)
    assert np.all(first[:, -len(SECOND_HOP_FEATURES):] == 0)
    hop = BridgeFeatures.second_hop(ctx, 1)
    assert np.all(hop[1] == 0) and np.all(hop[[0, 2, 3, 4, 5], 0] == 1)  # has_kept
    names = list(SECOND_HOP_FEATURES)
    assert hop[BRIDGE, names.index("lead_in_kept")] == 1 and hop[BRIDGE, names.index("bridge_names")] >= 2


def test_leading_entity_is_the_title_else_the_name_the_text_opens_with():
    assert leading_entity("Mercury (planet)", "Mercury is ...") == "mercury"
    assert leading_entity("", "Scott Derrickson (born July 16, 1966) is a director.") == "scott derrickson"
    assert leading_entity("", "University of the Arts London is a university.") == "university of arts london"
    assert leading_entity("", "the band formed in 1990.") == ""


def test_a_broken_model_file_is_refused_naming_it(tmp_path):
    with pytest.raises(ConfigError, match="no model file"):
        BridgeDocumentModel.load(tmp_path)
    (tmp_path / "bridge-documents.json").write_text("{not json")
    with pytest.raises(ConfigError, match="bridge-documents.json:1"):
        BridgeDocumentModel.load(tmp_path)
    (tmp_path / "bridge-documents.json").write_text(json.dumps({"format": "ragsift-learned-fusion"}))
    with pytest.raises(ConfigError, match="not a bridge-documents model"):
        BridgeDocumentModel.load(tmp_path)


def test_the_shipped_cascade_keeps_the_ranked_documents_whole():
    from ragsift.config import load_config

    config = load_config("cascades")
    compressor = config.build_compressors()["bridge-docs3"]
    example = sample_example()
    result = compressor.compress(example)
    kept_docs = {result.sentences[i].doc_index for i in result.kept}
    assert len(kept_docs) == 3
    for d in kept_docs:  # whole documents
        assert {i for i, s in enumerate(result.sentences) if s.doc_index == d} <= set(result.kept)

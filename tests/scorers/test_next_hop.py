"""The next hop named by a reader (``next_hop`` on the ``bridge-documents`` scorer): the name is
matched against every document's leading entity and mixed into the ranker's picks after the first."""

from __future__ import annotations

from dataclasses import dataclass, field

import counting_plugins
import numpy as np
import pytest

from ragsift.registry import build_plugin, reset_registry
from ragsift.scorers.bridge_documents import BridgeDocumentModel
from ragsift.scorers.next_hop import NEXT_HOP_USER, name_match
from ragsift.splitters.presplit import PresplitSplitter
from ragsift.types import Document, Example

MODEL = "models/bridge-documents"
SPLITTER = PresplitSplitter(fallback="sentencizer")
QUESTION = "Where was the school that Arthur Quill founded?"
DOCS = [
    ("Arthur Penn", "Arthur Penn was an American film director."),
    ("Arthur Quill", "Arthur Quill was a teacher. In 1901 he founded Northvale Academy."),
    ("Leeds Grammar", "Leeds Grammar was a school in Yorkshire."),
    ("Northvale Academy", "Northvale Academy is a boarding institution in Brambleton, Ontario."),
    ("Quillan", "Quillan is a commune in southern France."),
    ("Brambleton", "Brambleton is a town in Ontario with a population of 4,000."),
]
EXAMPLE = Example("next-hop", QUESTION, ("Brambleton",), tuple(Document(t, x) for t, x in DOCS))


@dataclass
class FixedNamer:
    """Names the same subject whatever it is shown; records what it was shown."""

    named: str
    shown: list[tuple[str, str]] = field(default_factory=list)

    def name(self, question: str, document: Document) -> str:
        self.shown.append((question, document.title))
        return self.named


@pytest.fixture(scope="module")
def model() -> BridgeDocumentModel:
    loaded = BridgeDocumentModel.load(MODEL)
    loaded.features.warm_up()
    return loaded


def test_name_match_is_the_word_jaccard_of_the_normalised_name_and_each_lead():
    got = name_match("The Northvale Academy!", ["northvale academy", "northvale", "quillan", ""])
    assert list(got) == [1.0, 0.5, 0.0, 0.0]
    assert list(name_match("", ["northvale"])) == [0.0]


def test_the_named_document_is_picked_next_and_only_the_later_picks_change(model):
    sentences = SPLITTER.split_all(EXAMPLE.documents)
    alone, _ = model.rank(EXAMPLE, sentences)
    assert alone[:2] == [1, 3] and alone.index(5) > 1  # the ranker: the named document, then the bridge
    namer = FixedNamer("Brambleton")
    named, _ = model.rank(EXAMPLE, sentences, namer, 0.9)
    assert named[0] == alone[0] and named[1] == 5  # the first pick is the question's; the name moves Brambleton up
    assert namer.shown == [(QUESTION, "Arthur Quill")]  # asked once, about the first pick
    assert model.rank(EXAMPLE, sentences, FixedNamer("Brambleton"), 0.0)[0] == alone  # weight 0: the ranker alone
    assert model.rank(EXAMPLE, sentences, FixedNamer("Saturn"), 0.9)[0] == alone  # a name no document has: no change


def test_the_scorer_asks_its_reader_with_the_first_document_and_keeps_scores_decreasing(model):
    counting_plugins.install()
    try:
        scorer = build_plugin("scorer", {"name": "bridge-documents", "model": MODEL, "next_hop_weight": 0.5,
                                         "next_hop": {"name": "counting"}})
        sentences = SPLITTER.split_all(EXAMPLE.documents)
        scores = np.asarray(scorer.score(EXAMPLE, sentences))
    finally:
        reset_registry()
    # the reader got the question and the first pick as "title: text", under the next-hop prompt
    assert [(QUESTION, "Arthur Quill: " + DOCS[1][1])] == counting_plugins.READ
    assert scorer._namer.reader.params.user_template == NEXT_HOP_USER
    by_doc = {s.doc_index: x for s, x in zip(sentences, scores, strict=True)}
    order = sorted(by_doc, key=lambda d: -by_doc[d])
    assert order[:2] == [1, 3]  # "Academy" (the counting reader's last word) is half of Northvale Academy's name
    assert np.all(np.diff([by_doc[d] for d in order]) < 0)

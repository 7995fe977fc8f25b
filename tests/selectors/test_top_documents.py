"""Document-level selection: a document's score from its sentences' scores (max, mean, top-m
mean), the best k documents or those above a threshold kept whole, and clear config errors."""

from __future__ import annotations

import numpy as np
import pytest

from ragsift.errors import ConfigError
from ragsift.registry import build_plugin, get_registry
from ragsift.selectors.documents import document_scores
from ragsift.testing import sample_example
from ragsift.types import Sentence

# document 0: three sentences, document 1: one, document 2: two (listed out of order on purpose)
SENTS = [
    Sentence(0, 0, 0, 1, "a"), Sentence(1, 0, 0, 1, "b"), Sentence(0, 1, 2, 3, "c"), Sentence(2, 0, 0, 1, "d"),
    Sentence(0, 2, 4, 5, "e"), Sentence(2, 1, 2, 3, "f"),
]
SCORES = np.array([0.9, 0.6, 0.1, 0.5, 0.2, 0.7])  # doc 0: .9 .1 .2; doc 1: .6; doc 2: .5 .7
EX = sample_example()


def select(scores, **params):
    return get_registry().create("selector", "top-documents", params).select(EX, SENTS, np.asarray(scores, dtype=float))


@pytest.mark.parametrize(("aggregate", "m", "expected"), [
    ("max", None, [0.9, 0.6, 0.7]),
    ("mean", None, [0.4, 0.6, 0.6]),
    ("top-m", 2, [0.55, 0.6, 0.6]),   # doc 1 has one sentence: its mean
    ("top-m", 1, [0.9, 0.6, 0.7]),    # top-1 = max
    ("top-m", 3, [0.4, 0.6, 0.6]),    # every sentence = mean
])
def test_document_scores_aggregate_each_documents_sentences(aggregate, m, expected):
    docs = document_scores(SENTS, SCORES, aggregate, m)
    assert docs.docs == [0, 1, 2]
    assert docs.members == [[0, 2, 4], [1], [3, 5]]  # original order within each document
    assert docs.scores == pytest.approx(expected)


def test_the_k_best_documents_are_kept_whole_best_first_each_in_original_order():
    selection = select(SCORES, k=2)  # max: doc 0 (.9), doc 2 (.7), doc 1 (.6)
    assert selection.kept == [0, 2, 4, 3, 5]
    assert selection.info["documents"] == [{"doc": 0, "score": 0.9}, {"doc": 2, "score": 0.7}]
    assert select(SCORES, k=2, aggregate="mean").kept == [1, 3, 5]  # .6 and .6 (tie: the earlier), doc 0: .4
    assert select(SCORES, k=1, aggregate="top-m", m=2).kept == [1]  # doc 1 .6 = doc 2 .6 > doc 0 .55; tie: earlier
    assert select(SCORES, k=10).kept == [0, 2, 4, 3, 5, 1]  # k over the number of documents: all of them


def test_a_threshold_keeps_the_documents_that_reach_it_and_min_keep_the_best_below():
    assert select(SCORES, threshold=0.7).kept == [0, 2, 4, 3, 5]  # >= (doc 2's max is exactly .7)
    assert select(SCORES, threshold=0.95).kept == []
    assert select(SCORES, threshold=0.95, min_keep=1).kept == [0, 2, 4]
    assert select(SCORES, threshold=0.45, aggregate="mean").kept == [1, 3, 5]


def test_max_keep_caps_a_threshold_at_the_best_documents_and_min_keep_still_floors_it():
    assert select(SCORES, threshold=0.5, max_keep=2).kept == [0, 2, 4, 3, 5]  # all three reach .5: the best two
    assert select(SCORES, threshold=0.5, max_keep=1).info["documents"] == [{"doc": 0, "score": 0.9}]
    assert select(SCORES, threshold=0.95, min_keep=2, max_keep=2).kept == [0, 2, 4, 3, 5]  # none reaches it: the floor
    assert select(SCORES, threshold=0.65, min_keep=1, max_keep=3).kept == [0, 2, 4, 3, 5]  # between the bounds


def test_max_kept_is_the_sentences_of_the_k_largest_documents():
    selector = get_registry().create("selector", "top-documents", {"k": 2})
    assert selector.max_kept(SENTS) == 5
    assert get_registry().create("selector", "top-documents", {"threshold": 0.5}).max_kept(SENTS) is None
    capped = get_registry().create("selector", "top-documents", {"threshold": 0.5, "max_keep": 1})
    assert capped.max_kept(SENTS) == 3  # the largest document


def test_a_document_scorer_keeps_its_ranking_under_every_aggregate():
    # LongLLMLingua's coarse scorer gives every sentence its document's score
    per_document = np.array([0.3, 0.8, 0.3, 0.5, 0.3, 0.5])
    for aggregate, m in (("max", None), ("mean", None), ("top-m", 2)):
        assert select(per_document, k=2, aggregate=aggregate, m=m).kept == [1, 3, 5]


@pytest.mark.parametrize(("params", "message"), [
    ({}, "give exactly one of 'k'"),
    ({"k": 2, "threshold": 0.5}, "give exactly one of 'k'"),
    ({"k": 2, "aggregate": "top-m"}, "'m' goes with aggregate = 'top-m'"),
    ({"k": 2, "m": 2}, "'m' goes with aggregate = 'top-m'"),
    ({"k": 2, "min_keep": 1}, "'min_keep' and 'max_keep' go with 'threshold'"),
    ({"k": 2, "max_keep": 3}, "'min_keep' and 'max_keep' go with 'threshold'"),
    ({"threshold": 0.5, "min_keep": 3, "max_keep": 2}, r"'max_keep' \(2\) is below 'min_keep' \(3\)"),
    ({"threshold": 0.5, "max_keep": 0}, "max_keep"),
    ({"k": 0}, "k"),
    ({"k": 2, "aggregate": "median"}, "aggregate"),
])
def test_config_errors_name_the_selector_and_say_what_to_give(params, message):
    with pytest.raises(ConfigError, match=message) as info:
        get_registry().create("selector", "top-documents", params)
    assert "TopDocumentsSelector" in str(info.value)


def test_a_threshold_outside_the_scorers_range_is_refused_when_the_compressor_is_built():
    with pytest.raises(ConfigError, match=r"threshold 1.5 is outside the score range \[0.0, 1.0\].*keeps nothing"):
        build_plugin("compressor", {"name": "pipeline", "splitter": "presplit", "scorer": "oracle",
                                    "selector": {"name": "top-documents", "threshold": 1.5},
                                    "assembler": "original-order"})


def test_config_round_trips_without_unset_params():
    selector = get_registry().create("selector", "top-documents", {"k": 3})
    assert selector.config() == {"aggregate": "max", "k": 3}
    again = get_registry().create("selector", "top-documents",
                                  {"threshold": 0.2, "min_keep": 1, "max_keep": 4, "aggregate": "top-m", "m": 2})
    assert type(again)(**again.config()).config() == again.config() == {
        "aggregate": "top-m", "m": 2, "threshold": 0.2, "min_keep": 1, "max_keep": 4}

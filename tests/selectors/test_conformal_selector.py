"""The conformal selector: passes the conformance kit, keeps exactly what scores at or above its
threshold (sentences, or whole documents as top-documents keeps them), and refuses configs that
would carry no guarantee."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragsift.errors import ConfigError
from ragsift.registry import build_plugin, get_registry
from ragsift.selectors.conformal import ConformalSelector
from ragsift.testing import check_plugin, sample_example
from ragsift.types import Sentence

EX = sample_example()
# document 0: three sentences, document 1: one, document 2: two (listed out of order on purpose)
SENTS = [
    Sentence(0, 0, 0, 1, "a"), Sentence(1, 0, 0, 1, "b"), Sentence(0, 1, 2, 3, "c"), Sentence(2, 0, 0, 1, "d"),
    Sentence(0, 2, 4, 5, "e"), Sentence(2, 1, 2, 3, "f"),
]
SCORES = np.array([0.9, 0.6, 0.1, 0.5, 0.2, 0.7])  # doc 0 max .9, doc 1 .6, doc 2 .7
CALIBRATED = {"alpha": 0.1, "target": "sentences", "n": 50, "path": "dev.json", "sha256": "a" * 64,
              "dataset": "hotpotqa", "scorer": "bm25", "created_at": "2026-12-06T00:00:00+00:00"}


def selector(**params):
    return get_registry().create("selector", "conformal", {"calibrated": CALIBRATED, **params})


def test_it_passes_the_conformance_kit():
    check_plugin(ConformalSelector)
    check_plugin("conformal")


@pytest.mark.parametrize("tau", [0.05, 0.2, 0.5, 0.6, 0.65, 0.9, 0.95])
def test_sentence_level_keeps_every_sentence_at_or_above_the_threshold(tau):
    kept = selector(threshold=tau).select(EX, SENTS, SCORES).kept
    assert sorted(kept) == [i for i, s in enumerate(SCORES) if s >= tau]
    assert [SCORES[i] for i in kept] == sorted((SCORES[i] for i in kept), reverse=True)  # best first


def test_the_number_kept_adapts_per_question():
    s = selector(threshold=0.5)
    assert len(s.select(EX, SENTS, SCORES).kept) == 4
    assert len(s.select(EX, SENTS, SCORES * 0.6).kept) == 1  # only 0.9 * 0.6 = 0.54 reaches it
    assert s.select(EX, SENTS, SCORES / 2).kept == []  # a question may keep nothing


@pytest.mark.parametrize(("tau", "docs"), [(0.95, []), (0.8, [0]), (0.65, [0, 2]), (0.6, [0, 2, 1]), (0.0, [0, 2, 1])])
def test_document_level_keeps_whole_documents_as_top_documents_does(tau, docs):
    conformal = selector(threshold=tau, level="document")
    top = build_plugin("selector", {"name": "top-documents", "threshold": tau})
    got = conformal.select(EX, SENTS, SCORES)
    assert got.kept == top.select(EX, SENTS, SCORES).kept  # the same code keeps them
    assert [d["doc"] for d in got.info["documents"]] == docs
    assert got.info["threshold"] == tau
    assert sorted(got.kept) == sorted(i for i, s in enumerate(SENTS) if s.doc_index in docs)  # whole


def test_infinite_thresholds_keep_everything_or_nothing():
    every = selector(threshold=-math.inf, level="document").select(EX, SENTS, SCORES)
    assert sorted(every.kept) == list(range(6)) and [d["doc"] for d in every.info["documents"]] == [0, 2, 1]
    assert sorted(selector(threshold=-math.inf).select(EX, SENTS, SCORES).kept) == list(range(6))
    assert selector(threshold=math.inf).select(EX, SENTS, SCORES).kept == []


def test_config_round_trips_with_its_calibration_record():
    s = selector(threshold=0.42, level="document", aggregate="top-m", m=2)
    again = ConformalSelector(**s.config())
    assert again.config() == s.config() and s.config()["calibrated"]["sha256"] == "a" * 64
    assert "aggregate" not in selector(threshold=0.42).config()


@pytest.mark.parametrize(("params", "message"), [
    ({"threshold": 0.5, "calibrated": None}, "calibrated"),
    ({"threshold": 0.5}, "calibrated"),
    ({"threshold": float("nan"), "calibrated": CALIBRATED}, "NaN"),
    ({"threshold": 0.5, "calibrated": {**CALIBRATED, "alpha": 1.5}}, "alpha"),
    ({"threshold": 0.5, "calibrated": {**CALIBRATED, "extra": 1}}, "extra"),
    ({"threshold": 0.5, "calibrated": {**CALIBRATED, "target": "documents"}}, "level = 'document'"),
    ({"threshold": 0.5, "aggregate": "mean", "calibrated": CALIBRATED}, "level = 'document'"),
])
def test_configs_without_a_guarantee_are_refused(params, message):
    with pytest.raises(ConfigError, match=message):
        ConformalSelector(**params)


def test_a_threshold_calibrated_for_another_scorer_is_refused_when_the_compressor_is_built():
    spec = {"name": "pipeline", "splitter": "regex", "scorer": "random", "assembler": "original-order",
            "selector": {"name": "conformal", "threshold": 0.5, "calibrated": CALIBRATED}}
    with pytest.raises(ConfigError, match="calibrated on the scores of scorer 'bm25'.*'random'"):
        build_plugin("compressor", spec)
    build_plugin("compressor", {**spec, "scorer": "bm25"})  # its own scorer: fine

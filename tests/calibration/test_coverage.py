"""The targets (what counts as kept) and the coverage check: the same definition as calibration,
the Clopper-Pearson interval against 1 - alpha, tokens kept, and the note across datasets."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import beta

from ragsift.calibration.coverage import coverage_check, coverage_interval, dataset_note, kept_from_record
from ragsift.calibration.targets import question_units
from ragsift.errors import ConfigError
from ragsift.testing import presplit_sentences, sample_example
from ragsift.types import CompressionResult, Example

EX = sample_example()  # doc 0: 3 sentences (the 2nd is gold), doc 1: 2 (the 1st is gold), doc 2: 3; answer "Poland"
SENTS = presplit_sentences(EX)  # indices 0-2: doc 0, 3-4: doc 1, 5-7: doc 2
SCORES = np.array([0.9, 0.4, 0.3, 0.6, 0.8, 0.2, 0.7, 0.1])


def test_sentence_target_score_is_the_lowest_gold_sentence():
    units = question_units(EX, SENTS, "sentences", "sentence", SCORES)
    assert units.gold == [False, True, False, True, False, False, False, False]
    assert units.calibration_score() == 0.4
    assert units.covered([1, 3]) and not units.covered([0, 1, 4])


def test_document_targets_score_documents_by_their_aggregate():
    units = question_units(EX, SENTS, "documents", "document", SCORES)  # doc maxima .9, .8, .7
    assert units.gold == [True, True, False] and units.calibration_score() == 0.8
    mean = question_units(EX, SENTS, "sentences", "document", SCORES, aggregate="mean")
    assert mean.calibration_score() == pytest.approx(min(np.mean([0.9, 0.4, 0.3]), np.mean([0.6, 0.8])))
    # a document counts as kept when kept whole
    assert units.covered([0, 1, 2, 3, 4]) and not units.covered([0, 1, 2, 3])


def test_answer_target_needs_one_unit_with_the_answer():
    units = question_units(EX, SENTS, "answer", "sentence", SCORES)
    assert units.gold == [False, False, False, True, False, False, False, False]  # "Warsaw is the capital of Poland."
    assert units.calibration_score() == 0.6
    nowhere = Example(EX.id, EX.question, ("Lisbon",), EX.documents, EX.evidence)
    assert question_units(nowhere, SENTS, "answer", "sentence", SCORES).calibration_score() == -math.inf


@pytest.mark.parametrize("tau", [0.05, 0.25, 0.4, 0.45, 0.6, 0.75, 0.8, 0.85, 0.95])
@pytest.mark.parametrize(("target", "level"), [("sentences", "sentence"), ("answer", "sentence"),
                                                ("documents", "document"), ("sentences", "document"),
                                                ("answer", "document")])
def test_covered_at_a_threshold_is_exactly_score_at_or_above_it(target, level, tau):
    from ragsift.registry import build_plugin

    calibrated = {"alpha": 0.1, "target": target, "n": 10, "path": "d", "sha256": "0" * 64, "dataset": "hotpotqa",
                  "scorer": "bm25", "created_at": "now"}
    selector = build_plugin("selector", {"name": "conformal", "threshold": tau, "level": level, "calibrated": calibrated})
    units = question_units(EX, SENTS, target, level, SCORES)
    kept = selector.select(EX, SENTS, SCORES).kept
    assert units.covered(kept) == (units.calibration_score() >= tau)


def test_labels_the_target_needs_are_required():
    unlabelled = Example(EX.id, EX.question, EX.answers, EX.documents, None)
    with pytest.raises(ConfigError, match="'sample'.*sentence-level evidence"):
        question_units(unlabelled, SENTS, "sentences", "sentence")
    with pytest.raises(ConfigError, match="no evidence labels"):
        question_units(unlabelled, SENTS, "documents", "document")
    paragraphs = Example(EX.id, EX.question, EX.answers, EX.documents, None, {"supporting_docs": [2]})
    assert question_units(paragraphs, SENTS, "documents", "document", SCORES).calibration_score() == 0.7
    with pytest.raises(ValueError, match="needs level 'document'"):
        question_units(EX, SENTS, "documents", "sentence")


def test_the_interval_is_clopper_pearson():
    low, high = coverage_interval(45, 50)
    # the exact interval's ends are beta quantiles
    assert low == pytest.approx(beta.ppf(0.025, 45, 6)) and high == pytest.approx(beta.ppf(0.975, 46, 5))
    assert coverage_interval(50, 50)[1] == 1.0


def _result(kept):
    return CompressionResult(EX.id, SENTS, list(SCORES), kept, "")


def test_coverage_check_counts_questions_tokens_and_the_verdict():
    items = [(EX, _result([1, 3]))] * 18 + [(EX, _result([0]))] * 2  # 18/20 cover the gold sentences
    check = coverage_check(items, "sentences", "sentence", 0.1, tokens=[10.0] * 20)
    assert (check.n, check.covered, check.coverage) == (20, 18, 0.9)
    assert check.nominal == pytest.approx(0.9) and check.verdict == "met"
    assert check.tokens_kept == 10.0 and check.sentences_kept == pytest.approx((18 * 2 + 2) / 20)
    assert check.note is None and "18/20 = 90.0%" in check.describe()
    below = coverage_check(items, "sentences", "sentence", 0.05)
    assert below.verdict == "below, within the interval" and below.high >= 0.95
    bad = coverage_check([(EX, _result([0]))] * 20, "sentences", "sentence", 0.1)
    assert bad.verdict == "below the interval" and bad.high < 0.9


def test_coverage_from_run_records():
    record = _result([0, 1, 2, 3, 4]).to_record()
    sentences, kept = kept_from_record(record)
    assert sentences == SENTS and kept == [0, 1, 2, 3, 4]
    check = coverage_check([(EX, sentences, kept)], "documents", "document", 0.1)
    assert check.covered == 1 and check.units_kept == 2


def test_a_threshold_applied_to_another_dataset_is_labelled():
    assert dataset_note("hotpotqa-dev", "hotpotqa-eval") is None  # one dataset, two splits
    assert dataset_note("hotpotqa", "hotpotqa-sf100") is None
    note = dataset_note("hotpotqa-dev", "2wiki-eval")
    assert note is not None and note.startswith("calibrated on hotpotqa-dev, applied to 2wiki-eval: no guarantee")
    check = coverage_check([(EX, _result([1, 3]))], "sentences", alpha=0.1, calibrated_on="hotpotqa",
                           evaluated_on="musique-eval")
    assert check.note is not None and "no guarantee across datasets" in check.describe()

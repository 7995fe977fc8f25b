"""SQuAD normalisation, EM, token F1 and accuracy: the classic cases."""

from __future__ import annotations

import pytest

from ragsift.metrics.answer import AccuracyMetric, ExactMatchMetric, TokenF1Metric
from ragsift.metrics.base import MetricInput
from ragsift.metrics.normalize import contains_answer, exact_match, normalize_answer, token_f1
from ragsift.types import CompressionResult, Example


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("The Eiffel Tower", "eiffel tower"),
        ("an apple a day", "apple day"),
        ("  Paris,   France! ", "paris france"),
        ("Theatre", "theatre"),  # 'the' inside a word stays
        ("U.S.A.", "usa"),
        ("", ""),
        ("the", ""),
    ],
)
def test_normalize_answer(raw: str, expected: str) -> None:
    assert normalize_answer(raw) == expected


def test_exact_match_ignores_case_articles_punctuation() -> None:
    assert exact_match("The Beatles!", "beatles") == 1.0
    assert exact_match("Beatles band", "Beatles") == 0.0


def test_token_f1_partial_overlap() -> None:
    # prediction tokens: [barack, obama]; gold: [obama] -> P = 1/2, R = 1 -> F1 = 2/3
    assert token_f1("Barack Obama", "Obama") == pytest.approx(2 / 3)
    # repeated tokens count once per occurrence in both
    assert token_f1("paris paris", "paris") == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert token_f1("London", "Paris") == 0.0


def test_empty_prediction() -> None:
    assert exact_match("", "Paris") == 0.0
    assert token_f1("", "Paris") == 0.0
    # both normalise to nothing: SQuAD v2.0 counts it as a match
    assert token_f1("the", "") == 1.0
    assert exact_match("", "") == 1.0


def _item(prediction: str | None, answers: tuple[str, ...]) -> MetricInput:
    example = Example("q", "question?", answers, ())
    return MetricInput(example, CompressionResult("q", [], [], [], ""), prediction)


def test_metrics_take_the_best_gold_answer() -> None:
    item = _item("the Big Apple", ("New York City", "Big Apple"))
    assert ExactMatchMetric().compute(item) == {"em": 1.0}
    assert TokenF1Metric().compute(item) == {"f1": 1.0}
    item = _item("New York", ("New York City", "NYC"))
    assert ExactMatchMetric().compute(item) == {"em": 0.0}
    assert TokenF1Metric().compute(item)["f1"] == pytest.approx(0.8)  # P = 1, R = 2/3


def test_reader_metrics_are_absent_without_a_prediction() -> None:
    item = _item(None, ("Paris",))
    for metric in (ExactMatchMetric(), TokenF1Metric(), AccuracyMetric()):
        assert metric.compute(item) == {}


def test_accuracy_is_whole_token_containment() -> None:
    assert AccuracyMetric().compute(_item("It is in Paris, France.", ("paris",))) == {"accuracy": 1.0}
    assert AccuracyMetric().compute(_item("In 1990.", ("1",))) == {"accuracy": 0.0}
    assert contains_answer("The answer: New York City", "new york")
    assert not contains_answer("anything", "the")  # normalises to nothing: never found


# ---------------------------------------------------------------- edge cases, pinned


def test_token_f1_counts_repeated_tokens_on_both_sides() -> None:
    assert token_f1("paris paris", "paris paris") == 1.0
    # Counter overlap of [x, y, y] and [y, y, z] is 2 (a set would find 1): P = R = 2/3
    assert token_f1("x y y", "y y z") == pytest.approx(2 / 3)
    # [paris, paris] vs [paris]: overlap 1, P = 1/2, R = 1 -> 2/3 (repetition is not a bonus)
    assert token_f1("paris paris", "paris") == pytest.approx(2 / 3)
    assert token_f1("paris", "paris paris") == pytest.approx(2 / 3)
    # [a1, a1, a1, b] vs [a1, b, b]: overlap min(3,1) + min(1,2) = 2; P = 2/4, R = 2/3 -> 4/7
    assert token_f1("a1 a1 a1 b", "a1 b b") == pytest.approx(4 / 7)


def test_empty_and_punctuation_only_answers() -> None:
    assert token_f1("", "") == 1.0 and exact_match("", "") == 1.0
    assert token_f1("Paris", "") == 0.0 and exact_match("Paris", "") == 0.0
    assert token_f1("", "Paris") == 0.0
    # punctuation-only normalises to nothing, like an empty answer
    assert normalize_answer("?!...") == ""
    assert token_f1("!!!", "...") == 1.0 and exact_match("!!!", "") == 1.0
    assert token_f1("?!", "Paris") == 0.0 and exact_match("Paris", "?!") == 0.0
    # punctuation inside an answer joins its parts (official SQuAD rule): "U.S." == "US"
    assert exact_match("U.S.", "US") == 1.0 and token_f1("New-York", "newyork") == 1.0


def test_unicode_answers() -> None:
    # letters outside ASCII are kept and lower-cased; accents matter
    assert exact_match("ZÜRICH", "zürich") == 1.0
    assert exact_match("Zurich", "Zürich") == 0.0
    assert normalize_answer("Théâtre") == "théâtre"  # 'th' of a longer word is not the article
    assert exact_match("北京", "北京") == 1.0 and token_f1("北京 大学", "北京") == pytest.approx(2 / 3)
    assert exact_match("Paris\u00a0France", "paris france") == 1.0  # a non-breaking space is a space
    # as in the official SQuAD/HotpotQA scripts, only ASCII punctuation is removed: curly quotes
    # and the ellipsis character stay part of the token
    assert normalize_answer("“Paris”…") == "“paris”…"
    assert exact_match("“Paris”", "Paris") == 0.0


def test_multiple_gold_answers_take_the_best() -> None:
    golds = ("Barack Obama", "Obama", "President Obama")
    item = _item("Obama", golds)
    assert ExactMatchMetric().compute(item) == {"em": 1.0}
    # "the president" vs each gold: F1 = 0, 0, 2/3 (P = 1, R = 1/2) -> the best, 2/3
    assert TokenF1Metric().compute(_item("the president", golds))["f1"] == pytest.approx(2 / 3)
    assert AccuracyMetric().compute(_item("It was President Obama.", ("Bush", "Obama"))) == {"accuracy": 1.0}


def test_examples_without_gold_answers() -> None:
    # unlabelled (e.g. a test file): the answer metrics are undefined, not 0
    for metric in (ExactMatchMetric(), TokenF1Metric(), AccuracyMetric()):
        assert metric.compute(_item("Paris", ())) == {}
    # SQuAD 2.0 unanswerable: the right answer is no answer
    example = Example("u", "question?", (), (), metadata={"is_impossible": True})
    def item(prediction: str) -> MetricInput:
        return MetricInput(example, CompressionResult("u", [], [], [], ""), prediction)
    assert ExactMatchMetric().compute(item("")) == {"em": 1.0}
    assert TokenF1Metric().compute(item("The.")) == {"f1": 1.0}  # normalises to nothing
    assert ExactMatchMetric().compute(item("Paris")) == {"em": 0.0}
    assert TokenF1Metric().compute(item("Paris")) == {"f1": 0.0}
    assert AccuracyMetric().compute(item("")) == {}

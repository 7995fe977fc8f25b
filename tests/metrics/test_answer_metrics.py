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

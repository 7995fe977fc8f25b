"""The metric stage: one example's compression (and reader answer) -> named values.

A metric returns a dict of values for one example. A value is *absent* (not zero) when it is
undefined for that example: reader metrics without a reader answer, evidence metrics for an
example without gold evidence (``Example.evidence is None``). Averages are taken over the
examples where a value is present.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import ClassVar

from ragsift.plugin import Plugin
from ragsift.types import CompressionResult, Example

__all__ = ["Metric", "MetricInput", "MetricOutput"]


@dataclass(frozen=True)
class MetricOutput:
    """How a value is reported: its label, a display scale (100 for percentages) and unit.

    ``binary``: every value is 0 or 1 (a per-example yes/no such as EM); the summary then adds an
    exact McNemar test to the paired comparison."""

    label: str
    scale: float = 1.0
    unit: str = ""
    higher_is_better: bool | None = True
    binary: bool = False


@dataclass(frozen=True)
class MetricInput:
    """What a metric sees: the example, its compression and the reader's answer (``None``
    when no reader ran)."""

    example: Example
    compression: CompressionResult
    prediction: str | None = None


class Metric(Plugin):
    """Computes values for one example; ``outputs`` describes each key it may return."""

    stage: ClassVar[str] = "metric"

    #: key -> how to report it
    outputs: ClassVar[dict[str, MetricOutput]] = {}
    #: whether the metric needs a reader answer (skipped entirely by ``--no-reader``)
    needs_reader: ClassVar[bool] = False

    @abstractmethod
    def compute(self, item: MetricInput) -> dict[str, float]:
        """Values for one example; keys are a subset of ``outputs``."""

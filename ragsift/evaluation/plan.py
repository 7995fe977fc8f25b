"""What a run is made of, shared by every engine and by ``ragsift merge``: the plan (plugins,
data, labels, limits, shard), the plugins built from a config (:func:`build_plugins`: the local
engine and each Ray actor build them alike), and the predictions record of one example
(:func:`make_record`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragsift.config import RunConfig
from ragsift.evaluation import sweep as sw
from ragsift.evaluation.settings import EvaluationSettings
from ragsift.evaluation.shards import Shard, select_shard
from ragsift.metrics.base import Metric, MetricInput
from ragsift.models import OFFLINE_SMOLLM2
from ragsift.registry import build_plugin
from ragsift.types import Example

__all__ = ["RunPlan", "build_metrics", "build_plugins", "make_record"]


@dataclass
class RunPlan:
    """A run resolved and checked before anything is written: plugins, data, labels, limits."""

    config: RunConfig
    config_bytes: bytes
    settings: EvaluationSettings
    compressors: dict[str, Any]
    families: dict[str, str]
    labels: list[str]
    baseline: str
    reader: Any
    metrics: list[Metric]
    limit: int | None
    data: Path
    format: str | None
    #: every example of the run (after the limit), before sharding
    examples: list[Example]
    #: label -> the examples that compressor evaluates in this run (its limit, then the shard)
    subsets: dict[str, list[Example]]
    #: example id -> its position in ``examples`` (``reader_limit`` counts positions)
    positions: dict[str, int]
    shard: Shard | None = None

    def run_examples(self) -> int:
        """How many examples this run evaluates (a shard: its share of ``examples``)."""
        return len(self.examples) if self.shard is None else len(select_shard(self.examples, self.shard))


def build_metrics(settings: EvaluationSettings, reader: Any, source: str) -> list[Metric]:
    from ragsift.registry import get_registry

    registry = get_registry()
    specs = settings.metric_specs() or [{"name": n} for n in registry.names("metric")]
    tokenizer = settings.tokenizer or (reader.tokenizer_spec() if reader is not None else None) or OFFLINE_SMOLLM2
    metrics = []
    for spec in specs:
        cls = registry.get("metric", spec["name"])
        if reader is None and getattr(cls, "needs_reader", False):
            continue
        spec = dict(spec)
        if "tokenizer" in getattr(getattr(cls, "Params", None), "model_fields", {}) and "tokenizer" not in spec:
            spec["tokenizer"] = tokenizer
        metrics.append(build_plugin("metric", spec, f"{source} [evaluation] metric '{spec['name']}'"))
    return metrics


def build_plugins(config: RunConfig, no_reader: bool) -> tuple[EvaluationSettings, dict[str, Any], dict[str, str], Any, list[Metric]]:
    """The ``[evaluation]`` settings, compressors (a sweep's grid points in place of the swept one),
    sweep families, reader (None with ``no_reader``) and metrics of a config: built, not loaded.
    Every engine builds them with this one function (a Ray actor too, from the config's text)."""
    settings = EvaluationSettings.from_table(config.evaluation, config.source)
    compressors: dict[str, Any] = dict(config.build_compressors())
    # -- sweeps (issue 12): grid points replace the swept compressor --
    compressors, families = sw.expand_sweeps(config.compressor_specs(), compressors, settings.sweep, config.source)
    reader = None if no_reader else config.build_reader()
    return settings, compressors, families, reader, build_metrics(settings, reader, config.source)


def make_record(label: str, example: Example, result: Any, answer: Any, read_seconds: float | None,
            metrics: Sequence[Metric]) -> dict[str, Any]:
    prediction = None if answer is None else answer.text
    item = MetricInput(example, result, prediction)
    values: dict[str, float] = {}
    for metric in metrics:
        values.update(metric.compute(item))
    record = result.to_record()
    timings = dict(record.pop("timings"))
    if read_seconds is not None:
        timings["read"] = read_seconds
    return {
        "id": example.id,
        "compressor": label,
        "question": example.question,
        "answers": list(example.answers),
        **record,
        "prediction": prediction,
        "reader": None if answer is None else {"prompt_tokens": answer.prompt_tokens,
                                               "completion_tokens": answer.completion_tokens,
                                               "cached": bool(getattr(answer, "cached", False))},
        "metrics": values,
        "timings": timings,
    }

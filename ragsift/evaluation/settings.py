"""The ``[evaluation]`` table of a run config, validated (unknown keys are errors)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from ragsift.errors import ConfigError
from ragsift.plugin import format_validation_error, reject_bool

__all__ = ["EvaluationSettings"]


class EvaluationSettings(BaseModel):
    """How ``ragsift evaluate`` runs and reports.

    ``limit``: the first N examples. ``limits``: a smaller N for some compressors (slow ones),
    e.g. ``limits = {exit-offline = 5}``; they run on the first N of the evaluated examples and
    paired tests use the examples both compressors have. ``reader_limit``: only the first N
    examples of each compressor go to the reader (reading is the slow part on a CPU); the others
    get compression metrics only, and reader metrics average over the examples that were read.
    ``metrics``: registered metric names or tables (``{name = "evidence", min_overlap = 0.5}``);
    default: every registered metric. ``warmup``: untimed compress (+ read) runs on the first
    example before timing each compressor. ``repeats``: each example is compressed (and read)
    this many times and the stage timings averaged (EXIT reports the mean of 5). ``baseline``:
    the compressor label the paired test compares against (default: ``none`` when present, else
    the first compressor). ``tokenizer``: the model whose tokenizer counts tokens (default: the
    reader's, else the offline SmolLM2). ``batch_size``: examples compressed and then read
    together (the reader batches or sends them concurrently). ``cache``: where per-sentence
    scores and reader answers are cached (``run``: RUN_DIR/cache, the default; ``shared``:
    $RAGSIFT_CACHE or ~/.cache/ragsift; a folder; ``off``), see
    :mod:`ragsift.evaluation.caches`. ``sweep``: compressor label -> a grid of selector /
    assembler params (``{selector = {k = [1, 3, 5]}}``), see :mod:`ragsift.evaluation.sweep`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    limit: int | None = Field(None, ge=1, description="only the first N examples")
    limits: dict[str, int] = Field(default_factory=dict, description="compressor label -> its own smaller N")
    reader_limit: int | None = Field(None, ge=0, description="only the first N examples of each compressor are read")
    metrics: list[str | dict[str, Any]] | None = None
    warmup: int = Field(1, ge=0, le=100)
    repeats: int = Field(1, ge=1, le=100)
    bootstrap_samples: int = Field(1000, ge=100, le=100_000)
    confidence: float = Field(0.95, gt=0.5, lt=1.0)
    seed: int = 0
    baseline: str | None = None
    tokenizer: str | None = None
    batch_size: int = Field(1, ge=1, le=4096)
    cache: bool | str = Field("run", description="score and answer cache: run, shared, off or a folder")
    sweep: dict[str, dict[str, Any]] = Field(default_factory=dict, description="compressor label -> grid")

    @field_validator("cache")
    @classmethod
    def _cache(cls, value: bool | str) -> bool | str:
        if isinstance(value, str) and not value.strip():
            raise ValueError("expected 'run', 'shared', 'off', true, false or a folder")
        return value

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        return reject_bool(cls, value, info)

    @field_validator("limits", mode="before")
    @classmethod
    def _limits(cls, value: Any) -> Any:
        if not isinstance(value, Mapping):
            return value  # pydantic says what is wrong
        bad = {k: v for k, v in value.items() if isinstance(v, bool) or not isinstance(v, int) or v < 1}
        if bad:
            raise ValueError(f"each limit must be an integer >= 1; got {bad}")
        return value

    @field_validator("metrics")
    @classmethod
    def _metric_specs(cls, value: list[Any] | None) -> list[Any] | None:
        for spec in value or []:
            if isinstance(spec, Mapping) and not isinstance(spec.get("name"), str):
                raise ValueError("a metric table needs a 'name' (a registered metric)")
        return value

    @classmethod
    def from_table(cls, table: Mapping[str, Any], source: str = "") -> EvaluationSettings:
        try:
            return cls(**dict(table))
        except ValidationError as exc:
            owner = f"{source} [evaluation]" if source else "[evaluation]"
            raise ConfigError(format_validation_error(owner, exc, sorted(cls.model_fields))) from None

    def check_labels(self, labels: Sequence[str], source: str = "", families: Sequence[str] = ()) -> str:
        """The baseline label, after checking that ``baseline`` and the ``limits`` keys name
        compressor labels or sweep families (default baseline: ``none`` when present, else the
        first label)."""
        owner = f"{source} [evaluation]" if source else "[evaluation]"
        baseline = self.baseline or ("none" if "none" in labels else labels[0])
        if baseline not in labels:
            raise ConfigError(f"{owner}: baseline '{baseline}' is not a compressor label ({', '.join(labels)}).")
        unknown = sorted(set(self.limits) - set(labels) - set(families))
        if unknown:
            raise ConfigError(f"{owner} limits: {', '.join(unknown)} not compressor label(s) ({', '.join(labels)}).")
        return baseline

    def metric_specs(self) -> list[dict[str, Any]] | None:
        """The metric specs as ``{"name": ..., **params}`` tables (None: every registered metric)."""
        if self.metrics is None:
            return None
        return [dict(s) if isinstance(s, Mapping) else {"name": s} for s in self.metrics]

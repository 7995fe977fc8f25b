"""The ``[evaluation]`` table of a run config, validated (unknown keys are errors)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from ragsift.errors import ConfigError
from ragsift.plugin import format_validation_error, reject_bool

__all__ = ["EvaluationSettings", "RaySettings"]


class _Table(BaseModel):
    """A table of the config: unknown keys are errors, and ``true``/``false`` is never a number."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        return reject_bool(cls, value, info)


class RaySettings(_Table):
    """``[evaluation.ray]``: how ``ragsift evaluate --engine ray`` uses a Ray cluster (every key:
    docs/scale.md)."""

    address: str | None = None
    compress_actors: int | list[int] = 1
    read_actors: int | list[int] = 1
    compress_gpus: float = Field(0.0, ge=0)
    read_gpus: float = Field(0.0, ge=0)
    compress_cpus: float = Field(1.0, ge=0)
    read_cpus: float = Field(1.0, ge=0)
    batch_size: int | None = Field(None, ge=1, le=65536)
    #: -1: Ray Data's own, without end (a model that crashes every time then loops: set a number on a cluster)
    max_restarts: int = Field(-1, ge=-1)
    max_task_retries: int = Field(-1, ge=-1)

    @field_validator("compress_actors", "read_actors")
    @classmethod
    def _pool(cls, value: int | list[int]) -> int | list[int]:
        sizes = [value] if isinstance(value, int) else value
        if isinstance(value, list) and (len(value) != 2 or value[0] > value[1]):
            raise ValueError(f"expected a pool size or [min, max] with min <= max; got {value}")
        if any(isinstance(n, bool) or n < 1 for n in sizes):
            raise ValueError(f"pool sizes must be integers >= 1; got {value}")
        return value

    def pool(self, stage: str) -> int | tuple[int, int]:
        """The ``concurrency`` of a stage's ``map_batches``: a fixed size or (min, max)."""
        value = self.compress_actors if stage == "compress" else self.read_actors
        return value if isinstance(value, int) else (value[0], value[1])


class EvaluationSettings(_Table):
    """How ``ragsift evaluate`` runs and reports: the ``[evaluation]`` table (every key: docs/evaluation.md;
    ``sweep``: :mod:`ragsift.evaluation.run.sweep`; ``cache``: :mod:`ragsift.evaluation.run.caches`)."""

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
    primary: str | None = Field(None, description="the compressor of the primary comparison (vs the baseline, on EM)")
    primary_chosen_on: str | None = Field(None, description="when and on what the primary compressor was chosen")
    tokenizer: str | None = None
    batch_size: int = Field(1, ge=1, le=4096)
    cache: bool | str = Field("run", description="score and answer cache: run, shared, off or a folder")
    sweep: dict[str, dict[str, Any]] = Field(default_factory=dict, description="compressor label -> grid")
    parquet: bool = Field(False, description="also write predictions/<label>.parquet and .sentences.parquet")
    ray: RaySettings = Field(default_factory=lambda: RaySettings.model_validate({}), description="the Ray engine's cluster, pools and GPUs")

    @field_validator("cache")
    @classmethod
    def _cache(cls, value: bool | str) -> bool | str:
        if isinstance(value, str) and not value.strip():
            raise ValueError("expected 'run', 'shared', 'off', true, false or a folder")
        return value

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
        if self.primary is not None:
            if self.primary in families and self.primary not in labels:
                raise ConfigError(f"{owner}: primary '{self.primary}' is a sweep family; name one of its points (or "
                                  "freeze the choice with 'ragsift tune' and evaluate the frozen config).")
            if self.primary not in labels:
                raise ConfigError(f"{owner}: primary '{self.primary}' is not a compressor label ({', '.join(labels)}).")
            if self.primary == baseline:
                raise ConfigError(f"{owner}: primary '{self.primary}' is the baseline; the primary comparison is "
                                  "another compressor against it.")
        unknown = sorted(set(self.limits) - set(labels) - set(families))
        if unknown:
            raise ConfigError(f"{owner} limits: {', '.join(unknown)} not compressor label(s) ({', '.join(labels)}).")
        return baseline

    def metric_specs(self) -> list[dict[str, Any]] | None:
        """The metric specs as ``{"name": ..., **params}`` tables (None: every registered metric)."""
        if self.metrics is None:
            return None
        return [dict(s) if isinstance(s, Mapping) else {"name": s} for s in self.metrics]

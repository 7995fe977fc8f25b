"""The ``[evaluation]`` table of a run config, validated (unknown keys are errors)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ragsift.errors import ConfigError
from ragsift.plugin import format_validation_error, reject_bool

__all__ = ["EvaluationSettings", "RaySettings", "AnchorSettings", "PrimarySettings"]


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


class AnchorSettings(_Table):
    """``[[evaluation.anchors]]``: a published figure overlaid on the report's trade-off plots,
    labelled "published: LABEL" (a reference only: another reader, retriever, data and hardware).

    ``label``: what the point is (e.g. "EXIT, Llama-3.1-8B, Contriever top-5"). ``source``: where
    the number comes from (paper, table or figure). ``metric``: the plotted quality metric it
    reports (``em``, ``f1``: runs with a reader; ``evidence_recall``, ``answer_retention``: runs
    without), ``value`` in that metric's unit (%). Its cost, one or more of: ``context_tokens``
    (the compressed context), ``prompt_tokens`` (the reader's whole prompt), ``total_seconds``
    (compression + reading per question, retrieval excluded), ``compress_seconds`` (compression
    only). A plot draws the anchor only when its x axis is the quantity given, never a
    conversion: the tokens plot shows prompt tokens when the reader reports them, else context
    tokens; the latency plot shows total seconds with a reader, compression seconds without.
    """

    label: str = Field(min_length=1, description="what the published point is")
    source: str = Field(min_length=1, description="where the number comes from: paper, table or figure")
    metric: Literal["em", "f1", "evidence_recall", "answer_retention"]
    value: float = Field(ge=0, le=100, description="the published figure, in the metric's unit (%)")
    context_tokens: float | None = Field(None, gt=0)
    prompt_tokens: float | None = Field(None, gt=0)
    total_seconds: float | None = Field(None, gt=0)
    compress_seconds: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _has_a_cost(self) -> AnchorSettings:
        if not self.label.strip() or not self.source.strip():
            raise ValueError("an anchor needs a non-blank 'label' and 'source' (where the number comes from)")
        if all(v is None for v in (self.context_tokens, self.prompt_tokens, self.total_seconds, self.compress_seconds)):
            raise ValueError(f"anchor {self.label!r} has no cost: give context_tokens, prompt_tokens, total_seconds "
                             "or compress_seconds (the x of the plot it belongs on)")
        return self


class PrimarySettings(_Table):
    """``[evaluation.primary]``: the declared primary comparison (docs/statistics.md): the
    ``compressor`` against the run's baseline on ``metric``, its ``test`` type, the ``margin`` in the
    metric's display units (EM points; required for non-inferiority and equivalence), ``alpha``
    (the level of each one-sided test with a margin; two-sided for superiority), and the sequential
    design: ``looks`` (fractions of ``max_n``, increasing, the last 1.0), the alpha ``spending``
    function and a non-binding ``futility`` stop for non-inferiority. ``[evaluation] primary =
    "label"`` is this table with every default (superiority on EM, today's primary test)."""

    compressor: str = Field(min_length=1, description="the compressor label compared with the baseline")
    metric: str = Field("em", min_length=1, description="the metric of the test (EM by default)")
    test: Literal["superiority", "non-inferiority", "equivalence", "non-inferiority-then-superiority"] = "superiority"
    margin: float | None = Field(None, gt=0, validate_default=True,
                                 description="the margin in the metric's display units (EM points)")
    alpha: float = Field(0.05, gt=0, lt=0.5)
    looks: list[float] | None = Field(None, description="information fractions of max_n at which to look")
    spending: Literal["obrien-fleming", "pocock"] = "obrien-fleming"
    max_n: int | None = Field(None, ge=2, validate_default=True, description="the declared maximum number of questions")
    futility: bool = Field(False, description="stop for futility (non-binding; non-inferiority only)")

    @field_validator("looks")
    @classmethod
    def _looks(cls, value: list[float] | None) -> list[float] | None:
        if value is None:
            return value
        if not value or any(not 0 < t <= 1 for t in value) or any(b <= a for a, b in zip(value, value[1:], strict=False)):
            raise ValueError("looks must be fractions in (0, 1], increasing")
        if value[-1] != 1.0:
            raise ValueError("the last look must be 1.0 (all max_n questions)")
        return value

    @field_validator("margin")
    @classmethod
    def _margin_needed(cls, value: float | None, info: ValidationInfo) -> float | None:
        test = info.data.get("test", "superiority")
        if test != "superiority" and value is None:
            article = "an" if test[0] in "aeiou" else "a"
            raise ValueError(f"{article} {test} test needs a margin (> 0, in the metric's display units, e.g. "
                             "3.0 EM points), written before the evaluation")
        return value

    @field_validator("max_n")
    @classmethod
    def _max_n_with_looks(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is None and info.data.get("looks"):
            raise ValueError("looks are fractions of max_n: declare max_n (the most questions the run will read)")
        return value

    @field_validator("futility")
    @classmethod
    def _futility(cls, value: bool, info: ValidationInfo) -> bool:
        if value and not str(info.data.get("test", "")).startswith("non-inferiority"):
            raise ValueError("futility stops a non-inferiority test; a superiority or equivalence test has none here")
        return value

    def design(self) -> Any:
        """This table as a :class:`ragsift.evaluation.report.margins.PrimaryDesign` (what
        ``build_summary(primary=...)`` and the sequential functions take)."""
        from ragsift.evaluation.report.margins import PrimaryDesign

        return PrimaryDesign.from_mapping(self.model_dump())


class EvaluationSettings(_Table):
    """How ``ragsift evaluate`` runs and reports: the ``[evaluation]`` table (every key: docs/evaluation.md;
    ``sweep``: :mod:`ragsift.evaluation.run.sweep`; ``cache``: :mod:`ragsift.evaluation.run.caches`;
    ``anchors``: :class:`AnchorSettings`)."""

    limit: int | None = Field(None, ge=1, description="only the first N examples (of each dataset in a suite)")
    datasets: list[str] | None = Field(None, min_length=1, description="a suite: named datasets or files, each "
                                       "evaluated, pooled with tests stratified by dataset (--data A,B,C)")
    limits: dict[str, int] = Field(default_factory=dict, description="compressor label -> its own smaller N")
    reader_limit: int | None = Field(None, ge=0, description="only the first N examples of each compressor are read")
    metrics: list[str | dict[str, Any]] | None = None
    warmup: int = Field(1, ge=0, le=100)
    repeats: int = Field(1, ge=1, le=100)
    bootstrap_samples: int = Field(1000, ge=100, le=100_000)
    confidence: float = Field(0.95, gt=0.5, lt=1.0)
    seed: int = 0
    baseline: str | None = None
    primary: str | None = Field(None, description="the compressor of the primary comparison (vs the baseline, on EM); "
                                "a table [evaluation.primary] declares its test too (PrimarySettings)")
    primary_chosen_on: str | None = Field(None, description="when and on what the primary compressor was chosen")
    tokenizer: str | None = None
    batch_size: int = Field(1, ge=1, le=4096)
    cache: bool | str = Field("run", description="score and answer cache: run, shared, off or a folder")
    sweep: dict[str, dict[str, Any]] = Field(default_factory=dict, description="compressor label -> grid")
    parquet: bool = Field(False, description="also write predictions/<label>.parquet and .sentences.parquet")
    ray: RaySettings = Field(default_factory=lambda: RaySettings.model_validate({}), description="the Ray engine's cluster, pools and GPUs")
    anchors: list[AnchorSettings] = Field(default_factory=list, description="published figures overlaid on the plots")
    #: the declared primary test when ``[evaluation.primary]`` is a table (``primary`` then holds its
    #: compressor label, so every reader of the label is unchanged); see :meth:`primary_test`
    _primary_table: PrimarySettings | None = PrivateAttr(None)

    @model_validator(mode="wrap")
    @classmethod
    def _primary_as_table(cls, data: Any, handler: Any) -> Any:
        """``primary`` as a table: validated as :class:`PrimarySettings`, its compressor becomes the
        ``primary`` label and the table is kept (a private attribute, so that ``primary`` stays a
        label for every code that reads it)."""
        table = None
        if isinstance(data, Mapping) and isinstance(data.get("primary"), Mapping):
            try:
                table = PrimarySettings.model_validate(dict(data["primary"]))
            except ValidationError as exc:
                raise ValueError(format_validation_error("primary", exc, sorted(PrimarySettings.model_fields))
                                 .removeprefix("primary: ")) from None
            data = {**data, "primary": table.compressor}
        model = handler(data)
        if table is not None:
            model._primary_table = table
        return model

    def primary_test(self) -> PrimarySettings | None:
        """The declared primary test: the ``[evaluation.primary]`` table, or for ``primary =
        "label"`` that label with every default (superiority on EM at alpha 0.05); None when no
        primary comparison is declared."""
        if self.primary is None:
            return None
        return self._primary_table or PrimarySettings.model_validate({"compressor": self.primary})

    @field_validator("anchors", mode="before")
    @classmethod
    def _anchor_keys(cls, value: Any) -> Any:
        """Each anchor a table of known keys: an unknown one is named with the keys an anchor has."""
        if not isinstance(value, list):
            return value  # pydantic says what is wrong
        known = sorted(AnchorSettings.model_fields)
        for i, anchor in enumerate(value):
            if not isinstance(anchor, Mapping):
                raise ValueError(f"anchor {i + 1} must be a table ([[evaluation.anchors]] with {', '.join(known)})")
            unknown = sorted(set(anchor) - set(known))
            if unknown:
                raise ValueError(f"anchor {i + 1} ({anchor.get('label', 'no label')!r}): unknown key(s) "
                                 f"{', '.join(unknown)} (an anchor has: {', '.join(known)})")
        return value

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
        primary = table.get("primary")
        if isinstance(primary, Mapping):  # its own table: its problems named as [evaluation.primary]'s
            try:
                PrimarySettings.model_validate(dict(primary))
            except ValidationError as exc:
                owner = f"{source} [evaluation.primary]" if source else "[evaluation.primary]"
                raise ConfigError(format_validation_error(owner, exc, sorted(PrimarySettings.model_fields))) from None
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

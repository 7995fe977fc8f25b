"""What a run is made of, shared by every engine, the manifest, the summary and ``ragsift merge``:
the plan (:class:`RunPlan`: the include-resolved config, the command line's options, the plugins
built from the config, data, labels, limits, shard), made by :func:`plan_run`; the plugins built
from a config (:func:`build_plugins`: the local engine and each Ray actor build them alike, from
the plan's config); the predictions record of one example (:func:`make_record`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragsift.config import RunConfig, load_config
from ragsift.datasets import DataSource
from ragsift.datasets.loading import warn_empty_questions
from ragsift.errors import ConfigError
from ragsift.evaluation.predictions import prediction_paths
from ragsift.evaluation.run import sweep as sw
from ragsift.evaluation.run.settings import EvaluationSettings
from ragsift.evaluation.run.shards import Shard, select_shard
from ragsift.metrics.base import Metric, MetricInput
from ragsift.models import DEFAULT_TOKENIZER
from ragsift.registry import build_plugin
from ragsift.types import Example

__all__ = ["RunOptions", "RunPlan", "DatasetPart", "plan_run", "build_metrics", "build_plugins", "make_record",
           "suite_names", "first_of_each"]


@dataclass
class RunOptions:
    """What the command line adds to a config."""

    #: a config file (path or name in configs/), or a config already read (``ragsift merge``)
    config: str | Path | RunConfig
    out: Path
    data: str | Path | None = None
    format: str | None = None
    limit: int | None = None
    resume: bool = False
    #: with ``resume``: continue although ragsift's version or a model file changed
    allow_mixed: bool = False
    no_reader: bool = False
    argv: list[str] | None = None
    progress: bool = True
    echo: Callable[[str], None] = field(default=print)
    #: ``--shard i/N``: only the examples at positions p with p % N == i (:mod:`ragsift.evaluation.run.shards`)
    shard: Shard | None = None
    #: also write predictions and per-sentence scores as Parquet (``[evaluation] parquet`` too)
    parquet: bool = False
    #: ``local`` (this process) or ``ray`` (:mod:`ragsift.evaluation.run.engines.ray`)
    engine: str = "local"
    #: with sequential looks: stop after this look (:mod:`ragsift.evaluation.run.looks`)
    until_look: int | None = None


@dataclass(frozen=True)
class DatasetPart:
    """One dataset of a suite run (``--data A,B,C`` or ``[evaluation] datasets``): its name (a
    named dataset's, or a file's stem), what reads it, and how many of the run's examples it holds."""

    name: str
    #: as given (``--data`` or ``[evaluation] datasets``): a dataset's name or a file
    spec: str
    source: DataSource
    examples: int

    def to_dict(self) -> dict[str, Any]:
        from ragsift.provenance import sha256_file

        return {"name": self.name, "spec": self.spec, "path": str(self.source.path),
                "sha256": sha256_file(self.source.path), "format": self.source.format, "examples": self.examples}


@dataclass
class RunPlan:
    """A run resolved and checked before anything is written: the config (include-resolved, read
    once, with the bytes of every file it read), the options, plugins, data, labels and limits."""

    options: RunOptions
    config: RunConfig
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
    #: a suite run: its datasets, in order (their examples follow each other in ``examples``, and
    #: each record carries its dataset); empty for a run of one file
    parts: list[DatasetPart] = field(default_factory=list)

    @property
    def strata(self) -> dict[str, str] | None:
        """Example id -> its dataset in a suite run (the strata of the pooled tests); None otherwise."""
        if not self.parts:
            return None
        return {ex.id: str(ex.metadata["dataset"]) for ex in self.examples}

    @property
    def shard(self) -> Shard | None:
        return self.options.shard

    @property
    def no_reader(self) -> bool:
        return self.reader is None

    def run_examples(self) -> int:
        """How many examples this run evaluates (a shard: its share of ``examples``)."""
        return len(self.examples) if self.shard is None else len(select_shard(self.examples, self.shard))

    def prediction_paths(self, run_dir: Path) -> dict[str, Path]:
        """label -> its predictions file in ``run_dir``."""
        return prediction_paths(run_dir, self.labels, self.config.source)


def _load_examples(source: DataSource, limit: int | None) -> list[Example]:
    path = source.path
    examples = list(warn_empty_questions(source.load(limit), path))
    seen: set[str] = set()
    for ex in examples:
        if ex.id in seen:
            raise ConfigError(f"{path}: example id '{ex.id}' occurs twice; evaluation (and --resume) needs unique ids.")
        seen.add(ex.id)
    if not examples:
        raise ConfigError(f"{path}: no examples to evaluate.")
    return examples


def suite_names(data: str | Path | None, configured: Sequence[str] | None) -> list[str] | None:
    """The datasets of a suite run: ``--data A,B,C`` (a comma makes a list, ``A,`` a suite of one),
    else the config's ``[evaluation] datasets`` when ``--data`` is not given; None: a run of one file."""
    if data is not None:
        text = str(data)
        if "," not in text:
            return None
        names = [part.strip() for part in text.split(",")]
        names = [n for n in names if n]
        if not names:
            raise ConfigError(f"--data '{text}': no dataset named; give NAME[,NAME...] (see 'ragsift datasets').")
        return names
    return list(configured) if configured else None


def _part_name(text: str) -> str:
    """A dataset's name in a suite: a named dataset's own, a file's stem."""
    path = Path(text)
    return path.stem if path.suffix or len(path.parts) > 1 else text


def _load_suite(config: RunConfig, names: Sequence[str], format: str | None,
                limit: int | None) -> tuple[list[DatasetPart], list[Example]]:
    """Every dataset of a suite, the first ``limit`` examples of each, tagged with its name
    (``metadata["dataset"]``), ids unique across the suite."""
    parts: list[DatasetPart] = []
    examples: list[Example] = []
    owner: dict[str, str] = {}
    for text in names:
        name = _part_name(text)
        if any(p.name == name for p in parts):
            raise ConfigError(f"--data: dataset '{name}' is named twice in the suite.")
        source = config.data(text, format)
        loaded = _load_examples(source, limit)
        for ex in loaded:
            if ex.id in owner:
                raise ConfigError(f"{source.path}: example id '{ex.id}' is also in dataset '{owner[ex.id]}'; a suite "
                                  "pairs and resumes by example id, so ids must be unique across its datasets.")
            owner[ex.id] = name
            examples.append(dataclasses.replace(ex, metadata={**ex.metadata, "dataset": name}))
        parts.append(DatasetPart(name, text, source, len(loaded)))
    return parts, examples


def first_of_each(examples: Sequence[Example], take: Callable[[int], int]) -> list[Example]:
    """The first ``take(n)`` examples of each dataset of n examples (``metadata["dataset"]``; the
    examples of a run of one file are one dataset), in their order."""
    sizes: dict[Any, int] = {}
    for ex in examples:
        sizes[ex.metadata.get("dataset")] = sizes.get(ex.metadata.get("dataset"), 0) + 1
    left = {name: take(n) for name, n in sizes.items()}
    out = []
    for ex in examples:
        name = ex.metadata.get("dataset")
        if left[name] > 0:
            left[name] -= 1
            out.append(ex)
    return out


def _limited(examples: list[Example], limit: int | None) -> list[Example]:
    """A compressor's own limit: its first ``limit`` examples of each dataset (None: all)."""
    return examples if limit is None else first_of_each(examples, lambda n: min(n, limit))


def plan_run(opts: RunOptions) -> RunPlan:
    """Read the config once, build every plugin, read the data and check the settings, writing nothing."""
    config = opts.config if isinstance(opts.config, RunConfig) else load_config(opts.config)
    settings, compressors, families, reader, metrics = build_plugins(config, opts.no_reader)
    limits_by_label = sw.limits_by_label(settings.limits, families)
    labels = list(compressors)
    baseline = settings.check_labels(labels, config.source, families=list(families.values()))
    prediction_paths(Path(opts.out), labels, config.source)  # labels that would share a file are refused
    limit = opts.limit if opts.limit is not None else settings.limit
    suite = suite_names(opts.data, settings.datasets)
    parts: list[DatasetPart] = []
    if suite is None:
        source = config.data(opts.data, opts.format)  # the one rule: ragsift.datasets.resolve_data
        examples = _load_examples(source, limit)
    else:  # a suite: the first `limit` of each dataset
        parts, examples = _load_suite(config, suite, opts.format, limit)
        source = parts[0].source
    subsets = {label: _limited(examples, limits_by_label.get(label)) for label in labels}
    if opts.shard is not None:
        subsets = {label: select_shard(subset, opts.shard) for label, subset in subsets.items()}
        opts.shard.check_not_empty(len(examples), source.path)
    return RunPlan(opts, config, settings, compressors, families, labels, baseline, reader, metrics, limit,
                   source.path, source.format, examples, subsets, {ex.id: i for i, ex in enumerate(examples)}, parts)


def build_metrics(settings: EvaluationSettings, reader: Any, source: str) -> list[Metric]:
    from ragsift.registry import get_registry

    registry = get_registry()
    specs = settings.metric_specs() or [{"name": n} for n in registry.names("metric")]
    tokenizer = settings.tokenizer or (reader.tokenizer_spec() if reader is not None else None) or DEFAULT_TOKENIZER
    metrics = []
    for spec in specs:
        cls = registry.get("metric", spec["name"])
        if reader is None and getattr(cls, "needs_reader", False):
            continue
        spec = dict(spec)
        where = f"{source} [evaluation] metric '{spec['name']}'"
        if "tokenizer" in getattr(getattr(cls, "Params", None), "model_fields", {}) and "tokenizer" not in spec:
            spec["tokenizer"] = tokenizer
            where += f" (counting in the tokenizer of '{tokenizer}'; [evaluation] tokenizer names another)"
        metrics.append(build_plugin("metric", spec, where))
    return metrics


def build_plugins(config: RunConfig, no_reader: bool) -> tuple[EvaluationSettings, dict[str, Any], dict[str, str], Any, list[Metric]]:
    """The ``[evaluation]`` settings, compressors (a sweep's grid points in place of the swept one),
    sweep families, reader (None with ``no_reader``) and metrics of a config: built, not loaded.
    Every engine builds them with this one function (a Ray actor too, from the plan's config)."""
    settings = EvaluationSettings.from_table(config.evaluation, config.source)
    compressors: dict[str, Any] = dict(config.build_compressors())
    compressors, families = sw.expand_sweeps(config.compressor_specs(), compressors, settings.sweep, config.source)
    reader = None if no_reader else config.build_reader()
    return settings, compressors, families, reader, build_metrics(settings, reader, config.source)


def make_record(label: str, example: Example, result: Any, answer: Any, read_seconds: float | None,
            metrics: Sequence[Metric]) -> dict[str, Any]:
    prediction = None if answer is None else answer.text
    item = MetricInput(example, result, prediction)
    values = {key: value for metric in metrics for key, value in metric.compute(item).items()}
    record = result.to_record()
    timings = dict(record.pop("timings"))
    if read_seconds is not None:
        timings["read"] = read_seconds
    dataset = {"dataset": example.metadata["dataset"]} if "dataset" in example.metadata else {}
    return {
        "id": example.id,
        **dataset,
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

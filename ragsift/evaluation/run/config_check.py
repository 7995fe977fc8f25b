"""``ragsift config validate``: every problem of a config in one pass, without loading weights.

Builds every plugin (compressors, reader, dataset, metrics), checks the ``[evaluation]`` table
against the compressor labels, and checks every model file the config names (exists, readable
in the format its name claims: see :func:`ragsift.models.check_model`). Problems are collected,
not raised, so one run reports all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from ragsift.config import RunConfig
from ragsift.errors import RagsiftError
from ragsift.evaluation.predictions import prediction_paths
from ragsift.evaluation.run.manifest import model_specs
from ragsift.evaluation.run.settings import EvaluationSettings
from ragsift.evaluation.run.sweep import expand_sweeps
from ragsift.models import check_model
from ragsift.registry import build_plugin

__all__ = ["config_problems"]

T = TypeVar("T")


def config_problems(config: RunConfig) -> list[str]:
    """Every problem of ``config``, one message each ([] when it is sound)."""
    problems: list[str] = []

    def attempt(build: Callable[[], T]) -> T | None:
        try:
            return build()
        except RagsiftError as exc:
            problems.append(str(exc))
            return None

    specs = attempt(config.compressor_specs) or {}
    compressors: dict[str, Any] = {}
    for label, table in specs.items():
        where = f"{config.source} [compressors.{label}]" if config.compressors else f"{config.source} [compressor]"
        built = attempt(partial(build_plugin, "compressor", table, where))
        if built is not None:
            compressors[label] = built
    reader = attempt(config.build_reader)
    dataset = attempt(config.build_dataset)
    data_path = (config.dataset or {}).get("path")
    if dataset is not None and data_path is not None and not config.data().path.is_file():
        problems.append(f"{config.source} [dataset]: path {data_path}: no such file (a relative path is read from the "
                        "config file's folder, the working directory, then ragsift's shipped data).")
    settings = attempt(lambda: EvaluationSettings.from_table(config.evaluation, config.source))
    metrics: list[Any] = []
    labels, families = list(specs), []
    if settings is not None:
        if settings.sweep and len(compressors) == len(specs):  # the grid points, as evaluate labels them
            expanded = attempt(lambda: expand_sweeps(specs, compressors, settings.sweep, config.source))
            if expanded is not None:
                labels, families = list(expanded[0]), list(expanded[1].values())
        if specs:
            attempt(lambda: settings.check_labels(labels, config.source, families=families))
        from ragsift.evaluation.run.plan import build_metrics

        metrics = attempt(lambda: build_metrics(settings, reader, config.source)) or []
    if specs:
        attempt(lambda: prediction_paths(Path("."), labels, config.source))

    models: dict[str, str] = {}  # spec -> who uses it
    for label, compressor in compressors.items():
        for plugin in getattr(compressor, "stages", {}).values() or [compressor]:
            if hasattr(plugin, "check_model_files"):  # a model format of ragsift's own: the plugin checks it
                attempt(partial(_own_check, plugin, f"compressor '{label}'", config.source))
                continue
            for model in model_specs(plugin.config()):
                models.setdefault(model, f"compressor '{label}'")
    reader_model = reader.tokenizer_spec() if reader is not None else None
    if reader_model:
        models.setdefault(reader_model, "the reader")
    for metric in metrics:
        tokenizer = getattr(metric.params, "tokenizer", None)
        if isinstance(tokenizer, str):
            models.setdefault(tokenizer, f"metric '{metric.registered_name}'")
    for model, user in models.items():
        attempt(partial(_check, model, user, config.source))
    return problems


def _own_check(plugin: Any, user: str, source: str) -> None:
    try:
        plugin.check_model_files()
    except RagsiftError as exc:
        raise type(exc)(f"{source}, {user}: {exc}") from None


def _check(spec: str, user: str, source: str) -> None:
    try:
        check_model(spec)
    except RagsiftError as exc:
        raise type(exc)(f"{source}, {user}: {exc}") from None

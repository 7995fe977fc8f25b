"""Sweeps (``[evaluation.sweep]``): one compressor evaluated over a grid of selector / assembler
settings, one labelled compressor per point (``bm25@k=1``, ...) of one family, all sharing its
splitter and caching scorer (docs/evaluation.md, "Score once, select many").
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from ragsift.compressors.pipeline import PipelineCompressor
from ragsift.errors import ConfigError
from ragsift.plugin import merge_spec
from ragsift.registry import build_plugin

__all__ = ["SWEPT_STAGES", "Sweep", "expand_sweeps", "point_label", "limits_by_label", "sweep_shares"]

#: the stages a sweep may vary in a pipeline: those after scoring (a compressor class says its own:
#: ``PipelineCompressor.swept_stages``; a cascade adds ``fine_selector``)
SWEPT_STAGES = PipelineCompressor.swept_stages

Sweep = dict[str, Any]


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def point_label(family: str, point: Mapping[tuple[str, str], Any]) -> str:
    """``family@param=value,...`` (``stage.param`` where a param name is in both stages)."""
    names = [param for _, param in point]
    parts = []
    for (stage, param), value in point.items():
        name = param if names.count(param) == 1 else f"{stage}.{param}"
        parts.append(f"{name}={_format(value)}")
    return f"{family}@{','.join(parts)}"


def _grid(label: str, table: Any, owner: str, swept: tuple[str, ...] = SWEPT_STAGES) -> list[dict[tuple[str, str], Any]]:
    where = f"{owner}]"
    if not isinstance(table, Mapping) or not table:
        raise ConfigError(f"{where}: a sweep is a table of stages ({', '.join(swept)}) with lists of values, "
                          f"e.g. [evaluation.sweep.{label}.selector] k = [1, 3, 5].")
    axes: list[tuple[tuple[str, str], list[Any]]] = []
    for stage, params in table.items():
        if stage not in swept:
            raise ConfigError(f"{where}: '{stage}' cannot be swept: a sweep varies only the stages after scoring "
                              f"({', '.join(swept)}), so that every point reuses the same scores.")
        if not isinstance(params, Mapping) or not params:
            raise ConfigError(f"{owner}.{stage}]: expected a table of params with lists of values; got {params!r}.")
        for param, values in params.items():
            if param == "name":
                raise ConfigError(f"{owner}.{stage}]: a sweep varies params, not the plugin; make another "
                                  f"compressor for another {stage} and sweep it too.")
            if not isinstance(values, list) or not values:
                raise ConfigError(f"{owner}.{stage}] {param}: expected a non-empty list of values; got {values!r}.")
            if len(set(map(repr, values))) != len(values):
                raise ConfigError(f"{owner}.{stage}] {param}: a value is listed twice ({values!r}).")
            axes.append(((stage, param), values))
    keys = [k for k, _ in axes]
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(v for _, v in axes))]


def _spec(base: Mapping[str, Any], point: Mapping[tuple[str, str], Any]) -> dict[str, Any]:
    """The compressor spec of one grid point: its values laid over ``base`` by the one override
    rule (:func:`ragsift.plugin.merge_spec`; a stage given by name keeps that plugin)."""
    spec = dict(base)
    for (stage, param), value in point.items():
        spec[stage] = merge_spec(spec.get(stage), {param: value})
    return spec


def expand_sweeps(specs: Mapping[str, Mapping[str, Any]], compressors: Mapping[str, Any],
                  sweeps: Mapping[str, Sweep], source: str = "") -> tuple[dict[str, Any], dict[str, str]]:
    """Replace each swept compressor by its grid points, in config order.

    ``specs``: label -> the compressor's config table; ``compressors``: label -> the built
    compressor. Returns (label -> compressor, point label -> family)."""
    owner = f"{source} [evaluation.sweep" if source else "[evaluation.sweep"
    unknown = sorted(set(sweeps) - set(compressors))
    if unknown:
        raise ConfigError(f"{owner}]: {', '.join(unknown)} not compressor label(s) ({', '.join(compressors)}).")
    out: dict[str, Any] = {}
    families: dict[str, str] = {}
    for label, compressor in compressors.items():
        if label not in sweeps:
            out[label] = compressor
            continue
        where = f"{owner}.{label}]"
        if not isinstance(compressor, PipelineCompressor):
            raise ConfigError(f"{where}: '{label}' ({compressor.registered_name}) has no selector or assembler to "
                              "sweep; sweep a pipeline compressor (bm25, embedding, exit, ecorag, pipeline, ...).")
        for point in _grid(label, sweeps[label], f"{owner}.{label}", compressor.swept_stages):
            name = point_label(label, point)
            if name in compressors or name in out:
                raise ConfigError(f"{where}: the point '{name}' has the label of another compressor.")
            out[name] = build_plugin("compressor", _spec(specs[label], point), f"{where} point '{name}'")
            families[name] = label
    return out, families


def limits_by_label(limits: Mapping[str, int], families: Mapping[str, str]) -> dict[str, int]:
    """``[evaluation] limits`` per compressor label: a family's limit applies to each of its
    points unless the point has its own."""
    out = {label: n for label, n in limits.items() if label not in set(families.values())}
    for label, family in families.items():
        if label not in limits and family in limits:
            out[label] = limits[family]
    return out


def sweep_shares(families: Mapping[str, str]) -> dict[str, str]:
    """Point label -> the first point of its family (whose caching scorer the others share)."""
    first: dict[str, str] = {}
    return {label: first.setdefault(family, label) for label, family in families.items()}

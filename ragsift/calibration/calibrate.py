"""``ragsift calibrate``: freeze a conformal threshold for one compressor's selector, on development
questions, into a config (docs/conformal.md).

In order: read the config and its one compressor (``CONFIG#LABEL`` picks one); choose the level
(the selector's own: ``top-documents`` and a document-level ``conformal`` keep documents, every
other selector sentences; ``--level`` overrides); refuse the evaluation data before anything is
scored; score every question with the compressor's own splitter and scorer; compute each
question's calibration score for the target (:mod:`ragsift.calibration.targets`) and the
split-conformal threshold (:mod:`ragsift.calibration.conformal`); write the frozen config: the
compressor with a ``conformal`` selector holding the threshold and its ``calibrated`` record,
the calibration data as its ``[dataset]``, the source config's reader and evaluation settings,
and a ``[calibrated]`` table with everything the threshold came from.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragsift.calibration.conformal import conformal_threshold, score_summary
from ragsift.calibration.targets import check_target_level, question_units
from ragsift.compressors.base import check_example
from ragsift.errors import ConfigError
from ragsift.output_files import write_toml_atomically
from ragsift.provenance import now, portable_path, sha256_file

__all__ = ["CalibrateOptions", "run_calibrate", "FORMULA"]

FORMULA = ("threshold = the k-th smallest per-question calibration score, k = floor((n + 1) * alpha); "
           "k = 0 (n + 1 < 1 / alpha): -inf, keep everything. P(a new question's target is kept) >= 1 - alpha "
           "for questions exchangeable with the calibration questions.")

#: the [evaluation] keys that describe the source run's questions or other compressors, not this one
_RUN_ONLY = ("sweep", "baseline", "limits", "limit", "datasets")


@dataclass
class CalibrateOptions:
    #: a config file or name, ``CONFIG#LABEL`` for one compressor of several
    config: str
    alpha: float
    #: sentences, documents or answer
    target: str
    #: the frozen config to write
    out: Path
    #: sentence or document (None: the selector's own level)
    level: str | None = None
    #: document level: how a document is scored from its sentences (None: the selector's, else max)
    aggregate: str | None = None
    m: int | None = None
    #: development data: a file or a named dataset (None: the config's [dataset])
    data: str | None = None
    format: str | None = None
    limit: int | None = None
    #: the frozen compressor's label (None: LABEL-conformal)
    label: str | None = None
    force: bool = False
    progress: bool = True
    overrides: list[str] = field(default_factory=list)
    echo: Callable[[str], None] = field(default=print)


def _level_of(selector: Any) -> tuple[str, str, int | None]:
    """(level, aggregate, m) of the selector being replaced."""
    name = getattr(selector, "registered_name", None)
    params: Any = getattr(selector, "params", None)
    if name == "top-documents" or (name == "conformal" and params.level == "document"):
        return "document", params.aggregate, params.m
    return "sentence", "max", None


def _refuse_evaluation(source: Any, examples: list[Any]) -> str:
    """The calibration file's SHA-256; a ConfigError for an evaluation file: the bundled sample and
    its questions (:func:`refuse_evaluation_data`), and every evaluation dataset of the catalogue,
    by name and by content."""
    from ragsift.datasets.catalogue import evaluation_datasets
    from ragsift.datasets.holdout import refuse_evaluation_data

    sha = refuse_evaluation_data(Path(source.path), examples, "ragsift calibrate")
    for held_out in evaluation_datasets():
        if source.name == held_out.name or sha == held_out.sha256:
            raise ConfigError(f"{source.path}: this is the evaluation dataset '{held_out.name}' (sha256 {sha[:12]}...); "
                              "ragsift calibrate never uses it: calibrate on development questions (e.g. "
                              "data/training/hotpotqa-dev-pool.json, 2wiki-dev, musique-dev).")
    return sha


def _frozen_evaluation(evaluation: Mapping[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (evaluation or {}).items() if k not in _RUN_ONLY}


def run_calibrate(opts: CalibrateOptions) -> dict[str, Any]:
    """Calibrate, write the frozen config; returns its ``[calibrated]`` record."""
    from ragsift.compressors.pipeline import PipelineCompressor
    from ragsift.config import load_labelled_config
    from ragsift.datasets.loading import detect_format
    from ragsift.registry import build_plugin
    from ragsift.version import __version__

    if not 0.0 < opts.alpha < 1.0:
        raise ConfigError(f"--alpha must be in (0, 1); got {opts.alpha}.")
    config, chosen = load_labelled_config(opts.config, opts.overrides)
    label, spec = config.only_compressor_spec("calibrate", chosen)
    label, compressor = config.only_compressor("calibrate", label)
    where = f"{config.source} [compressors.{label}]"
    if not isinstance(compressor, PipelineCompressor):
        raise ConfigError(f"{where}: compressor '{compressor.registered_name}' has no selector stage to calibrate; "
                          "calibrate a pipeline, a cascade or a named pipeline (exit, bm25, ...).")
    if getattr(compressor, "fine_selector", None) is not None:
        raise ConfigError(f"{where}: a cascade with a fine_selector keeps part of what its coarse selector keeps, so a "
                          "threshold calibrated for the coarse stage promises nothing about what is finally kept; "
                          "calibrate the cascade without its fine stage (the survivors kept whole).")
    level, aggregate, m = _level_of(compressor.selector)
    level = opts.level or level
    if opts.aggregate is not None:
        aggregate, m = opts.aggregate, opts.m
    if level == "sentence":
        aggregate, m = "max", None
    try:
        check_target_level(opts.target, level)
    except ValueError as exc:
        raise ConfigError(f"ragsift calibrate: {exc}.") from None

    source = config.data(opts.data, opts.format)
    examples = list(source.load(opts.limit))
    if not examples:
        raise ConfigError(f"{source.path}: no questions to calibrate on.")
    sha = _refuse_evaluation(source, examples)
    out = Path(opts.out)
    if out.exists() and not opts.force:
        raise ConfigError(f"{out} exists; pass --force to overwrite it, or choose another --out path.")
    fmt = source.format or detect_format(source.path)
    dataset = source.name or fmt
    scorer_name = str(compressor.scorer.registered_name)

    from tqdm import tqdm

    compressor.warm_up()
    scores, tables = [], []
    for example in tqdm(examples, desc=f"calibrate [{label}]", unit="q", disable=not opts.progress, file=sys.stderr):
        check_example(example, "ragsift calibrate")
        sentences = compressor.splitter.split_all(example.documents)
        unit_scores = compressor.scorer.score(example, sentences) if sentences else []
        table = question_units(example, sentences, opts.target, level, unit_scores, aggregate, m)  # type: ignore[arg-type]
        try:
            scores.append(table.calibration_score())
        except ValueError as exc:
            raise ConfigError(f"{source.path}: question '{example.id}': {exc} (scorer '{scorer_name}').") from None
        tables.append(table)
    try:
        result = conformal_threshold(scores, opts.alpha)
    except ValueError as exc:
        raise ConfigError(f"{source.path}: {exc}") from None
    tau = result.threshold
    # what the threshold keeps on the calibration questions themselves (the coverage there is at
    # least 1 - k/n by construction; the promise is for new questions)
    per_unit = [np.asarray(t.scores, dtype=np.float64) for t in tables]
    kept_units = [int((u >= tau).sum()) for u in per_unit]
    kept_sentences = [sum(len(members) for members, s in zip(t.members, u, strict=True) if s >= tau)
                      for t, u in zip(tables, per_unit, strict=True)]
    covered = sum(s >= tau and s != -math.inf for s in scores)

    shown_path = portable_path(Path(source.path).resolve(), [Path.cwd().resolve()]) or str(source.path)
    created = now()
    selector = {"name": "conformal", "threshold": tau, "level": level,
                **({"aggregate": aggregate, **({"m": m} if m is not None else {})} if level == "document" else {}),
                "calibrated": {"alpha": opts.alpha, "target": opts.target, "n": result.n, "path": shown_path,
                               "sha256": sha, "dataset": dataset, "scorer": scorer_name, "created_at": created}}
    frozen_spec = {"name": compressor.registered_name, **compressor.config(), "selector": selector}
    frozen_label = opts.label or f"{label}-conformal"
    build_plugin("compressor", frozen_spec, f"{out} [compressors.{frozen_label}]")  # refused now, not at the next run

    record: dict[str, Any] = {
        "alpha": opts.alpha, "target": opts.target, "level": level, "n": result.n, "k": result.k, "threshold": tau,
        "keeps_everything": result.keeps_everything, "formula": FORMULA,
        "data": {"path": shown_path, "sha256": sha, "format": fmt, "dataset": dataset,
                 "limit": opts.limit, "ids": [ex.id for ex in examples]},
        "source": {"config": str(config.source), "label": label, "sha256": sha256_file(config.source),
                   "overrides": list(opts.overrides)},
        "scorer": {"name": scorer_name, **compressor.scorer.config()},
        "scores": score_summary(scores),
        "on_calibration": {"covered": int(covered), "coverage": covered / result.n,
                           "units_kept_mean": sum(kept_units) / result.n,
                           "sentences_kept_mean": sum(kept_sentences) / result.n},
        "created_at": created, "ragsift_version": __version__,
    }
    unit = "documents" if level == "document" else "sentences"
    description = (f"Frozen by ragsift calibrate from {config.source}#{label}: the {level}-level threshold {tau:.6g} "
                   f"keeps the {opts.target} for at least 1 - alpha = {1 - opts.alpha:.3g} of new questions "
                   f"exchangeable with the {result.n} calibration questions of {shown_path} (sha256 {sha[:12]}...; "
                   f"{dataset}); marginal over questions, not per question, and not across datasets. On those "
                   f"questions it keeps {record['on_calibration']['units_kept_mean']:.2f} {unit} on average. "
                   "[calibrated] records how.")
    frozen: dict[str, Any] = {"description": description,
                              # a named dataset by its name: it resolves in any installation
                              "dataset": {"name": fmt, "path": source.name or shown_path, **source.params},
                              "compressors": {frozen_label: frozen_spec}}
    if config.reader is not None:
        frozen["reader"] = config.reader
    evaluation = _frozen_evaluation(config.evaluation)
    if evaluation:
        frozen["evaluation"] = evaluation
    frozen["calibrated"] = record
    out.parent.mkdir(parents=True, exist_ok=True)
    write_toml_atomically(out, frozen)
    opts.echo(f"{frozen_label}: {level}-level threshold {tau:.6g} (k = {result.k} of n = {result.n}, alpha = "
              f"{opts.alpha}, target {opts.target}); on the calibration questions it keeps "
              f"{record['on_calibration']['units_kept_mean']:.2f} {unit} and the target for "
              f"{covered}/{result.n}" + (" (too few questions for alpha: keeps everything)" if result.keeps_everything
                                        else "") + f"\nfrozen config: {out}")
    return record



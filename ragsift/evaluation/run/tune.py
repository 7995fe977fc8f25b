"""``ragsift tune``: choose each compressor's operating point for the reader, on development
questions, by a rule written down before the run; write the choice as a frozen config. The tuning
config, the rule, the refusal of the evaluation file and what the frozen config records:
docs/tuning.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragsift import config_files
from ragsift.config import load_config
from ragsift.datasets.holdout import refuse_evaluation_data
from ragsift.errors import ConfigError, OutputError
from ragsift.evaluation.run import manifest as mf
from ragsift.evaluation.run.plan import DatasetPart, plan_run
from ragsift.evaluation.run.runner import RunOptions, run_plan
from ragsift.output_files import check_output, write_toml_atomically
from ragsift.plugin import format_validation_error
from ragsift.provenance import portable_path

__all__ = ["TuneRule", "TuneConfig", "TuneOptions", "load_tune_config", "choose", "point_rows", "run_tune",
           "PREFERENCES"]

#: ``prefer`` -> the row key it minimises
PREFERENCES: dict[str, str] = {
    "fewer-prompt-tokens": "prompt_tokens",
    "fewer-compressed-tokens": "compressed_tokens",
    "lower-latency": "latency_ms",
}


class TuneRule(BaseModel):
    """How one point of each family is chosen (docs/tuning.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: a metric of the run's summary, higher is better (in the summary's display units)
    metric: str = Field("em", min_length=1)
    #: the candidates: the points whose mean is at least the best mean minus this
    within: float = Field(0.0, ge=0.0, allow_inf_nan=False)
    #: among the candidates, the one with the least of this
    prefer: Literal["fewer-prompt-tokens", "fewer-compressed-tokens", "lower-latency"] = "fewer-prompt-tokens"
    #: on a suite of development datasets: one point for the pooled suite, or also one per dataset
    #: (each written to its own frozen config, ``<frozen>-<dataset>.toml``)
    scope: Literal["pooled", "per-dataset"] = "pooled"

    def describe(self) -> str:
        best = f"the highest {self.metric}" if self.within == 0 else f"{self.metric} within {self.within:g} of the best"
        scope = "" if self.scope == "pooled" else " (on the pooled suite, and on each dataset)"
        return f"{best}; among those, {self.prefer}; then the higher {self.metric}, then the earlier point{scope}"


class TuneConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str = ""
    #: the run config of the sweep, relative to the tuning config
    sweep: str = Field(min_length=1)
    rule: TuneRule
    source: str = ""

    def sweep_path(self) -> Path:
        path = (Path(self.source).parent / Path(self.sweep).expanduser()).resolve()
        if not path.is_file():
            raise ConfigError(f"{self.source}: sweep = '{self.sweep}': no such file ({path}; the path is relative to "
                              "the tuning config).")
        return path


def load_tune_config(name_or_path: str | Path) -> TuneConfig:
    path = config_files.find_config_file(name_or_path)
    raw = config_files.read_toml(path)
    try:
        return TuneConfig(**raw, source=str(path))
    except ValidationError as exc:
        raise ConfigError(format_validation_error(str(path), exc, sorted(TuneConfig.model_fields))) from None


@dataclass
class TuneOptions:
    config: str | Path
    out: Path
    #: the frozen config to write (default: OUT/tuned.toml)
    frozen: Path | None = None
    data: str | Path | None = None
    format: str | None = None
    limit: int | None = None
    resume: bool = False
    force: bool = False
    progress: bool = True
    argv: list[str] | None = None
    echo: Callable[[str], None] = field(default=print)
    #: ``--set KEY=VALUE`` overrides of the sweep config (:meth:`ragsift.config.RunConfig.with_overrides`)
    overrides: list[str] = field(default_factory=list)


def point_rows(summary: Mapping[str, Any], records: Mapping[str, Sequence[Mapping[str, Any]]],
               metric: str) -> list[dict[str, Any]]:
    """One row per compressor of a run: label, family, n, the metric's mean and CI, mean reader
    prompt tokens (over the read examples), mean compressed tokens and mean total latency."""
    rows = []
    for label, entry in summary["compressors"].items():
        values = entry.get("values", {})
        if metric not in values:
            raise ConfigError(f"[rule] metric '{metric}' is not in the run's summary (it has: "
                              f"{', '.join(sorted(values)) or 'none'}); name one of them, or add its metric "
                              "to [evaluation] metrics.")
        prompts = [float(r["reader"]["prompt_tokens"]) for r in records.get(label, [])
                   if r.get("prediction") is not None and (r.get("reader") or {}).get("prompt_tokens") is not None]
        latency = entry.get("latency_ms", {}).get("total") or entry.get("latency_ms", {}).get("compress")
        compressed = values.get("compressed_tokens")
        rows.append({
            "label": label, "family": entry.get("family", label), "n": entry.get("n"),
            "metric": values[metric]["mean"], "low": values[metric]["low"], "high": values[metric]["high"],
            "prompt_tokens": sum(prompts) / len(prompts) if prompts else None,
            "compressed_tokens": None if compressed is None else compressed["mean"],
            "latency_ms": None if latency is None else latency["mean"],
        })
    return rows


def choose(rows: Sequence[Mapping[str, Any]], rule: TuneRule) -> str:
    """The label of the point ``rule`` picks among ``rows`` (one family's, in sweep order)."""
    if not rows:
        raise ValueError("no points to choose from")
    key = PREFERENCES[rule.prefer]
    best = max(float(r["metric"]) for r in rows)
    # a tolerance for the last bits of a mean, so that "within 0" keeps exact ties
    candidates = [r for r in rows if float(r["metric"]) >= best - rule.within - 1e-9 * max(1.0, abs(best))]
    missing = [r["label"] for r in candidates if r.get(key) is None or not math.isfinite(float(r[key]))]
    if missing:
        raise ConfigError(f"[rule] prefer = '{rule.prefer}': the run has no {key} for {', '.join(missing)} "
                          + ("(prompt tokens come from the reader: the sweep needs a [reader] that reads every "
                             "example)." if key == "prompt_tokens" else "(add its metric to [evaluation] metrics)."))
    order = {r["label"]: i for i, r in enumerate(rows)}
    return str(min(candidates, key=lambda r: (float(r[key]), -float(r["metric"]), order[r["label"]]))["label"])


def _choices(summary: Mapping[str, Any], records: Mapping[str, Sequence[Mapping[str, Any]]],
             rule: TuneRule) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The sweep's rows (each marked ``chosen`` or not) and each swept family's chosen label."""
    rows = point_rows(summary, records, rule.metric)
    families: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        families.setdefault(row["family"], []).append(row)
    swept = {family for family, points in families.items() if any(p["label"] != family for p in points)}
    chosen = {family: choose(points, rule) for family, points in families.items() if family in swept}
    for row in rows:
        row["chosen"] = chosen.get(row["family"]) == row["label"]
    return rows, chosen


def _frozen_evaluation(evaluation: Mapping[str, Any], chosen: Mapping[str, str],
                       kept: Sequence[str]) -> dict[str, Any]:
    """The sweep's ``[evaluation]`` for the frozen config: no sweep; a limit or baseline naming a
    chosen point names its family; one naming another point is dropped."""
    out = {k: v for k, v in evaluation.items() if k != "sweep"}
    renamed = {label: family for family, label in chosen.items()}
    if isinstance(out.get("limits"), Mapping):
        out["limits"] = {renamed.get(k, k): v for k, v in out["limits"].items() if renamed.get(k, k) in kept}
        if not out["limits"]:
            out.pop("limits")
    baseline = out.get("baseline")
    if isinstance(baseline, str):
        baseline = renamed.get(baseline, baseline)
        if baseline in kept:
            out["baseline"] = baseline
        else:
            out.pop("baseline")
    return out


def _check_metric(rule: TuneRule, evaluation: Mapping[str, Any], where: str) -> None:
    """A ConfigError, before the run, when the run's metrics do not report the rule's metric."""
    from ragsift.evaluation.run.settings import EvaluationSettings
    from ragsift.registry import get_registry

    registry = get_registry()
    specs = EvaluationSettings.from_table(dict(evaluation), where).metric_specs()
    names = [s["name"] for s in specs] if specs is not None else registry.names("metric")
    outputs = {key for name in names for key in getattr(registry.get("metric", name), "outputs", {})}
    if rule.metric not in outputs:
        raise ConfigError(f"[rule] metric '{rule.metric}' is not reported by the sweep's metrics ({where}: "
                          f"{', '.join(sorted(outputs)) or 'none'}); name one of them, or add its metric to "
                          "[evaluation] metrics.")


def check_frozen(frozen: Path, out: Path, inputs: Sequence[Path], *, force: bool) -> Path:
    """Check the frozen config's path as ``-o`` is checked (:func:`ragsift.output_files.check_output`):
    never an input (the tuning config, the sweep config and its includes, the development data,
    also through a link), never a folder, an existing file only with ``--force`` (``--resume``
    continues the sweep; it does not license overwriting a file). Inside the sweep's run directory
    only ``OUT/tuned.toml`` (the default): any other name there is, or may become, a file of the run
    (its manifest, its records), so the run's own files are inputs too."""
    where = frozen.parent.resolve() / frozen.name
    run_dir = out.resolve()
    frozen_name = where.parent == run_dir and where.name.startswith("tuned") and where.suffix == ".toml"
    if where.is_relative_to(run_dir) and not frozen_name:  # tuned.toml, per dataset tuned-<dataset>.toml
        raise OutputError(f"--frozen {frozen} is inside the sweep's run directory {out}, where the run keeps its "
                          f"own files (manifest, records); write it as {out / 'tuned.toml'} (the default) or outside "
                          f"{out}.")
    own = [f for f in run_dir.rglob("*") if f.is_file() and f != where] if run_dir.is_dir() else []
    if not frozen.parent.is_dir():  # a new folder holds nothing to lose; it is made when the choice is written
        return frozen
    return check_output(frozen, [*inputs, *own], force=force, flag="--frozen")


def run_tune(opts: TuneOptions) -> dict[str, Any]:
    """Run the sweep, choose each family's point by the rule, write the frozen config; returns
    the ``[tuned]`` record."""
    from ragsift.version import __version__

    tune = load_tune_config(opts.config)
    sweep_path = tune.sweep_path()
    config = load_config(sweep_path).with_overrides(opts.overrides)
    where = f"{tune.source}: sweep {sweep_path}"
    if not (config.evaluation or {}).get("sweep"):
        raise ConfigError(f"{where} has no [evaluation.sweep]: tune chooses among a sweep's points.")
    if config.reader is None:
        raise ConfigError(f"{where} has no [reader]: tune chooses operating points for the run's reader.")
    _check_metric(tune.rule, config.evaluation or {}, where)
    frozen = opts.frozen if opts.frozen is not None else Path(opts.out) / "tuned.toml"
    # refused before anything runs or is written: what the run will read, read once, by the run's own rule
    plan = plan_run(RunOptions(config=config, out=Path(opts.out), data=opts.data, format=opts.format,
                               limit=opts.limit, resume=opts.resume, progress=opts.progress, argv=opts.argv,
                               echo=opts.echo))
    parts = plan.parts or [DatasetPart(Path(plan.data).stem, str(plan.data), config.data(opts.data, opts.format),
                                       len(plan.examples))]
    shas = [refuse_evaluation_data(Path(part.source.path), [ex for ex in plan.examples
                                                            if ex.metadata.get("dataset", part.name) == part.name],
                                   "ragsift tune", name=part.source.name) for part in parts]
    sha = mf.input_record(plan)["sha256"] if plan.parts else shas[0]
    inputs = [Path(tune.source), *(path for path, _ in config.files), *(Path(part.source.path) for part in parts)]
    if tune.rule.scope == "per-dataset" and not plan.parts:
        raise ConfigError(f"{tune.source}: [rule] scope = 'per-dataset' chooses on each dataset of a suite; the sweep "
                          f"reads one file ({plan.data}). Give it [evaluation] datasets (or --data A,B), or scope = "
                          "'pooled'.")
    for path in [frozen, *(_dataset_path(frozen, p.name) for p in plan.parts if tune.rule.scope == "per-dataset")]:
        check_frozen(path, Path(opts.out), inputs, force=opts.force)
    result = run_plan(plan)
    summary, records, manifest = result.summary, result.records, result.manifest
    rows, chosen = _choices(summary, records, tune.rule)
    per_dataset = {part.name: _choices(summary["datasets"][part.name],
                                       {k: [r for r in v if r.get("dataset") == part.name] for k, v in records.items()},
                                       tune.rule) for part in plan.parts} if tune.rule.scope == "per-dataset" else {}
    families = list(dict.fromkeys(row["family"] for row in rows))
    resolved = manifest["config"]["compressors"]
    compressors = {family: resolved[chosen.get(family, family)] for family in families}
    ids = [str(r["id"]) for r in max(records.values(), key=len, default=[])]
    # the sweep relative to the working directory when under it: a frozen config ships without machine paths
    shown = portable_path(sweep_path.resolve(), [Path.cwd().resolve()]) or str(sweep_path)
    record = {
        "created_at": mf.now(), "ragsift_version": __version__, "tuning_config": str(tune.source),
        "rule": {**tune.rule.model_dump(), "text": tune.rule.describe()},
        "development": {"path": str(plan.data), "sha256": sha, "format": manifest["input"].get("format"),
                        "questions": len(ids), "ids": ids,
                        **({"datasets": manifest["input"]["datasets"], "scope": tune.rule.scope} if plan.parts else {})},
        "sweep": {"config": shown, "sha256": mf.sha256_file(sweep_path), "run_dir": str(opts.out),
                  "overrides": config.overrides},
        "chosen": chosen,
        "table": rows,
    }
    if per_dataset:  # each dataset's own choice, frozen beside the pooled one
        record["per_dataset"] = {name: {"chosen": c, "table": r, "frozen": str(_dataset_path(frozen, name))}
                                 for name, (r, c) in per_dataset.items()}
    description = (f"Frozen by ragsift tune ({tune.source}) from the sweep {shown}: on {len(ids)} development "
                   f"questions of {manifest['input'].get('data') or plan.data} (sha256 {sha[:12]}...), each "
                   f"compressor's point chosen{' on the pooled suite' if plan.parts else ''} by the rule "
                   f"'{tune.rule.describe()}': " + ", ".join(f"{f} = {lbl}" for f, lbl in chosen.items())
                   + ". [tuned] records the rule, the questions and the sweep's table.")
    dataset = {} if plan.parts else {"dataset": {**({"name": plan.format} if plan.format else {}),
                                                 "path": str(plan.data), **parts[0].source.params}}
    out: dict[str, Any] = {"description": description, **dataset, "compressors": compressors, "reader": config.reader,
                           "evaluation": _frozen_evaluation(config.evaluation, chosen, list(compressors))}
    if plan.parts:  # a suite: the frozen config reads the same datasets by default
        out["evaluation"]["datasets"] = [part.spec for part in plan.parts]
    if opts.limit is not None:  # the questions the choice used
        out["evaluation"]["limit"] = opts.limit
    out["tuned"] = record
    frozen.parent.mkdir(parents=True, exist_ok=True)
    check_frozen(frozen, Path(opts.out), inputs, force=True)  # again: the run's files exist now (a link to one)
    write_toml_atomically(frozen, out)
    opts.echo(format_choice(rows, tune.rule, frozen))
    for name, (dataset_rows, dataset_chosen) in per_dataset.items():
        path = _dataset_path(frozen, name)
        check_frozen(path, Path(opts.out), inputs, force=opts.force)
        own = {**out, "compressors": {f: resolved[dataset_chosen.get(f, f)] for f in families},
               "description": f"{description} This file: the choice on {name} alone (scope per-dataset).",
               "evaluation": {**out["evaluation"], "datasets": [next(p.spec for p in plan.parts if p.name == name)]},
               "tuned": {**record, "chosen": dataset_chosen, "table": dataset_rows, "scope": "per-dataset",
                         "dataset": name}}
        write_toml_atomically(path, own)
        opts.echo(f"\n{name}:\n" + format_choice(dataset_rows, tune.rule, path))
    return record


def _dataset_path(frozen: Path, name: str) -> Path:
    """Where a per-dataset choice is frozen: beside the pooled one, ``<stem>-<dataset><suffix>``."""
    return frozen.with_name(f"{frozen.stem}-{name}{frozen.suffix}")


def format_choice(rows: Sequence[Mapping[str, Any]], rule: TuneRule, frozen: Path) -> str:
    """The sweep's table with the chosen points marked, for the terminal."""
    def cell(value: Any, digits: int = 1) -> str:
        return "-" if value is None else f"{value:.{digits}f}"

    lines = [f"rule: {rule.describe()}", f"{'':2}{'point':<44} {rule.metric:>7} {'CI':>13} {'prompt':>8} {'ms':>8}"]
    for r in rows:
        mark = "*" if r["chosen"] else " "
        lines.append(f"{mark:2}{r['label']:<44} {cell(r['metric']):>7} {cell(r['low']) + '-' + cell(r['high']):>13} "
                     f"{cell(r['prompt_tokens'], 0):>8} {cell(r['latency_ms'], 0):>8}")
    lines.append(f"frozen config: {frozen}")
    return "\n".join(lines)

